"""GPU / by workload: the GPUs vLLM pods hold, fleet-wide per pod, and GPU by GPU for one pod.

Fleet-wide panels (stats, the pod table, the per-pod graphs) follow the cluster, namespace and model
variables and read the per-pod summaries of obspack/rules/recording/dcgm.py: one series per pod, so a
fleet of thousands of GPUs stays light with everything at All. The per-GPU panels show the GPUs of the
one pod the `pod` variable picks: raw DCGM fields joined to the attribution record, read only from that
pod's dcgm-exporter. Click a series or a row to pick its pod."""

from __future__ import annotations

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import (
    dashboard,
    dashboard_path,
    triage_from_row,
    triage_from_series,
)
from obspack.numbers import percent
from obspack.rules.recording import dcgm

NAME = "gpu-by-workload"
POD_LEGEND = "{{namespace}}/{{pod}}"
GPU_LEGEND = "GPU {{gpu}} {{Hostname}}"
# NVIDIA's reference dashboard colours GPU temperature from these (datacenter GPUs slow down near 85-90 C).
TEMP_WARNING = 83
TEMP_CRITICAL = 87
TOP_NOTE = f"With more than {q.TOP} pods selected, the {q.TOP} {{}} at each step are drawn; the table lists all."
ONE_POD = "GPUs of the pod picked in the Pod variable (click a pod in the panels above to pick it). "


def _fleet(cfg: ObspackConfig, record: str) -> str:
    return q.rec(cfg, record, q.FLEET)


def _pick_pod(cfg: ObspackConfig, field: str) -> dict[str, object]:
    """A data link that keeps this page and picks the pod of the clicked series or row."""
    fields = "&".join(
        f"var-{var}=${{{field}.{label}}}"
        for var, label in (("cluster", cfg.cluster_label), ("namespace", "namespace"), ("pod", "pod"))
    )
    return {
        "title": "Show this pod's GPUs",
        "url": f"{dashboard_path(NAME)}?var-datasource=${{datasource}}&var-model=$__all&{fields}&${{__url_time_range}}",
    }


def _stats(cfg: ObspackConfig, gpu_ratio: float, vram_runbook: list[dict[str, object]]) -> list[p.Panel]:
    return [
        p.stat(
            "GPUs held by vLLM",
            p.target(f"sum({_fleet(cfg, c.POD_GPU_COUNT)})", "GPUs"),
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
            p.target(q.mean_gpu_utilization(cfg), "mean"),
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
            p.target(f"max({_fleet(cfg, c.POD_GPU_FB_RATIO_MAX)})", "max"),
            unit=p.PERCENT_UNIT,
            description=(
                "The fullest GPU's framebuffer. About --gpu-memory-utilization (0.9) is normal for vLLM; red from "
                f"{percent(gpu_ratio)}" + marks.say(cfg, "VLLMGPUMemoryNearFull", " (VLLMGPUMemoryNearFull)")
                + ": CUDA out-of-memory errors follow."
            ),
            thresholds=p.above(None, gpu_ratio),
            decimals=1,
            links=vram_runbook,
        ),
        p.stat(
            "Hottest GPU",
            p.target(f"max({_fleet(cfg, c.POD_GPU_TEMPERATURE)})", "max"),
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
            p.target(f"sum({_fleet(cfg, c.POD_GPU_POWER)})", "power"),
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
            p.target(f"sum({_fleet(cfg, c.POD_GPU_XID_COUNT)})", "GPUs"),
            unit=p.NONE,
            description=(
                "GPUs whose last XID error code is not zero. XID 48, 63, 64, 74, 79, 94, 95 are hardware or "
                "driver faults: cordon the node, drain its pods and open a hardware ticket."
            ),
            thresholds=p.steps("green", (1, "red")),
        ),
    ]


