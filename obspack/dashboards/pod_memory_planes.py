"""vLLM / Pod memory planes: the triage page. For one pod, on one time axis: host RAM, restarts, GPU VRAM,
KV cache and queue, and the CUDA allocator, under a row of stats that says which plane is closest to its
limit and a table of the obspack alerts firing on the pod. Annotations mark restarts, OOM kills, firing
alerts and rollouts on every graph. Alerts link here with cluster, namespace and pod preselected."""

from __future__ import annotations

import attr
from grafanalib.core import Annotations, Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import dashboard
from obspack.numbers import percent, text, tidy
from obspack.rules.alerts.exporter import fragmentation_over_floor
from obspack.rules.recording.dcgm import MIB

NAME = c.TRIAGE_DASHBOARD
GPU_LEGEND = "GPU {{gpu}} {{Hostname}}"
CUDA_LEGEND = "device {{device}} pid {{pid}}"
CONTAINER = ("namespace", "pod", "container")


def _dashed(pattern: str) -> dict[str, object]:
    """Draw series whose name matches `pattern` (limits, requests, totals) as dashed lines."""
    return {
        "matcher": {"id": "byRegexp", "options": pattern},
        "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}],
    }


def _stats(cfg: ObspackConfig) -> list[p.Panel]:
    a = cfg.alerts
    return [
        p.stat(
            "Host RAM: working set / limit",
            p.target(q.total(cfg, c.MEMORY_LIMIT_RATIO, "max", q.POD), "host RAM"),
            unit=p.PERCENT_UNIT,
            description=(
                "The container closest to its cgroup memory limit (host RAM, not GPU). Red from "
                f"{percent(a.VLLMHostMemoryNearLimit.ratio)}"
                + marks.say(cfg, "VLLMHostMemoryNearLimit", " (VLLMHostMemoryNearLimit)")
                + ": the kernel will OOM-kill it (exit 137). Raise the memory limit or lower --swap-space / CPU "
                "offload."
            ),
            thresholds=p.above(tidy(a.VLLMHostMemoryNearLimit.ratio - 0.1), a.VLLMHostMemoryNearLimit.ratio),
            background=True,
            decimals=1,
            links=marks.runbooks(cfg, "VLLMHostMemoryNearLimit"),
        ),
        p.stat(
            "GPU VRAM: framebuffer used",
            p.target(q.total(cfg, c.POD_GPU_FB_RATIO_MAX, "max", q.POD), "GPU VRAM"),
            unit=p.PERCENT_UNIT,
            description=(
                "The fullest GPU this pod holds. vLLM reserves --gpu-memory-utilization (0.9 by default) at "
                f"start, so about 90% is normal. Red from {percent(a.VLLMGPUMemoryNearFull.ratio)}"
                + marks.say(cfg, "VLLMGPUMemoryNearFull", " (VLLMGPUMemoryNearFull)")
                + ": the next allocation may fail with CUDA out of memory."
            ),
            thresholds=p.above(None, a.VLLMGPUMemoryNearFull.ratio),
            background=True,
            decimals=1,
            links=marks.runbooks(cfg, "VLLMGPUMemoryNearFull"),
        ),
        p.stat(
            "KV cache: usage",
            p.target(q.total(cfg, c.KV_USAGE, "max"), "KV cache"),
            unit=p.PERCENT_UNIT,
            description=(
                f"Share of KV cache blocks in use. Orange from {percent(a.VLLMKVCacheUsageHigh.ratio)}, red from "
                f"{percent(a.VLLMKVCacheUsageCritical.ratio)}: new requests queue and running ones get preempted. "
                "This is GPU memory vLLM already reserved; it does not cause CUDA OOM."
            ),
            thresholds=p.above(a.VLLMKVCacheUsageHigh.ratio, a.VLLMKVCacheUsageCritical.ratio),
            background=True,
            decimals=1,
            links=marks.runbooks(cfg, "VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical"),
        ),
        p.stat(
            "Queue: requests waiting",
            p.target(q.total(cfg, c.WAITING), "waiting"),
            unit=p.SHORT,
            description=(
                f"Requests waiting for admission. Orange from {a.VLLMRequestQueueBacklog.min_waiting:g}"
                + marks.say(cfg, "VLLMRequestQueueBacklog", " (VLLMRequestQueueBacklog's floor)")
                + ": the KV cache or the batch is full. Look at KV usage next to it; scale out if both are high."
            ),
            thresholds=p.above(
                a.VLLMRequestQueueBacklog.min_waiting, a.VLLMRequestQueueBacklog.min_waiting * 4
            ),
            background=True,
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
        ),
        p.stat(
            "CUDA allocator fragmentation",
            p.target(f"max({fragmentation_over_floor(cfg, lambda m: q.exporter(cfg, m, q.POD))})", "fragmentation"),
            unit=p.PERCENT_UNIT,
            description=(
                "Share of the GPU memory PyTorch holds but no tensor uses that sits in inactive split blocks "
                "(obspack exporter), on the worst GPU with at least "
                f"{text(a.VLLMCUDAAllocatorFragmentationHigh.min_split_gib)} GiB of them (0 on the others). Red "
                f"from {percent(a.VLLMCUDAAllocatorFragmentationHigh.ratio)}: large allocations can fail with "
                "CUDA OOM while nvidia-smi shows free memory. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
            ),
            thresholds=p.above(None, a.VLLMCUDAAllocatorFragmentationHigh.ratio),
            background=True,
            decimals=1,
            links=marks.runbooks(cfg, "VLLMCUDAAllocatorFragmentationHigh"),
        ),
        p.stat(
            "Restarts in range",
            p.target(f"sum({q.restarts(cfg, '$__range')})", "restarts", instant=True),
            unit=p.NONE,
            description=(
                "Container restarts of this pod in the dashboard's time range. Any restart: read the termination "
                "reason below. OOMKilled is host RAM (raise the memory limit); Error with 'CUDA out of memory' in "
                "the previous log is GPU VRAM."
            ),
            thresholds=p.steps("green", (1, "red")),
            background=True,
            decimals=0,
            links=marks.runbooks(cfg, "VLLMContainerOOMKilled", "VLLMContainerRestarted"),
        ),
    ]


