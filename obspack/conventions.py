"""Names shared by rules, dashboards, runbooks and tests: groups, recording rules, label sets.

Recording rules follow `level:metric:operations` (kubernetes-mixin). The level names the labels kept
besides the cluster label, which every aggregation keeps.
"""

from __future__ import annotations

from obspack.config import ObspackConfig

GROUP_PREFIX = "obspack"


def record_name(level: str, metric: str, ops: str) -> str:
    return f"{level}:{metric}:{ops}"


# Recording rules, by source. Alerts and dashboards refer to these names only.
VLLM_CONTAINER = record_name("namespace_pod_container", "vllm_container", "info")
VLLM_POD = record_name("namespace_pod", "vllm_pod", "info")
MEMORY_WORKING_SET = record_name("namespace_pod_container", "vllm_container_memory_working_set_bytes", "max")
MEMORY_LIMIT = record_name("namespace_pod_container", "vllm_container_memory_limit_bytes", "max")
MEMORY_LIMIT_RATIO = record_name("namespace_pod_container", "vllm_container_memory_working_set_bytes", "ratio_limit")

# Every GPU held by a vLLM pod, keyed by its dcgm-exporter series, labelled with the pod and its model.
GPU_INFO = record_name("namespace_pod_model_gpu", "vllm_gpu", "info")

# DCGM fields summarised over the GPUs of each vLLM pod (fleet-wide GPU panels read these).
POD_GPU_COUNT = record_name("namespace_pod_model", "vllm_gpu", "count")
POD_GPU_FB_RATIO_MAX = record_name("namespace_pod_model", "vllm_gpu_framebuffer_used", "ratio_max")
POD_GPU_XID_COUNT = record_name("namespace_pod_model", "vllm_gpu_xid_nonzero", "count")
POD_GPU_UTILIZATION = record_name("namespace_pod_model", "vllm_gpu_utilization", "avg")
POD_GPU_SM_ACTIVE = record_name("namespace_pod_model", "vllm_gpu_sm_active", "avg")
POD_GPU_TEMPERATURE = record_name("namespace_pod_model", "vllm_gpu_temperature_celsius", "max")
POD_GPU_POWER = record_name("namespace_pod_model", "vllm_gpu_power_watts", "sum")

KV_USAGE = record_name("namespace_pod_model", "vllm_kv_cache_usage", "max")
RUNNING = record_name("namespace_pod_model", "vllm_num_requests_running", "sum")
WAITING = record_name("namespace_pod_model", "vllm_num_requests_waiting", "sum")
GENERATION_RATE = record_name("namespace_pod_model", "vllm_generation_tokens", "rate5m")
PROMPT_RATE = record_name("namespace_pod_model", "vllm_prompt_tokens", "rate5m")
PREEMPTION_RATE = record_name("namespace_pod_model", "vllm_num_preemptions", "rate5m")
PREFIX_HIT_RATIO = record_name("namespace_pod_model", "vllm_prefix_cache_hit", "ratio_rate5m")
REQUEST_RATE = record_name("namespace_model_finished_reason", "vllm_request_success", "rate5m")


def latency_bucket_record(family: str) -> str:
    """Per-model histogram buckets summed over pods, for fleet percentiles."""
    return record_name("namespace_model_le", f"vllm_{family}_seconds_bucket", "rate5m")


def window_record(level: str, metric: str, op: str, window: str) -> str:
    """A record whose range window comes from the config, e.g. `...:rate30m`."""
    return record_name(level, metric, f"{op}{window}")


# SLO records: one series per cluster, namespace, model and SLO (`slo` label), never per pod.
SLO_LEVEL = "namespace_model_slo"
SLO_OBJECTIVE = record_name(SLO_LEVEL, "vllm_slo_objective", "ratio")
SLO_MIN_REQUESTS = record_name(SLO_LEVEL, "vllm_slo_min_requests", "count")


def slo_rate(metric: str, window: str) -> str:
    """Per second over `window`: errors (bad events), events (all events) or requests (the guard's count)."""
    return window_record(SLO_LEVEL, f"vllm_slo_{metric}", "rate", window)


def by(cfg: ObspackConfig, *labels: str) -> str:
    """The `by (...)`/`on (...)` label list, always led by the cluster label."""
    return ", ".join((cfg.cluster_label, *labels))


def selector(*parts: str) -> str:
    """Join non-empty matcher strings into one `{...}` selector."""
    kept = [p for p in parts if p]
    return "{" + ", ".join(kept) + "}" if kept else ""


# Dashboards: file names, titles and uids are derived here so alerts and runbooks can link to them.
DASHBOARDS = {
    "vllm-fleet": "vLLM / Fleet",
    "vllm-pod-memory-planes": "vLLM / Pod memory planes",
    "vllm-kv-prefix-cache": "vLLM / KV and prefix cache",
    "gpu-by-workload": "GPU / by workload",
    "vllm-slos": "vLLM / SLOs",
}
TRIAGE_DASHBOARD = "vllm-pod-memory-planes"
SLO_DASHBOARD = "vllm-slos"


def dashboard_uid(name: str) -> str:
    """Stable, readable uid from the dashboard's file name (Grafana allows 40 characters)."""
    return f"obspack-{name}"[:40]
