"""vLLM / Gateway: the inference pool as its endpoint picker (EPP) sees it: requests per model, what the
picker saw (pool averages, per-endpoint queues, the KV cache of the pool's vLLM pods), routing latency,
flow control, ready endpoints per pool and the EPP's version.

The EPP's series are read raw (a few per pool), each counted once whatever the EPP's era
(obspack/catalogue/gateway.py). On a fleet without an EPP the EPP panels say "no EPP scraped".
"""

from __future__ import annotations

from grafanalib.core import REFRESH_ON_TIME_RANGE_CHANGE, SHOW, SORT_ALPHA_ASC, Dashboard, Template

from obspack import conventions as c
from obspack.catalogue import gateway as g
from obspack.config import ObspackConfig
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import dashboard

NAME = c.GATEWAY_DASHBOARD
NO_EPP = "no EPP scraped"
EPP_VARIABLES = ("cluster", "namespace")
POOL_MATCH = f'{g.POOL}=~"$pool"'
POOL_LEGEND = "{{namespace}}/{{name}}"
EPP_LEGEND = "{{namespace}}/{{job}}"
# An endpoint under either twin's label name (a series has one of the two).
ENDPOINT_LEGEND = "{{name}} {{" + g.ENDPOINT_LABEL.canonical + "}}{{" + g.ENDPOINT_LABEL.legacy + "}}"


def _sel(cfg: ObspackConfig, *extra: str) -> str:
    return c.selector(cfg.selectors.epp, q.scope(cfg, *EPP_VARIABLES), *extra)


def pool_variable(cfg: ObspackConfig) -> Template:
    names = "|".join(g.READY.__dict__.values())
    return Template(
        name="pool",
        label="Pool",
        type="query",
        dataSource=p.DATASOURCE,
        query=f'label_values({{__name__=~"{names}", {q.scope(cfg, *EPP_VARIABLES)}}}, {g.POOL})',
        refresh=REFRESH_ON_TIME_RANGE_CHANGE,
        sort=SORT_ALPHA_ASC,
        multi=True,
        includeAll=True,
        allValue=variables.ALL_VALUE,
        default="$__all",
        regex="",
        hide=SHOW,
    )


def pool_gauge(cfg: ObspackConfig, twins: g.Twins) -> str:
    return g.once(twins, _sel(cfg, POOL_MATCH), c.by(cfg, "namespace", g.POOL))


EPP_REPLICAS = 3  # EPP replicas (HA) per pool for which the longest endpoint queues are exact


def endpoint_queue(cfg: ObspackConfig) -> str:
    """The longest 20 endpoint queues, each endpoint once, whichever twin its pool's EPP emits (the canonical
    one where it emits both: `or on` the pool, so neither twin's endpoint label is rewritten at each step).

    Each EPP replica reports every endpoint: the TOP x EPP_REPLICAS longest raw series hold the TOP longest
    endpoints when a pool has up to EPP_REPLICAS replicas (with more, fewer lines, each still right), so
    only those are deduplicated (`max by`), instead of every endpoint of the fleet at every step (~1 s at
    1,000 pods)."""
    top = q.TOP * EPP_REPLICAS
    canonical, legacy = (
        f"max by ({c.by(cfg, 'namespace', g.POOL, label)}) (topk({top}, {metric}{_sel(cfg, POOL_MATCH)}))"
        for metric, label in ((g.ENDPOINT_QUEUE.canonical, g.ENDPOINT_LABEL.canonical),
                              (g.ENDPOINT_QUEUE.legacy, g.ENDPOINT_LABEL.legacy))
    )  # fmt: skip
    return f"topk({q.TOP}, {canonical}\nor on ({c.by(cfg, 'namespace', g.POOL)})\n{legacy})"


def requests(cfg: ObspackConfig, *metrics: str, by: str = "model_name") -> str:
    """Requests per second of the newest request counter the EPP emits (canonical, then each legacy era)."""
    keep = c.by(cfg, "namespace", "job", by)
    model = 'model_name=~"$model"'
    return "\nor\n".join(f"sum by ({keep}) (rate({m}{_sel(cfg, model)}[$__rate_interval]))" for m in metrics)


def scheduling(cfg: ObspackConfig, quantile: float) -> str:
    keep = c.by(cfg, "namespace", "job", "le")
    buckets = "\nor\n".join(
        f"sum by ({keep}) (rate({m}_bucket{_sel(cfg)}[$__rate_interval]))"
        for m in (g.SCHEDULER_E2E.canonical, g.SCHEDULER_E2E.legacy)
    )
    return f"histogram_quantile({quantile:g},\n{buckets}\n)"


