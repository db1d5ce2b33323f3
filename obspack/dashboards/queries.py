"""Named dashboard queries, functions of the config and kept apart from layout (kubernetes-mixin style).

Queries read the recording rules of obspack/rules/recording wherever one exists: those already merge
vLLM's renamed metrics, drop production-stack router copies and deduplicate kube-state-metrics and
cAdvisor. Raw series are read only where no record exists (per-pod latency histograms, restarts,
exporter series), always with the configured source matchers.

Each query binds labels to the dashboard variables with `=~"$var"`, so single-value, multi-value and
All (`.*`) selections all work. The `cluster` variable filters `cfg.cluster_label`.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.catalogue.vllm import HAS_MODEL
from obspack.config import ObspackConfig
from obspack.rules.alerts import all_alerts, enabled
from obspack.rules.recording import dcgm
from obspack.rules.recording.vllm import PREFIX_HITS, PREFIX_QUERIES, pod_model

ALL = ("cluster", "namespace", "model", "pod")
POD = ("cluster", "namespace", "pod")  # for series without model_name
MODEL = ("cluster", "namespace", "model")  # for per-model records without pod
FLEET = MODEL  # fleet-wide panels of a page whose pod variable picks one pod for its detail panels
QUANTILES = (0.5, 0.9, 0.99)
# Per-GPU and per-engine graphs draw this many lines at most; with All selected a fleet has thousands.
TOP = 20


def label(cfg: ObspackConfig, variable: str) -> str:
    """The series label a dashboard variable filters."""
    return {"cluster": cfg.cluster_label, "model": "model_name"}.get(variable, variable)


def scope(cfg: ObspackConfig, *variables: str) -> str:
    """Matchers that bind labels to variables, e.g. `cluster=~"$cluster", pod=~"$pod"`."""
    return ", ".join(f'{label(cfg, v)}=~"${v}"' for v in variables)


def rec(cfg: ObspackConfig, record: str, variables: tuple[str, ...] = ALL) -> str:
    """A recording rule filtered by the dashboard variables."""
    return record + c.selector(scope(cfg, *variables))


def raw(cfg: ObspackConfig, metric: str, source: str, variables: tuple[str, ...], *extra: str) -> str:
    """A raw series with its source's configured matchers and the variables."""
    return metric + c.selector(source, scope(cfg, *variables), *extra)


def vllm(cfg: ObspackConfig, metric: str, variables: tuple[str, ...] = ALL) -> str:
    """A raw vLLM engine series (router copies have no model_name and are left out)."""
    return raw(cfg, metric, cfg.selectors.vllm, variables, HAS_MODEL)


def exporter(cfg: ObspackConfig, metric: str, variables: tuple[str, ...] = ALL, *extra: str) -> str:
    """A series of the obspack exporter sidecar."""
    return raw(cfg, metric, cfg.selectors.exporter, variables, *extra)


