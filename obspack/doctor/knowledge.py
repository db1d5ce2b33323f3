"""What the doctor knows about the sources, as data: which metrics tell a source (and a vLLM version) apart,
which series exist only after an event, and where clusters and DCGM workload labels hide.

This is knowledge of the exporters (vLLM's metric renames across versions, dcgm-exporter's label modes,
kube-state-metrics and cAdvisor conventions), never of the pack: what the pack reads is always derived from
the rendered rules and dashboards.
"""

from __future__ import annotations

from dataclasses import dataclass

from obspack.catalogue import gateway


@dataclass(frozen=True)
class Source:
    key: str  # the `selectors.<key>` setting that scopes it; "" for Prometheus's own series
    title: str
    prefixes: tuple[str, ...]  # metric names that start with one of these come from this source
    inventory: tuple[str, ...]  # metrics every deployment of it serves; the first one present is counted
    install: str  # what to do when it is missing
    optional: bool = False  # the pack works without it, minus the alerts and panels that read it


SOURCES = (
    Source(
        "vllm",
        "vLLM",
        ("vllm:",),
        ("vllm:num_requests_running", "vllm:num_requests_waiting"),
        "scrape the vLLM pods' /metrics (a ServiceMonitor or PodMonitor on the serving port)",
    ),
    Source(
        "cadvisor",
        "cAdvisor",
        ("container_",),
        ("container_memory_working_set_bytes", "container_cpu_usage_seconds_total"),
        "scrape the kubelet's /metrics/cadvisor endpoint",
    ),
    Source(
        "kube_state_metrics",
        "kube-state-metrics",
        ("kube_",),
        ("kube_pod_info", "kube_pod_container_info"),
        "install kube-state-metrics and scrape it",
    ),
    Source(
        "dcgm",
        "dcgm-exporter",
        ("DCGM_",),
        ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"),
        "install NVIDIA dcgm-exporter (GPU Operator or its Helm chart) and scrape it",
    ),
    Source(
        "exporter",
        "obspack exporter",
        ("obspack_",),
        ("obspack_target_up",),
        "run `obspack exporter` next to vLLM, with its CUDA probe (docs/exporter.md)",
        optional=True,
    ),
    Source("", "Prometheus", ("up", "ALERTS"), ("up",), "check the scrape configuration"),
)


def source_of(metric: str) -> Source | None:
    for source in SOURCES:
        if any(metric == p or (p.endswith(("_", ":")) and metric.startswith(p)) for p in source.prefixes):
            return source
    return None


# Series that exist only after something happened. `sibling` is a series of the same source that is always
# there: when it is, the event series can appear, so an alert on it can fire and an empty panel is by design.
@dataclass(frozen=True)
class Event:
    when: str
    sibling: str | None
    # For the series of an optional source the pack reads only where it is deployed (the inference pool's
    # EPP): the series that tell it is here. Where none is, what reads only such series is no finding at all
    # (the sources report says there is none), as a feature row nobody uses.
    source: str | None = None


# The endpoint picker's series exist only where one is deployed and scraped (docs/gateway.md). Its other
# series take the EPP's build info as their sibling: without any EPP they wait for one as well.
EPP_PRESENT = "{__name__=~\"" + "|".join(gateway.IDENTITY) + "\"}"
EPP_SCRAPED = Event("an endpoint picker (EPP) is scraped (docs/gateway.md)", None, source=EPP_PRESENT)
EPP_SIBLING = gateway.INFO.legacy  # every EPP era emits it (the router as the twin of llm_d_epp_info)
# The EPP's P/D decision counters: llm-d router's, the llm-d inference scheduler's, and the older two-valued
# ones of the deprecated pd-profile-handler (the disaggregated-serving page reads the first one present).
EPP_DECISIONS = (
    "llm_d_epp_disagg_decision_total",
    "llm_d_inference_scheduler_disagg_decision_total",
    "llm_d_epp_pd_decision_total",
    "llm_d_inference_scheduler_pd_decision_total",
)

