"""vLLM features that only some engines run, and the series that show each one (vLLM 0.31 to 0.33).

Names are as scraped (counters with `_total`). Every engine series carries `model_name` and `engine`,
except `vllm:lora_requests_info` (neither) and `vllm:admission_rejections_total` (no `engine`).
production-stack's router re-exports none of these names, so `model_name!=""` is enough to keep its
copies of the engine gauges out, and LoRA's info series (no `model_name`) are read per pod instead.

Where each name comes from (the wheels' source, tests/fixtures/vllm-release-metrics.json):
- sleep mode: `engine_sleep_state{sleep_state}` on every engine from 0.11.1: `awake` is 1, or 0 while
  the engine sleeps (level 1 offloads the weights, level 2 discards them); a sleeping engine answers
  503 on the serving routes on purpose.
- the queue: `num_requests_waiting_by_reason{reason}` from 0.20: `capacity` (no KV blocks or batch
  slot free) and `deferred` (skipped until something else is ready: a KV transfer from a prefill pod,
  a structured-output grammar, a LoRA slot); they add up to `num_requests_waiting`.
- admission control (0.32): `admission_rejections_total{reason}`, requests refused at the door because
  the queue holds `--max-num-queued-reqs` requests or `--max-num-queued-tokens` tokens.
- disaggregated prefill/decode: the NIXL connector's `nixl_*` (0.11.1+) and the Mooncake connector's
  `mooncake_*` (0.33); `num_requests_kv_fetch_by_stage` on KV consumers (0.32+: `kv_consumer` and
  `kv_both` engines, so decode pods, and also engines that only offload or use LMCache).
- KV offload: the OffloadingConnector's `kv_offload_*` (`total_bytes`/`total_time` by `transfer_type`,
  the older names, deprecated in 0.33; `load_*`/`store_*` the newer ones), its CPU spec's
  `kv_offload_cpu_*` and tiering spec's `kv_offload_tiering_*`, and the simple CPU offload connector's
  `simple_kv_offload_*`; `external_prefix_cache_*` count prompt tokens any connector (offload, LMCache,
  a prefill pod) supplied, on every engine from 0.11.1 (zero without a connector).
- speculative decoding: `spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total` (V0 and V1).
- LoRA: `lora_requests_info`, whose value is the time of its last update: a pod keeps one series per
  adapter combination it has had, and the newest one says what runs and waits now.
"""

from __future__ import annotations

from dataclasses import dataclass

# Sleep mode and the queue (every recent engine)
SLEEP_STATE = "vllm:engine_sleep_state"
AWAKE = 'sleep_state="awake"'
WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason"
CAPACITY = 'reason="capacity"'
DEFERRED = 'reason="deferred"'
ADMISSION_REJECTIONS = "vllm:admission_rejections_total"
REQUEST_SUCCESS = "vllm:request_success_total"

# Disaggregated prefill/decode: KV transfers between pods
KV_FETCH_BY_STAGE = "vllm:num_requests_kv_fetch_by_stage"
NIXL_XFER_TIME = "vllm:nixl_xfer_time_seconds"
NIXL_BYTES = "vllm:nixl_bytes_transferred"
MOONCAKE_XFER_TIME = "vllm:mooncake_xfer_time_seconds"
MOONCAKE_BYTES = "vllm:mooncake_bytes_transferred"

# Per connector: the counters of transfers that broke a request between a prefill and a decode pod
# (failed reads or notifications on the decode side; blocks the prefill side freed because no decode pod
# read them in time).
KV_TRANSFER_FAILURES: dict[str, tuple[tuple[str, str], ...]] = {
    "nixl": (
        ("vllm:nixl_num_failed_transfers_total", "failed_transfer"),
        ("vllm:nixl_num_failed_notifications_total", "failed_notification"),
        ("vllm:nixl_num_kv_expired_reqs_total", "expired"),
    ),
    "mooncake": (
        ("vllm:mooncake_num_failed_transfers_total", "failed_transfer"),
        ("vllm:mooncake_num_failed_recvs_total", "failed_receive"),
        ("vllm:mooncake_num_kv_expired_reqs_total", "expired"),
    ),
}
EXPIRED = "expired"  # the kind of the counters of blocks that expired unread; the others failed
FAILED_KINDS = tuple(sorted({kind for pairs in KV_TRANSFER_FAILURES.values() for _, kind in pairs} - {EXPIRED}))
KV_TRANSFER_TIMES = {"nixl": NIXL_XFER_TIME, "mooncake": MOONCAKE_XFER_TIME}
KV_TRANSFER_BYTES = {"nixl": NIXL_BYTES, "mooncake": MOONCAKE_BYTES}
# The bucket bounds (+Inf left out) of the transfer histograms in vLLM 0.33 (the NIXL connector's stats; the
# Mooncake connector's take the same): seconds per transfer, and bytes per transfer (2 KiB times powers of 4).
KV_TRANSFER_TIME_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0)
KV_TRANSFER_BYTES_BOUNDS = tuple(float(2048 * 4**i) for i in range(12))

