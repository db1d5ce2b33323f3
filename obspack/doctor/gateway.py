"""The inference pool's endpoint picker (EPP), as this Prometheus sees it (docs/gateway.md):

- each EPP found (cluster, namespace, job), its era from the names it emits and its build: a line of the
  sources report ("inference gateway"), or that there is none (right on a fleet without an InferencePool);
- an EPP that emits only GAIE's pre-v1.1 `inference_model_*` names, which no current EPP emits (note);
- pools whose endpoints (per-endpoint queue series) have no vLLM series in Prometheus: the engines behind
  them are not watched by obspack (problem);
- EPP scrape targets refused with 401 or 403: the EPP asks for a bearer token by default (problem, with
  the fix).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from obspack import conventions as c
from obspack.catalogue import gateway as g
from obspack.catalogue.vllm import HAS_MODEL, NUM_REQUESTS_RUNNING
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.backends import Backend
from obspack.doctor.findings import Finding, Topic, counted, note, problem, unchecked
from obspack.doctor.sources import SourceReport
from obspack.pack import Pack

# Names whose presence tells the era, newest first; the identity series say there is an EPP at all.
ERA_NAMES = (g.INFO.canonical, g.OBJECTIVE_REQUESTS, g.MODEL_REQUESTS, *g.IDENTITY)
_REFUSED = re.compile(r"\b(401|403)\b")
TOKEN_FIX = (
    "the EPP checks a bearer token on /metrics by default: give its ServiceMonitor `authorization.credentials` "
    "from a service-account token Secret whose ServiceAccount may `get` the non-resource URL /metrics "
    "(docs/gateway.md), or start the EPP with --metrics-endpoint-auth=false"
)


def era(names: Iterable[str]) -> str:
    """The era of an EPP from the metric names it emits (ERAS in the catalogue); GAIE when only the pool
    gauges and build info tell it is one."""
    found = set(names)
    for text, name in g.ERAS:
        if name in found:
            return text
    return "GAIE (legacy names; no request counter seen to tell the version)"


def epps(rows: Iterable[Mapping[str, str]], cluster: str) -> dict[tuple[str, str, str], dict[str, set[str]]]:
    """(cluster, namespace, job) -> the names and build refs seen, from `group by` rows."""
    out: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    for row in rows:
        key = (row.get(cluster, ""), row.get("namespace", ""), row.get("job", ""))
        seen = out.setdefault(key, {"names": set(), "builds": set()})
        seen["names"].add(row.get("__name__", ""))
        if row.get("build_ref"):
            seen["builds"].add(row["build_ref"])
    return out


TITLE = "inference gateway"


def era_report(found: Mapping[tuple[str, str, str], Mapping[str, set[str]]]) -> tuple[SourceReport, list[Finding]]:
    """The sources report's line about the EPPs, and a note per EPP of an era no current EPP belongs to."""
    if not found:
        return SourceReport(TITLE, False, "no endpoint picker (EPP) series (none needed without an InferencePool; "
                            "otherwise scrape it: docs/gateway.md)"), []
    epps: dict[str, str] = {}
    notes = []
    for (cluster, namespace, job), seen in sorted(found.items()):
        where = f"EPP {namespace}/{job}" + (f" ({cluster})" if cluster else "")
        builds = ", ".join(sorted(seen["builds"])) or "no build info"
        epps[where] = f"{era(seen['names'])}, build {builds}"
        if era(seen["names"]) == g.ERAS[-1][0]:
            notes.append(note(Topic.SOURCE, where, f"{epps[where]}; GAIE v1.1 renamed inference_model_* to "
                              "inference_objective_*, which the gateway page reads: upgrade the EPP"))
    eras = sorted({text.split(",")[0] for text in epps.values()})
    summary = f"{counted(len(epps), 'EPP')}: {'; '.join(eras)}"
    return SourceReport(TITLE, True, summary, {"epps": epps}), notes


