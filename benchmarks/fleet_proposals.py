"""Proposed changes to obspack's rules and dashboards, measured by the fleet benchmark next to today's.

obspack/ belongs to other engineers: these are proposals, written as the rendered YAML and PromQL they
would produce with the default config (cluster label `cluster`, no source selectors), so the benchmark
can backfill, evaluate and query them next to what `obspack render` writes today.

1. **GPU page from records** (obspack/rules/recording/dcgm.py, obspack/dashboards/gpu_by_workload.py,
   queries.py `dcgm`/`dcgm_first`). Today every GPU-page panel normalises the DCGM label modes (nested
   label_replace over every GPU) and joins the model (`group_left (model_name)`) at every step of the
   range: 0.8 s per panel at 100 pods, far past the timeout at 1000. Proposed: one record attributes
   each held GPU's exporter series (cluster, instance, gpu, GPU_I_ID) to its pod and model
   (`namespace_pod_gpu:vllm_gpu:info`, `namespace_pod_model_gpu:vllm_gpu:info`); each DCGM field the page
   shows is recorded once per evaluation with those labels (`namespace_pod_model_gpu:vllm_gpu_<field>`);
   today's three framebuffer records keep names, labels and values but are derived from the new ones.
   Rules that read every GPU are spread over groups of at most two. The page reads the records; its
   per-GPU time series show the 20 highest (utilisation and SM activity: lowest) GPUs, since with All
   selected at 1000 pods they would draw 8000 lines (30+ MB of JSON per panel), and "Framebuffer used
   and total" draws the largest GPU's size as one line.
2. **KV page per-engine panels** (obspack/dashboards/kv_prefix_cache.py): `max by` over every engine's
   exporter series per step costs ~1 µs per series and step; the 20 highest fragmentation and the 20
   lowest headroom and lifetime hit rate instead. Per-pod panels on records drop a `max by`/`sum by`
   over the record's own labels (a no-op that costs the same; queries.py `max_by`/`sum_by`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fleet_queries import Dashboard, Window, fill
from obspack.config import ObspackConfig
from obspack.rules.recording.dcgm import normalised

CFG = ObspackConfig()
MIB = 1048576
TOP = 20  # per-GPU time series shown when the selection is wider than that

# The exporter series key of one GPU (or MIG instance), in every DCGM label mode.
KEY = "cluster, instance, gpu, GPU_I_ID"
GPU_INFO = "namespace_pod_gpu:vllm_gpu:info"
WORKLOAD_GPU_INFO = "namespace_pod_model_gpu:vllm_gpu:info"
POD_MODEL = (
    "topk by (cluster, namespace, pod) (1, group by (cluster, namespace, pod, model_name) "
    "(namespace_pod_model:vllm_num_requests_running:sum))"
)
GPU = "cluster, namespace, pod, gpu, UUID, Hostname"
WORKLOAD_GPU = "cluster, namespace, pod, model_name, gpu, UUID, Hostname, modelName"


def _by_key(metric: str) -> str:
    return f"max by ({KEY}) ({metric})"


def _workload_field(raw: str, scale: str = "") -> str:
    """One DCGM field per held GPU with its workload's labels (they replace the exporter's pod labels)."""
    joined = f"{raw}\n* on ({KEY}) group_left (namespace, pod, model_name, UUID, Hostname, modelName)\n{WORKLOAD_GPU_INFO}"
    return f"{scale}max by ({WORKLOAD_GPU}) (\n{joined}\n)"


def record(name: str) -> str:
    return f"namespace_pod_model_gpu:vllm_gpu_{name}"


UTIL = record("utilization:max")
SM = record("sm_active:max")
TEMP = record("temperature_celsius:max")
POWER = record("power_watts:max")
XID = record("xid_last:max")
FB_USED = record("framebuffer_used_bytes:max")
FB_FREE = record("framebuffer_free_bytes:max")
FB_TOTAL = record("framebuffer_total_bytes:max")
FB_RATIO = record("framebuffer_used:ratio")


def dcgm_groups() -> list[dict[str, Any]]:
    """The DCGM groups proposed in place of obspack-dcgm.rules.

    A rule that reads one DCGM field of every GPU costs ~0.2 s per evaluation at 8000 GPUs (block data,
    2 cores), so each group reads at most two fields (Prometheus evaluates groups concurrently, the
    rules of one group in turn); the records derived from records sit in obspack-dcgm.rules. Today's
    three framebuffer records keep their names, labels and values.
    """
    attribution = (
        f"group by ({KEY}, namespace, pod, UUID, Hostname, modelName) (\n"
        f"{normalised(CFG, 'DCGM_FI_DEV_FB_USED')}\n)\n"
        "and on (cluster, namespace, pod) namespace_pod:vllm_pod:info"
    )
    # model_name where the pod reports one; GPUs of a vLLM pod whose engine metrics are missing stay.
    workload = f"{GPU_INFO}\n* on (cluster, namespace, pod) group_left (model_name)\n{POD_MODEL}\nor on ({KEY})\n{GPU_INFO}"
    sm = f"{_by_key('DCGM_FI_PROF_SM_ACTIVE')}\nor\n{_by_key('DCGM_FI_PROF_GR_ENGINE_ACTIVE')}"
    fb = "namespace_pod_gpu:vllm_gpu_framebuffer"
    groups = {
        "obspack-dcgm-attribution.rules": [(GPU_INFO, attribution), (WORKLOAD_GPU_INFO, workload)],
        "obspack-dcgm-framebuffer.rules": [
            (FB_USED, _workload_field("DCGM_FI_DEV_FB_USED", f"{MIB} * ")),
            (FB_FREE, _workload_field("DCGM_FI_DEV_FB_FREE", f"{MIB} * ")),
        ],
        "obspack-dcgm.rules": [
            (FB_TOTAL, f"{FB_USED} + {FB_FREE}"),
            (FB_RATIO, f"{FB_USED} / {FB_TOTAL}"),
            (f"{fb}_used_bytes:max", f"max by ({GPU}) ({FB_USED})"),
            (f"{fb}_free_bytes:max", f"max by ({GPU}) ({FB_FREE})"),
            (f"{fb}_used:ratio", f"max by ({GPU}) ({FB_RATIO})"),
        ],
        "obspack-dcgm-utilization.rules": [
            (UTIL, _workload_field("DCGM_FI_DEV_GPU_UTIL")),
            (SM, _workload_field(f"({sm})")),
        ],
        "obspack-dcgm-thermal.rules": [
            (TEMP, _workload_field("DCGM_FI_DEV_GPU_TEMP")),
            (POWER, _workload_field("DCGM_FI_DEV_POWER_USAGE")),
        ],
        "obspack-dcgm-xid.rules": [(XID, _workload_field("DCGM_FI_DEV_XID_ERRORS"))],
    }
    return [
        {"name": name, "rules": [{"record": r, "expr": e} for r, e in rules]}
        for name, rules in groups.items()
    ]


def proposed_recording_groups(current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rendered recording groups with the proposals applied, in file order."""
    out: list[dict[str, Any]] = []
    for group in current:
        if group["name"] == "obspack-dcgm.rules":
            out.extend(dcgm_groups())
        else:
            out.append(group)
    return out