def _pods(cfg: ObspackConfig, gpu_ratio: float, vram_runbook: list[dict[str, object]]) -> list[p.Panel]:
    pick = [_pick_pod(cfg, "__field.labels"), triage_from_series(cfg)]
    table_columns = (
        ("A", c.POD_GPU_COUNT, "GPUs", p.NONE, None),
        ("B", c.POD_GPU_UTILIZATION, "Utilisation (mean)", p.PERCENT, None),
        ("C", c.POD_GPU_FB_RATIO_MAX, "Framebuffer used (fullest)", p.PERCENT_UNIT, p.above(None, gpu_ratio)),
        ("D", c.POD_GPU_TEMPERATURE, "Temperature (hottest)", p.CELSIUS, p.above(TEMP_WARNING, TEMP_CRITICAL)),
        ("E", c.POD_GPU_POWER, "Power", p.WATT, None),
        ("F", c.POD_GPU_XID_COUNT, "GPUs with XID", p.NONE, p.steps("green", (1, "red"))),
    )
    return [
        p.section("Pods"),
        p.table(
            "vLLM pods and their GPUs",
            *(
                p.target(q.max_by(cfg, record, "namespace", "pod", "model_name", variables=q.FLEET), instant=True, table=True)
                for _, record, *_ in table_columns
            ),
            description=(
                "One row per vLLM pod: its GPUs, their mean utilisation, the fullest framebuffer, the hottest "
                "GPU, power and GPUs with an XID error. Sort a column to find the pod to look at; click a row "
                "to show its GPUs below or open its triage page. Red cells are over the alert or hardware limits."
            ),
            columns=[p.column(ref, title, unit, steps) for ref, _, title, unit, steps in table_columns],
            row_links=[_pick_pod(cfg, "__data.fields"), triage_from_row(cfg)],
            h=9,
        ),
        p.timeseries(
            "GPU utilisation per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_UTILIZATION), lowest=True), POD_LEGEND),
            unit=p.PERCENT,
            description=(
                "Mean share of time a kernel ran on the pod's GPUs (DCGM_FI_DEV_GPU_UTIL, coarse). A busy model "
                "near zero points at a stuck engine or broken routing. " + TOP_NOTE.format("least busy")
            ),
            soft_max=100,
            data_links=pick,
        ),
        p.timeseries(
            "SM activity per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_SM_ACTIVE), lowest=True), POD_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Mean share of time streaming multiprocessors were busy (DCGM profiling: SM_ACTIVE where enabled, "
                "else GR_ENGINE_ACTIVE). Much lower than utilisation means small batches: raise max_num_seqs or "
                "consolidate replicas. Empty on GPUs without profiling support. " + TOP_NOTE.format("least busy")
            ),
            soft_max=1,
            data_links=pick,
        ),
        p.timeseries(
            "Fullest GPU framebuffer per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_FB_RATIO_MAX)), POD_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Framebuffer used / total of each pod's fullest GPU."
                + marks.lines_note(cfg, ("VLLMGPUMemoryNearFull", f"{percent(gpu_ratio)}"))
                + f" About 90% is vLLM's own reservation; above {percent(gpu_ratio)} the next large allocation fails "
                "with CUDA OOM: lower --gpu-memory-utilization on that pod. " + TOP_NOTE.format("fullest")
            ),
            **marks.dashed(cfg, "green", ("VLLMGPUMemoryNearFull", gpu_ratio, "red")),
            soft_max=1,
            links=vram_runbook,
            data_links=pick,
        ),
        p.timeseries(
            "Hottest GPU per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_TEMPERATURE)), POD_LEGEND),
            unit=p.CELSIUS,
            description=(
                f"Temperature of each pod's hottest GPU. Dashed lines at {TEMP_WARNING} C and {TEMP_CRITICAL} C, "
                "where datacenter GPUs start to throttle. " + TOP_NOTE.format("hottest")
            ),
            thresholds=p.above(TEMP_WARNING, TEMP_CRITICAL),
            draw_thresholds=True,
            w=8,
            data_links=pick,
        ),
        p.timeseries(
            "GPU power per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_POWER)), POD_LEGEND),
            unit=p.WATT,
            description=(
                "Power drawn by each pod's GPUs together. Flat at the power limit while latency rises means "
                "power capping; far below peers serving the same model means the GPUs idle. "
                + TOP_NOTE.format("most power-hungry")
            ),
            w=8,
            data_links=pick,
        ),
        p.timeseries(
            "GPUs with an XID error per pod",
            p.target(q.extremes(_fleet(cfg, c.POD_GPU_XID_COUNT)), POD_LEGEND),
            unit=p.NONE,
            description=(
                "How many of the pod's GPUs report a non-zero last XID error code. Pick the pod to see the code "
                "of each GPU below; hardware XIDs mean cordon and drain the node. " + TOP_NOTE.format("highest")
            ),
            thresholds=p.steps("green", (1, "red")),
            draw_thresholds=True,
            w=8,
            data_links=pick,
        ),
    ]


