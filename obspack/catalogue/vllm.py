"""vLLM's `/metrics` as data: the series names obspack reads, the bucket bounds of vLLM's histograms by
release, and the labels the rules keep per model.

Everything that writes or reads vLLM series takes them from here: the rules, the SLO bucket checks
(vllm_latency.py), the exporter's parser, the demo's fake vLLM, the synthetic fleets of the tests and
the benchmarks. A release that renames a series or moves a bucket is one edit here.

The bounds were read from vLLM's released source; tests/fixtures/vllm-histograms.json is the extract the
test suite checks this table against, release by release. A row covers the surveyed releases from
`first` to `last`; a release between two surveyed ones where the bounds changed is covered only where the
change is known (0.8.4 for the latency buckets).
"""

from __future__ import annotations

from dataclasses import dataclass

# The labels every per-model series of the rules keeps, and the matcher that drops series without a model
# (production-stack's router re-exports engine gauges without `model_name`).
HAS_MODEL = 'model_name!=""'
POD_MODEL = ("namespace", "pod", "model_name")

# Gauges and counters, exposed names (a counter's `_total` included).
NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"
CACHE_CONFIG_INFO = "vllm:cache_config_info"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"  # 0.9.2+
GPU_CACHE_USAGE = "vllm:gpu_cache_usage_perc"  # the older name, up to 0.11
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"  # V1
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
GPU_PREFIX_CACHE_HITS = "vllm:gpu_prefix_cache_hits_total"  # V1 0.8 to 0.11
GPU_PREFIX_CACHE_QUERIES = "vllm:gpu_prefix_cache_queries_total"
GPU_PREFIX_CACHE_HIT_RATE = "vllm:gpu_prefix_cache_hit_rate"  # V0: a lifetime ratio

# Histograms, by family name (the series are <name>_bucket, _sum and _count).
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"  # 0.10.2+
TPOT = "vllm:time_per_output_token_seconds"  # ITL's older name: default up to 0.11, hidden 0.12-0.14, gone in 0.15
REQUEST_TPOT = "vllm:request_time_per_output_token_seconds"  # per request, 0.11+
E2E = "vllm:e2e_request_latency_seconds"
QUEUE = "vllm:request_queue_time_seconds"
PREFILL = "vllm:request_prefill_time_seconds"
DECODE = "vllm:request_decode_time_seconds"
INFERENCE = "vllm:request_inference_time_seconds"
ITERATION_TOKENS = "vllm:iteration_tokens_total"  # tokens per engine step (the name ends in _total)
# Token-count histograms: their bounds follow the model's max_model_len (token_count_bounds).
PROMPT_TOKENS = "vllm:request_prompt_tokens"
GENERATION_TOKENS = "vllm:request_generation_tokens"
MAX_GENERATION_TOKENS = "vllm:request_max_num_generation_tokens"
PARAMS_MAX_TOKENS = "vllm:request_params_max_tokens"
PREFILL_KV_COMPUTED_TOKENS = "vllm:request_prefill_kv_computed_tokens"

_TTFT_UP_TO_0_8_3 = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
)  # fmt: skip
_TOKEN_UP_TO_0_8_3 = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
_TOKEN_FROM_0_8_4 = _TOKEN_UP_TO_0_8_3 + (5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
_E2E_0_6_3 = (1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)
_PHASE_UP_TO_0_8_3 = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)
_PHASE_FROM_0_8_4 = _PHASE_UP_TO_0_8_3 + (120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
_STEP_TOKENS = (1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0)


@dataclass(frozen=True)
class Bounds:
    """The bucket bounds (+Inf left out) a histogram has from release `first` to `last` (None: open end)."""

    first: str | None
    last: str | None
    bounds: tuple[float, ...]

    def covers(self, release: str) -> bool:
        v = version(release)
        return (self.first is None or version(self.first) <= v) and (
            self.last is None or v <= version(self.last)
        )


BUCKETS: dict[str, tuple[Bounds, ...]] = {
    TTFT: (
        Bounds(None, "0.8.3", _TTFT_UP_TO_0_8_3),
        Bounds("0.8.4", None, _TTFT_UP_TO_0_8_3 + (20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)),
    ),
    TPOT: (Bounds(None, "0.8.3", _TOKEN_UP_TO_0_8_3), Bounds("0.8.4", "0.11.2", _TOKEN_FROM_0_8_4)),
    ITL: (Bounds("0.10.2", None, _TOKEN_FROM_0_8_4),),
    REQUEST_TPOT: (Bounds("0.11.0", None, _TOKEN_FROM_0_8_4),),
    # The request-phase histograms (0.6.6+) took the end-to-end bounds, and all grew with TTFT's in 0.8.4.
    E2E: (
        Bounds(None, "0.6.3", _E2E_0_6_3),
        Bounds("0.6.6", "0.8.3", _PHASE_UP_TO_0_8_3),
        Bounds("0.8.4", None, _PHASE_FROM_0_8_4),
    ),
    **{
        name: (Bounds("0.6.6", "0.8.3", _PHASE_UP_TO_0_8_3), Bounds("0.8.4", None, _PHASE_FROM_0_8_4))
        for name in (QUEUE, PREFILL, DECODE, INFERENCE)
    },
    # 0.6.6 to 0.7.3 wrote 8096 (not 8192); 0.8.5 is the first surveyed release with the longer list.
    ITERATION_TOKENS: (
        Bounds("0.6.6", "0.7.3", _STEP_TOKENS + (8096.0,)),
        Bounds("0.8.5", None, _STEP_TOKENS + (8192.0, 16384.0)),
    ),
}


def version(release: str) -> tuple[int, ...]:
    """`0.8.4` as (0, 8, 4), for comparing releases."""
    return tuple(int(part) for part in release.split(".")[:3])


def bounds_in(metric: str, release: str) -> tuple[float, ...] | None:
    """The bounds `metric` has in `release`, or None when that release does not export it by default."""
    return next((b.bounds for b in BUCKETS[metric] if b.covers(release)), None)


def token_count_bounds(max_model_len: int) -> tuple[float, ...]:
    """The bounds of the token-count histograms: 1, 2, 5, 10, 20, 50, ... up to `max_model_len`."""
    bounds: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_model_len:
                return tuple(bounds)
            bounds.append(float(value))
        exponent += 1


@dataclass(frozen=True)
class Generation:
    """One shape of vLLM's `/metrics` that the fakes and the synthetic fleets imitate: the names of its
    engine generation, and the bounds of the release it is taken from."""

    release: str
    kv_cache_usage: str
    token_latency: str  # the inter-token latency histogram
    max_model_len: int = 8192

    def bounds(self, metric: str) -> tuple[float, ...]:
        """The bounds `metric` has in this release; KeyError when the release does not export it."""
        found = bounds_in(metric, self.release)
        if found is None:
            raise KeyError(f"vLLM {self.release} exports no {metric}")
        return found

    @property
    def token_counts(self) -> tuple[float, ...]:
        return token_count_bounds(self.max_model_len)


V1 = Generation("0.33.0", KV_CACHE_USAGE, ITL)  # `engine` label, prefix-cache counters
V0 = Generation("0.6.3", GPU_CACHE_USAGE, TPOT)  # no `engine`, the lifetime prefix-cache hit-rate gauge