def annotations(cfg: ObspackConfig) -> list[dict[str, object]]:
    """Events of the selected pod on every graph's time axis: restarts, OOM kills, firing alerts, rollouts."""
    return [
        p.annotation(
            "OOM kills",
            q.oom_kill_events(cfg),
            title="{{container}} OOM-killed",
            text="The kernel killed the container at its memory limit (host RAM, exit code 137).",
            color="red",
            tags=("container",),
        ),
        p.annotation(
            "Restarts",
            q.other_restart_events(cfg),
            title="{{container}} restarted",
            text="Last termination reason: {{reason}}. Error: look for CUDA out of memory in the previous log.",
            color="orange",
            tags=("container", "reason"),
        ),
        p.annotation(
            "Firing alerts",
            q.pod_firing_alerts(cfg),
            title="{{alertname}} ({{severity}})",
            text="obspack alert firing on this pod {{container}} {{gpu}}",
            color="yellow",
            tags=("alertname", "severity"),
        ),
        p.annotation(
            "Rollouts",
            q.rollout_times(cfg),
            title="Rollout: {{replicaset}}",
            text="A new ReplicaSet of Deployment {{owner_name}}, the pod's owner.",
            color="blue",
            tags=("owner_name",),
            value_is_time=True,
        ),
        p.annotation(
            "Images on this pod",
            q.pod_image_events(cfg),
            title="{{container}} runs {{image}}",
            text="The pod started, or a rollout that kept its name (a StatefulSet) changed its image.",
            color="purple",
            tags=("container",),
        ),
    ]


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    a = cfg.alerts
    host_ratio = a.VLLMHostMemoryNearLimit.ratio
    gpu_ratio = a.VLLMGPUMemoryNearFull.ratio
    kv_high, kv_critical = a.VLLMKVCacheUsageHigh.ratio, a.VLLMKVCacheUsageCritical.ratio
    # the alert lines, scale and runbook links of a ratio panel, shared by the pod's and its engines' or
    # workers' panels of the same plane
    kv_lines = {
        **marks.dashed(
            cfg, "green", ("VLLMKVCacheUsageHigh", kv_high, "orange"), ("VLLMKVCacheUsageCritical", kv_critical, "red")
        ),
        "soft_max": 1,
        "links": marks.runbooks(cfg, "VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical"),
    }
    host_lines = {
        **marks.dashed(cfg, "green", ("VLLMHostMemoryNearLimit", host_ratio, "red")),
        "soft_max": 1,
        "links": marks.runbooks(cfg, "VLLMHostMemoryNearLimit"),
    }
    gpu_lines = {
        **marks.dashed(cfg, "green", ("VLLMGPUMemoryNearFull", gpu_ratio, "red")),
        "soft_max": 1,
        "links": marks.runbooks(cfg, "VLLMGPUMemoryNearFull"),
    }
    panels = [
        *_stats(cfg),
        p.table(
            "Firing obspack alerts on this pod",
            p.target(q.pod_firing_alerts(cfg), instant=True, table=True),
            p.target(q.pod_alerts_since(cfg), instant=True, table=True),
            description=(
                "obspack's alerts firing now on this pod (their marks on the graphs show when each fired). "
                "Open each alert's runbook from the notification, or from the links of the panels below; "
                "empty when nothing fires."
            ),
            columns=[p.column("B", "Firing since", p.DATE_TIME)],
            hide=["Value #A"],
            h=5,
        ),
        p.section("Host memory (RAM)"),
        p.timeseries(
            "Container memory: working set, request, limit",
            p.target(
                q.max_by(cfg, c.MEMORY_WORKING_SET, *CONTAINER, variables=q.POD), "{{container}} working set"
            ),
            p.target(q.memory_request(cfg), "{{container}} request"),
            p.target(q.max_by(cfg, c.MEMORY_LIMIT, *CONTAINER, variables=q.POD), "{{container}} limit"),
            unit=p.BYTES,
            description=(
                "cAdvisor working set of each vLLM container against its kube-state-metrics request and limit "
                "(dashed). The kernel OOM-kills the container when the working set reaches the limit. If it "
                "climbs steadily, look for CPU KV offload, --swap-space, or a leak; raise the limit or restart "
                "before it gets there."
            ),
            overrides=[_dashed("/request|limit/")],
            links=marks.runbooks(cfg, "VLLMHostMemoryNearLimit"),
        ),
        p.timeseries(
            "Container memory: working set / limit",
            p.target(q.max_by(cfg, c.MEMORY_LIMIT_RATIO, *CONTAINER, variables=q.POD), "{{container}}"),
            unit=p.PERCENT_UNIT,
            description=(
                "Working set over the memory limit."
                + marks.lines_note(cfg, ("VLLMHostMemoryNearLimit", f"{percent(host_ratio)}"))
                + " At 100% the container is OOM-killed. Empty when the container has no memory limit."
            ),
            **host_lines,
        ),
        p.timeseries(
            "Container restarts",
            p.target(q.restarts_per_step(cfg), "{{container}} restarts"),
            unit=p.SHORT,
            description=(
                "Bars: restarts per interval of each container of the pod (the red and orange marks on every "
                "graph are the same restarts). The table beside it says how each container last stopped: "
                "OOMKilled is host RAM over the limit (raise it); Error is a crash, often CUDA out of memory "
                "(GPU plane: see below and the previous container's log)."
            ),
            thresholds=p.steps("green", (1, "red")),
            bars=True,
            h=6,
            links=marks.runbooks(cfg, "VLLMContainerOOMKilled", "VLLMContainerRestarted"),
        ),
        p.table(
            "Last termination: reason, exit code, time",
            p.target(q.last_termination(cfg), instant=True, table=True),
            p.target(q.last_termination_field(cfg, "exitcode"), instant=True, table=True),
            p.target(q.last_termination_field(cfg, "timestamp", scale=1000), instant=True, table=True),
            description=(
                "How each container of the pod stopped the last time, as kube-state-metrics reports it (empty "
                "until a container terminated). OOMKilled with exit code 137: the kernel killed it at its "
                "memory limit (host RAM). Error with exit code 1: the process crashed; look for 'CUDA out of "
                "memory' in `kubectl logs --previous`. Exit code and time need kube-state-metrics 2.10 or later."
            ),
            columns=[
                p.column("B", "Exit code", p.NONE, p.above(None, 1)),
                p.column("C", "Terminated at", p.DATE_TIME),
            ],
            hide=["Value #A"],
            w=12,
            h=6,
            links=marks.runbooks(cfg, "VLLMContainerOOMKilled", "VLLMContainerRestarted"),
        ),
        p.section("GPU memory (VRAM)"),
        p.timeseries(
            "GPU framebuffer per GPU: used, free, total",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_FB_USED", scale=MIB), f"{GPU_LEGEND} used"),
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_FB_FREE", scale=MIB), f"{GPU_LEGEND} free"),
            p.target(q.gpu_framebuffer_total(cfg), f"{GPU_LEGEND} total"),
            unit=p.BYTES,
            description=(
                "DCGM framebuffer of each GPU the pod holds (either DCGM label mode). vLLM takes "
                "--gpu-memory-utilization of each GPU at start and keeps it; a rise after start is PyTorch or "
                "NCCL allocating outside the KV cache. If free memory nears zero, lower --gpu-memory-utilization "
                "or max_num_seqs."
            ),
            overrides=[_dashed("/total/")],
            links=marks.runbooks(cfg, "VLLMGPUMemoryNearFull"),
        ),
        p.timeseries(
            "GPU framebuffer used / total",
            p.target(q.gpu_framebuffer_ratio(cfg), GPU_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Framebuffer used per GPU."
                + marks.lines_note(cfg, ("VLLMGPUMemoryNearFull", f"{percent(gpu_ratio)}"))
                + " Around the configured --gpu-memory-utilization is normal; above "
                f"{percent(gpu_ratio)}, CUDA out-of-memory errors follow."
            ),
            **gpu_lines,
        ),
        p.timeseries(
            "CUDA allocator: reserved, allocated, inactive split",
            p.target(
                f"max by (device, pid) ({q.exporter(cfg, 'obspack_cuda_allocator_reserved_bytes', q.POD)})",
                f"{CUDA_LEGEND} reserved",
            ),
            p.target(
                f"max by (device, pid) ({q.exporter(cfg, 'obspack_cuda_allocator_allocated_bytes', q.POD)})",
                f"{CUDA_LEGEND} allocated",
            ),
            p.target(
                f"max by (device, pid) ({q.exporter(cfg, 'obspack_cuda_allocator_inactive_split_bytes', q.POD)})",
                f"{CUDA_LEGEND} inactive split",
            ),
            unit=p.BYTES,
            description=(
                "PyTorch's caching allocator per process and device (obspack probe). Reserved minus allocated is "
                "cached memory; inactive split is fragmented memory only small tensors fit. A growing gap with "
                "retries below means the next large allocation may fail: set expandable_segments."
            ),
            overrides=[_dashed("/reserved/")],
        ),
        p.timeseries(
            "CUDA allocator: fragmentation, retries, OOMs",
            p.target(
                f"max by (device, pid) ({q.exporter(cfg, 'obspack_cuda_allocator_fragmentation_ratio', q.POD)})",
                f"{CUDA_LEGEND} fragmentation",
            ),
            p.target(
                q.per_step(cfg, "sum", ("device",), q.exporter(cfg, "obspack_cuda_alloc_retries_total", q.POD)),
                "device {{device}} alloc retries",
            ),
            p.target(
                q.per_step(cfg, "sum", ("device",), q.exporter(cfg, "obspack_cuda_ooms_total", q.POD)),
                "device {{device}} CUDA OOMs",
            ),
            unit=p.PERCENT_UNIT,
            description=(
                "Fragmentation ratio: the share of the memory PyTorch holds unused that is in split blocks (a "
                "cache just emptied shows 100% of a few MiB; the bytes are in the panel before). With allocator "
                "retries and CUDA OOMs per interval (right axis, counts)."
                + marks.lines_note(
                    cfg, ("VLLMCUDAAllocatorFragmentationHigh", f"{percent(a.VLLMCUDAAllocatorFragmentationHigh.ratio)}")
                )
                + " Retries mean the allocator flushed its cache to satisfy a request; OOMs mean it failed. "
                "Either: restart with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
            ),
            **marks.dashed(cfg, "green", ("VLLMCUDAAllocatorFragmentationHigh", a.VLLMCUDAAllocatorFragmentationHigh.ratio, "red")),
            overrides=[
                {
                    "matcher": {"id": "byRegexp", "options": "/retries|OOMs/"},
                    "properties": [
                        {"id": "unit", "value": p.SHORT},
                        {"id": "custom.axisPlacement", "value": "right"},
                        {"id": "custom.drawStyle", "value": "bars"},
                    ],
                }
            ],
            links=marks.runbooks(cfg, "VLLMCUDAAllocatorFragmentationHigh"),
        ),
        p.section("KV cache and queue"),
        p.timeseries(
            "KV cache usage",
            p.target(q.max_by(cfg, c.KV_USAGE, "model_name"), "{{model_name}}"),
            unit=p.PERCENT_UNIT,
            description=(
                "Share of KV blocks in use."
                + marks.lines_note(
                    cfg, ("VLLMKVCacheUsageHigh", f"{percent(kv_high)}"), ("VLLMKVCacheUsageCritical", f"{percent(kv_critical)}")
                )
                + " When full, requests wait and running ones are preempted: lower max_num_seqs or "
                "max_model_len, or scale out."
            ),
            **kv_lines,
            w=8,
        ),
        p.timeseries(
            "Requests running and waiting",
            p.target(q.sum_by(cfg, c.RUNNING, "model_name"), "running {{model_name}}"),
            p.target(q.sum_by(cfg, c.WAITING, "model_name"), "waiting {{model_name}}"),
            unit=p.SHORT,
            description=(
                "Requests in the batch and in the queue. Waiting while KV usage is high: the cache is the limit. "
                "Waiting while KV usage is low: the batch (max_num_seqs) or the engine is the limit; zero running "
                "with waiting requests is a stuck engine."
            ),
            w=8,
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
        ),
        p.timeseries(
            "Preemptions per second",
            p.target(q.sum_by(cfg, c.PREEMPTION_RATE, "model_name"), "{{model_name}}"),
            unit=p.PER_SECOND,
            description=(
                "Requests preempted per second to free KV blocks. Sustained preemption wastes compute on "
                "recomputation: the KV cache is too small for this load."
            ),
            thresholds=p.above(None, max(a.VLLMRequestPreemptions.rate, 1e-9)),
            w=8,
            links=marks.runbooks(cfg, "VLLMRequestPreemptions"),
        ),
        p.section("Data-parallel engines (this pod)"),
        p.timeseries(
            "KV cache usage per engine",
            p.target(q.per_engine(cfg, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), "engine {{engine}}"),
            unit=p.PERCENT_UNIT,
            description=(
                "Each data-parallel engine (--data-parallel-size) has its own KV cache. One engine far above "
                "the others is uneven placement inside the pod; the KV alerts then name that engine. One line "
                "for a single-engine pod."
            ),
            **kv_lines,
            w=8,
        ),
        p.timeseries(
            "Requests running and waiting per engine",
            p.target(q.per_engine(cfg, "vllm:num_requests_running"), "running engine {{engine}}"),
            p.target(q.per_engine(cfg, "vllm:num_requests_waiting"), "waiting engine {{engine}}"),
            unit=p.SHORT,
            description=(
                "Each engine's batch and queue. Requests stay on the engine the API server placed them on: a "
                "queue that grows on one engine while its siblings keep up is that engine's problem."
            ),
            w=8,
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
        ),
        p.timeseries(
            "Generated tokens per second per engine",
            p.target(q.engine_tokens_rate(cfg), "engine {{engine}}"),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "An engine at zero while it has requests running or waiting is hung, even when its siblings "
                "keep the pod's total up" + marks.say(cfg, "VLLMZeroThroughput", " (VLLMZeroThroughput names it)")
                + ". vLLM cannot restart one engine: restart the pod."
            ),
            w=8,
            links=marks.runbooks(cfg, "VLLMZeroThroughput"),
        ),
        p.section("This pod and the LeaderWorkerSet workers it leads"),
        p.timeseries(
            "Leader and workers: container memory working set / limit",
            p.target(q.lws_group_of_pod(cfg, c.MEMORY_LIMIT_RATIO, "pod", "container"), "{{pod}} {{container}}"),
            unit=p.PERCENT_UNIT,
            description=(
                "Host RAM of this pod and of the LeaderWorkerSet workers it leads (a multi-node engine: the "
                "workers hold GPUs and memory, only the leader serves vLLM's metrics). A pod that leads no "
                "workers shows only itself."
                + marks.lines_note(cfg, ("VLLMHostMemoryNearLimit", f"{percent(host_ratio)}"))
            ),
            **host_lines,
        ),
        p.timeseries(
            "Leader and workers: fullest GPU framebuffer used / total",
            p.target(q.lws_group_of_pod(cfg, c.POD_GPU_FB_RATIO_MAX, "pod"), "{{pod}}"),
            unit=p.PERCENT_UNIT,
            description=(
                "The fullest GPU of this pod and of each LeaderWorkerSet worker it leads."
                + marks.lines_note(cfg, ("VLLMGPUMemoryNearFull", f"{percent(gpu_ratio)}"))
                + " A worker far above the leader's GPUs allocates outside the KV cache (NCCL, a leak)."
            ),
            **gpu_lines,
        ),
        p.section("Latency and throughput (this pod)"),
        p.timeseries(
            "Time to first token and inter-token latency",
            p.target(q.pod_latency_quantile(cfg, "time_to_first_token", 0.5), "TTFT p50"),
            p.target(q.pod_latency_quantile(cfg, "time_to_first_token", 0.99), "TTFT p99"),
            p.target(q.pod_latency_quantile(cfg, "inter_token_latency", 0.5), "ITL p50"),
            p.target(q.pod_latency_quantile(cfg, "inter_token_latency", 0.99), "ITL p99"),
            unit=p.SECONDS,
            description=(
                "This pod's latency from its own histograms. TTFT rising with the queue means admission waits "
                "for KV cache; ITL rising means a bigger batch or preemptions. Compare with the fleet dashboard "
                "to tell a bad pod from a busy model."
            ),
        ),
        p.timeseries(
            "Tokens per second",
            p.target(q.sum_by(cfg, c.PROMPT_RATE, "model_name"), "prompt {{model_name}}"),
            p.target(q.sum_by(cfg, c.GENERATION_RATE, "model_name"), "generation {{model_name}}"),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Prompt and generated tokens per second. Generation at zero with requests running is a stuck "
                "engine" + marks.say(cfg, "VLLMZeroThroughput", " (VLLMZeroThroughput)")
                + ": save the logs and restart the pod."
            ),
            links=marks.runbooks(cfg, "VLLMZeroThroughput"),
        ),
    ]
    page = dashboard(
        cfg,
        NAME,
        description=(
            "Triage one vLLM pod: host RAM, GPU VRAM, KV cache and queue on one time axis, with its restarts, "
            "OOM kills, firing alerts and rollouts marked on it. The top row says which plane is closest to "
            "its limit."
        ),
        variables=variables.one_pod(cfg),
        panels=panels,
    )
    return attr.evolve(page, annotations=Annotations(list=annotations(cfg)))