# ---------------------------------------------------------------------------------------------------
# Dashboard targets (obspack/dashboards/gpu_by_workload.py, queries.py `dcgm`/`dcgm_first`)

S = '{cluster=~"$cluster", namespace=~"$namespace", model_name=~"$model", pod=~"$pod"}'


def _row(record_name: str) -> str:
    """A table column: one row per GPU, no __name__ (so Grafana merges the columns into rows)."""
    return f"max by ({WORKLOAD_GPU}) ({record_name}{S})"


GPU_PAGE = "gpu-by-workload"
REPLACEMENTS = {
    f"{GPU_PAGE} / GPUs held by vLLM [A]": f"count({FB_USED}{S})",
    f"{GPU_PAGE} / Mean GPU utilisation [A]": f"avg({UTIL}{S})",
    f"{GPU_PAGE} / Highest framebuffer used [A]": f"max({FB_RATIO}{S})",
    f"{GPU_PAGE} / Hottest GPU [A]": f"max({TEMP}{S})",
    f"{GPU_PAGE} / Total power [A]": f"sum({POWER}{S})",
    f"{GPU_PAGE} / GPUs with an XID error [A]": f"count({XID}{S} > 0) or vector(0)",
    f"{GPU_PAGE} / GPUs and the workloads holding them [A]": _row(UTIL),
    f"{GPU_PAGE} / GPUs and the workloads holding them [B]": _row(FB_RATIO),
    f"{GPU_PAGE} / GPUs and the workloads holding them [C]": _row(TEMP),
    f"{GPU_PAGE} / GPUs and the workloads holding them [D]": _row(POWER),
    f"{GPU_PAGE} / GPUs and the workloads holding them [E]": _row(XID),
    f"{GPU_PAGE} / GPU utilisation [A]": f"bottomk({TOP}, {UTIL}{S})",
    f"{GPU_PAGE} / SM activity [A]": f"bottomk({TOP}, {SM}{S})",
    f"{GPU_PAGE} / Framebuffer used and total [A]": f"topk({TOP}, {FB_USED}{S})",
    # One line at the largest GPU's size instead of a total per GPU: matching the 20 fullest GPUs' totals
    # is a join per step over every GPU (~0.35 s at 8000 GPUs).
    f"{GPU_PAGE} / Framebuffer used and total [B]": f"max({FB_TOTAL}{S})",
    f"{GPU_PAGE} / Framebuffer used / total [A]": f"topk({TOP}, {FB_RATIO}{S})",
    f"{GPU_PAGE} / Temperature [A]": f"topk({TOP}, {TEMP}{S})",
    f"{GPU_PAGE} / Power [A]": f"topk({TOP}, {POWER}{S})",
    f"{GPU_PAGE} / XID errors (last code) [A]": f"topk({TOP}, {XID}{S})",
}


