"""Autoscaling settings: the saturation signal's targets, per-model overrides, and the autoscalers to render
(KEDA ScaledObjects or HorizontalPodAutoscalers with a prometheus-adapter rule). docs/autoscaling.md."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from obspack.config.values import URL, Duration, K8sName, LabelValue, PromQL, Regex, _entries, _Model

QueueTarget = Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)]
KVTarget = Annotated[float, Field(ge=0.05, le=1, allow_inf_nan=False)]
Replicas = Annotated[int, Field(ge=0, le=10_000)]
_QUEUE = "(above 0, at most 10000)"
_KV = "(0.05 to 1)"


class Targets(_Model):
    """Where a replica counts as saturated: the signal is 1 there, and an autoscaler holds it at 1."""

    queue: QueueTarget = Field(
        3.0, description=f"requests waiting for capacity per engine at which a replica is saturated {_QUEUE}"
    )
    kv_cache: KVTarget = Field(0.8, description=f"KV cache usage at which a replica is saturated {_KV}")


class ModelTargets(_Model):
    """Targets for the models whose model_name matches `model_regex` (first match wins); unset keys keep
    autoscaling.targets."""

    model_regex: Regex = Field(description="served model names this entry applies to (full match)")
    queue: QueueTarget | None = Field(None, description=f"unset: as autoscaling.targets.queue {_QUEUE}")
    kv_cache: KVTarget | None = Field(None, description=f"unset: as autoscaling.targets.kv_cache {_KV}")


class ScaleTarget(_Model):
    """The workload an autoscaler scales."""

    kind: Literal["Deployment", "StatefulSet", "LeaderWorkerSet"] = Field(
        "Deployment", description="Deployment, StatefulSet or LeaderWorkerSet"
    )
    name: K8sName = Field(description="its metadata.name")


class PrometheusServer(_Model):
    """How KEDA asks Prometheus (ignored for the HPA, which reads prometheus-adapter)."""

    address: URL = Field(
        "http://prometheus-operated.monitoring.svc:9090",
        description="base URL KEDA's prometheus trigger asks (kube-prometheus-stack's service by default)",
    )
    authentication: K8sName | Literal[""] = Field(
        "", description="name of a TriggerAuthentication holding the token (empty: none)"
    )
    authentication_kind: Literal["TriggerAuthentication", "ClusterTriggerAuthentication"] = Field(
        "TriggerAuthentication", description="TriggerAuthentication or ClusterTriggerAuthentication"
    )
    auth_mode: Literal["bearer", "basic", "tls", "custom"] = Field(
        "bearer", description="the trigger's authModes when authentication is set: bearer, basic, tls or custom"
    )


class Autoscaler(_Model):
    """One autoscaler: a KEDA ScaledObject, or an autoscaling/v2 HorizontalPodAutoscaler plus the
    prometheus-adapter rule that serves its signal."""

    name: K8sName = Field(description="metadata.name of the ScaledObject or HPA")
    namespace: K8sName = Field(description="the namespace of the workload (and of the autoscaler)")
    model: LabelValue = Field(description="the model_name whose saturation signal it scales on")
    cluster: LabelValue | Literal[""] = Field(
        "", description="the cluster label's value, where one Prometheus sees several clusters (empty: any)"
    )
    engine: Literal["keda", "hpa"] = Field("keda", description="keda (a ScaledObject) or hpa (HPA + prometheus-adapter)")
    target: ScaleTarget
    min_replicas: Replicas = Field(1, description="fewest replicas (0 only with keda, and only with wake_query)")
    max_replicas: Replicas = Field(4, description="most replicas (at least min_replicas, at least 1)")
    scale_up_stabilization: Duration = Field("0s", description="how long a higher proposal must hold before scaling up")
    scale_down_stabilization: Duration = Field(
        "10m", description="how long a lower proposal must hold before scaling down (a model takes minutes to load)"
    )
    polling_interval: Duration = Field("15s", description="how often KEDA asks the signal (keda only; 1s to 1d)")
    wake_query: PromQL = Field(
        "",
        description="keda with min_replicas 0: PromQL counting requests waiting while no replica runs (e.g. "
        "the inference gateway's queue); the saturation signal has no series without a pod",
    )
    activation: float = Field(
        0.0, ge=0, le=10_000, allow_inf_nan=False, description="wake_query above this wakes the model from zero"
    )
    prometheus: PrometheusServer = PrometheusServer.model_construct()


class Autoscaling(_Model):
    """The saturation signal (always recorded) and the autoscalers to render (none by default)."""

    targets: Targets = Targets.model_construct()
    models: Annotated[list[ModelTargets], AfterValidator(_entries)] = Field(
        default_factory=list,
        description="per-model targets, first match wins, e.g. [{model_regex: 'Qwen/.*', queue: 8}]",
    )
    autoscalers: Annotated[list[Autoscaler], AfterValidator(_entries)] = Field(
        default_factory=list,
        description="a KEDA ScaledObject or an HPA per entry, e.g. [{name: chat, namespace: llm, "
        "model: meta-llama/Llama-3.1-8B-Instruct, target: {name: vllm-chat}}]",
    )
