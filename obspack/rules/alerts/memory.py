"""The two memory planes: host RAM (cgroup limit, OOMKilled) and GPU VRAM (framebuffer)."""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.model import AlertRule
from obspack.rules.recording import dcgm

CONTAINER = ("namespace", "pod", "container")


def _restarted(cfg: ObspackConfig, window: str) -> str:
    """Containers whose restart count went up within the window (KSM replicas deduplicated)."""
    ksm = c.selector(cfg.selectors.kube_state_metrics)
    on = c.by(cfg, *CONTAINER)
    return f"max by ({on}) (increase(kube_pod_container_status_restarts_total{ksm}[{window}])) > 0"


def host_memory_near_limit(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMHostMemoryNearLimit
    return AlertRule(
        alert="VLLMHostMemoryNearLimit",
        expr=f"{c.MEMORY_LIMIT_RATIO} > {t.ratio}",
        for_=t.for_,
        severity=t.severity,
        summary="vLLM container host memory is close to its limit; the kernel will OOM-kill it (exit 137).",
        description=(
            "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} uses "
            "{{ $value | humanizePercentage }} of its memory limit (host RAM, not GPU memory)."
        ),
        runbook="vllm-host-memory-near-limit",
        triage="kubectl -n {{ $labels.namespace }} top pod {{ $labels.pod }} --containers",
    )


def container_oom_killed(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMContainerOOMKilled
    on = c.by(cfg, *CONTAINER)
    ksm = c.selector(cfg.selectors.kube_state_metrics, 'reason="OOMKilled"')
    # The last-terminated reason is sticky (it stays until the next termination), so it only counts
    # together with a fresh restart. A CUDA out-of-memory crash ends with reason Error, not OOMKilled.
    return AlertRule(
        alert="VLLMContainerOOMKilled",
        expr=f"""
            max by ({on}) (kube_pod_container_status_last_terminated_reason{ksm}) == 1
            and on ({on})
            ({_restarted(cfg, t.window)})
            and on ({on})
            {c.VLLM_CONTAINER}
        """,
        for_=t.for_,
        severity=t.severity,
        summary="vLLM container was OOM-killed by the kernel for exceeding its host memory limit.",
        description=(
            "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} restarted after "
            "the kernel killed it for host RAM over its cgroup limit (OOMKilled, exit 137). "
            "This is the host-memory plane, not a CUDA out-of-memory error."
        ),
        runbook="vllm-container-oom-killed",
        triage=(
            "kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o jsonpath="
            "'{.status.containerStatuses[?(@.name==\"{{ $labels.container }}\")].lastState.terminated}'"
        ),
    )


def container_restarted(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMContainerRestarted
    on = c.by(cfg, *CONTAINER)
    ksm = c.selector(cfg.selectors.kube_state_metrics, 'reason!="OOMKilled"')
    return AlertRule(
        alert="VLLMContainerRestarted",
        expr=f"""
            max by ({on}, reason) (kube_pod_container_status_last_terminated_reason{ksm}) == 1
            and on ({on})
            ({_restarted(cfg, t.window)})
            and on ({on})
            {c.VLLM_CONTAINER}
        """,
        for_=t.for_,
        severity=t.severity,
        summary="vLLM container restarted for a reason other than the kernel OOM killer.",
        description=(
            "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} restarted; its last "
            "termination reason is {{ $labels.reason }}. With reason Error, look for 'CUDA out of memory' in "
            "the previous container's log (GPU memory plane)."
        ),
        runbook="vllm-container-restarted",
        triage=(
            "kubectl -n {{ $labels.namespace }} logs {{ $labels.pod }} -c {{ $labels.container }} --previous "
            "| grep -iE 'out of memory|OutOfMemoryError|CUDA error|NCCL|EngineDeadError|Traceback' | tail -20"
        ),
    )


def gpu_memory_near_full(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMGPUMemoryNearFull
    # vLLM preallocates --gpu-memory-utilization (0.9 by default) of each GPU at start, so ~90% is normal.
    # Raw DCGM series joined on the exporter key to the attribution record: one rule-group hop from raw.
    # The threshold before the join, which then copies the holder onto the few full GPUs instead of every
    # GPU of the fleet (a fifth less work at 8,000 GPUs; the same alerts, as max by > r holds where some
    # GPU of the group is above r).
    per_gpu = dcgm.held(cfg, f"{dcgm.framebuffer_ratio(cfg)} > {t.ratio}", dcgm.GPU_LABELS)
    return AlertRule(
        alert="VLLMGPUMemoryNearFull",
        expr=f"max by ({c.by(cfg, *dcgm.GPU_LABELS)}) (\n{textwrap.indent(per_gpu, '  ')}\n)",
        for_=t.for_,
        severity=t.severity,
        summary="GPU memory held by a vLLM pod is almost full; the next allocation may fail with CUDA OOM.",
        description=(
            "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.Hostname }}, used by "
            "{{ $labels.namespace }}/{{ $labels.pod }}, has {{ $value | humanizePercentage }} of its "
            "framebuffer in use (GPU VRAM plane)."
        ),
        runbook="vllm-gpu-memory-near-full",
        triage=(
            "kubectl -n {{ $labels.namespace }} exec {{ $labels.pod }} -- nvidia-smi "
            "--query-gpu=index,uuid,memory.used,memory.total --format=csv"
        ),
    )


ALERTS = (host_memory_near_limit, container_oom_killed, container_restarted, gpu_memory_near_full)
