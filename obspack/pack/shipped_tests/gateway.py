"""promtool incidents of the inference pool's alerts (obspack/rules/alerts/gateway.py), in the shapes an
endpoint picker (EPP) really exports: the llm-d router's dual emission (every canonical `llm_d_epp_*`
series beside its legacy twin), a GAIE EPP with the legacy names only, two EPP replicas in HA that both
export the pool gauges, two pools side by side, and the other cluster with the same names.

It builds on the blocks of alerts.py (Builder, Incident, on_time), which lists these incidents.
"""

from __future__ import annotations

from collections.abc import Callable

from obspack.catalogue import gateway as g
from obspack.pack.shipped_tests import alerts as base
from obspack.rules.alerts.gateway import ONLY_POOL

JOB = "llm-d-router-epp"  # the router chart's Service name for pool "llama"; the Prometheus job
REPLICAS = ("10.8.0.11:9090", "10.8.0.12:9090")
# What each era's EPP emits for one series: both twins (router v0.9+), or the legacy name alone (GAIE).
DUAL, LEGACY = "dual", "legacy"


def _names(twins: g.Twins, era: str) -> tuple[str, ...]:
    return (twins.canonical, twins.legacy) if era == DUAL else (twins.legacy,)


def _job(b: base.Builder) -> str:
    """The EPP's job as the series carry it: the router's, unless the EPP selector asks for another."""
    return {"job": JOB, **b.sel["epp"]}["job"]


def _replica(b: base.Builder, cluster: str, namespace: str, i: int) -> dict[str, str]:
    return {**b.where(cluster, namespace, f"llama-epp-7d9f-{i}"), "instance": REPLICAS[i], "container": "epp",
            "job": _job(b)}


def _epp(b: base.Builder, inc: base.Incident, metric: str, labels: dict[str, str], values: str) -> None:
    inc.add(metric, {**labels, **b.sel["epp"]}, values, source="epp")


def _target(b: base.Builder, inc: base.Incident, labels: dict[str, str], values: str) -> None:
    """The scrape's `up` of an EPP target."""
    _epp(b, inc, "up", labels, values)


def _pool_gauge(b: base.Builder, inc: base.Incident, twins: g.Twins, era: str, cluster: str, namespace: str,
                pool: str, values: str, replicas: int = 2) -> None:
    """A pool gauge as every replica of the EPP exports it, under each name of the era."""
    for i in range(replicas):
        for metric in _names(twins, era):
            _epp(b, inc, metric, {**_replica(b, cluster, namespace, i), g.POOL: pool}, values)


def _pool(b: base.Builder, cluster: str, namespace: str, pool: str) -> dict[str, str]:
    return {b.cfg.cluster_label: cluster, "namespace": namespace, g.FLOW_POOL: pool}


# ---------------------------------------------------------------------------------------------------------


def picker_down(b: base.Builder) -> base.Incident:
    t = b.cfg.alerts.InferenceGatewayPickerDown
    inc = base.Incident("InferenceGatewayPickerDown: both replicas of an EPP stop answering: one alert for the EPP; "
                        "one replica down, the other cluster, an EPP never scraped and other targets stay quiet")
    down = 20
    n = int(down + base.minutes(t.for_)) + 10
    # router v0.10 in prod-a/llm-d, two replicas, dual emission: both go down at `down`
    # the same EPP in prod-b stays up; a GAIE v1.5 EPP in prod-a/gaie loses one replica of two
    cases = (("prod-a", "llm-d", DUAL, (down, down)), ("prod-b", "llm-d", DUAL, (None, None)),
             ("prod-a", "gaie", LEGACY, (down, None)))
    for cluster, namespace, era, stops in cases:
        for i, stop in enumerate(stops):
            replica = _replica(b, cluster, namespace, i)
            served = f"1x{n}" if stop is None else f"1x{stop - 1}"
            _target(b, inc, replica, f"1x{n}" if stop is None else f"1x{stop - 1} 0x{n - stop}")
            for metric in _names(g.INFO, era):
                _epp(b, inc, metric, {**replica, "commit": "71f4f099", "build_ref": "v0.10.0"}, served)
            for metric in _names(g.READY, era):
                _epp(b, inc, metric, {**replica, g.POOL: "llama"}, served.replace("1x", "3x"))
    # an EPP scraped without its bearer token: 401 from the start, never served a series
    _target(b, inc, _replica(b, "prod-a", "secured", 0), f"0x{n}")
    # a web app's target that is down
    _target(b, inc, {**b.where("prod-a", "web", "shop-0"), "instance": "10.8.1.9:8080", "job": "web/shop"}, f"0x{n}")
    # its pool is the only one of its namespace: the engine alerts there are the pool's
    epp = {b.cfg.cluster_label: "prod-a", "namespace": "llm-d", "job": _job(b), ONLY_POOL: "true"}
    inc.expect("InferenceGatewayPickerDown", base.on_time(down, t.for_), [(epp, 0)])
    inc.expect("InferenceGatewayPickerDown", down - 2, [])
    return inc


