"""The fleet page's Autoscaling row: the saturation signal against its target, what drives it, the replicas
of the HPAs in vLLM's namespaces (obspack's, KEDA's or a team's own), what the models need now, and vLLM
pods waiting for GPUs. Collapsed: it queries nothing until opened."""

from __future__ import annotations

from grafanalib.core import RowPanel

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import marks
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.rules.alerts.autoscaling import pending_gpu_pod_set

MODEL_LEGEND = "{{namespace}} {{model_name}}"
HPA_LEGEND = "{{namespace}}/{{horizontalpodautoscaler}}"


def signal(cfg: ObspackConfig) -> str:
    return q.max_by(cfg, c.SATURATION, "namespace", "model_name", variables=q.MODEL)


def parts(cfg: ObspackConfig) -> str:
    return q.max_by(cfg, c.SATURATION_PART, "namespace", "model_name", "signal", variables=q.MODEL)


def needed(cfg: ObspackConfig) -> str:
    """The HPA's formula on the signal: current replicas (pods serving the model) times the signal. Every pod
    of the model counts, whatever the page's pod filter: the signal is the model's, and so are its replicas."""
    keep = c.by(cfg, "namespace", "model_name")
    pods = f"count by ({keep}) ({q.rec(cfg, c.RUNNING, q.MODEL)})"
    return f"ceil(\n  {signal(cfg)}\n  * on ({keep})\n  {pods}\n)"


def hpa(cfg: ObspackConfig, metric: str) -> str:
    """An HPA series of kube-state-metrics (HA replicas collapsed) in the namespaces that run vLLM."""
    hpas = c.by(cfg, "namespace", "horizontalpodautoscaler")
    ns = c.by(cfg, "namespace")
    series = q.raw(cfg, metric, cfg.selectors.kube_state_metrics, ("cluster", "namespace"))
    return f"max by ({hpas}) ({series})\nand on ({ns})\ngroup by ({ns}) ({q.rec(cfg, c.VLLM_POD, ('cluster', 'namespace'))})"


def pending(cfg: ObspackConfig) -> str:
    """vLLM pods that ask for GPUs and cannot be scheduled (the pods VLLMAutoscalerScaleUpBlocked fires on,
    before its `for`); 0, not "No data", when there are none."""
    waiting = pending_gpu_pod_set(cfg, q.scope(cfg, "cluster", "namespace"))
    return f"count by ({c.by(cfg, 'namespace')}) (\n{waiting}\n)\nor on ()\nvector(0)"


def row(cfg: ObspackConfig) -> RowPanel:
    runbooks = marks.runbooks(cfg, "VLLMAutoscalerMaxedOut", "VLLMAutoscalerThrashing")
    targets = cfg.autoscaling.targets
    return p.collapsed_section(
        "Autoscaling: saturation signal, replicas, pods waiting for GPUs",
        [
            p.timeseries(
                "Saturation signal per model (target 1)",
                p.target(signal(cfg), MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    f"Per model, the larger of the requests waiting for capacity per engine over {targets.queue:g} "
                    f"and the KV cache usage over {targets.kv_cache:g} (autoscaling.targets). An autoscaler holds it "
                    "at 1: above 1 the model needs more replicas (2 means twice as many), well under 1 it could do "
                    "with fewer. KEDA ScaledObjects and HPAs rendered by obspack scale on this record."
                ),
                thresholds=p.above(None, 1),
                draw_thresholds=True,
                links=runbooks,
            ),
            p.timeseries(
                "What drives it: queue and KV cache against their targets",
                p.target(parts(cfg), "{{signal}} " + MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    "The two parts of the signal: `queue` (requests waiting for capacity per engine, over the queue "
                    "target) and `kv_cache` (KV cache usage over the KV target). The signal is the larger."
                ),
                thresholds=p.above(None, 1),
                draw_thresholds=True,
            ),
            p.timeseries(
                "Replicas the models need now (current x signal)",
                p.target(needed(cfg), MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    "The HPA's own formula on the signal: the pods serving the model times the signal, rounded up. "
                    "All the model's pods count, whatever the pod filter of the page. Compare it with the HPA's "
                    "maximum below: above it, the model is short of capacity."
                ),
            ),
            p.timeseries(
                "HPA replicas: desired, current, max",
                p.target(hpa(cfg, "kube_horizontalpodautoscaler_status_desired_replicas"), "desired " + HPA_LEGEND),
                p.target(hpa(cfg, "kube_horizontalpodautoscaler_status_current_replicas"), "current " + HPA_LEGEND),
                p.target(hpa(cfg, "kube_horizontalpodautoscaler_spec_max_replicas"), "max " + HPA_LEGEND),
                unit=p.SHORT,
                description=(
                    "The HorizontalPodAutoscalers of the namespaces that run vLLM (KEDA's are named "
                    "keda-hpa-<ScaledObject>). Desired changing direction often is thrashing; current at max "
                    "while the signal is above 1 means capacity is exhausted."
                ),
                links=runbooks,
            ),
            p.timeseries(
                "vLLM pods waiting for GPUs",
                p.target(pending(cfg), "{{namespace}}"),
                unit=p.SHORT,
                description=(
                    "vLLM pods that ask for GPUs and cannot be scheduled, per namespace: a scale-up the cluster "
                    "cannot honour yet. 0 is good."
                ),
                thresholds=p.above(None, 1),
                links=marks.runbooks(cfg, "VLLMAutoscalerScaleUpBlocked"),
            ),
        ],
    )