# KV offload and external prefix caches
KV_OFFLOAD_ALLOCATION_FAILURES = (
    "vllm:kv_offload_allocation_failure_total",  # any OffloadingConnector spec
    "vllm:kv_offload_tiering_promotion_allocation_failures_total",  # the tiering spec's promotions
)
KV_OFFLOAD_STORE_BYTES = "vllm:kv_offload_store_bytes_total"
KV_OFFLOAD_LOAD_BYTES = "vllm:kv_offload_load_bytes_total"
KV_OFFLOAD_TOTAL_BYTES = "vllm:kv_offload_total_bytes_total"  # older, by transfer_type
STORE_TRANSFER = 'transfer_type="GPU_to_CPU"'
LOAD_TRANSFER = 'transfer_type="CPU_to_GPU"'
KV_OFFLOAD_CPU_USAGE = "vllm:kv_offload_cpu_cache_usage_perc"
KV_OFFLOAD_TIERING_WRITE_USAGE = "vllm:kv_offload_tiering_primary_write_usage_perc"
SIMPLE_OFFLOAD_USED = "vllm:simple_kv_offload_used_blocks"
SIMPLE_OFFLOAD_INFO = "vllm:simple_kv_offload_info"  # `capacity_blocks` label
SIMPLE_OFFLOAD_LOADED = "vllm:simple_kv_offload_load_blocks_total"
EXTERNAL_PREFIX_QUERIES = "vllm:external_prefix_cache_queries_total"
EXTERNAL_PREFIX_HITS = "vllm:external_prefix_cache_hits_total"

# Speculative decoding
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens_total"
SPEC_ACCEPTED_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"

# LoRA
LORA_INFO = "vllm:lora_requests_info"


@dataclass(frozen=True)
class Feature:
    """A feature an engine may run. `markers` are series an engine has only while it uses the feature
    (any one will do); `connectors` name the connector or spec each marker stands for."""

    key: str  # the dashboard variable its row repeats over, and the doctor's name for it
    title: str
    markers: tuple[str, ...]
    connectors: tuple[tuple[str, str], ...] = ()  # (marker metric, connector or spec)


DISAGGREGATION = Feature(
    "disaggregation",
    "Disaggregated prefill/decode",
    # Not KV_FETCH_BY_STAGE: every `kv_both` engine has it, offload and LMCache ones included.
    ("vllm:nixl_num_failed_transfers_total", "vllm:mooncake_num_failed_transfers_total"),
    (
        ("vllm:nixl_num_failed_transfers_total", "NIXL"),
        ("vllm:mooncake_num_failed_transfers_total", "Mooncake"),
    ),
)
KV_OFFLOAD = Feature(
    "kv_offload",
    "KV offload (OffloadingConnector)",
    (KV_OFFLOAD_TOTAL_BYTES, KV_OFFLOAD_STORE_BYTES),
    ((KV_OFFLOAD_CPU_USAGE, "CPU spec"), (KV_OFFLOAD_TIERING_WRITE_USAGE, "tiering spec")),
)
SIMPLE_OFFLOAD = Feature("simple_offload", "Simple CPU KV offload", (SIMPLE_OFFLOAD_USED,))
SPEC_DECODE = Feature("spec_decode", "Speculative decoding", (SPEC_DRAFT_TOKENS,))
LORA = Feature("lora", "LoRA adapters", (LORA_INFO,))
ADMISSION = Feature("admission", "Admission control", (ADMISSION_REJECTIONS,))
# Every engine from 0.11.1 has the sleep-state series: the feature is in use where one reads asleep.
SLEEP = Feature("sleep", "Sleep mode", (SLEEP_STATE,))

FEATURES = (DISAGGREGATION, KV_OFFLOAD, SIMPLE_OFFLOAD, SPEC_DECODE, LORA, ADMISSION, SLEEP)


def feature_metrics() -> frozenset[str]:
    """Every series name of this module: they exist only where an engine runs the feature (or, for the
    sleep state, the queue reasons and admission control, only on recent vLLM releases)."""
    names = {
        value
        for value in globals().values()
        if isinstance(value, str) and value.startswith("vllm:") and value != REQUEST_SUCCESS
    }
    names |= {m for pairs in KV_TRANSFER_FAILURES.values() for m, _ in pairs}
    names |= set(KV_OFFLOAD_ALLOCATION_FAILURES)
    names |= {m for f in FEATURES for m in f.markers}
    return frozenset(names)
