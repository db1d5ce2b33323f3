"""`diagnose`: the doctor's pipeline, from a rendered pack and a server to a report.

connect -> backend and its capabilities -> the pack's needs (needs.py) -> selector checks (checks.py) ->
records evaluated through their rules -> alerts -> sources -> dashboards for sampled variable values ->
the history of the records they read over long windows -> deployed rule groups -> scrape targets ->
findings -> advice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from obspack.doctor import knowledge as k
from obspack.doctor.advice import advise
from obspack.doctor.api import Connection, DoctorError, PrometheusAPI
from obspack.doctor.autoscalers import autoscaler_findings
from obspack.doctor.backends import connect, detect
from obspack.doctor.causes import group, probe_off
from obspack.doctor.checks import SelectorChecks, Window
from obspack.doctor.deployed import check_groups
from obspack.doctor.fit import (
    alert_findings,
    dashboard_findings,
    evaluate_records,
    fit_alerts,
    fit_dashboards,
)
from obspack.doctor.gateway import gateway_survey
from obspack.doctor.history import history_findings
from obspack.doctor.needs import leaves, read_pack
from obspack.doctor.prices import price_findings
from obspack.doctor.report import Report
from obspack.doctor.sources import survey
from obspack.doctor.targets import scrape_targets
from obspack.pack import Pack

DEFAULT_LOOKBACK_S = 24 * 3600


@dataclass(frozen=True)
class Options:
    at: float | None = None  # unix seconds to check at; now when unset
    lookback_s: int = DEFAULT_LOOKBACK_S
    backend: str = "auto"


def diagnose(pack: Pack, connection: Connection, options: Options = Options()) -> Report:
    started = time.monotonic()
    at = options.at if options.at is not None else time.time()
    window = Window(at, options.lookback_s)
    phases: dict[str, float] = {}
    clock = [time.monotonic()]

    def phase(name: str) -> None:
        now = time.monotonic()
        phases[name] = round(now - clock[0], 3)
        clock[0] = now

    with PrometheusAPI(connection) as api:
        connect(api, at)
        backend = detect(api, options.backend)
        phase("backend")
        mark = api.tally
        needs = read_pack(pack)
        scopes = {s.key: pack.sources.selectors[s.key] for s in k.SOURCES if s.key}
        checker = SelectorChecks(api, window, scopes)
        rule_needs = [r.need for r in (*needs.recording_rules, *needs.alerts)]
        checks = checker.run(leaf for need in rule_needs for leaf in leaves(need))
        phase("selectors")
        deployment = check_groups(api, backend, needs.groups, at)
        phase("deployed rules")
        records = evaluate_records(api, needs, checks, at, deployment.trusted)
        alerts = fit_alerts(needs, checks, records)
        phase("records")
        found = survey(api, pack, window, needs, checks)
        phase("sources")
        dashboards = fit_dashboards(api, checker, needs, checks, records, found.pods, at)
        history = history_findings(api, needs, at)
        phase("dashboards")
        scaling = autoscaler_findings(api, pack, at, options.lookback_s)
        phase("autoscalers")
        pricing = price_findings(api, pack, at)
        phase("prices")
        epps, gateway = gateway_survey(api, pack, backend, at, options.lookback_s)
        phase("gateway")
        read = {leaf for need in rule_needs for leaf in leaves(need)} | {
            x for d in dashboards for x in d.selectors
        }
        targets, target_findings = scrape_targets(backend, found.jobs)
        off = probe_off(found.reports)
        findings = (
            *found.findings,
            *target_findings,
            *alert_findings(alerts),
            *dashboard_findings(dashboards),
            *history,
            *deployment.findings,
            *scaling,
            *pricing,
            *gateway,
        )
        _answered_since(api, mark)
        requests = api.requests
        slowest = api.slowest()
        url = api.shown
    return Report(
        url=url,
        at=at,
        lookback_s=options.lookback_s,
        pack=f"obspack {pack.version} ({pack.source})",
        backend=backend,
        sources=(*found.reports, *([epps] if epps else [])),
        targets=targets,
        selectors=tuple(checks[leaf] for leaf in sorted(read, key=str)),
        alerts=tuple(alerts),
        dashboards=tuple(dashboards),
        groups=deployment.groups,
        findings=tuple(findings),
        causes=group(findings, found.reports, pack.sources.selectors),
        advice=advise(pack.sources.selectors, findings, probe_off=off),
        elapsed_s=time.monotonic() - started,
        requests=requests,
        phases=phases,
        slowest=slowest,
    )


def _answered_since(api: PrometheusAPI, mark: tuple[int, int]) -> None:
    """A server that answered the first questions and then none of the checks' is not asked at all."""
    answered, failed = api.answers_since(mark)
    if failed and not answered:
        raise DoctorError(
            f"{api.shown} answered the first requests, then none of the next {failed} (the last: "
            f"{api.last_failure}); nothing could be checked"
        )