EVENTS = {
    "ALERTS": Event("an alert is pending or firing", None),
    "ALERTS_FOR_STATE": Event("an alert is pending or firing", None),
    "kube_pod_container_status_last_terminated_reason": Event(
        "a container has terminated", "kube_pod_container_info"
    ),
    "kube_pod_container_status_last_terminated_exitcode": Event(
        "a container has terminated", "kube_pod_container_info"
    ),
    "kube_pod_container_status_last_terminated_timestamp": Event(
        "a container has terminated", "kube_pod_container_info"
    ),
    "kube_pod_container_status_terminated_reason": Event(
        "a container is terminated", "kube_pod_container_info"
    ),
    "kube_pod_container_status_waiting_reason": Event(
        "a container is waiting (crash loop, image pull)", "kube_pod_container_info"
    ),
    "kube_pod_status_unschedulable": Event("a pod cannot be scheduled", "kube_pod_container_info"),
    **{
        f"kube_horizontalpodautoscaler_{name}": Event("an HPA (or a KEDA ScaledObject) scales a workload", "kube_pod_container_info")
        for name in (
            "status_desired_replicas",
            "status_current_replicas",
            "spec_max_replicas",
            "spec_min_replicas",
            "status_condition",
            "spec_target_metric",
        )
    },
    "keda_scaler_detail_errors_total": Event("KEDA runs a ScaledObject", None),
    "keda_scaler_empty_upstream_responses_total": Event("KEDA runs a ScaledObject", None),
    # the inference pool's endpoint picker: its series exist only where one is deployed and scraped; its
    # errors and flow control (off unless its feature gate is on) only once they happen; its own time per
    # request only from the llm-d router v0.9 on; its P/D decisions only in pools it disaggregates
    **{name: EPP_SCRAPED for name in gateway.SERIES},
    **{
        name: Event("the EPP answers a request with an error", EPP_SIBLING)
        for name in (gateway.REQUEST_ERRORS, gateway.OBJECTIVE_ERRORS, gateway.MODEL_ERRORS)
    },
    **{
        name: Event("the EPP runs flow control (its flowControl feature gate) and rejects a request", EPP_SIBLING)
        for name in (gateway.FLOW_REQUESTS, gateway.FLOW_QUEUE_DURATION_COUNT)
    },
    f"{gateway.REQUEST_PROCESSING}_bucket": Event("the EPP is an llm-d router v0.9 or later", EPP_SIBLING),
    **{
        name: Event("the EPP splits a pool's requests into prefill and decode (P/D disaggregation)", EPP_SIBLING)
        for name in EPP_DECISIONS
    },
}

# Values of a record's label that exist only while something is so: the states of the GPUs the cost records
# count. A reader that selects one (the cost page's idle GPUs, VLLMGPUsMostlyIdle) waits for it, as for an
# event series, once the record has series in another state.
RECORD_STATES = {
    "state": {
        "idle": "a vLLM pod holds GPUs and serves nothing",
        "asleep": "an engine is put to sleep (vLLM sleep mode)",
    },
}

# Series of vLLM features only some engines run, and of recent releases (obspack/catalogue/vllm_features.py):
# absent where no engine uses the feature, which is no fault of the fleet's or the pack's. The alerts on them
# can fire once an engine uses it; the dashboard rows that show them stay closed until then.
FEATURE_EVENTS = (
    ("vllm:nixl_", "an engine uses the NIXL connector (disaggregated prefill/decode)"),
    ("vllm:mooncake_", "an engine uses the Mooncake connector"),
    ("vllm:num_requests_kv_fetch_by_stage", "an engine fetches KV through a connector (vLLM 0.32 and later)"),
    ("vllm:simple_kv_offload_", "an engine uses the simple CPU KV offload connector"),
    ("vllm:kv_offload_", "an engine offloads KV with the OffloadingConnector"),
    ("vllm:spec_decode_", "an engine runs speculative decoding"),
    ("vllm:lora_requests_info", "an engine serves LoRA adapters"),
    ("vllm:admission_rejections_total", "an engine with a queue cap (vLLM 0.32 and later) refused a request"),
    ("vllm:engine_sleep_state", "engines run vLLM 0.11.1 or later"),
    ("vllm:external_prefix_cache_", "engines run vLLM 0.11.1 or later"),
    ("vllm:num_requests_waiting_by_reason", "engines run vLLM 0.20 or later"),
)
FEATURE_SIBLING = "vllm:num_requests_running"


