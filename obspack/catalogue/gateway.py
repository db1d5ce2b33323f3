"""The inference pool's endpoint picker (EPP) as data: the series obspack reads from it, across the three
naming eras, and the PromQL that counts each thing once when an EPP emits both twins of a series.

Eras (what one EPP's `/metrics` carries):

- GAIE up to v1.0: `inference_model_*` (per model), `inference_pool_*`, `inference_extension_*`.
- GAIE v1.1 to v1.5, llm-d scheduler up to v0.8: `inference_objective_*`, `inference_pool_*`,
  `inference_extension_*` (flow control from v1.1; `inference_pool` on its histogram from v1.2).
- llm-d router v0.9 and v0.10: the canonical `llm_d_epp_*` names and, beside each, its legacy twin
  ("dual emission"), the legacy one keeping its old label names (`model_server_pod`, `pod_name`).

Pool gauges name the InferencePool in `name`; flow-control series in `inference_pool`. Every replica of
an EPP in HA exports the pool gauges: gauges are taken with `max` across replicas, counters summed (one
request passes one replica). Facts from GAIE `pkg/epp/metrics/metrics.go` at v0.3.0, v1.0.0, v1.1.0 and
v1.5.0, and llm-d router v0.10.0 `docs/metrics.md`.
"""

from __future__ import annotations

from dataclasses import dataclass

POOL = "name"  # the InferencePool's name on pool gauges
FLOW_POOL = "inference_pool"  # ... and on flow-control series


@dataclass(frozen=True)
class Twins:
    """One series under its canonical (router v0.9+) name and its legacy (GAIE) name."""

    canonical: str
    legacy: str


# Pool gauges, label `name`.
READY = Twins("llm_d_epp_ready_endpoints", "inference_pool_ready_pods")
AVG_KV = Twins("llm_d_epp_average_kv_cache_utilization", "inference_pool_average_kv_cache_utilization")
AVG_QUEUE = Twins("llm_d_epp_average_queue_size", "inference_pool_average_queue_size")
AVG_RUNNING = Twins("llm_d_epp_average_running_requests", "inference_pool_average_running_requests")  # GAIE v1.x
# Per-endpoint queue: `name` and the endpoint, whose label was renamed with the series.
ENDPOINT_QUEUE = Twins("llm_d_epp_per_endpoint_queue_size", "inference_pool_per_pod_queue_size")
ENDPOINT_LABEL = Twins("model_server_endpoint", "model_server_pod")
# Scheduler and EPP overhead histograms (family names), no labels; buckets 0.0001 to 0.1 s.
SCHEDULER_E2E = Twins("llm_d_epp_scheduler_e2e_duration_seconds", "inference_extension_scheduler_e2e_duration_seconds")
SCHEDULER_E2E_LAST_BUCKET = 0.1  # the highest finite bound: a p99 above it reads as 0.1
REQUEST_PROCESSING = "llm_d_epp_request_processing_duration_seconds"  # router v0.9+, no twin
# Build info, labels `commit`, `build_ref` (GAIE from v0.5).
INFO = Twins("llm_d_epp_info", "inference_extension_info")
# Requests per model: the canonical counters; the legacy ones by era.
REQUESTS = "llm_d_epp_request_total"
REQUEST_ERRORS = "llm_d_epp_request_error_total"  # + error_code
OBJECTIVE_REQUESTS = "inference_objective_request_total"  # GAIE v1.1+, dual-emitted by the router
OBJECTIVE_ERRORS = "inference_objective_request_error_total"
MODEL_REQUESTS = "inference_model_request_total"  # GAIE up to v1.0 only: no current EPP emits it
MODEL_ERRORS = "inference_model_request_error_total"
# Flow control (only with the flowControl feature gate). The router counts every terminal outcome; GAIE
# only has the queue-time histogram, whose _count per outcome is the same count.
FLOW_REQUESTS = "llm_d_epp_flow_control_requests_total"  # outcome, priority, inference_pool
FLOW_QUEUE_DURATION_COUNT = "inference_extension_flow_control_request_queue_duration_seconds_count"
REJECTED = 'outcome=~"Rejected.*"'  # RejectedCapacity (429), RejectedNoEndpoints (503), RejectedOther
FLOW_SATURATION = Twins("llm_d_epp_flow_control_pool_saturation", "inference_extension_flow_control_pool_saturation")

# A job that names the EPP as a word (llm-d-router-epp, gaie_epp, epp): the fallback that tells an EPP
# target that never served a series (scraped without its token), and the alert's default job_regex.
JOB_HINT = "(.*[^a-z])?epp([^a-z].*)?"
# What only an EPP exports and it always does once it runs: its build info and its pool's ready gauge.
IDENTITY = (INFO.canonical, INFO.legacy, READY.canonical, READY.legacy)

# Every EPP series the pack reads (histograms by their buckets): none exists on a fleet without an EPP.
SERIES = (
    *(n for t in (READY, AVG_KV, AVG_QUEUE, ENDPOINT_QUEUE, INFO, FLOW_SATURATION) for n in (t.canonical, t.legacy)),
    f"{SCHEDULER_E2E.canonical}_bucket", f"{SCHEDULER_E2E.legacy}_bucket", f"{REQUEST_PROCESSING}_bucket",
    REQUESTS, OBJECTIVE_REQUESTS, MODEL_REQUESTS,
)

ERAS = (
    ("llm-d router v0.9+ (llm_d_epp_*, legacy names dual-emitted)", INFO.canonical),
    ("GAIE v1.1 to v1.5 or llm-d scheduler up to v0.8 (inference_objective_*)", OBJECTIVE_REQUESTS),
    ("GAIE up to v1.0 (inference_model_*)", MODEL_REQUESTS),
)


def _with(metric: str, selector: str) -> str:
    """`metric{...}` with the selector's matchers (braces included, or empty)."""
    return f"{metric}{selector}"


def once(twins: Twins, selector: str, by: str) -> str:
    """A pool gauge counted once: the highest value per `by` across EPP replicas, from the canonical
    series where the EPP emits it, else from its legacy twin (same labels)."""
    return (
        f"max by ({by}) ({_with(twins.canonical, selector)})\n"
        f"or\nmax by ({by}) ({_with(twins.legacy, selector)})"
    )


def served(selector: str, by: str, lookback: str) -> str:
    """The `by` label sets of targets that served EPP series within the lookback."""
    return "\nor\n".join(f"group by ({by}) (present_over_time({_with(m, selector)}[{lookback}]))" for m in IDENTITY)