def no_ready_endpoints(b: base.Builder) -> base.Incident:
    t = b.cfg.alerts.InferencePoolNoReadyEndpoints
    inc = base.Incident("InferencePoolNoReadyEndpoints: a pool that had endpoints loses them, each era, once per pool, "
                        "marked where it is its namespace's only pool; a healthy pool beside it, the other cluster, "
                        "a pool that never had any stay quiet")
    empty = 10
    n = int(empty + base.minutes(t.for_)) + 10
    lost = f"3x{empty - 1} 0x{n - empty}"
    _pool_gauge(b, inc, g.READY, DUAL, "prod-a", "llm-d", "llama", lost)
    _pool_gauge(b, inc, g.READY, DUAL, "prod-b", "llm-d", "llama", f"3x{n}")
    _pool_gauge(b, inc, g.READY, LEGACY, "prod-a", "gaie", "qwen", lost)
    # a second pool in prod-a/llm-d whose second replica reports an empty datastore: the first one counts
    _pool_gauge(b, inc, g.READY, DUAL, "prod-a", "llm-d", "mistral", f"2x{n}", replicas=1)
    for metric in _names(g.READY, DUAL):
        _epp(b, inc, metric, {**_replica(b, "prod-a", "llm-d", 1), g.POOL: "mistral"}, f"0x{n}")
    # a pool created before its model servers: never had an endpoint
    _pool_gauge(b, inc, g.READY, DUAL, "prod-a", "staging", "llama", f"0x{n}")
    # llama shares prod-a/llm-d with mistral: the namespace's engine alerts may be either pool's
    firing = [(_pool(b, "prod-a", "llm-d", "llama"), 0), ({**_pool(b, "prod-a", "gaie", "qwen"), ONLY_POOL: "true"}, 0)]
    inc.expect("InferencePoolNoReadyEndpoints", base.on_time(empty, t.for_), firing)
    inc.expect("InferencePoolNoReadyEndpoints", empty - 2, [])
    return inc


def saturated(b: base.Builder) -> base.Incident:
    t = b.cfg.alerts.InferencePoolSaturated
    inc = base.Incident("InferencePoolSaturated: KV cache (both names) and queue (legacy only) per pool; a cool "
                        "pool, the other cluster and an emptied pool's stale averages stay quiet")
    n = int(base.minutes(t.for_)) + 15
    hot_kv, cool_kv = base._above(t.kv_ratio), round(t.kv_ratio * 0.5, 4)
    long_queue, short_queue = t.queue_size * 3, t.queue_size / 4
    pools = (  # cluster, namespace, pool, era, KV, queue, ready
        ("prod-a", "llm-d", "llama", DUAL, hot_kv, short_queue, 3),
        ("prod-a", "llm-d", "mistral", LEGACY, cool_kv, long_queue, 2),
        ("prod-b", "llm-d", "llama", DUAL, cool_kv, short_queue, 3),
        ("prod-a", "gaie", "qwen", LEGACY, hot_kv, long_queue, 0),  # emptied: the EPP keeps its last averages
    )
    for cluster, namespace, pool, era, kv, queue, ready in pools:
        _pool_gauge(b, inc, g.AVG_KV, era, cluster, namespace, pool, f"{kv}x{n}")
        _pool_gauge(b, inc, g.AVG_QUEUE, era, cluster, namespace, pool, f"{queue:g}x{n}")
        _pool_gauge(b, inc, g.READY, era, cluster, namespace, pool, f"{ready}x{n}")
    inc.expect("InferencePoolSaturated", base.on_time(0, t.for_), [
        ({**_pool(b, "prod-a", "llm-d", "llama"), "signal": "kv_cache"}, hot_kv),
        ({**_pool(b, "prod-a", "llm-d", "mistral"), "signal": "queue"}, long_queue),
    ])
    return inc