def _one_pod(cfg: ObspackConfig, gpu_ratio: float, vram_runbook: list[dict[str, object]]) -> list[p.Panel]:
    triage = [triage_from_series(cfg)]
    return [
        p.section("GPUs of the selected pod"),
        p.timeseries(
            "GPU utilisation",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_GPU_UTIL"), GPU_LEGEND),
            unit=p.PERCENT,
            description=ONE_POD + "Share of time a kernel ran on each GPU. One GPU far below its peers in a "
            "tensor-parallel pod points at a straggler or a broken GPU.",
            soft_max=100,
            data_links=triage,
        ),
        p.timeseries(
            "SM activity",
            p.target(q.gpu_field(cfg, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), GPU_LEGEND),
            unit=p.PERCENT_UNIT,
            description=ONE_POD + "Share of time each GPU's streaming multiprocessors were busy (SM_ACTIVE, "
            "else GR_ENGINE_ACTIVE). Empty on GPUs without DCGM profiling.",
            soft_max=1,
            data_links=triage,
        ),
        p.timeseries(
            "Framebuffer used and total",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_FB_USED", scale=dcgm.MIB), f"{GPU_LEGEND} used"),
            p.target(q.gpu_framebuffer_total(cfg), f"{GPU_LEGEND} total"),
            unit=p.BYTES,
            description=ONE_POD + "Framebuffer used per GPU against its size (used + free, dashed). vLLM "
            "reserves its share at start; used rising later is memory outside the KV cache (CUDA graphs, NCCL, "
            "PyTorch): watch for CUDA OOM.",
            overrides=[
                {
                    "matcher": {"id": "byRegexp", "options": "/total/"},
                    "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}],
                }
            ],
            links=vram_runbook,
            data_links=triage,
        ),
        p.timeseries(
            "Framebuffer used / total",
            p.target(q.gpu_framebuffer_ratio(cfg), GPU_LEGEND),
            unit=p.PERCENT_UNIT,
            description=ONE_POD
            + marks.lines_note(cfg, ("VLLMGPUMemoryNearFull", f"{percent(gpu_ratio)}")).lstrip()
            + f" A GPU above {percent(gpu_ratio)} will fail its next large allocation: lower --gpu-memory-utilization "
            "on that pod.",
            **marks.dashed(cfg, "green", ("VLLMGPUMemoryNearFull", gpu_ratio, "red")),
            soft_max=1,
            links=vram_runbook,
            data_links=triage,
        ),
        p.timeseries(
            "Temperature",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_GPU_TEMP"), GPU_LEGEND),
            unit=p.CELSIUS,
            description=ONE_POD + f"Dashed lines at {TEMP_WARNING} C and {TEMP_CRITICAL} C. One hot GPU: node "
            "cooling; all GPUs of the node: the chassis.",
            thresholds=p.above(TEMP_WARNING, TEMP_CRITICAL),
            draw_thresholds=True,
            w=8,
            data_links=triage,
        ),
        p.timeseries(
            "Power",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_POWER_USAGE"), GPU_LEGEND),
            unit=p.WATT,
            description=ONE_POD + "Power draw per GPU. Flat at the power limit while latency rises means power "
            "capping.",
            w=8,
            data_links=triage,
        ),
        p.timeseries(
            "XID errors (last code)",
            p.target(q.gpu_field(cfg, "DCGM_FI_DEV_XID_ERRORS"), GPU_LEGEND),
            unit=p.NONE,
            description=ONE_POD + "The last XID error code DCGM saw per GPU (0: none). Look a non-zero code up "
            "in NVIDIA's XID catalogue; for hardware XIDs cordon and drain the node.",
            thresholds=p.steps("green", (1, "red")),
            draw_thresholds=True,
            w=8,
            data_links=triage,
        ),
    ]


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    gpu_ratio = cfg.alerts.VLLMGPUMemoryNearFull.ratio
    vram_runbook = marks.runbooks(cfg, "VLLMGPUMemoryNearFull")
    return dashboard(
        cfg,
        NAME,
        description="GPUs held by vLLM pods: per pod across the fleet, and GPU by GPU for one pod.",
        variables=variables.one_pod(cfg, fleet_scope=True),
        panels=[
            *_stats(cfg, gpu_ratio, vram_runbook),
            *_pods(cfg, gpu_ratio, vram_runbook),
            *_one_pod(cfg, gpu_ratio, vram_runbook),
        ],
    )
