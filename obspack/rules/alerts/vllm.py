"""The engine plane: KV cache, queue, throughput, scrape health, preemptions, prefix cache.

The KV cache, queue and throughput alerts judge each data-parallel engine (obspack/rules/engines.py):
one alert per pod when every engine of it holds the condition, else one per engine that does, with its
`engine` label. The others read the recording rules of obspack/rules/recording/vllm.py, which already
merge vLLM's renamed metrics, drop production-stack router copies and collapse per-process and
per-engine series.

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
from obspack.catalogue import vllm_features as f
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig, promql_string
from obspack.rules import engines as e
from obspack.rules import lws, roles
from obspack.rules.model import AlertRule
from obspack.rules.recording.vllm import (
    KV_USAGE,
    counter_rate,
    prefix_hits_rate,
    prefix_queries_rate,
    sel,
    unless_asleep,
)

WHO = "{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.model_name }})"
# Per-engine alerts name their engine; a pod-wide one (every engine, or no engine label) does not.
ENGINE = "{{ with $labels.engine }}, engine {{ . }},{{ end }}"
POD = "{{ $labels.pod }}"
# Where a pod only prefills or only decodes, the alerts whose meaning changes with it say so (the runbook
# has a section per role).
ROLE = "{{ with $labels.role }} It is a {{ . }}-only pod: see the runbook's section for that role.{{ end }}"
# A pod whose prompts' KV mostly arrives through a connector (from a prefill pod over NIXL or Mooncake, or
# from an offload tier) computes few prompts itself: its local hit rate says nothing about caching.
CONNECTOR_SHARE = 0.5


def _raw(cfg: ObspackConfig, *metrics: str) -> str:
    """The raw series an alert reads, for `role_aware`: every pod it can name is among them (no hop)."""
    return " or ".join(f"{m}{sel(cfg)}" for m in metrics)


def role_aware(cfg: ObspackConfig, rule: AlertRule, source: str) -> AlertRule:
    """The alert with a `role` label on prefill-only and decode-only pods (obspack/rules/roles.py), and a
    line in its description sending the reader to the runbook's section for that role. `source`: a series
    every pod of the alert has."""
    return AlertRule(**{**rule.__dict__, "expr": roles.with_role(cfg, rule.expr, source),
                        "description": rule.description + ROLE})


def _kv_log(cfg: ObspackConfig) -> str:
    return c.vllm_logs(cfg, POD, "--tail=200 | grep -iE 'preempt|KV cache|waiting'")


def _kv_above(cfg: ObspackConfig, ratio: float) -> str:
    """Engines whose KV cache is fuller than `ratio`: one alert per pod when all of them are (its fullest
    engine's usage), else one per full engine. An engine that runs out alone is an imbalance the API
    server's load balancer keeps feeding."""
    usage = e.kv_usage(cfg)
    return e.pod_or_engines(cfg, f"{usage} > {ratio}", f"{usage} <= {ratio}", pod_value="max")


def kv_cache_usage_high(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVCacheUsageHigh
    return AlertRule(
        alert="VLLMKVCacheUsageHigh",
        expr=unless_asleep(cfg, _kv_above(cfg, t.ratio)),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM KV cache is nearly full; new requests queue and running ones may be preempted.",
        description=WHO + ENGINE + " is using {{ $value | humanizePercentage }} of its KV cache blocks.",
        runbook="vllm-kv-cache-usage-high",
        triage=_kv_log(cfg),
    )


def kv_cache_usage_critical(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVCacheUsageCritical
    return AlertRule(
        alert="VLLMKVCacheUsageCritical",
        expr=unless_asleep(cfg, _kv_above(cfg, t.ratio)),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM KV cache is full; requests are being preempted or stuck in the queue.",
        description=WHO + ENGINE + " is using {{ $value | humanizePercentage }} of its KV cache blocks.",
        runbook="vllm-kv-cache-usage-critical",
        triage=_kv_log(cfg),
    )


def request_queue_backlog(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMRequestQueueBacklog
    waiting, running = e.waiting_for_capacity(cfg), e.gauge(cfg, "vllm:num_requests_running")
    # Each engine has its own queue. Only requests waiting for capacity count: a queue deferred on
    # something else (a KV transfer from a prefill pod, a grammar, a LoRA slot) does not shrink with more
    # replicas (docs/rules.md). One alert per pod when every engine is backed up, else one per engine.
    # Two filters in a row (at least min_waiting, then more than ratio x running) read the queue once.
    # The engines that keep up are the others: every engine's running gauge, less the backlogged ones,
    # reads the queue's three series once where the two opposite filters read them twice.
    ratio = f"{t.waiting_to_running} * {running}"
    backlog = f"({waiting} >= {t.min_waiting})\n> {ratio}"
    engines = f"group by ({e.by_engine(cfg)}) (vllm:num_requests_running{sel(cfg)})"
    keeps_up = f"{engines}\nunless on ({e.by_engine(cfg)})\n(\n{textwrap.indent(backlog, '  ')}\n)"
    return AlertRule(
        alert="VLLMRequestQueueBacklog",
        expr=unless_asleep(cfg, e.pod_or_engines(cfg, backlog, keeps_up)),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM requests are piling up in the queue faster than the engine admits them.",
        description=WHO + ENGINE + " has {{ $value }} requests waiting for KV cache or batch capacity, more than "
        f"{t.waiting_to_running:g}x the requests running.",
        runbook="vllm-request-queue-backlog",
        triage=_kv_log(cfg),
    )


def zero_throughput(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMZeroThroughput
    on = e.by_engine(cfg)
    gen = c.selector(cfg.selectors.vllm, 'model_name!=""')
    in_flight = e.in_flight(cfg)
    produced = f"sum by ({on}) (increase(vllm:generation_tokens_total{gen}[{t.window}])) > 0"
    # Per engine: requests in flight but the generated-token counter did not move (or vanished) over the
    # window. An idle engine (nothing running or waiting) never matches. A counter seen only once in the
    # window (first scrape, a target back from a gap) cannot tell yet, so it does not count. One alert
    # per pod when every engine is stuck, else one per stuck engine (its siblings keep serving).
    seen_once = f"min by ({on}) (count_over_time(vllm:generation_tokens_total{gen}[{t.window}])) < 2"
    stuck = f"{in_flight} > 0\nunless on ({on})\n{produced}\nunless on ({on})\n{seen_once}"
    serving = f"({produced})\nor\n{in_flight} == 0"
    return AlertRule(
        alert="VLLMZeroThroughput",
        expr=unless_asleep(cfg, e.pod_or_engines(cfg, stuck, serving)),
        for_=t.for_,
        severity=t.severity,
        summary="vLLM has requests in flight but generates no tokens: the engine is stuck.",
        description=WHO + ENGINE + " has {{ $value }} requests running or waiting and generated no token in the "
        f"last {t.window}.",
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
    # LeaderWorkerSet workers serve no engine metrics (only their leader does): a scrape of one that
    # fails is not a vLLM target down, whatever its job (obspack/rules/lws.py).
    workers = lws.any_workers(cfg).replace("\n", "\n            ")
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
            unless on ({c.by(cfg, 'namespace', 'pod')})
            {workers}
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
    # Decode-only pods get their prompts' KV from a prefill pod: a local hit rate near zero is by design.
    # So do pods (whatever their labels say) whose prompt tokens mostly come through a connector.
    supplied = f"{counter_rate(cfg, (f.EXTERNAL_PREFIX_HITS,), t.window)}\n/ on ({on})\n{queries}"
    low = f"{roles.without(cfg, low, 'decode')}\nunless on ({on})\n(\n{textwrap.indent(supplied, '  ')}\n  > {CONNECTOR_SHARE:g}\n)"
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


def kv_cache_usage_high_by_role(cfg: ObspackConfig) -> AlertRule:
    """KV high on a prefill pod: decode pods are not pulling its KV; on a decode pod: preemptions ahead."""
    return role_aware(cfg, kv_cache_usage_high(cfg), _raw(cfg, *KV_USAGE))


def kv_cache_usage_critical_by_role(cfg: ObspackConfig) -> AlertRule:
    return role_aware(cfg, kv_cache_usage_critical(cfg), _raw(cfg, *KV_USAGE))


def request_queue_backlog_by_role(cfg: ObspackConfig) -> AlertRule:
    """A queue on a prefill pod: the prefill side is short of capacity (or the P:D ratio is wrong)."""
    return role_aware(cfg, request_queue_backlog(cfg), _raw(cfg, "vllm:num_requests_waiting"))


# Two groups (alerts/__init__.py): each reads every engine's raw gauges and counters, and at 1,000 pods the
# seven alerts took 1.8 s in one group, over the second a group may take alone (docs/benchmarks.md).
ENGINE_ALERTS = (
    kv_cache_usage_high_by_role,
    kv_cache_usage_critical_by_role,
    zero_throughput,
    target_down,
)
LOAD_ALERTS = (
    request_queue_backlog_by_role,
    request_preemptions,
    prefix_cache_hit_rate_low,
)
ALERTS = (*ENGINE_ALERTS, *LOAD_ALERTS)
