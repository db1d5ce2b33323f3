"""`rightsize`: the pipeline, from a server to a report.

connect -> backend -> discovery (which containers ran vLLM in the window) -> every other question, scoped
to the namespaces found, at most `concurrency` in flight -> where a workload saw no model load in the
window, one more question about the data before it -> workloads assembled, sized and backtested (pure) ->
the what-if, if asked -> report.
"""

from __future__ import annotations

import time
from dataclasses import replace

from obspack.config import ObspackConfig
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.backends import connect, detect
from obspack.rightsize import prices, queries, scaling, sizing
from obspack.rightsize.assemble import Settings, assemble, needs_before
from obspack.rightsize.measure import Measurements, measure, merge
from obspack.rightsize.model import ModelScaling, Report, Rules, Workload
from obspack.rightsize.settings import Options
from obspack.rightsize.whatif import what_if


def rules(options: Options) -> Rules:
    return Rules(
        margin=sizing.MARGIN,
        oom_factor=sizing.OOM_FACTOR,
        oom_min_bytes=sizing.OOM_MIN_STEP,
        granule_bytes=sizing.GRANULE,
        tolerance=sizing.TOLERANCE,
        release_rise=options.release_rise,
        min_history_s=options.min_history_s,
        min_points=sizing.MIN_POINTS,
    )


def start_sources(found: Measurements) -> tuple[str, ...]:
    """cAdvisor when it gives any vLLM container a start time; kube-state-metrics for those it does not."""
    with_start = sum(found.rows.get("started_by_cadvisor", {}).values())
    without = sum(found.rows.get("not_started_by_cadvisor", {}).values())
    return (*(("cadvisor",) if with_start else ()), *(("kube_state_metrics",) if without or not with_start else ()))


def scaling_targets(
    cfg: ObspackConfig, m: Measurements, plan: queries.Plan, workloads: tuple[Workload, ...]
) -> tuple[ModelScaling, ...]:
    """Per model with pods in the window, the targets and replicas its history suggests (scaling.py)."""
    series = {name: m.days.get(name, {}) for name in ("scale_queue", "scale_kv", "scale_pods", "scale_ttft_bad", "scale_ttft_all")}
    out = []
    for key in sorted(series["scale_pods"]):
        cluster, namespace, model = key
        owners = tuple(
            w.key for w in workloads if w.key.cluster == cluster and w.key.namespace == namespace and model in w.models
        )
        out.append(
            scaling.suggest(
                cfg,
                (cluster, namespace, model),
                *(series[name].get(key, {}) for name in series),
                step_s=plan.step_s,
                workloads=owners,
            )
        )
    return tuple(out)


def rightsize(cfg: ObspackConfig, connection: Connection, options: Options | None = None) -> Report:
    options = options or Options()
    started = time.monotonic()
    at = options.at if options.at is not None else time.time()
    plan = queries.Plan(at=at, window_s=options.window_s, step_s=options.step_s, load_s=options.load_s)
    with PrometheusAPI(connection) as api:
        connect(api, at)
        backend = detect(api, options.backend)
        found = measure(api, queries.discovery(cfg, plan), at)
        containers = found.rows.get("containers", {})
        m = found
        if containers:
            plan = replace(plan, namespaces=queries.namespaces(containers), starts=start_sources(found))
            m = merge(found, measure(api, [*queries.measurements(cfg, plan), *prices.queries(cfg, plan)], at, plan.window_s))
            pods, earliest = needs_before(m, plan)
            before = queries.before_window(cfg, plan, pods, earliest) if pods else None
            if before is not None:
                m = merge(m, measure(api, [before], at))
            if options.autoscaling:
                m = merge(m, measure(api, queries.autoscaling(cfg, plan), at, plan.window_s))
        requests, slowest = api.requests, api.slowest()
    settings = Settings(
        min_history_s=options.min_history_s,
        release_rise=options.release_rise,
        prefix_low=cfg.alerts.VLLMPrefixCacheHitRateLow.ratio,
        fragmentation_high=cfg.alerts.VLLMCUDAAllocatorFragmentationHigh.ratio,
    )
    workloads, notes = assemble(m, plan, settings)
    workloads = prices.workload_costs(cfg, m, workloads)
    targets = scaling_targets(cfg, m, plan, workloads) if options.autoscaling else ()
    targets = prices.scaling_savings(targets, workloads)
    asked = what_if(workloads, options.what_if) if options.what_if is not None and not m.failures else None
    if asked is not None:  # the report is about the one workload the what-if names
        workloads = tuple(w for w in workloads if w.key == asked.workload)
    return Report(
        url=connection.url,
        backend=backend.title,
        at=at,
        window_s=plan.window_s,
        step_s=plan.step_s,
        load_s=plan.load_s,
        rules=rules(options),
        workloads=workloads,
        notes=notes,
        failures=m.failures,
        requests=requests,
        elapsed_s=time.monotonic() - started,
        slowest=slowest,
        include_low=options.include_low,
        what_if=asked,
        scaling=targets,
        selectors=tuple(queries.tried(cfg)),
        currency=cfg.cost.currency,
    )
