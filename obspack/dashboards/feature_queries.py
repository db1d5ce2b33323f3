"""Queries of the feature rows (obspack/dashboards/features.py) and of the queue's reasons.

They read raw series: each feature's series exist only on the engines that use it, and recording them
would cost every fleet series for what a few pods run. A few per-model (or filtered) records are the
exception, each a few series per model where the feature runs, where the raw series of 1,000 pods cost
~0.35-0.8 s per graph: requests waiting for their KV by stage, engines asleep, the KV transfer time's
buckets, and the refused share of the pods refusing now. Per-pod graphs draw the TOP pods at each step.
Every engine series is narrowed with `model_name!=""` (production-stack's router copies have none), except
LoRA's info series, which have no model_name: they are read per pod and joined to the pod's model.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.dashboards import queries as q
from obspack.rules.alerts.features import offload_allocation_failures, transfer_failures

PER_MODEL = ("namespace", "model_name")
PER_POD = ("namespace", "pod", "model_name")
RATE = "$__rate_interval"


def _vllm(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    """A raw engine series, narrowed to the page's variables (and `extra` matchers)."""
    return metric + c.selector(cfg.selectors.vllm, q.scope(cfg, *q.ALL), q.HAS_MODEL, *extra)


def _rate(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    return f"rate({_vllm(cfg, metric, *extra)}[{RATE}])"


def _sum(cfg: ObspackConfig, labels: tuple[str, ...], expr: str) -> str:
    return f"sum by ({c.by(cfg, *labels)}) (\n  {expr}\n)"


def _either(*terms: str) -> str:
    return "\n  or\n  ".join(terms)


# ---------------------------------------------------------------------------------------------------
# The queue's reasons (vLLM 0.20+), and the hidden variables of the feature rows


def waiting_by_reason(cfg: ObspackConfig) -> str:
    """Waiting requests per model and reason (`capacity`, `deferred`, and the engines before vLLM 0.20 under
    a reason of their own), from the per-model record: the raw gauges of 1,000 pods took ~0.8 s."""
    return q.sum_by(cfg, c.WAITING_BY_REASON, *PER_MODEL, "reason", variables=q.MODEL)


def engines_using(cfg: ObspackConfig, markers: tuple[str, ...], per: tuple[str, ...] = ("pod", "engine")) -> str:
    """How many engines (or pods) of the selection had one of `markers` within the dashboard's range."""
    present = _either(*(f"present_over_time({_vllm(cfg, m)}[$__range])" for m in markers))
    return f"count(group by ({c.by(cfg, 'namespace', *per)}) (\n  {present}\n))"


def lora_pods_in_range(cfg: ObspackConfig) -> str:
    """Pods with LoRA adapters within the range (the info series have no model_name: pods of the selected
    clusters and namespaces)."""
    info = f.LORA_INFO + c.selector(cfg.selectors.vllm, q.scope(cfg, *q.POD))
    return f"count(group by ({c.by(cfg, 'namespace', 'pod')}) (present_over_time({info}[$__range])))"


def engines_slept_in_range(cfg: ObspackConfig) -> str:
    """Engines whose `awake` state read 0 at some point of the dashboard's range."""
    awake = _vllm(cfg, f.SLEEP_STATE, f.AWAKE)
    return f"count(min_over_time({awake}[$__range]) == 0)"


# ---------------------------------------------------------------------------------------------------
# Disaggregated prefill/decode


def transfer_failures_per_pod(cfg: ObspackConfig) -> str:
    """The pods whose transfers fail or expire now (the TOP highest). Rates of zero are dropped before the
    tags and `or` of six counters: every engine with a connector has all of its counters, mostly still, and
    carrying them all through took ~2 s at 1,000 pods for lines of zero that topk picked at random."""
    keep = ("namespace", "pod", "model_name", "kind")
    return q.extremes(transfer_failures(cfg, RATE, keep, q.scope(cfg, *q.ALL), moving=True))


def transfer_time(cfg: ObspackConfig, quantile: float) -> str:
    """Per model and connector, from the per-model bucket records (obspack/rules/recording/vllm.py), as the
    fleet latency graphs: NIXL's and Mooncake's histograms have their own buckets, which one quantile must
    not mix. Per model: the pod filter does not narrow it."""
    return f"histogram_quantile({quantile}, {q.rec(cfg, c.KV_TRANSFER_TIME, q.MODEL)})"


def transferred_bytes(cfg: ObspackConfig) -> str:
    return _sum(cfg, PER_MODEL, _either(*(_rate(cfg, f"{m}_sum") for m in f.KV_TRANSFER_BYTES.values())))


def kv_fetch_by_stage(cfg: ObspackConfig) -> str:
    """Per model and stage, from its record (obspack/rules/recording/vllm.py): per model like the fleet
    page's other queue panels, so the pod variable does not narrow it."""
    return q.rec(cfg, c.KV_FETCH_BY_STAGE, q.MODEL)


def deferred_waiting(cfg: ObspackConfig) -> str:
    """Requests deferred for their KV, per model: the per-model reasons record, as the queue's reasons panel
    reads it (the raw gauges of 1,000 pods took ~0.5 s)."""
    return c.WAITING_BY_REASON + c.selector(q.scope(cfg, *q.MODEL), f.DEFERRED)


# ---------------------------------------------------------------------------------------------------
# KV offload


def offload_traffic(cfg: ObspackConfig, direction: str) -> str:
    """Bytes per second stored to (or loaded from) the offload tier, per model: the newer per-direction
    counter, else the older one by transfer type, per engine (0.31-0.33 serve both: counted once)."""
    newer = f.KV_OFFLOAD_STORE_BYTES if direction == "store" else f.KV_OFFLOAD_LOAD_BYTES
    transfer = f.STORE_TRANSFER if direction == "store" else f.LOAD_TRANSFER
    older = f"sum without (transfer_type) ({_rate(cfg, f.KV_OFFLOAD_TOTAL_BYTES, transfer)})"
    return _sum(cfg, PER_MODEL, _either(_rate(cfg, newer), older))


def offload_usage(cfg: ObspackConfig) -> str:
    """The fullest offload tier of each pod (CPU spec, or the tiering spec's primary tier)."""
    usage = _either(
        _vllm(cfg, f.KV_OFFLOAD_CPU_USAGE),
        f"max without (tier) ({_vllm(cfg, f.KV_OFFLOAD_TIERING_WRITE_USAGE)})",
    )
    return q.extremes(f"max by ({c.by(cfg, *PER_POD)}) (\n  {usage}\n)")


def offload_failures_per_pod(cfg: ObspackConfig) -> str:
    return q.extremes(offload_allocation_failures(cfg, RATE, q.scope(cfg, *q.ALL)))


def external_hit_rate(cfg: ObspackConfig) -> str:
    hits = _sum(cfg, PER_MODEL, _rate(cfg, f.EXTERNAL_PREFIX_HITS))
    queries = _sum(cfg, PER_MODEL, _rate(cfg, f.EXTERNAL_PREFIX_QUERIES))
    return f"{hits}\n/\n({queries} > 0)"


def simple_offload_used(cfg: ObspackConfig) -> str:
    used = f"max without (pid) ({_vllm(cfg, f.SIMPLE_OFFLOAD_USED)})"
    return q.extremes(_sum(cfg, PER_POD, used))


def simple_offload_loaded(cfg: ObspackConfig) -> str:
    return _sum(cfg, PER_MODEL, _rate(cfg, f.SIMPLE_OFFLOAD_LOADED))


# ---------------------------------------------------------------------------------------------------
# Speculative decoding


def acceptance(cfg: ObspackConfig) -> str:
    accepted = _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_ACCEPTED_TOKENS))
    drafted = _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_DRAFT_TOKENS))
    return f"{accepted}\n/\n({drafted} > 0)"