def flow_control_rejections(b: base.Builder) -> base.Incident:
    t = b.cfg.alerts.InferenceGatewayFlowControlRejections
    inc = base.Incident("InferenceGatewayFlowControlRejections: the router's counter and GAIE's histogram, one "
                        "alert per pool over two replicas; a pool below the share and the other cluster stay quiet")
    n = int(base.minutes(t.window) + base.minutes(t.for_)) + 15
    per_minute = 600  # requests leaving flow control per replica
    high, low = base._above(t.ratio), round(t.ratio / 4, 4)

    def outcomes(share: float) -> dict[str, int]:
        rejected = round(per_minute * share)
        return {"Dispatched": per_minute - rejected, "RejectedCapacity": rejected - rejected // 3,
                "RejectedNoEndpoints": rejected // 3}

    pools = (("prod-a", "llm-d", "llama", DUAL, high), ("prod-b", "llm-d", "llama", DUAL, low),
             ("prod-a", "gaie", "qwen", LEGACY, high), ("prod-a", "gaie", "mistral", LEGACY, low))
    for cluster, namespace, pool, era, share in pools:
        for i in range(2):
            replica = {**_replica(b, cluster, namespace, i), g.FLOW_POOL: pool, "priority": "0"}
            for outcome, count in outcomes(share).items():
                if era == DUAL:
                    _epp(b, inc, g.FLOW_REQUESTS, {**replica, "outcome": outcome}, f"0+{count}x{n}")
                legacy = "RejectedOther" if outcome == "RejectedNoEndpoints" else outcome  # GAIE has no 503 outcome
                histogram = {**replica, "outcome": legacy, "fairness_id": "default", "model_name": base.MODEL,
                             "target_model_name": base.MODEL}
                _epp(b, inc, g.FLOW_QUEUE_DURATION_COUNT, histogram, f"0+{count}x{n}")
    # the share counted once: a pool's rejected requests over all that left its queues
    share = sum(v for k, v in outcomes(high).items() if k != "Dispatched") / per_minute
    inc.expect("InferenceGatewayFlowControlRejections", base.on_time(1, t.for_), [
        (_pool(b, "prod-a", "llm-d", "llama"), share), (_pool(b, "prod-a", "gaie", "qwen"), share),
    ])
    return inc


SCHEDULER_BUCKETS = ("0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "+Inf")


def scheduling_latency(b: base.Builder) -> base.Incident:
    t = b.cfg.alerts.InferenceGatewaySchedulingLatencyHigh
    inc = base.Incident("InferenceGatewaySchedulingLatencyHigh: a slow picker per EPP, both eras, two replicas; "
                        "a fast EPP and the other cluster stay quiet")
    n = int(base.minutes(t.window) + base.minutes(t.for_)) + 15
    per_minute = 300
    # slow: every decision between 50 and 100 ms (p99 99.5 ms); fast: between 1 and 2 ms
    slow, fast = "0.1", "0.002"
    cases = (("prod-a", "llm-d", DUAL, slow), ("prod-b", "llm-d", DUAL, fast), ("prod-a", "gaie", LEGACY, slow),
             ("prod-a", "mistral", LEGACY, fast))
    for cluster, namespace, era, above in cases:
        first = SCHEDULER_BUCKETS.index(above)
        for i in range(2):
            for metric in _names(g.SCHEDULER_E2E, era):
                for k, le in enumerate(SCHEDULER_BUCKETS):
                    values = f"0+{per_minute}x{n}" if k >= first else f"0x{n}"
                    _epp(b, inc, f"{metric}_bucket", {**_replica(b, cluster, namespace, i), "le": le}, values)
    p99 = 0.05 + (0.1 - 0.05) * 0.99
    epp = {"job": _job(b)}
    inc.expect("InferenceGatewaySchedulingLatencyHigh", base.on_time(1, t.for_), [
        ({b.cfg.cluster_label: "prod-a", "namespace": "llm-d", **epp}, p99),
        ({b.cfg.cluster_label: "prod-a", "namespace": "gaie", **epp}, p99),
    ])
    return inc


INCIDENTS: dict[str, Callable[[base.Builder], base.Incident]] = {
    "InferenceGatewayPickerDown": picker_down,
    "InferencePoolNoReadyEndpoints": no_ready_endpoints,
    "InferencePoolSaturated": saturated,
    "InferenceGatewayFlowControlRejections": flow_control_rejections,
    "InferenceGatewaySchedulingLatencyHigh": scheduling_latency,
}