def ksm(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    return raw(cfg, metric, cfg.selectors.kube_state_metrics, POD, *extra)


def with_model(cfg: ObspackConfig, expr: str) -> str:
    """Label a per-pod expression with the pod's model (and keep only pods of the selected models)."""
    return f"{expr}\n* on ({c.by(cfg, 'namespace', 'pod')}) group_left (model_name)\n{pod_model(cfg, rec(cfg, c.RUNNING))}"


def rate(cfg: ObspackConfig, metrics: tuple[str, ...], variables: tuple[str, ...] = ALL) -> str:
    """Per-series rate over `$__rate_interval` of a counter vLLM renamed: the first name present wins."""
    return "\n  or\n  ".join(f"rate({vllm(cfg, m, variables)}[$__rate_interval])" for m in metrics)


# ---------------------------------------------------------------------------------------------------
# Engine plane (records from obspack/rules/recording/vllm.py)


def sum_by(cfg: ObspackConfig, record: str, *labels: str, variables: tuple[str, ...] = ALL) -> str:
    return f"sum by ({c.by(cfg, *labels)}) ({rec(cfg, record, variables)})"


def max_by(cfg: ObspackConfig, record: str, *labels: str, variables: tuple[str, ...] = ALL) -> str:
    return f"max by ({c.by(cfg, *labels)}) ({rec(cfg, record, variables)})"


def per_pod(cfg: ObspackConfig, record: str) -> str:
    """A per-pod record for a graph as it is: it already has one series per pod and model, so a `max by`
    over its own labels would cost a pass over every pod at every step and change nothing."""
    return rec(cfg, record)


def total(cfg: ObspackConfig, record: str, agg: str = "sum", variables: tuple[str, ...] = ALL) -> str:
    """The whole selection in one number (for stats)."""
    return f"{agg}({rec(cfg, record, variables)})"


def pods_serving(cfg: ObspackConfig) -> str:
    return f"count({rec(cfg, c.RUNNING)})"


def latency_quantile(cfg: ObspackConfig, family: str, q: float) -> str:
    """Fleet percentile per model from the per-model bucket records (no pod label there)."""
    record = rec(cfg, c.latency_bucket_record(family), MODEL)
    return f"histogram_quantile({q}, sum by ({c.by(cfg, 'namespace', 'model_name', 'le')}) ({record}))"


POD_LATENCY_SOURCES = {
    "time_to_first_token": ("vllm:time_to_first_token_seconds_bucket",),
    "inter_token_latency": (
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:time_per_output_token_seconds_bucket",
    ),
    "e2e_request_latency": ("vllm:e2e_request_latency_seconds_bucket",),
}


def pod_latency_quantile(cfg: ObspackConfig, family: str, q: float) -> str:
    """A percentile of one pod from its raw histogram: cheap when filtered to a pod."""
    rates = rate(cfg, POD_LATENCY_SOURCES[family], POD)
    return f"histogram_quantile({q}, sum by ({c.by(cfg, 'le')}) (\n  {rates}\n))"


def request_rate_by_reason(cfg: ObspackConfig) -> str:
    return sum_by(cfg, c.REQUEST_RATE, "namespace", "model_name", "finished_reason", variables=MODEL)


def prefix_tokens_rate(cfg: ObspackConfig, record: str) -> str:
    """Prompt tokens per second looked up in the prefix cache (or found there) per model, from its per-model
    record (obspack/rules/recording/vllm.py): the pod filter does not narrow it."""
    return sum_by(cfg, record, "namespace", "model_name", variables=MODEL)


def v0_prefix_hit_rate(cfg: ObspackConfig) -> str:
    """vLLM V0's lifetime block hit-rate gauge per pod (-1, caching off, left out), for pods without the
    hit and query counters (V0 up to 0.9.0 has only this gauge)."""
    gauge = vllm(cfg, "vllm:gpu_prefix_cache_hit_rate")
    return f"max by ({c.by(cfg, 'namespace', 'pod', 'model_name')}) ({gauge} >= 0)\nunless on ({c.by(cfg, 'namespace', 'pod')})\n{rec(cfg, c.PREFIX_HIT_RATIO)}"


def prefix_hit_ratio_total(cfg: ObspackConfig) -> str:
    """Hits / queries over the whole selection (tokens), from the counters of either vLLM generation."""
    return f"sum({rate(cfg, PREFIX_HITS)})\n/\n(sum({rate(cfg, PREFIX_QUERIES)}) > 0)"


def cache_config(cfg: ObspackConfig) -> str:
    """vllm:cache_config_info per pod and engine (it has no model_name: joined from the pod)."""
    keep = c.by(
        cfg,
        "namespace",
        "pod",
        "engine",
        "block_size",
        "num_gpu_blocks",
        "gpu_memory_utilization",
        "enable_prefix_caching",
        "cache_dtype",
    )
    info = raw(cfg, "vllm:cache_config_info", cfg.selectors.vllm, POD)
    return with_model(cfg, f"max by ({keep}) ({info})")


# ---------------------------------------------------------------------------------------------------
# Host memory plane (records from obspack/rules/recording/kubernetes.py) and restarts


def memory_request(cfg: ObspackConfig) -> str:
    """The memory request of the selected pod's vLLM containers (raw: no record needed for one pod)."""
    on = c.by(cfg, "namespace", "pod", "container")
    requests = ksm(cfg, "kube_pod_container_resource_requests", 'resource="memory"')
    return f"max by ({on}) ({requests})\nand on ({on})\n{rec(cfg, c.VLLM_CONTAINER, POD)}"


def restarts(cfg: ObspackConfig, window: str = "$__rate_interval") -> str:
    metric = ksm(cfg, "kube_pod_container_status_restarts_total")
    return f"max by ({c.by(cfg, 'namespace', 'pod', 'container')}) (increase({metric}[{window}]))"


def per_step(cfg: ObspackConfig, agg: str, labels: tuple[str, ...], counter: str) -> str:
    """The events of a counter in each step of a graph, each counted once: the counter now less the counter
    one step ago. `increase()` over `$__rate_interval`, which is longer than a step, would draw one event in
    two to four bars, in fractions. A reset (a new process) counts nothing rather than a negative bar."""
    keep = c.by(cfg, *labels)
    return f"clamp_min(\n  {agg} by ({keep}) ({counter})\n  -\n  {agg} by ({keep}) ({counter} offset $__interval),\n  0\n)"


def restarts_per_step(cfg: ObspackConfig) -> str:
    """Each container's restarts in each step of a graph (`per_step`)."""
    return per_step(cfg, "max", CONTAINER_KEY, ksm(cfg, "kube_pod_container_status_restarts_total"))


CONTAINER_KEY = ("namespace", "pod", "container")


def last_termination(cfg: ObspackConfig) -> str:
    """The sticky last termination reason (OOMKilled vs Error) per container; absent until one happened."""
    metric = ksm(cfg, "kube_pod_container_status_last_terminated_reason")
    return f"max by ({c.by(cfg, *CONTAINER_KEY, 'reason')}) ({metric})"


def last_termination_field(cfg: ObspackConfig, field: str, scale: int = 1) -> str:
    """A number kube-state-metrics keeps about a container's last termination (`exitcode`, `timestamp`:
    experimental, absent before kube-state-metrics 2.10), for the containers that report a last reason (the
    same termination; like the reason, absent until a container terminated)."""
    on = c.by(cfg, *CONTAINER_KEY)
    metric = ksm(cfg, f"kube_pod_container_status_last_terminated_{field}")
    reason = ksm(cfg, "kube_pod_container_status_last_terminated_reason")
    expr = f"max by ({on}) ({metric})"
    expr = f"{scale} * {expr}" if scale != 1 else expr
    return f"{expr}\nand on ({on})\nmax by ({on}) ({reason})"


def restart_events(cfg: ObspackConfig) -> str:
    """The containers that restarted within the last `$__rate_interval` (an annotation is drawn where > 0)."""
    return f"{restarts(cfg)} > 0"


def oom_kill_events(cfg: ObspackConfig) -> str:
    """Restarts whose last termination reason is OOMKilled: the kernel killed the container (host RAM)."""
    oom = ksm(cfg, "kube_pod_container_status_last_terminated_reason", 'reason="OOMKilled"')
    on = c.by(cfg, *CONTAINER_KEY)
    return f"{restart_events(cfg)}\nand on ({on})\nmax by ({on}) ({oom})"


def other_restart_events(cfg: ObspackConfig) -> str:
    """Restarts for any other reason, with the reason where kube-state-metrics reports one."""
    on = c.by(cfg, *CONTAINER_KEY)
    events = restart_events(cfg)
    reasons = ksm(cfg, "kube_pod_container_status_last_terminated_reason", 'reason!="OOMKilled"')
    with_reason = f"({events})\n* on ({on}) group_left (reason)\nmax by ({on}, reason) ({reasons})"
    oom = ksm(cfg, "kube_pod_container_status_last_terminated_reason", 'reason="OOMKilled"')
    return f"(\n{with_reason}\nor on ({on})\n{events}\n)\nunless on ({on})\nmax by ({on}) ({oom})"


def pod_image_events(cfg: ObspackConfig) -> str:
    """A container of the selected pod that runs an image it did not run one step earlier: the pod's start,
    or a rollout that kept the pod's name (a StatefulSet)."""
    keep = c.by(cfg, *CONTAINER_KEY, "image")
    info = ksm(cfg, "kube_pod_container_info")
    return f"max by ({keep}) ({info})\nunless\nmax by ({keep}) ({info} offset $__interval)"


def rollout_times(cfg: ObspackConfig) -> str:
    """The creation time, in milliseconds, of each ReplicaSet of the Deployment that owns the selected pod:
    the rollouts of that Deployment (pod -> its ReplicaSet -> its Deployment -> all its ReplicaSets)."""
    ns = ("cluster", "namespace")
    source = cfg.selectors.kube_state_metrics
    pod_rs = raw(cfg, "kube_pod_owner", source, POD, 'owner_kind="ReplicaSet"')
    rs_owner = raw(cfg, "kube_replicaset_owner", source, ns, 'owner_kind="Deployment"')
    created = raw(cfg, "kube_replicaset_created", source, ns)
    rs, deployment = c.by(cfg, "namespace", "replicaset"), c.by(cfg, "namespace", "owner_name")
    pods_deployment = (
        f"max by ({deployment}) (\n  {rs_owner}\n  * on ({rs}) group_left ()\n"
        f'  max by ({rs}) (label_replace({pod_rs}, "replicaset", "$1", "owner_name", "(.+)"))\n)'
    )
    its_replicasets = f"max by ({rs}, owner_name) ({rs_owner})\n* on ({deployment}) group_left ()\n{pods_deployment}"
    return f"1000 * (\nmax by ({rs}) ({created})\n* on ({rs}) group_left (owner_name)\n(\n{its_replicasets}\n)\n)"


# ---------------------------------------------------------------------------------------------------
# GPU plane. Fleet-wide panels read the per-pod summaries of obspack/rules/recording/dcgm.py. Per-GPU
# panels join raw DCGM fields to the attribution record for the selected pod, with the raw series
# narrowed to that pod's dcgm-exporter (`$gpu_instance`, a hidden variable): a pod runs on one node, so
# a few series are read instead of every GPU of the fleet.

GPU_INSTANCE = 'instance=~"$gpu_instance"'


def gpu(cfg: ObspackConfig, per_key: str) -> str:
    """A per-key DCGM expression (built with `where=GPU_INSTANCE`) for each GPU of the selected pod."""
    return dcgm.held(cfg, per_key, dcgm.GPU_LABELS, rec(cfg, c.GPU_INFO, POD))


def gpu_field(cfg: ObspackConfig, *metrics: str, scale: int = 1) -> str:
    """One DCGM field (the first of `metrics` present) per GPU of the selected pod."""
    expr = gpu(cfg, dcgm.field(cfg, *metrics, where=GPU_INSTANCE))
    return f"{scale} * (\n{expr}\n)" if scale != 1 else expr


def gpu_framebuffer_ratio(cfg: ObspackConfig) -> str:
    return gpu(cfg, dcgm.framebuffer_ratio(cfg, where=GPU_INSTANCE))


def gpu_framebuffer_total(cfg: ObspackConfig) -> str:
    """used + free in bytes, per GPU of the selected pod."""
    used, free = (dcgm.field(cfg, m, where=GPU_INSTANCE) for m in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"))
    return f"{dcgm.MIB} * (\n{gpu(cfg, f'{used} + {free}')}\n)"


def mean_gpu_utilization(cfg: ObspackConfig) -> str:
    """The mean utilisation over every selected GPU (pods weighted by their GPU count), from the per-model
    sums: the per-pod records joined at every step took 0.4 to 0.6 s at 1,000 pods."""
    return f"sum({rec(cfg, c.MODEL_GPU_UTILIZATION_SUM, FLEET)})\n/\nsum({rec(cfg, c.MODEL_GPU_COUNT, FLEET)})"


def extremes(series: str, lowest: bool = False) -> str:
    """The TOP highest (or lowest) series at each step: bounded lines when All selects thousands of GPUs."""
    return f"{'bottomk' if lowest else 'topk'}({TOP}, {series})"


# ---------------------------------------------------------------------------------------------------
# Alerts


def obspack_alert_names(cfg: ObspackConfig) -> str:
    """The alerts this pack renders, as a regex alternation (a switched-off alert is not named)."""
    return "|".join(sorted({a.alert for a in all_alerts(cfg) if enabled(cfg, a.alert)}))


def firing_alerts(cfg: ObspackConfig) -> str:
    names = obspack_alert_names(cfg)
    sel = c.selector('alertstate="firing"', f'alertname=~"{names}"', scope(cfg, "cluster", "namespace"))
    return f"ALERTS{sel}"


def firing_alert_table(cfg: ObspackConfig) -> str:
    keep = c.by(cfg, "alertname", "severity", "namespace", "pod", "model_name")
    return f"max by ({keep}) ({firing_alerts(cfg)})"


ALERT_KEY = ("namespace", "pod", "container", "gpu", "alertname", "severity")


def pod_alerts(cfg: ObspackConfig, series: str = "ALERTS", *extra: str) -> str:
    """obspack's alerts of the selected pod, one series per alert (and container or GPU)."""
    names = f'alertname=~"{obspack_alert_names(cfg)}"'
    return f"max by ({c.by(cfg, *ALERT_KEY)}) ({series}{c.selector(*extra, names, scope(cfg, *POD))})"


def pod_firing_alerts(cfg: ObspackConfig) -> str:
    return pod_alerts(cfg, "ALERTS", 'alertstate="firing"')


def pod_alerts_since(cfg: ObspackConfig) -> str:
    """When each firing alert of the pod became active (ALERTS_FOR_STATE holds it), in milliseconds."""
    return f"1000 * (\n{pod_alerts(cfg, 'ALERTS_FOR_STATE')}\nand on ({c.by(cfg, *ALERT_KEY)})\n{pod_firing_alerts(cfg)}\n)"


def firing_alert_count(cfg: ObspackConfig) -> str:
    """Zero, not "No data", when nothing fires."""
    return f"count({firing_alerts(cfg)}) or vector(0)"


# ---------------------------------------------------------------------------------------------------
# Data-parallel engines and LeaderWorkerSet workers of the selected pod (raw series: one pod's worth)


def per_engine(cfg: ObspackConfig, *metrics: str, agg: str = "max") -> str:
    """A vLLM gauge of the selected pod per engine (any of `metrics`, old names after new), after the
    per-process (`pid`) copies."""
    reads = " or ".join(vllm(cfg, m, POD) for m in metrics)
    return f"{agg} by (engine) (max without (pid) ({reads}))"


def engine_tokens_rate(cfg: ObspackConfig) -> str:
    """Generated tokens per second of the selected pod, per engine."""
    return f"sum by (engine) (rate({vllm(cfg, 'vllm:generation_tokens_total', POD)}[$__rate_interval]))"


def lws_group_of_pod(cfg: ObspackConfig, record: str, *labels: str) -> str:
    """A per-pod record of the selected pod and the LeaderWorkerSet workers it leads (pods owned by the
    StatefulSet named after it: obspack/rules/lws.py), by `labels`: a pod that leads none shows itself."""
    owner = ('owner_kind="StatefulSet"', 'owner_name=~"$pod"')
    owned = raw(cfg, "kube_pod_owner", cfg.selectors.kube_state_metrics, POD[:2], *owner)
    pod = c.by(cfg, "namespace", "pod")
    return (
        f"max by ({', '.join(labels)}) (\n  {rec(cfg, record, POD)}\n  or\n  (\n    {rec(cfg, record, POD[:2])}\n"
        f"    and on ({pod})\n    group by ({pod}) ({owned})\n  )\n)"
    )