def tokens_per_draft(cfg: ObspackConfig) -> str:
    """1 + accepted tokens per draft: the tokens each verification step yields."""
    accepted = _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_ACCEPTED_TOKENS))
    drafts = _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_DRAFTS))
    return f"1 + {accepted}\n/\n({drafts} > 0)"


def acceptance_by_position(cfg: ObspackConfig) -> str:
    accepted = _sum(cfg, (*PER_MODEL, "position"), _rate(cfg, f.SPEC_ACCEPTED_PER_POSITION))
    drafts = _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_DRAFTS))
    return f"{accepted}\n/ ignoring (position) group_left ()\n({drafts} > 0)"


def draft_tokens(cfg: ObspackConfig) -> str:
    return _sum(cfg, PER_MODEL, _rate(cfg, f.SPEC_DRAFT_TOKENS))


# ---------------------------------------------------------------------------------------------------
# LoRA: the newest info series of each pod says what runs and waits now


def _lora_now(cfg: ObspackConfig) -> str:
    info = f.LORA_INFO + c.selector(cfg.selectors.vllm, q.scope(cfg, *q.POD))
    return f"topk by ({c.by(cfg, 'namespace', 'pod')}) (1, {info})"


def lora_adapters(cfg: ObspackConfig) -> str:
    """Per pod: the adapters running and waiting now, valued with the time of the last change (ms)."""
    return q.with_model(cfg, f"1000 * {_lora_now(cfg)}")


def lora_pods(cfg: ObspackConfig, label: str) -> str:
    """How many pods have an adapter `label` (running or waiting) now; 0 rather than nothing."""
    info = f.LORA_INFO + c.selector(cfg.selectors.vllm, q.scope(cfg, *q.POD), f'{label}!=""')
    return f"count(\n  {_lora_now(cfg)}\n  and\n  {info}\n) or vector(0)"


# ---------------------------------------------------------------------------------------------------
# Admission control and sleep mode


def refused(cfg: ObspackConfig) -> str:
    return _sum(cfg, (*PER_MODEL, "reason"), _rate(cfg, f.ADMISSION_REJECTIONS))


def refused_share_per_pod(cfg: ObspackConfig) -> str:
    """The pods refusing now with the highest refused share (the record has no series for the others)."""
    return q.extremes(q.rec(cfg, c.REFUSED_SHARE))


def engines_asleep(cfg: ObspackConfig) -> str:
    """Engines asleep per model (0 while all are awake), from its record: per model, so the pod variable does
    not narrow it (the next panels show which pods sleep)."""
    return q.rec(cfg, c.ENGINES_ASLEEP, q.MODEL)


def asleep_share_in_range(cfg: ObspackConfig) -> str:
    """Per pod that slept in the range: the share of the range its engines slept (the most asleep)."""
    awake = _vllm(cfg, f.SLEEP_STATE, f.AWAKE)
    return f"max by ({c.by(cfg, *PER_POD)}) (1 - avg_over_time({awake}[$__range])) > 0"


def asleep_now(cfg: ObspackConfig) -> str:
    """Per pod that slept in the range: 1 while an engine sleeps now, else 0."""
    awake = _vllm(cfg, f.SLEEP_STATE, f.AWAKE)
    return f"max by ({c.by(cfg, *PER_POD)}) (1 - {awake})\nand on ({c.by(cfg, *PER_POD)})\n({asleep_share_in_range(cfg)})"
