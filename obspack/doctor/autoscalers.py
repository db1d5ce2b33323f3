"""The autoscalers of vLLM's namespaces, as kube-state-metrics sees them: what each HPA scales on, and whether
this Prometheus has that metric.

kube-state-metrics' `kube_horizontalpodautoscaler_spec_target_metric{metric_name, metric_target_type}`
names each HPA's metrics (KEDA's HPA too: its metrics are `s<N>-<scaler>`, e.g. s0-prometheus). A metric
served by prometheus-adapter is a Prometheus series under another name more often than not (the adapter's
`name.as`): the doctor looks for the name as written and with its first underscores read as vLLM's colon
(vllm_num_requests_waiting is vllm:num_requests_waiting). It reports:

- an HPA on a metric no series of which exists: it reads nothing, so it scales nothing (problem);
- a ScaledObject whose Prometheus trigger returned nothing in the lookback (KEDA's
  keda_scaler_empty_upstream_responses_total): the same, seen from KEDA (problem);
- an HPA on CPU or memory utilisation, or on GPU utilisation: signals that do not follow a vLLM replica's
  load (vLLM preallocates GPU memory, and batching keeps the GPU busy whatever the queue) (note);
- obspack's own saturation signal, when the record is missing (problem).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from obspack import conventions as c
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.findings import Finding, Topic, note, problem, unchecked
from obspack.pack import Pack

KEDA_METRIC = re.compile(r"^s[0-9]+-[A-Za-z0-9-]+$")
OBSPACK_METRIC = re.compile(r"^obspack_vllm_saturation_")
NOT_LOAD = {
    "cpu": "CPU utilisation does not follow a vLLM replica's load (the GPU does the work)",
    "memory": "memory utilisation does not follow a vLLM replica's load (the model sits in memory whatever the traffic)",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilisation stays near 100% while vLLM batches, whatever the queue",
}
REMOVED = {
    "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc (vLLM 0.9.2 renamed it and later releases dropped the old name)",
}


@dataclass(frozen=True)
class TargetMetric:
    cluster: str
    namespace: str
    hpa: str
    name: str
    kind: str  # value, average, utilization


def _rows(api: PrometheusAPI, expr: str, at: float, keys: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    try:
        found = api.query(expr, at)
    except QueryFailed:
        return None
    return sorted({tuple(str(r.get("metric", {}).get(k, "")) for k in keys) for r in found if isinstance(r, dict)})


def candidates(name: str) -> tuple[str, ...]:
    """The series names an adapter's metric may stand for: as written, and vLLM's `vllm_x` as `vllm:x`."""
    names = [name]
    if name.startswith("vllm_"):
        names.append("vllm:" + name[len("vllm_") :])
    return tuple(names)


def autoscaler_findings(api: PrometheusAPI, pack: Pack, at: float, lookback_s: int) -> list[Finding]:
    s = pack.sources.selectors
    cl = pack.cluster_label
    ksm = c.selector(s.get("kube_state_metrics", ""))
    vllm = c.selector(s.get("vllm", ""), 'model_name!=""')
    window = f"{max(60, lookback_s)}s"
    namespaces = f"group by ({cl}, namespace) (last_over_time(vllm:num_requests_running{vllm}[{window}]))"
    keys = (cl, "namespace", "horizontalpodautoscaler", "metric_name", "metric_target_type")
    expr = (
        f"max by ({', '.join(keys)}) (last_over_time(kube_horizontalpodautoscaler_spec_target_metric{ksm}[{window}]))\n"
        f"and on ({cl}, namespace) {namespaces}"
    )
    rows = _rows(api, expr, at, keys)
    if rows is None:
        return [unchecked(Topic.AUTOSCALER, "autoscalers", "the HPAs' target metrics could not be asked")]
    found: list[Finding] = []
    targets = [TargetMetric(*row) for row in rows if row[3]]
    for t in targets:
        who = f"{t.namespace}/{t.hpa}" + (f" ({t.cluster})" if t.cluster else "")
        if KEDA_METRIC.match(t.name):
            continue  # KEDA's: its empty answers are checked below
        if t.name in NOT_LOAD:
            found.append(note(Topic.AUTOSCALER, who, f"scales on {t.name}: {NOT_LOAD[t.name]}; obspack renders an autoscaler on the saturation signal (docs/autoscaling.md)"))
            continue
        names = (c.SATURATION,) if OBSPACK_METRIC.match(t.name) else candidates(t.name)
        exists = _rows(api, f"count by (__name__) ({{__name__=~{_alternatives(names)}}})", at, ("__name__",))
        if exists is None:
            continue
        if not exists:
            hint = REMOVED.get(t.name) or next((REMOVED[n] for n in names if n in REMOVED), "")
            message = f"scales on {t.name}, and this Prometheus has no series of {' or '.join(names)}: it reads nothing and scales nothing"
            found.append(problem(Topic.AUTOSCALER, who, message + (f"; use {hint}" if hint else ""),
                                 action=f"kubectl -n {t.namespace} describe hpa {t.hpa}"))
    keda = s.get("keda", "")
    counter = "keda_scaler_empty_upstream_responses_total"
    moved = c.selector(keda, 'exported_namespace!=""')
    plain = c.selector(keda, 'exported_namespace=""')
    empty = (  # the ScaledObject's namespace, wherever the scrape put it (honor_labels or not)
        f"sum by ({cl}, namespace, scaledResource) (\n"
        f'  label_replace(increase({counter}{moved}[{window}]), "namespace", "$1", "exported_namespace", "(.+)")\n'
        f"  or increase({counter}{plain}[{window}])\n) > 0"
    )
    for cluster, namespace, scaled in _rows(api, empty, at, (cl, "namespace", "scaledResource")) or []:
        who = f"{namespace}/{scaled}" + (f" ({cluster})" if cluster else "")
        found.append(problem(
            Topic.AUTOSCALER, who,
            "KEDA's Prometheus trigger got empty answers in the lookback: the ScaledObject scales on a metric the fleet "
            "does not export (with ignoreNullValues, KEDA reads 0 and scales down)",
            action=f"kubectl -n {namespace} get scaledobject {scaled} -o jsonpath='{{.spec.triggers}}'",
        ))
    if targets:
        listed = ", ".join(sorted({f"{t.namespace}/{t.hpa} on {t.name}" for t in targets}))
        found.append(note(Topic.AUTOSCALER, "autoscalers", f"HPAs of vLLM's namespaces: {listed}"))
    return found


def _alternatives(names: tuple[str, ...]) -> str:
    """A PromQL string of a regex that matches exactly these names."""
    return json.dumps("|".join(re.escape(n) for n in names))
