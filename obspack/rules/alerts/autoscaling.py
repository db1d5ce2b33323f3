"""The autoscalers of vLLM workloads: whatever renders them (obspack's KEDA ScaledObjects and HPAs, or a
team's own), the HorizontalPodAutoscaler that does the scaling is in kube-state-metrics
(`kube_horizontalpodautoscaler_*`; KEDA creates one per ScaledObject, named keda-hpa-<name>). Only the HPAs
of namespaces that run vLLM are watched (the vLLM pod record, one group hop). KEDA's own errors come from
its operator's metrics (selectors.keda).
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig, promql_string
from obspack.rules.model import AlertRule

HPA = ("namespace", "horizontalpodautoscaler")
WHO = "{{ $labels.namespace }}/{{ $labels.horizontalpodautoscaler }}"
GPU_RESOURCES = 'resource=~"nvidia_com_gpu|nvidia_com_mig_.*"'  # whole GPUs, or MIG slices (mixed strategy)


def hpa(cfg: ObspackConfig, metric: str, *matchers: str) -> str:
    """A kube-state-metrics HPA series, HA replicas collapsed."""
    ksm = c.selector(cfg.selectors.kube_state_metrics, *matchers)
    return f"max by ({c.by(cfg, *HPA)}) ({metric}{ksm})"


def keda_increase(cfg: ObspackConfig, counter: str, name: str, window: str) -> str:
    """A KEDA operator counter's increase per ScaledObject. The operator labels its series with the
    ScaledObject's namespace; scraped without honor_labels, Prometheus moves that label to
    `exported_namespace` (the target's own namespace is KEDA's), so both spellings are read."""
    keda = cfg.selectors.keda
    by = c.by(cfg, "namespace", name)
    moved_sel, plain_sel = c.selector(keda, 'exported_namespace!=""'), c.selector(keda, 'exported_namespace=""')
    moved = f'label_replace(increase({counter}{moved_sel}[{window}]), "namespace", "$1", "exported_namespace", "(.+)")'
    plain = f"increase({counter}{plain_sel}[{window}])"
    return f"sum by ({by}) (\n  {moved}\n  or\n  {plain}\n)"


def in_vllm_namespaces(cfg: ObspackConfig, expr: str) -> str:
    ns = c.by(cfg, "namespace")
    return f"{expr}\nand on ({ns})\ngroup by ({ns}) ({c.VLLM_POD})"


def thrashing(cfg: ObspackConfig) -> AlertRule:
    """Desired replicas went up and down repeatedly: each change of direction starts or stops GPU pods that
    take minutes to load a model. Ups and downs are counted minute by minute over the window."""
    t = cfg.alerts.VLLMAutoscalerThrashing
    desired = hpa(cfg, "kube_horizontalpodautoscaler_status_desired_replicas")
    step = f"({desired} - max by ({c.by(cfg, *HPA)}) (kube_horizontalpodautoscaler_status_desired_replicas{c.selector(cfg.selectors.kube_state_metrics)} offset 1m))"
    ups = f"count_over_time(({step} > 0)[{t.window}:1m])"
    downs = f"count_over_time(({step} < 0)[{t.window}:1m])"
    expr = f"({ups} >= {t.reversals:g})\nand\n({downs} >= {t.reversals:g})"
    return AlertRule(
        alert="VLLMAutoscalerThrashing",
        expr=in_vllm_namespaces(cfg, expr),
        for_=t.for_,
        severity=t.severity,
        summary="An autoscaler of vLLM replicas keeps scaling up and down: every change starts or stops a model load.",
        description=(
            "HPA " + WHO + " changed direction at least " + f"{t.reversals:g} times each way in the last {t.window} "
            "({{ $value }} increases). Each new replica loads its model for minutes before it serves."
        ),
        runbook="vllm-autoscaler-thrashing",
        triage="kubectl -n {{ $labels.namespace }} describe hpa {{ $labels.horizontalpodautoscaler }}",
        dashboard=c.FLEET_DASHBOARD,
    )


def maxed_out(cfg: ObspackConfig) -> AlertRule:
    """At its maximum replicas while a model of its namespace is past its targets: the autoscaler can do no
    more, and the users of that model wait."""
    t = cfg.alerts.VLLMAutoscalerMaxedOut
    ns = c.by(cfg, "namespace")
    current = hpa(cfg, "kube_horizontalpodautoscaler_status_current_replicas")
    most = hpa(cfg, "kube_horizontalpodautoscaler_spec_max_replicas")
    # the parts, not the signal made from them: on vmalert a record of the same group is one evaluation older
    expr = f"({current} >= {most})\nand on ({ns})\n(max by ({ns}) ({c.SATURATION_PART}) > {t.saturation:g})"
    return AlertRule(
        alert="VLLMAutoscalerMaxedOut",
        expr=expr,
        for_=t.for_,
        severity=t.severity,
        summary="An autoscaler of vLLM replicas is at its maximum while the model is saturated: capacity is exhausted.",
        description=(
            "HPA " + WHO + " runs {{ $value }} replicas, its maximum, while a model of the namespace is past its "
            f"saturation targets (signal above {t.saturation:g}) for {t.for_}."
        ),
        runbook="vllm-autoscaler-maxed-out",
        triage="kubectl -n {{ $labels.namespace }} get hpa {{ $labels.horizontalpodautoscaler }}",
        dashboard=c.FLEET_DASHBOARD,
    )


def autoscaled_owners(cfg: ObspackConfig) -> list[str]:
    """kube_pod_owner matchers for the pods of the workloads obspack's autoscalers scale: a Deployment's pods
    belong to its ReplicaSets (<name>-<pod-template-hash>), a StatefulSet's to itself, a LeaderWorkerSet's to
    its leader StatefulSet (<name>) and its groups' worker StatefulSets (<name>-<group>). Kubernetes names
    hold only a-z, 0-9 and '-', none of them special in a regex."""
    owners = []
    for a in cfg.autoscaling.autoscalers:
        name = a.target.name
        owner = {
            "Deployment": ('owner_kind="ReplicaSet"', f"{name}-[a-z0-9]+"),
            "StatefulSet": ('owner_kind="StatefulSet"', name),
            "LeaderWorkerSet": ('owner_kind="StatefulSet"', f"{name}(-[0-9]+)?"),
        }[a.target.kind]
        cluster = [f"{cfg.cluster_label}={promql_string(a.cluster)}"] if a.cluster else []
        owners.append(", ".join([*cluster, f"namespace={promql_string(a.namespace)}", owner[0], f'owner_name=~"{owner[1]}"']))
    return sorted(set(owners))


def pending_gpu_pods(cfg: ObspackConfig, scope: str = "") -> str:
    """vLLM pods that ask for GPUs and cannot be scheduled, one series per pod valued with the GPUs asked for.
    A pod the scheduler has not placed has no container status, so kube-state-metrics gives it no
    kube_pod_container_info (no image), and it has no vLLM metrics: it is known as vLLM by its namespace
    running vLLM now, by its container's name (vllm_containers.name_regex), or as a pod of a workload that
    an obspack autoscaler scales (from zero, where no vLLM pod runs). `scope`: matchers that narrow the pods
    (a dashboard's variables)."""
    pod, ns = c.by(cfg, "namespace", "pod"), c.by(cfg, "namespace")
    ksm = cfg.selectors.kube_state_metrics
    requests = f"kube_pod_container_resource_requests{c.selector(ksm, GPU_RESOURCES, scope)}"
    unschedulable = f"max by ({pod}) (kube_pod_status_unschedulable{c.selector(ksm, scope)})"
    blocked = f"({unschedulable} == 1)\n* on ({pod}) group_left ()\n(max by ({pod}) ({requests}) > 0)"
    # the namespace's mark reads the unschedulable pods (a few), not every pod's requests again
    waiting = _unschedulable(cfg, scope)
    in_vllm_namespace = f"{waiting}\n  and on ({ns})\n  group by ({ns}) ({c.VLLM_POD}{c.selector(scope)})"
    return f"{blocked}\nand on ({pod})\n(\n  {_vllm_marks(cfg, in_vllm_namespace)}\n)"


def pending_gpu_pod_set(cfg: ObspackConfig, scope: str = "") -> str:
    """The pods of pending_gpu_pods as a set (no value), for counting on a dashboard: every filter starts
    from the unschedulable pods (a few) and only matches the fleet's GPU requests and vLLM pods against
    them (`and`), where the alert's joins aggregate every pod's requests at each step of a range."""
    pod, ns = c.by(cfg, "namespace", "pod"), c.by(cfg, "namespace")
    ksm = cfg.selectors.kube_state_metrics
    waiting = _unschedulable(cfg, scope)
    requests = f"kube_pod_container_resource_requests{c.selector(ksm, GPU_RESOURCES, scope)}"
    asking = f"(({requests} and on ({pod}) {waiting}) > 0)"
    in_vllm_namespace = f"{waiting}\n  and on ({ns})\n  {c.VLLM_POD}{c.selector(scope)}"
    return f"{waiting}\nand on ({pod})\n{asking}\nand on ({pod})\n(\n  {_vllm_marks(cfg, in_vllm_namespace)}\n)"


def _unschedulable(cfg: ObspackConfig, scope: str) -> str:
    pod = c.by(cfg, "namespace", "pod")
    return f"group by ({pod}) (kube_pod_status_unschedulable{c.selector(cfg.selectors.kube_state_metrics, scope)} == 1)"


def _vllm_marks(cfg: ObspackConfig, in_vllm_namespace: str) -> str:
    """What tells a pending pod is vLLM's: its namespace runs vLLM, its container's name, or its owner."""
    pod = c.by(cfg, "namespace", "pod")
    ksm = cfg.selectors.kube_state_metrics
    marks = [in_vllm_namespace]
    if cfg.vllm_containers.name_regex:
        named = c.selector(ksm, GPU_RESOURCES, f"container=~{promql_string(cfg.vllm_containers.name_regex)}")
        marks.append(f"group by ({pod}) (kube_pod_container_resource_requests{named})")
    marks += [f"group by ({pod}) (kube_pod_owner{c.selector(ksm, owner)})" for owner in autoscaled_owners(cfg)]
    return "\n  or\n  ".join(marks)


def scale_up_blocked(cfg: ObspackConfig) -> AlertRule:
    """Pods that ask for GPUs and cannot be scheduled: a scale-up the cluster cannot honour."""
    t = cfg.alerts.VLLMAutoscalerScaleUpBlocked
    expr = pending_gpu_pods(cfg)
    return AlertRule(
        alert="VLLMAutoscalerScaleUpBlocked",
        expr=expr,
        for_=t.for_,
        severity=t.severity,
        summary="vLLM pods that need GPUs cannot be scheduled: the scale-up waits for GPU capacity.",
        description=(
            "Pod {{ $labels.namespace }}/{{ $labels.pod }} asks for {{ $value }} GPUs and has been unschedulable for "
            f"{t.for_}: no node has them free."
        ),
        runbook="vllm-autoscaler-scale-up-blocked",
        triage="kubectl -n {{ $labels.namespace }} describe pod {{ $labels.pod }}",
        dashboard=c.FLEET_DASHBOARD,
    )


def signal_missing(cfg: ObspackConfig) -> AlertRule:
    """The autoscaler cannot read its signal: the HPA's ScalingActive condition is false (its metric does
    not answer, through KEDA or prometheus-adapter), or KEDA's scaler keeps failing. A ScaledObject whose
    query returns nothing scales nothing and says so only in its status."""
    t = cfg.alerts.VLLMAutoscalerSignalMissing
    inactive = hpa(cfg, "kube_horizontalpodautoscaler_status_condition", 'condition="ScalingActive"', 'status="false"')
    errors = f"{keda_increase(cfg, 'keda_scaler_detail_errors_total', 'scaledObject', t.window)} > 0"
    empty = f"{keda_increase(cfg, 'keda_scaler_empty_upstream_responses_total', 'scaledResource', t.window)} > 0"
    expr = "\nor\n".join(in_vllm_namespaces(cfg, e) for e in (f"({inactive} == 1)", errors, empty))
    return AlertRule(
        alert="VLLMAutoscalerSignalMissing",
        expr=expr,
        for_=t.for_,
        severity=t.severity,
        summary="An autoscaler of vLLM replicas cannot read its signal: it scales nothing.",
        description=(
            "The autoscaler of {{ $labels.namespace }} ({{ with $labels.horizontalpodautoscaler }}HPA {{ . }}"
            "{{ end }}{{ with $labels.scaledObject }}ScaledObject {{ . }}{{ end }}{{ with $labels.scaledResource }}"
            "ScaledObject {{ . }}{{ end }}) has had no usable metric for " + t.for_ + ": it holds its replicas "
            "whatever the load."
        ),
        runbook="vllm-autoscaler-signal-missing",
        triage="kubectl -n {{ $labels.namespace }} get scaledobject,hpa",
        dashboard=c.FLEET_DASHBOARD,
    )


ALERTS = (thrashing, maxed_out, scale_up_blocked, signal_missing)