def uncovered_findings(rows: Iterable[Mapping[str, str]], cluster: str) -> list[Finding]:
    """One problem per pool with endpoints that have no vLLM series (`rows`: cluster, namespace, name, pod)."""
    pools: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        pools.setdefault((row.get(cluster, ""), row.get("namespace", ""), row.get(g.POOL, "")), []).append(row.get("pod", ""))
    return [
        problem(
            Topic.SOURCE,
            f"pool {namespace}/{pool}" + (f" ({cluster_value})" if cluster_value else ""),
            f"{counted(len(pods), 'endpoint')} the picker routes to without vLLM series in Prometheus "
            f"({', '.join(sorted(pods)[:5])}): obspack does not watch the engines behind this pool",
            action=f"scrape the pool's vLLM pods (a PodMonitor on its selector: kubectl -n {namespace} get inferencepool "
            f"{pool} -o jsonpath='{{.spec.selector}}'), or widen selectors.vllm",
        )
        for (cluster_value, namespace, pool), pods in sorted(pools.items())
    ]


def refused_findings(targets: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """EPP targets (job names the EPP as a word) whose scrapes are refused with 401 or 403."""
    jobs: dict[str, list[str]] = {}
    for target in targets:
        labels = target.get("labels") or {}
        job = str(labels.get("job") or target.get("scrapePool") or "")
        error = str(target.get("lastError") or "")
        if re.fullmatch(g.JOB_HINT, job) and target.get("health") != "up" and _REFUSED.search(error):
            jobs.setdefault(job, []).append(error)
    return [
        problem(Topic.SOURCE, f"job {job}", f"{counted(len(errors), 'EPP target')} refused: {errors[0]}", action=TOKEN_FIX)
        for job, errors in sorted(jobs.items())
    ]


def _query(api: PrometheusAPI, expr: str, at: float) -> list[dict[str, str]] | None:
    try:
        return [dict(r.get("metric") or {}) for r in api.query(expr, at) if isinstance(r, dict)]
    except QueryFailed:
        return None


def gateway_survey(
    api: PrometheusAPI, pack: Pack, backend: Backend, at: float, lookback_s: int
) -> tuple[SourceReport | None, list[Finding]]:
    """The sources report's line about the EPPs (None when they could not be asked) and the findings."""
    selectors = pack.sources.selectors
    cluster = pack.cluster_label
    epp = selectors.get("epp", "")
    lookback = f"{max(lookback_s, 60)}s"
    names = "|".join(ERA_NAMES)
    matchers = c.selector(f'__name__=~"{names}"', epp)
    seen = _query(api, f"group by (__name__, {cluster}, namespace, job, build_ref) (last_over_time({matchers}[{lookback}]))", at)
    endpoint = ", ".join((cluster, "namespace", g.POOL, "pod"))
    parts = [
        f'label_replace(last_over_time({m}{c.selector(epp)}[5m]), "pod", "$1", "{label}", "(.*?)(-rank-[0-9]+)?")'
        for m, label in ((g.ENDPOINT_QUEUE.canonical, g.ENDPOINT_LABEL.canonical),
                         (g.ENDPOINT_QUEUE.legacy, g.ENDPOINT_LABEL.legacy))
    ]
    vllm = f"{NUM_REQUESTS_RUNNING}{c.selector(selectors.get('vllm', ''), HAS_MODEL)}"
    pod = ", ".join((cluster, "namespace", "pod"))
    bare = _query(api, f"group by ({endpoint}) ({parts[0]} or {parts[1]})\nunless on ({pod})\n"
                  f"group by ({pod}) (last_over_time({vllm}[5m]))", at)
    refused = refused_findings(backend.active_targets)
    if seen is None or bare is None:
        return None, [unchecked(Topic.SOURCE, TITLE, "the EPP's series could not be asked"), *refused]
    report, notes = era_report(epps(seen, cluster))
    return report, [*notes, *uncovered_findings(bare, cluster), *refused]
