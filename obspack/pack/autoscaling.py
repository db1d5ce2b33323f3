"""The autoscalers of `autoscaling.autoscalers`, as Kubernetes manifests (pure data; render/ writes them).

- engine `keda`: a KEDA ScaledObject (keda.sh/v1alpha1) with one `prometheus` trigger on the model's
  saturation signal. `metricType: Value` with `threshold: "1"` makes the HPA KEDA creates compute
  desired = ceil(current x signal), the HPA's own formula: the signal is already per replica. Above a
  minimum of zero, `ignoreNullValues: "false"`: a signal with no series is an error, so the HPA holds its
  replicas (and VLLMAutoscalerSignalMissing fires) instead of reading 0 and scaling down. With a minimum of
  zero, a second trigger on `wake_query` (requests waiting where no replica runs, e.g. at the inference
  gateway) wakes the model, at `activation`.
- engine `hpa`: an autoscaling/v2 HorizontalPodAutoscaler on an External metric of that name, and one
  prometheus-adapter `externalRules` entry per autoscaler that serves it.

Both scale up fast (double, or 4 pods, a minute after the stabilization) and down slowly (one pod per
5 minutes after `scale_down_stabilization`): a new vLLM replica loads its model for minutes, a removed one
throws that away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from obspack import conventions as c
from obspack.config import ObspackConfig, promql_string
from obspack.config.autoscaling import Autoscaler
from obspack.durations import parse_ms

API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
}
ADAPTER_FILE = "prometheus-adapter-rules.yaml"
LABELS = {"app.kubernetes.io/managed-by": "obspack"}


@dataclass(frozen=True)
class Manifests:
    """Each autoscaler's documents by file name, and the prometheus-adapter rules the HPAs need."""

    files: tuple[tuple[str, tuple[dict[str, Any], ...]], ...]
    adapter_rules: tuple[dict[str, Any], ...]


def _seconds(duration: str) -> int:
    return parse_ms(duration) // 1000


def signal(cfg: ObspackConfig, a: Autoscaler) -> str:
    """The one-element query of the model's signal: `max` so several clusters or a rename never give KEDA
    two series (it refuses them)."""
    return f"max({c.SATURATION}{signal_matchers(cfg, a)})"


def signal_matchers(cfg: ObspackConfig, a: Autoscaler) -> str:
    matchers = [f"namespace={promql_string(a.namespace)}", f"model_name={promql_string(a.model)}"]
    if a.cluster:
        matchers.insert(0, f"{cfg.cluster_label}={promql_string(a.cluster)}")
    return "{" + ", ".join(matchers) + "}"


def behavior(a: Autoscaler) -> dict[str, Any]:
    return {
        "scaleUp": {
            "stabilizationWindowSeconds": _seconds(a.scale_up_stabilization),
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}, {"type": "Pods", "value": 4, "periodSeconds": 60}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": _seconds(a.scale_down_stabilization),
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
        },
    }


def _target(a: Autoscaler) -> dict[str, str]:
    return {"apiVersion": API_VERSIONS[a.target.kind], "kind": a.target.kind, "name": a.target.name}


def _metadata(a: Autoscaler) -> dict[str, Any]:
    return {"name": a.name, "namespace": a.namespace, "labels": dict(LABELS)}


def scaled_object(cfg: ObspackConfig, a: Autoscaler) -> dict[str, Any]:
    p = a.prometheus
    saturation: dict[str, Any] = {
        "type": "prometheus",
        "name": "vllm-saturation",
        "metricType": "Value",
        "metadata": {
            "serverAddress": p.address,
            "query": signal(cfg, a),
            "threshold": "1",
            "ignoreNullValues": "true" if a.min_replicas == 0 else "false",
        },
    }
    triggers = [saturation]
    if a.min_replicas == 0:
        queue = _queue_target(cfg, a.model)
        triggers.append(
            {
                "type": "prometheus",
                "name": "wake",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": p.address,
                    "query": a.wake_query,
                    "threshold": f"{queue:g}",
                    "activationThreshold": f"{a.activation:g}",
                    "ignoreNullValues": "true",
                },
            }
        )
    if p.authentication:
        for trigger in triggers:
            trigger["metadata"]["authModes"] = p.auth_mode
            trigger["authenticationRef"] = {"name": p.authentication, "kind": p.authentication_kind}
    spec: dict[str, Any] = {
        "scaleTargetRef": _target(a),
        "minReplicaCount": a.min_replicas,
        "maxReplicaCount": a.max_replicas,
        "pollingInterval": max(1, _seconds(a.polling_interval)),
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(a)}},
        "triggers": triggers,
    }
    if a.min_replicas == 0:
        spec["cooldownPeriod"] = _seconds(a.scale_down_stabilization)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": _metadata(a), "spec": spec}


def external_metric(a: Autoscaler) -> str:
    return f"obspack_vllm_saturation_{a.name.replace('-', '_')}"


def horizontal_pod_autoscaler(a: Autoscaler) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(a),
        "spec": {
            "scaleTargetRef": _target(a),
            "minReplicas": a.min_replicas,
            "maxReplicas": a.max_replicas,
            "metrics": [
                {
                    "type": "External",
                    "external": {"metric": {"name": external_metric(a)}, "target": {"type": "Value", "value": "1"}},
                }
            ],
            "behavior": behavior(a),
        },
    }


def adapter_rule(cfg: ObspackConfig, a: Autoscaler) -> dict[str, Any]:
    """prometheus-adapter serves the signal as a namespaced external metric: the HPA's namespace becomes a
    matcher (`<<.LabelMatchers>>`), the model and cluster are fixed in the query."""
    fixed = signal_matchers(cfg, a)[1:-1].replace(f"namespace={promql_string(a.namespace)}, ", "")
    return {
        "seriesQuery": f"{c.SATURATION}{signal_matchers(cfg, a)}",
        "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
        "name": {"matches": f"^{c.SATURATION}$", "as": external_metric(a)},
        "metricsQuery": f"max(<<.Series>>{{<<.LabelMatchers>>, {fixed}}})",
    }


def _queue_target(cfg: ObspackConfig, model: str) -> float:
    """The queue target the model's signal uses (the first `autoscaling.models` entry that matches it)."""
    for entry in cfg.autoscaling.models:
        if re.fullmatch(entry.model_regex, model) and entry.queue is not None:
            return entry.queue
    return cfg.autoscaling.targets.queue


def manifests(cfg: ObspackConfig) -> Manifests:
    files = []
    rules = []
    for a in cfg.autoscaling.autoscalers:
        if a.engine == "keda":
            files.append((f"{a.namespace}-{a.name}.yaml", (scaled_object(cfg, a),)))
        else:
            files.append((f"{a.namespace}-{a.name}.yaml", (horizontal_pod_autoscaler(a),)))
            rules.append(adapter_rule(cfg, a))
    return Manifests(tuple(sorted(files)), tuple(rules))
