"""GPU / by workload: DCGM fields per GPU, each labelled with the namespace, pod and model holding it.

Every panel reads the per-GPU records of obspack/rules/recording/dcgm.py: the DCGM label modes are
normalised and the model joined once per rule evaluation, not per panel and step, and GPUs no vLLM pod
holds are already left out. Graphs per GPU draw the 20 highest (or lowest) GPUs at each step, so a
fleet of thousands of GPUs stays readable and light; a table lists every GPU."""

from __future__ import annotations

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards import variables
from obspack.dashboards.defaults import dashboard, runbook_link, triage_from_row, triage_from_series

NAME = "gpu-by-workload"
LEGEND = "{{Hostname}} GPU {{gpu}} {{namespace}}/{{pod}}"
# NVIDIA's reference dashboard colours GPU temperature from these (datacenter GPUs slow down near 85-90 C).
TEMP_WARNING = 83
TEMP_CRITICAL = 87
TOP_NOTE = f"With more than {q.TOP} GPUs selected, the {q.TOP} {{}} at each step are drawn; the table lists all."


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    gpu_ratio = cfg.alerts.VLLMGPUMemoryNearFull.ratio
    series_links = [triage_from_series(cfg)]
    vram_runbook = [runbook_link(cfg, "vllm-gpu-memory-near-full", "GPU memory near full")]
    panels = [
        p.stat(
            "GPUs held by vLLM",
            p.target(f"count({q.rec(cfg, c.WORKLOAD_GPU_FB_USED)})", "GPUs"),
            unit=p.NONE,
            description=(
                "GPUs that DCGM attributes to a vLLM pod in the selection. Fewer than the pods requested "
                "(kube-state-metrics resource nvidia_com_gpu) means dcgm-exporter cannot map pods: check its "
                "kubelet pod-resources socket mount and --kubernetes-gpu-id-type."
            ),
            thresholds=p.steps("red", (1, "green")),
        ),
        p.stat(
            "Mean GPU utilisation",
            p.target(q.total(cfg, c.GPU_UTILIZATION, "avg"), "mean"),
            unit=p.PERCENT,
            description=(
                "Mean DCGM GPU utilisation over the selected GPUs. Low utilisation with a request queue means "
                "the engines are not the bottleneck (tokenisation, network, or a stuck engine)."
            ),
            thresholds=p.NEUTRAL,
            decimals=0,
        ),
        p.stat(
            "Highest framebuffer used",
            p.target(q.total(cfg, c.WORKLOAD_GPU_FB_RATIO, "max"), "max"),
            unit=p.PERCENT_UNIT,
            description=(
                "The fullest GPU's framebuffer. About --gpu-memory-utilization (0.9) is normal for vLLM; red from "
                f"{gpu_ratio:.0%} (VLLMGPUMemoryNearFull): CUDA out-of-memory errors follow."
            ),
            thresholds=p.above(None, gpu_ratio),
            decimals=1,
            links=vram_runbook,
        ),
        p.stat(
            "Hottest GPU",
            p.target(q.total(cfg, c.GPU_TEMPERATURE, "max"), "max"),
            unit=p.CELSIUS,
            description=(
                f"Highest GPU temperature. Orange from {TEMP_WARNING} C, red from {TEMP_CRITICAL} C: the GPU "
                "throttles its clocks and latency rises. Check the node's cooling and fan or chassis alarms."
            ),
            thresholds=p.above(TEMP_WARNING, TEMP_CRITICAL),
            decimals=0,
        ),
        p.stat(
            "Total power",
            p.target(q.total(cfg, c.GPU_POWER), "power"),
            unit=p.WATT,
            description=(
                "Power drawn by the selected GPUs. A drop while requests are queued means GPUs idle or throttle; "
                "compare with utilisation and clocks."
            ),
            thresholds=p.NEUTRAL,
            decimals=0,
        ),
        p.stat(
            "GPUs with an XID error",
            p.target(f"count({q.rec(cfg, c.GPU_XID)} > 0) or vector(0)", "GPUs"),
            unit=p.NONE,
            description=(
                "GPUs whose last XID error code is not zero. XID 48, 63, 64, 74, 79, 94, 95 are hardware or "
                "driver faults: cordon the node, drain its pods and open a hardware ticket."
            ),
            thresholds=p.steps("green", (1, "red")),
        ),
        p.section("Inventory"),
        p.table(
            "GPUs and the workloads holding them",
            p.target(q.gpu_row(cfg, c.GPU_UTILIZATION), instant=True, table=True),
            p.target(q.gpu_row(cfg, c.WORKLOAD_GPU_FB_RATIO), instant=True, table=True),
            p.target(q.gpu_row(cfg, c.GPU_TEMPERATURE), instant=True, table=True),
            p.target(q.gpu_row(cfg, c.GPU_POWER), instant=True, table=True),
            p.target(q.gpu_row(cfg, c.GPU_XID), instant=True, table=True),
            description=(
                "One row per GPU: node, index, UUID, GPU model, and the namespace, pod and served model holding "
                "it. Click a row to open that pod's triage page. Red cells are over the alert or hardware limits."
            ),
            columns=[
                p.column("A", "Utilisation", p.PERCENT),
                p.column("B", "Framebuffer used", p.PERCENT_UNIT, p.above(None, gpu_ratio)),
                p.column("C", "Temperature", p.CELSIUS, p.above(TEMP_WARNING, TEMP_CRITICAL)),
                p.column("D", "Power", p.WATT),
                p.column("E", "Last XID", p.NONE, p.steps("green", (1, "red"))),
            ],
            row_links=[triage_from_row(cfg)],
            h=9,
        ),
        p.section("Per GPU"),
        p.timeseries(
            "GPU utilisation",
            p.target(q.extremes(q.rec(cfg, c.GPU_UTILIZATION), lowest=True), LEGEND),
            unit=p.PERCENT,
            description=(
                "Share of time a kernel ran on the GPU (DCGM_FI_DEV_GPU_UTIL, coarse). A GPU of a busy model "
                "near zero points at a stuck engine or broken routing: open the pod's triage page. "
                + TOP_NOTE.format("least busy")
            ),
            soft_max=100,
            data_links=series_links,
        ),
        p.timeseries(
            "SM activity",
            p.target(q.extremes(q.rec(cfg, c.GPU_SM_ACTIVE), lowest=True), LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Share of time streaming multiprocessors were busy (DCGM profiling: SM_ACTIVE where enabled, "
                "else GR_ENGINE_ACTIVE). Much lower than utilisation means small batches: raise max_num_seqs or "
                "consolidate replicas. Empty on GPUs without profiling support. " + TOP_NOTE.format("least busy")
            ),
            soft_max=1,
            data_links=series_links,
        ),
        p.timeseries(
            "Framebuffer used and total",
            p.target(q.extremes(q.rec(cfg, c.WORKLOAD_GPU_FB_USED)), f"{LEGEND} used"),
            p.target(q.total(cfg, c.WORKLOAD_GPU_FB_TOTAL, "max"), "largest GPU total"),
            unit=p.BYTES,
            description=(
                "DCGM framebuffer used per GPU against the largest selected GPU's size (used + free). vLLM "
                "reserves its share at start; used rising later is memory outside the KV cache (CUDA graphs, "
                "NCCL, PyTorch): watch for CUDA OOM. " + TOP_NOTE.format("fullest")
            ),
            overrides=[
                {
                    "matcher": {"id": "byRegexp", "options": "/total/"},
                    "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}],
                }
            ],
            links=vram_runbook,
            data_links=series_links,
        ),
        p.timeseries(
            "Framebuffer used / total",
            p.target(q.extremes(q.rec(cfg, c.WORKLOAD_GPU_FB_RATIO)), LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                f"Framebuffer used per GPU. Dashed line: VLLMGPUMemoryNearFull ({gpu_ratio:.0%}). A GPU above it "
                "will fail its next large allocation: lower --gpu-memory-utilization on that pod. "
                + TOP_NOTE.format("fullest")
            ),
            thresholds=p.above(None, gpu_ratio),
            draw_thresholds=True,
            soft_max=1,
            links=vram_runbook,
            data_links=series_links,
        ),
        p.timeseries(
            "Temperature",
            p.target(q.extremes(q.rec(cfg, c.GPU_TEMPERATURE)), LEGEND),
            unit=p.CELSIUS,
            description=(
                f"GPU temperature. Dashed lines at {TEMP_WARNING} C and {TEMP_CRITICAL} C, where datacenter GPUs "
                "start to throttle. One hot GPU: node cooling; all GPUs of a node: the chassis. "
                + TOP_NOTE.format("hottest")
            ),
            thresholds=p.above(TEMP_WARNING, TEMP_CRITICAL),
            draw_thresholds=True,
            w=8,
            data_links=series_links,
        ),
        p.timeseries(
            "Power",
            p.target(q.extremes(q.rec(cfg, c.GPU_POWER)), LEGEND),
            unit=p.WATT,
            description=(
                "GPU power draw. Flat at the power limit while latency rises means power capping; far below "
                "peers on the same model means the GPU idles. " + TOP_NOTE.format("most power-hungry")
            ),
            w=8,
            data_links=series_links,
        ),
        p.timeseries(
            "XID errors (last code)",
            p.target(q.extremes(q.rec(cfg, c.GPU_XID)), LEGEND),
            unit=p.NONE,
            description=(
                "The last XID error code DCGM saw per GPU (0: none). A non-zero code is a driver or hardware "
                "event: look it up in NVIDIA's XID catalogue, then cordon and drain the node for hardware XIDs. "
                + TOP_NOTE.format("highest codes")
            ),
            thresholds=p.steps("green", (1, "red")),
            draw_thresholds=True,
            w=8,
            data_links=series_links,
        ),
    ]
    return dashboard(
        cfg,
        NAME,
        description="DCGM GPU fields per GPU, labelled with the namespace, pod and model that holds each GPU.",
        variables=variables.fleet(cfg),
        panels=panels,
    )
