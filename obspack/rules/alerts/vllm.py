"""The engine plane: KV cache, queue, throughput, scrape health, preemptions, prefix cache.

All of them read the recording rules of obspack/rules/recording/vllm.py, which already merge vLLM's
renamed metrics, drop production-stack router copies and collapse per-process and per-engine series.

Engines put to sleep (vLLM's sleep mode) serve nothing on purpose, and the gauges they stopped updating
keep their last values: the KV cache, queue, throughput and prefix-cache alerts leave those pods out
(`recording.vllm.unless_asleep`, read from the raw sleep state, so still one group hop from raw series).
Preemptions cannot move while an engine sleeps, and a target that stops answering is down whether it
slept or not.
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.catalogue import gateway
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig, promql_string
from obspack.rules.model import AlertRule
from obspack.rules.recording.vllm import (
    prefix_hits_rate,
    prefix_queries_rate,
    unless_asleep,
    waiting_for_capacity,
)

WHO = "{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.model_name }})"
POD = "{{ $labels.pod }}"


def _kv_log(cfg: ObspackConfig) -> str:
    return c.vllm_logs(cfg, POD, "--tail=200 | grep -iE 'preempt|KV cache|waiting'")


def kv_cache_usage_high(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVCacheUsageHigh
    return AlertRule(
        alert="VLLMKVCacheUsageHigh",
        expr=unless_asleep(cfg, f"{c.KV_USAGE} > {t.ratio}"),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM KV cache is nearly full; new requests queue and running ones may be preempted.",
        description=WHO + " is using {{ $value | humanizePercentage }} of its KV cache blocks.",
        runbook="vllm-kv-cache-usage-high",
        triage=_kv_log(cfg),
    )


def kv_cache_usage_critical(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVCacheUsageCritical
    return AlertRule(
        alert="VLLMKVCacheUsageCritical",
        expr=unless_asleep(cfg, f"{c.KV_USAGE} > {t.ratio}"),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM KV cache is full; requests are being preempted or stuck in the queue.",
        description=WHO + " is using {{ $value | humanizePercentage }} of its KV cache blocks.",
        runbook="vllm-kv-cache-usage-critical",
        triage=_kv_log(cfg),
    )


def request_queue_backlog(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMRequestQueueBacklog
    on = c.by(cfg, *POD_MODEL)
    waiting = waiting_for_capacity(cfg)
    # Only requests waiting for capacity count: a queue deferred on something else (a KV transfer from a
    # prefill pod, a grammar, a LoRA slot) does not shrink with more replicas (docs/rules.md).
    backlog = f"({waiting} >= {t.min_waiting})\nand on ({on})\n({waiting} > {t.waiting_to_running} * {c.RUNNING})"
    return AlertRule(
        alert="VLLMRequestQueueBacklog",
        expr=unless_asleep(cfg, backlog),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM requests are piling up in the queue faster than the engine admits them.",
        description=WHO + " has {{ $value }} requests waiting for KV cache or batch capacity, more than "
        f"{t.waiting_to_running:g}x the requests running.",
        runbook="vllm-request-queue-backlog",
        triage=_kv_log(cfg),
    )


def zero_throughput(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMZeroThroughput
    on = c.by(cfg, *POD_MODEL)
    gen = c.selector(cfg.selectors.vllm, 'model_name!=""')
    # Requests in flight but the generated-token counter did not move (or vanished) over the window:
    # the engine is stuck. An idle model (nothing running or waiting) never matches. A counter seen only
    # once in the window (first scrape, a target back from a gap) cannot tell yet, so it does not count.
    stuck = f"""
        (({c.RUNNING} + on ({on}) {c.WAITING}) or {c.RUNNING} or {c.WAITING}) > 0
        unless on ({on})
        sum by ({on}) (increase(vllm:generation_tokens_total{gen}[{t.window}])) > 0
        unless on ({on})
        min by ({on}) (count_over_time(vllm:generation_tokens_total{gen}[{t.window}])) < 2
    """
    return AlertRule(
        alert="VLLMZeroThroughput",
        expr=unless_asleep(cfg, textwrap.dedent(stuck).strip()),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM has requests in flight but generates no tokens: the engine is stuck.",
        description=WHO + " has {{ $value }} requests running or waiting and generated no token in the last "
        f"{t.window}.",
        runbook="vllm-zero-throughput",
        triage=c.vllm_logs(cfg, POD, "--timestamps --tail=100"),
    )


def target_down(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMTargetDown
    target = c.by(cfg, "namespace", "pod", "job", "instance")
    vllm = c.selector(cfg.selectors.vllm, 'model_name!=""')
    up = c.selector(cfg.selectors.vllm)
    by_job = c.selector(cfg.selectors.vllm, f"job=~{promql_string(t.job_regex)}")
    # A target counts when it served vLLM engine metrics within the lookback, or when its job names vLLM
    # and it was up within the lookback. A scaled-down pod's target disappears instead of reporting 0.
    # An inference pool's endpoint picker is not vLLM, whatever its job is called (InferenceGatewayPickerDown).
    epp = textwrap.indent(gateway.served(c.selector(cfg.selectors.epp), target, t.lookback), " " * 16)
    return AlertRule(
        alert="VLLMTargetDown",
        expr=f"""
            max by ({c.by(cfg, 'namespace', 'pod')}) (
              up{up} == 0
              and on ({target})
              (
                group by ({target}) (present_over_time(vllm:num_requests_running{vllm}[{t.lookback}]))
                or
                group by ({target}) (max_over_time(up{by_job}[{t.lookback}]) == 1)
              )
              unless on ({target})
              (
{epp}
              )
            )
        """,
        for_=t.for_,
        severity=t.severity,
        summary="A vLLM metrics endpoint that was serving is down; the engine is unreachable or crashed.",
        description="Prometheus cannot scrape vLLM in {{ $labels.namespace }}/{{ $labels.pod }}; it served "
        f"metrics within the last {t.lookback}.",
        runbook="vllm-target-down",
        triage="kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o wide",
    )


def request_preemptions(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMRequestPreemptions
    return AlertRule(
        alert="VLLMRequestPreemptions",
        expr=f"{c.PREEMPTION_RATE} > {t.rate:g}",
        for_=t.for_,
        severity=t.severity,
        summary="vLLM keeps preempting running requests because the KV cache is too small for the load.",
        description=WHO + " preempts {{ $value | humanize }} requests per second.",
        runbook="vllm-request-preemptions",
        triage=_kv_log(cfg),
    )


def prefix_cache_hit_rate_low(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMPrefixCacheHitRateLow
    on = c.by(cfg, *POD_MODEL)
    hits, queries = prefix_hits_rate(cfg, t.window), prefix_queries_rate(cfg, t.window)
    disabled = c.selector(cfg.selectors.vllm, 'enable_prefix_caching="False"')
    v0 = c.selector(cfg.selectors.vllm, 'model_name!=""')
    # Rates over the configured window straight from the counters (no record: one series per pod saved).
    # Queries only move while prefix caching is on; pods that say it is off are left out explicitly.
    # vLLM V0 (up to 0.9.0) has no counters but a lifetime hit-rate gauge, -1 when caching is off; it
    # counts only while the pod takes prompts, so an idle V0 model stays quiet.
    counters = f"{hits}\n/ on ({on})\n({queries} > {t.min_query_tokens_per_second:g})"
    gauge = (
        f"max by ({on}) (avg_over_time(vllm:gpu_prefix_cache_hit_rate{v0}[{t.window}]) >= 0)\n"
        f"and on ({on}) {c.PROMPT_RATE} > 0"
    )
    either = textwrap.indent(f"{counters}\nor\n(\n{textwrap.indent(gauge, '  ')}\n)", "  ")
    # A pod that slept within the window woke with an empty cache (sleep discards the KV cache).
    low = f"(\n{either}\n) < {t.ratio}\nunless on ({c.by(cfg, 'namespace', 'pod')})\nvllm:cache_config_info{disabled}"
    return AlertRule(
        alert="VLLMPrefixCacheHitRateLow",
        expr=unless_asleep(cfg, low, t.window),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM prefix caching rarely hits; it costs memory and hashing for little gain.",
        description=WHO + " served {{ $value | humanizePercentage }} of prompt tokens from the prefix cache over "
        f"the last {t.window}. Consider --no-enable-prefix-caching.",
        runbook="vllm-prefix-cache-hit-rate-low",
        triage="kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o jsonpath='{.spec.containers[*].args}'",
    )


ALERTS = (
    kv_cache_usage_high,
    kv_cache_usage_critical,
    request_queue_backlog,
    zero_throughput,
    target_down,
    request_preemptions,
    prefix_cache_hit_rate_low,
)
