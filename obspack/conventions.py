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
MEMORY_REQUEST = record_name("namespace_pod_container", "vllm_container_memory_request_bytes", "max")
MEMORY_LIMIT_RATIO = record_name("namespace_pod_container", "vllm_container_memory_working_set_bytes", "ratio_limit")

GPU_FB_USED = record_name("namespace_pod_gpu", "vllm_gpu_framebuffer_used_bytes", "max")
GPU_FB_FREE = record_name("namespace_pod_gpu", "vllm_gpu_framebuffer_free_bytes", "max")
GPU_FB_RATIO = record_name("namespace_pod_gpu", "vllm_gpu_framebuffer_used", "ratio")

# Every GPU held by a vLLM pod, keyed by its dcgm-exporter series, labelled with the pod (and model).
GPU_INFO = record_name("namespace_pod_gpu", "vllm_gpu", "info")
WORKLOAD_GPU_INFO = record_name("namespace_pod_model_gpu", "vllm_gpu", "info")


def workload_gpu_record(metric: str, op: str = "max") -> str:
    """A DCGM field per held GPU, labelled with the pod and model holding it (the GPU page reads these)."""
    return record_name("namespace_pod_model_gpu", f"vllm_gpu_{metric}", op)


GPU_UTILIZATION = workload_gpu_record("utilization")
GPU_SM_ACTIVE = workload_gpu_record("sm_active")
GPU_TEMPERATURE = workload_gpu_record("temperature_celsius")
GPU_POWER = workload_gpu_record("power_watts")
GPU_XID = workload_gpu_record("xid_last")
WORKLOAD_GPU_FB_USED = workload_gpu_record("framebuffer_used_bytes")
WORKLOAD_GPU_FB_FREE = workload_gpu_record("framebuffer_free_bytes")
WORKLOAD_GPU_FB_TOTAL = workload_gpu_record("framebuffer_total_bytes")
WORKLOAD_GPU_FB_RATIO = workload_gpu_record("framebuffer_used", "ratio")

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