def processing(cfg: ObspackConfig, quantile: float) -> str:
    keep = c.by(cfg, "namespace", "job", "le")
    return f"histogram_quantile({quantile:g}, sum by ({keep}) (rate({g.REQUEST_PROCESSING}_bucket{_sel(cfg)}[$__rate_interval])))"


def rejections(cfg: ObspackConfig) -> str:
    keep = c.by(cfg, "namespace", g.FLOW_POOL, "outcome")
    pool = f'{g.FLOW_POOL}=~"$pool"'
    return "\nor\n".join(
        f"sum by ({keep}) (rate({m}{_sel(cfg, pool, g.REJECTED)}[$__rate_interval]))"
        for m in (g.FLOW_REQUESTS, g.FLOW_QUEUE_DURATION_COUNT)
    )


def flow_saturation(cfg: ObspackConfig) -> str:
    return g.once(g.FLOW_SATURATION, _sel(cfg, f'{g.FLOW_POOL}=~"$pool"'), c.by(cfg, "namespace", g.FLOW_POOL))


def version(cfg: ObspackConfig) -> str:
    keep = c.by(cfg, "namespace", "job", "build_ref")
    return f"max by ({keep}) ({g.INFO.canonical}{_sel(cfg)})\nor\nmax by ({keep}) ({g.INFO.legacy}{_sel(cfg)})"


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    a = cfg.alerts
    saturated = marks.runbooks(cfg, "InferencePoolSaturated")
    panels = [
        p.section("Pools: ready endpoints and the EPP"),
        p.timeseries(
            "Ready endpoints per pool",
            p.target(pool_gauge(cfg, g.READY), POOL_LEGEND),
            unit=p.SHORT,
            description="Endpoints (a vLLM pod per target port) the picker can route to, per InferencePool, the "
            "highest of the EPP's replicas. 0 after a non-zero count: every request to the pool fails with 503."
            + marks.say(cfg, "InferencePoolNoReadyEndpoints", " InferencePoolNoReadyEndpoints pages then."),
            thresholds=p.below(1, 1),
            links=marks.runbooks(cfg, "InferencePoolNoReadyEndpoints", "InferenceGatewayPickerDown"),
            no_data=NO_EPP,
        ),
        p.table(
            "EPP version",
            p.target(version(cfg), table=True, instant=True),
            description="The build of each endpoint picker (llm_d_epp_info for the llm-d router, "
            "inference_extension_info for GAIE). Empty: no EPP is scraped; see docs/gateway.md for the "
            "ServiceMonitor and its bearer token.",
            columns=[],
            hide=("Value",),
            w=12,
            no_data=NO_EPP,
        ),
        p.section("Requests through the gateway"),
        p.timeseries(
            "Requests per model",
            p.target(requests(cfg, g.REQUESTS, g.OBJECTIVE_REQUESTS, g.MODEL_REQUESTS), "{{namespace}} {{model_name}}"),
            unit=p.REQUESTS,
            description="Requests per second the EPP handled, per model (the newest request counter the EPP "
            "emits, so the router's twins count once). A drop to zero with clients still sending points at the "
            "gateway or the EPP.",
            no_data=NO_EPP,
        ),
        p.timeseries(
            "Errors per model and error code",
            p.target(requests(cfg, g.REQUEST_ERRORS, g.OBJECTIVE_ERRORS, g.MODEL_ERRORS, by="model_name, error_code"),
                     "{{namespace}} {{model_name}} {{error_code}}"),
            unit=p.REQUESTS,
            description="Requests the EPP answered with an error, per model and error code. Errors while the "
            "engines serve fine point at the pool (no endpoints, flow control) or the objective's configuration.",
            no_data=NO_EPP,
        ),
        p.section("What the picker saw"),
        p.timeseries(
            "Pool average KV cache utilisation",
            p.target(pool_gauge(cfg, g.AVG_KV), POOL_LEGEND),
            unit=p.PERCENT_UNIT,
            description="The mean KV cache use of the pool's endpoints, as the picker reads it from vLLM. Near "
            "the dashed line the picker has no endpoint with room left: add replicas."
            + marks.lines_note(cfg, ("InferencePoolSaturated", f"{a.InferencePoolSaturated.kv_ratio:g}")),
            **marks.dashed(cfg, "green", ("InferencePoolSaturated", a.InferencePoolSaturated.kv_ratio, "red")),
            links=saturated,
            no_data=NO_EPP,
        ),
        p.timeseries(
            "Pool average queue per endpoint",
            p.target(pool_gauge(cfg, g.AVG_QUEUE), POOL_LEGEND),
            unit=p.SHORT,
            description="The mean number of requests waiting in the pool's engines. Sustained above the dashed "
            "line the pool is short of capacity."
            + marks.lines_note(cfg, ("InferencePoolSaturated", f"{a.InferencePoolSaturated.queue_size:g}")),
            **marks.dashed(cfg, "green", ("InferencePoolSaturated", a.InferencePoolSaturated.queue_size, "red")),
            links=saturated,
            no_data=NO_EPP,
        ),
        p.timeseries(
            f"Queue per endpoint (longest {q.TOP})",
            p.target(endpoint_queue(cfg), ENDPOINT_LEGEND),
            unit=p.SHORT,
            description="Waiting requests per endpoint as the picker sees them. One endpoint far above the "
            "others while the pool average is low: the picker's affinity (prefix cache, LoRA) sends it too much.",
            no_data=NO_EPP,
        ),
        p.timeseries(
            "KV cache of the vLLM pods",
            p.target(q.per_pod(cfg, c.KV_USAGE), "{{namespace}}/{{pod}}"),
            unit=p.PERCENT_UNIT,
            description="KV cache use of each vLLM pod in the selected namespaces and models, from vLLM itself: "
            "what the picker averages. Pods missing here but routed to by the pool are not scraped by obspack "
            "(obspack doctor lists them).",
        ),
        p.section("Routing latency and flow control"),
        p.timeseries(
            "Scheduling time p50 and p99",
            p.target(scheduling(cfg, 0.5), "p50 " + EPP_LEGEND),
            p.target(scheduling(cfg, 0.99), "p99 " + EPP_LEGEND),
            unit=p.SECONDS,
            description="Time the EPP takes to pick an endpoint, added to every request's time to first token. "
            "The histogram ends at 0.1 s, so 0.1 s reads as 0.1 s or more."
            + marks.lines_note(cfg, ("InferenceGatewaySchedulingLatencyHigh",
                                     f"{a.InferenceGatewaySchedulingLatencyHigh.seconds:g} s")),
            **marks.dashed(cfg, "green", ("InferenceGatewaySchedulingLatencyHigh",
                                          a.InferenceGatewaySchedulingLatencyHigh.seconds, "red")),
            links=marks.runbooks(cfg, "InferenceGatewaySchedulingLatencyHigh"),
            no_data=NO_EPP,
        ),
        p.timeseries(
            "Request processing in the EPP p99",
            p.target(processing(cfg, 0.99), "p99 " + EPP_LEGEND),
            unit=p.SECONDS,
            description="Time from a request's arrival in the EPP until its body is handled, flow-control "
            "queueing included (llm-d router v0.9 and later only).",
            no_data="no llm-d router v0.9+ EPP scraped",
        ),
        p.timeseries(
            "Flow control: rejections by outcome",
            p.target(rejections(cfg), "{{namespace}}/{{inference_pool}} {{outcome}}"),
            unit=p.REQUESTS,
            description="Requests flow control rejected: RejectedCapacity (429, pool at capacity), "
            "RejectedNoEndpoints (503, empty pool), RejectedOther. Only with the EPP's flowControl feature gate.",
            thresholds=p.above(None, 0.001),
            links=marks.runbooks(cfg, "InferenceGatewayFlowControlRejections"),
            no_data="no rejection, or flow control off",
        ),
        p.timeseries(
            "Flow control: pool saturation",
            p.target(flow_saturation(cfg), "{{namespace}}/{{inference_pool}}"),
            unit=p.SHORT,
            description="Flow control's view of the pool: 1.0 is the set point, above it requests are held in "
            "its queues; an empty pool reads 1.0. Only with the flowControl feature gate.",
            thresholds=p.above(None, 1),
            draw_thresholds=True,
            no_data="flow control off or no EPP scraped",
        ),
    ]
    return dashboard(
        cfg,
        NAME,
        description="The inference pool through its endpoint picker: requests, what the picker saw, routing "
        "latency, flow control and ready endpoints (docs/gateway.md).",
        variables=[*variables.fleet(cfg), pool_variable(cfg)],
        panels=panels,
    )