def event_of(metric: str) -> Event | None:
    """The event (or vLLM feature) a series waits for, if it is one that exists only after it."""
    if metric in EVENTS:
        return EVENTS[metric]
    when = next((text for prefix, text in FEATURE_EVENTS if metric.startswith(prefix)), None)
    return Event(when, FEATURE_SIBLING) if when else None


# vLLM generations, newest first: a pod is the first entry whose metrics it all serves. From the metric
# renames and additions of vLLM 0.4 to 0.33 (V0 engine up to 0.10, V1 from 0.7, default from 0.8).
VLLM_GENERATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("V1 >= 0.30", ("vllm:request_num_preemptions_count",)),
    ("V1 >= 0.20", ("vllm:num_requests_waiting_by_reason",)),
    ("V1 >= 0.16", ("vllm:prompt_tokens_by_source_total",)),
    ("V1 >= 0.11.1", ("vllm:engine_sleep_state",)),
    ("V1 >= 0.11", ("vllm:request_time_per_output_token_seconds_count",)),
    ("V1 >= 0.9.2", ("vllm:kv_cache_usage_perc",)),
    ("V0 <= 0.6", ("vllm:avg_generation_throughput_toks_per_s",)),
    ("V0 <= 0.9.0", ("vllm:num_requests_swapped",)),
    ("V0 <= 0.9.0", ("vllm:gpu_prefix_cache_hit_rate",)),
    ("V1 0.7.3 to 0.9.1", ("vllm:gpu_prefix_cache_queries_total",)),
    ("V0 0.9.1 to 0.10 or V1 < 0.7.3", ("vllm:gpu_cache_usage_perc",)),
    ("unknown version", ("vllm:num_requests_running",)),
)
# vLLM engine series carry model_name; production-stack's router re-exports some gauges without it.
VLLM_ENGINE = 'model_name!=""'
VLLM_ROUTER = 'model_name=""'

# dcgm-exporter puts the workload pod in one of these labels (first match wins per series).
DCGM_MODES = (
    ("exported_pod", "exported_pod= (scraped with honorLabels: false)"),
    ("pod_name", "pod_name= (dcgm-exporter --use-old-namespace)"),
    ("pod", "pod= (scraped with honorLabels: true)"),
)
DCGM_GPU_KEY = ("instance", "gpu", "GPU_I_ID")  # one series per GPU or MIG instance per field
DCGM_PROFILING = "DCGM_FI_PROF_"  # fields that need profiling (datacenter GPUs, SYS_ADMIN); often off
DCGM_PROFILING_FIX = (
    "turn on dcgm-exporter's profiling fields: list them (DCGM_FI_PROF_SM_ACTIVE, ...) in its metrics CSV "
    "(the `-f` file, the Helm chart's `arguments`); they need a datacenter GPU and no other profiler on it"
)
GPU_REQUESTS = ("kube_pod_container_resource_requests", 'resource="nvidia_com_gpu"')  # pods holding GPUs

CADVISOR_CONTAINER = 'container!=""'
CADVISOR_IMAGE = 'image!=""'
KSM_REPLICA_KEY = ("namespace", "pod")
KSM_CONTAINERS = "kube_pod_container_info"  # one series per container, with its image

EXPORTER_PROBE = "obspack_cuda_allocator_reserved_bytes"  # served only when the CUDA probe runs in vLLM
EXPORTER_PROBE_PREFIX = "obspack_cuda_"  # every series of the CUDA probe

# Names clusters go by when the label is not `cluster` (kube-prometheus external labels, Thanos, Mimir).
CLUSTER_LABELS = (
    "cluster",
    "k8s_cluster",
    "cluster_name",
    "kubernetes_cluster",
    "k8s_cluster_name",
    "clusterName",
    "cluster_id",
)
