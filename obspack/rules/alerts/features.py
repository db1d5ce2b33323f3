"""Features only some engines run: disaggregated prefill/decode, admission control, KV offload and
speculative decoding (obspack/catalogue/vllm_features.py lists their series).

Each alert reads the raw counters of its feature over its own window (no record: a fleet that does not
run the feature pays nothing), so each is zero group hops from raw series. On an engine without the
feature the counters do not exist and the alert matches nothing. A sleeping engine's counters do not
move, so none of them can fire for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.rules.model import AlertRule
from obspack.rules.recording.vllm import POD_MODEL, counter_rate, sel

WHO = "{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.model_name }})"


def _indent(text: str, by: str = "  ") -> str:
    return by + text.replace("\n", "\n" + by)


def tagged_rates(
    cfg: ObspackConfig,
    counters: Sequence[tuple[str, dict[str, str]]],
    window: str,
    keep: tuple[str, ...] = POD_MODEL,
    *extra: str,
    moving: bool = False,
) -> str:
    """The summed rates of several counters per `keep` and the tags (but `kind`) each is given. Each
    counter is summed per `keep` first (fewer series through the rest: a range query pays per series and
    step) and then gets its tags (label_replace), so `or` keeps them all: rates drop the metric name, and
    `or` would otherwise keep only the first of two counters with the same labels. `extra` matchers narrow
    the series (dashboards: their variables). `moving` keeps only the rates above zero, before the sum:
    what goes on through the tags and `or` is the pods that count now, not every pod of the fleet."""
    by = c.by(cfg, *(label for label in keep if label != "kind"))
    positive = " > 0" if moving else ""
    terms = []
    for metric, tags in counters:
        term = f"sum by ({by}) (rate({metric}{sel(cfg, *extra)}[{window}]){positive})"
        for label, value in tags.items():
            term = f'label_replace({term}, "{label}", "{value}", "", "")'
        terms.append(term)
    kept = dict.fromkeys(label for _, tags in counters for label in tags if label != "kind" or "kind" in keep)
    joined = "\n  or\n  ".join(terms)
    return f"sum by ({c.by(cfg, *dict.fromkeys((*keep, *kept)))}) (\n  {joined}\n)"


def transfer_failures(
    cfg: ObspackConfig,
    window: str,
    keep: tuple[str, ...] = POD_MODEL,
    *extra: str,
    kinds: Sequence[str] = (),
    moving: bool = False,
) -> str:
    """Failed and expired KV transfers per second, per pod, model and connector (and `kind` if kept);
    only the `kinds` given, if any; only the pods where they happen now if `moving`."""
    counters = [
        (metric, {"kind": kind, "connector": connector})
        for connector, pairs in f.KV_TRANSFER_FAILURES.items()
        for metric, kind in pairs
        if not kinds or kind in kinds
    ]
    return tagged_rates(cfg, counters, window, keep, *extra, moving=moving)


def offload_allocation_failures(cfg: ObspackConfig, window: str, *extra: str) -> str:
    """Failed KV offload allocations per second, per pod and model (the tiering spec counts its
    promotions' failures apart)."""
    counters = [(m, {"kind": m.split(":", 1)[1]}) for m in f.KV_OFFLOAD_ALLOCATION_FAILURES]
    return tagged_rates(cfg, counters, window, POD_MODEL, *extra)


def kv_transfer_failures(cfg: ObspackConfig) -> AlertRule:
    """Failed reads, receives and notifications fire at any rate (each breaks a request). Expired blocks
    fire as a share of the requests the pod finished: a prefill pod sees a few expire in normal operation
    (requests aborted before their decode pod read them), so a rate alone would page a healthy fleet."""
    t = cfg.alerts.VLLMKVTransferFailures
    pm = c.by(cfg, *POD_MODEL)
    failed = transfer_failures(cfg, t.window, kinds=f.FAILED_KINDS)
    expired = transfer_failures(cfg, t.window, kinds=(f.EXPIRED,))
    finished = counter_rate(cfg, (f.REQUEST_SUCCESS,), t.window)
    share = f"{expired}\n/ on ({pm}) group_left ()\n{finished}"
    return AlertRule(
        alert="VLLMKVTransferFailures",
        expr=(
            f'label_replace(\n{_indent(failed)}\n  > {t.rate:g},\n  "kind", "failed", "", ""\n)\nor\n'
            f'label_replace(\n{_indent(share)}\n  > {t.expired_ratio},\n  "kind", "{f.EXPIRED}", "", ""\n)'
        ),
        for_=t.for_,
        severity=t.severity,
        summary="KV cache transfers between prefill and decode pods keep failing or expiring.",
        description=WHO + " has {{ $labels.kind }} {{ $labels.connector }} KV transfers: {{ $value | humanize }} over "
        f"the last {t.window} (per second where failed, per finished request where expired): requests between "
        "its prefill and decode pods are recomputed or fail.",
        runbook="vllm-kv-transfer-failures",
        triage=c.vllm_logs(cfg, "{{ $labels.pod }}", "--tail=300 | grep -iE 'nixl|mooncake|transfer|expired|notif|ucx|rdma'"),
    )


def admission_rejections(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMAdmissionRejections
    pm = c.by(cfg, *POD_MODEL)
    rejected = counter_rate(cfg, (f.ADMISSION_REJECTIONS,), t.window)
    finished = counter_rate(cfg, (f.REQUEST_SUCCESS,), t.window)
    # Refused requests over all requests that reached the engine (refused or finished). Without any,
    # the ratio is NaN and the comparison false.
    return AlertRule(
        alert="VLLMAdmissionRejections",
        expr=f"{rejected}\n/ on ({pm})\n(\n{_indent(rejected)}\n  + on ({pm})\n{_indent(finished)}\n)\n> {t.ratio}",
        for_=t.for_,
        severity=t.severity,
        summary="vLLM refuses requests at admission: its queue is full and clients get errors.",
        description=WHO + " refused {{ $value | humanizePercentage }} of its requests over the last "
        f"{t.window} (--max-num-queued-reqs or --max-num-queued-tokens reached).",
        runbook="vllm-admission-rejections",
        triage="kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o jsonpath='{.spec.containers[*].args}'",
    )


def kv_offload_allocation_failures(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVOffloadAllocationFailures
    failures = offload_allocation_failures(cfg, t.window)
    return AlertRule(
        alert="VLLMKVOffloadAllocationFailures",
        expr=f"{failures}\n> {t.rate:g}",
        for_=t.for_,
        severity=t.severity,
        summary="vLLM cannot allocate space in its KV offload tier; offloaded prefixes are lost.",
        description=WHO + " fails {{ $value | humanize }} KV offload allocations per second over the last "
        f"{t.window}: blocks are not offloaded (or not promoted back) and their prompts are computed again.",
        runbook="vllm-kv-offload-allocation-failures",
        triage=c.vllm_logs(cfg, "{{ $labels.pod }}", "--tail=300 | grep -iE 'offload|allocat|tier'"),
    )


def spec_decode_acceptance_low(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMSpecDecodeAcceptanceLow
    pm = c.by(cfg, *POD_MODEL)
    accepted = counter_rate(cfg, (f.SPEC_ACCEPTED_TOKENS,), t.window)
    drafted = counter_rate(cfg, (f.SPEC_DRAFT_TOKENS,), t.window)
    return AlertRule(
        alert="VLLMSpecDecodeAcceptanceLow",
        expr=(
            f"{accepted}\n/ on ({pm})\n({drafted} > {t.min_draft_tokens_per_second:g})\n< {t.ratio}"
        ),
        for_=t.for_,
        severity=t.severity,
        summary="Speculative decoding accepts few draft tokens; drafting costs GPU time for little gain.",
        description=WHO + " accepted {{ $value | humanizePercentage }} of its draft tokens over the last "
        f"{t.window}. Check the draft model or method against the traffic, or turn speculation off.",
        runbook="vllm-spec-decode-acceptance-low",
        triage="kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o jsonpath='{.spec.containers[*].args}'",
    )


ALERTS = (kv_transfer_failures, admission_rejections, kv_offload_allocation_failures, spec_decode_acceptance_low)
