"""The inference pool: the endpoint picker (EPP) of the Gateway API Inference Extension or llm-d router,
and the pool it routes to (docs/gateway.md).

Every alert reads the EPP's raw series (no records): few series, one EPP per pool. Each counts a thing
once whatever the EPP's era (obspack/catalogue/gateway.py): the canonical `llm_d_epp_*` series where the
EPP emits them, else their legacy twins; gauges as the highest value across EPP replicas, counters
summed over them. The pool alerts name the pool in `inference_pool`, as flow control does.
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.catalogue import gateway as g
from obspack.catalogue.vllm import HAS_MODEL, NUM_REQUESTS_RUNNING
from obspack.config import ObspackConfig, promql_string
from obspack.rules.model import AlertRule

EPP = "{{ $labels.namespace }}/{{ $labels.job }}"
POOL = "{{ $labels.namespace }}/{{ $labels.inference_pool }}"
POOL_TRIAGE = "kubectl -n {{ $labels.namespace }} get inferencepool {{ $labels.inference_pool }} -o yaml"


def _indent(expr: str) -> str:
    return textwrap.indent(expr, "  ")


def _as_pool(cfg: ObspackConfig, expr: str, *keep: str) -> str:
    """A pool gauge expression (pool in `name`) with the pool in `inference_pool` instead."""
    renamed = f'label_replace(\n{_indent(expr)},\n  "{g.FLOW_POOL}", "$1", "{g.POOL}", "(.*)"\n)'
    return f"max by ({c.by(cfg, 'namespace', g.FLOW_POOL, *keep)}) (\n{_indent(renamed)}\n)"


# Set to "true" on a pool outage whose namespace holds one pool: the engine alerts of that namespace are
# then the pool's, and the example Alertmanager config mutes them under the outage (engine alerts carry no
# pool, so with two pools in a namespace they cannot be told apart, and nothing is muted there).
ONLY_POOL = "only_pool_in_namespace"


def _alone(cfg: ObspackConfig, outage: str, s: str, lookback: str, cover: str = "") -> str:
    """`outage` with ONLY_POOL="true" where its namespace had one pool within `lookback`, unchanged
    elsewhere. `cover` has a series for every namespace the outage can name (by default, those with a pool)."""
    ns = c.by(cfg, "namespace")
    pools = "\nor\n".join(
        f"group by ({c.by(cfg, 'namespace', g.POOL)}) (present_over_time({m}{s}[{lookback}]))"
        for m in (g.READY.canonical, g.READY.legacy)
    )
    alone = f"count by ({ns}) (\n{_indent(pools)}\n) == 1"
    cover = cover or f"group by ({ns}) (\n{_indent(pools)}\n)"
    marked = f'label_replace(\n{_indent(alone)},\n  "{ONLY_POOL}", "true", "", ""\n)'
    # the legs are disjoint, so a plain `or`: VictoriaMetrics keeps the namespaces where `== 1` fails as
    # gaps of the left leg, and `or on (...)` fills them from the right leg, with the left leg's mark
    rest = f"{cover}\nunless on ({ns})\n{alone}"
    return (
        f"(\n{_indent(outage)}\n)\n* on ({ns}) group_left ({ONLY_POOL})\n"
        f"(\n{_indent(marked)}\n  or\n  (\n{_indent(_indent(rest))}\n  )\n)"
    )


def picker_down(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.InferenceGatewayPickerDown
    s = c.selector(cfg.selectors.epp)
    target, epp = c.by(cfg, "namespace", "pod", "job", "instance"), c.by(cfg, "namespace", "job")
    known = g.served(s, target, t.lookback)
    if t.job_regex:
        by_job = c.selector(cfg.selectors.epp, f"job=~{promql_string(t.job_regex)}")
        known += f"\nor\ngroup by ({target}) (max_over_time(up{by_job}[{t.lookback}]) == 1)"
    # a vLLM target whose job happens to match the regex is VLLMTargetDown's
    vllm = c.selector(cfg.selectors.vllm, HAS_MODEL)
    engine = f"group by ({target}) (present_over_time({NUM_REQUESTS_RUNNING}{vllm}[{t.lookback}]))"
    down = f"up{s} == 0\nand on ({target})\n(\n{_indent(known)}\n)\nunless on ({target})\n{engine}"
    # Every target of the EPP (its HA replicas) down, one alert per EPP: a replica that still answers
    # keeps the pool routed.
    return AlertRule(
        alert="InferenceGatewayPickerDown",
        expr=_alone(cfg, f"max by ({epp}) (\n{_indent(down)}\n)\nunless on ({epp})\nmax by ({epp}) (up{s} == 1)", s,
                    t.lookback, f"group by ({c.by(cfg, 'namespace')}) (up{s})"),
        for_=t.for_,
        severity=t.severity,
        summary="The inference pool's endpoint picker (EPP) is down: requests through the gateway fail "
        "before they reach vLLM.",
        description=f"Prometheus cannot scrape any replica of the EPP {EPP}; it served EPP metrics within the "
        f"last {t.lookback}. Requests routed through its InferencePool fail while engines sit idle.",
        runbook="inference-gateway-picker-down",
        triage="kubectl -n {{ $labels.namespace }} get pods,inferencepool -o wide",
        dashboard=c.GATEWAY_DASHBOARD,
    )


def pool_no_ready_endpoints(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.InferencePoolNoReadyEndpoints
    s = c.selector(cfg.selectors.epp)
    pool = c.by(cfg, "namespace", g.POOL)
    had = "\nor\n".join(
        f"max by ({pool}) (max_over_time({m}{s}[{t.lookback}]))" for m in (g.READY.canonical, g.READY.legacy)
    )
    empty = f"(\n{_indent(g.once(g.READY, s, pool))}\n) == 0\nand on ({pool})\n(\n{_indent(had)}\n) > 0"
    return AlertRule(
        alert="InferencePoolNoReadyEndpoints",
        expr=_alone(cfg, _as_pool(cfg, empty), s, t.lookback),
        for_=t.for_,
        severity=t.severity,
        summary="An InferencePool has no ready endpoint: the gateway rejects every request to it.",
        description=f"The EPP of pool {POOL} sees no ready endpoint; the pool had ready endpoints within the "
        f"last {t.lookback}.",
        runbook="inference-pool-no-ready-endpoints",
        triage=POOL_TRIAGE,
        dashboard=c.GATEWAY_DASHBOARD,
    )


def pool_saturated(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.InferencePoolSaturated
    s = c.selector(cfg.selectors.epp)
    pool = c.by(cfg, "namespace", g.POOL)
    # The EPP keeps the last averages when the pool empties: only pools with a ready endpoint count.
    signals = "\nor\n".join(
        f'label_replace(\n  (\n{_indent(_indent(g.once(twins, s, pool)))}\n  ) > {limit:g},\n  "signal", "{signal}", "", ""\n)'
        for signal, twins, limit in (("kv_cache", g.AVG_KV, t.kv_ratio), ("queue", g.AVG_QUEUE, t.queue_size))
    )
    serving = f"(\n{_indent(signals)}\n)\nand on ({pool})\n(\n{_indent(g.once(g.READY, s, pool))}\n) > 0"
    return AlertRule(
        alert="InferencePoolSaturated",
        expr=_as_pool(cfg, serving, "signal"),
        for_=t.for_,
        severity=t.severity,
        summary="An InferencePool is saturated: its endpoints' KV cache or queues are full on average, so "
        "the picker has no good endpoint left.",
        description=f"The pool {POOL} averages {{{{ $value | humanize }}}} on {{{{ $labels.signal }}}} "
        f"(fires above {t.kv_ratio:g} KV cache utilisation or {t.queue_size:g} waiting requests per endpoint).",
        runbook="inference-pool-saturated",
        triage=POOL_TRIAGE,
        dashboard=c.GATEWAY_DASHBOARD,
    )


def flow_control_rejections(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.InferenceGatewayFlowControlRejections
    pool = c.by(cfg, "namespace", g.FLOW_POOL)

    def rate(*matchers: str) -> str:
        # the router's outcome counter where it exists, else GAIE's queue-time histogram count
        return "\nor\n".join(
            f"sum by ({pool}) (rate({m}{c.selector(cfg.selectors.epp, *matchers)}[{t.window}]))"
            for m in (g.FLOW_REQUESTS, g.FLOW_QUEUE_DURATION_COUNT)
        )

    return AlertRule(
        alert="InferenceGatewayFlowControlRejections",
        expr=f"(\n{_indent(rate(g.REJECTED))}\n)\n/\n(\n{_indent(rate())}\n)\n> {t.ratio}",
        for_=t.for_,
        severity=t.severity,
        summary="The gateway's flow control rejects requests: clients get 429 (pool at capacity) or 503 "
        "(no endpoints).",
        description=f"Flow control of pool {POOL} rejected {{{{ $value | humanizePercentage }}}} of the "
        f"requests that left its queues over the last {t.window}.",
        runbook="inference-gateway-flow-control-rejections",
        triage=POOL_TRIAGE,
        dashboard=c.GATEWAY_DASHBOARD,
    )


def scheduling_latency_high(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.InferenceGatewaySchedulingLatencyHigh
    s = c.selector(cfg.selectors.epp)
    epp = c.by(cfg, "namespace", "job", "le")
    buckets = "\nor\n".join(
        f"sum by ({epp}) (rate({m}_bucket{s}[{t.window}]))" for m in (g.SCHEDULER_E2E.canonical, g.SCHEDULER_E2E.legacy)
    )
    return AlertRule(
        alert="InferenceGatewaySchedulingLatencyHigh",
        expr=f"histogram_quantile(0.99,\n{_indent(buckets)}\n) > {t.seconds:g}",
        for_=t.for_,
        severity=t.severity,
        summary="The endpoint picker takes long to choose an endpoint: every request through the gateway waits "
        "for it.",
        description=f"The EPP {EPP} took {{{{ $value | humanize }}}}s or more to schedule 1% of requests over the "
        f"last {t.window} (p99).",
        runbook="inference-gateway-scheduling-latency-high",
        triage="kubectl -n {{ $labels.namespace }} top pods",
        dashboard=c.GATEWAY_DASHBOARD,
    )


ALERTS = (
    picker_down,
    pool_no_ready_endpoints,
    pool_saturated,
    flow_control_rejections,
    scheduling_latency_high,
)