KV_PAGE = "vllm-kv-prefix-cache"
X = '{cluster=~"$cluster", namespace=~"$namespace", model_name=~"$model", pod=~"$pod"}'
REPLACEMENTS.update(
    {
        # Per-engine exporter series: the lowest/highest 20 instead of `max by` over every engine.
        f"{KV_PAGE} / KV fragmentation estimate [A]": f"topk({TOP}, obspack_vllm_kv_cache_fragmentation_ratio{X})",
        f"{KV_PAGE} / Admission headroom (requests) [A]": (
            f"bottomk({TOP}, obspack_vllm_kv_cache_admission_headroom_requests{X})"
        ),
        f"{KV_PAGE} / Prefix cache hit rate per pod [B]": (
            f"bottomk({TOP}, obspack_vllm_prefix_cache_hit_ratio_lifetime{X})"
        ),
        # Records already have exactly these labels: `max by`/`sum by` over them is a no-op that costs
        # ~1 us per series and step (queries.py max_by/sum_by).
        f"{KV_PAGE} / KV cache usage per pod [A]": f"namespace_pod_model:vllm_kv_cache_usage:max{X}",
        f"{KV_PAGE} / Prefix cache hit rate per pod [A]": f"namespace_pod_model:vllm_prefix_cache_hit:ratio_rate5m{X}",
        f"{KV_PAGE} / Preemptions per second per pod [A]": f"namespace_pod_model:vllm_num_preemptions:rate5m{X}",
        f"{KV_PAGE} / Requests waiting per pod [A]": f"namespace_pod_model:vllm_num_requests_waiting:sum{X}",
        "vllm-fleet / Preemptions per second [A]": f"namespace_pod_model:vllm_num_preemptions:rate5m{X}",
    }
)


@dataclass(frozen=True)
class Proposals:
    recording: bool = False  # apply the rule changes
    summary: str = ""  # what the proposals change, for the report
    replacements: dict[str, str] = field(default_factory=dict)  # target key -> new expr

    def recording_groups(self, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return proposed_recording_groups(current) if self.recording else current

    def new_groups(self, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Proposed groups reduced to the records that do not exist today (what must be backfilled)."""
        if not self.recording:
            return []
        existing = {r["record"] for g in current for r in g["rules"]}
        out = []
        for group in proposed_recording_groups(current):
            rules = [r for r in group["rules"] if r["record"] not in existing]
            if rules:
                out.append({**group, "rules": rules})
        return out

    def queries(
        self, dashboard: Dashboard, values: dict[str, str], window: Window
    ) -> Iterator[tuple[str, str]]:
        for target in dashboard.targets:
            if target.key in self.replacements:
                yield target.key, fill(self.replacements[target.key], values, window)


NONE = Proposals()
PROPOSALS = Proposals(recording=True, replacements=REPLACEMENTS, summary=__doc__.split("\n\n", 1)[1])
