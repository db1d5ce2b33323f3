"""Which Prometheus-compatible backend answers, and which of the doctor's checks it allows.

Every backend answers queries, series and label lookups. They differ in the rest:

| backend | rules | targets | status/tsdb |
|---|---|---|---|
| Prometheus | yes | yes | yes (head block) |
| Thanos Query | yes, from its rule stores | yes, from its target stores | no |
| Mimir | yes (its ruler, per tenant) | no | no |
| VictoriaMetrics | only proxied to vmalert (-vmalert.proxyURL) | only its own -promscrape targets | yes |

The kind is told from the answers (Mimir names itself in buildinfo, VictoriaMetrics answers tsdb status in
its own shape and has a vmalert proxy path, Thanos Query has /api/v1/stores); each capability is probed,
never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from obspack.doctor.api import DoctorError, PrometheusAPI, QueryFailed

KINDS = ("prometheus", "thanos", "mimir", "victoriametrics")
TITLES = {
    "prometheus": "Prometheus",
    "thanos": "Thanos Query",
    "mimir": "Mimir",
    "victoriametrics": "VictoriaMetrics",
}


@dataclass(frozen=True)
class Capability:
    available: bool
    detail: str = ""
    unasked: bool = False  # not available because the server failed to answer, not because it lacks it


@dataclass(frozen=True)
class Backend:
    kind: str
    version: str
    rules: Capability
    targets: Capability
    tsdb: Capability
    rule_groups: tuple[dict[str, Any], ...] = ()  # /api/v1/rules groups, when available
    active_targets: tuple[dict[str, Any], ...] = ()
    tsdb_status: dict[str, Any] | None = None

    @property
    def head_series(self) -> int | None:
        """Series in the head block (Prometheus) or in the whole store (VictoriaMetrics), from status/tsdb."""
        status = self.tsdb_status or {}
        count = (status.get("headStats") or {}).get("numSeries", status.get("totalSeries"))
        return int(count) if count is not None else None

    @property
    def title(self) -> str:
        return TITLES.get(self.kind, self.kind) + (f" {self.version}" if self.version else "")


def connect(api: PrometheusAPI, at: float) -> None:
    """One query any backend answers; its failure means the server cannot be asked."""
    try:
        api.query("vector(1)", at)
    except QueryFailed as e:
        raise DoctorError(f"{api.shown} did not answer a query: {e}{not_found_hint(api.shown, e.status)}") from None


def not_found_hint(url: str, status: int | None) -> str:
    """What to change in --prometheus when the query API is not where it points (HTTP 404): the API's own
    path given with the URL, or a path prefix that is missing or wrong."""
    if status != 404:
        return ""
    bare = url.split("?", 1)[0].rstrip("/")
    for tail in ("/api/v1/query", "/api/v1"):
        if bare.endswith(tail):
            return f"; give --prometheus without {tail}, which obspack adds itself: {bare.removesuffix(tail) or '/'}"
    return (
        "; check the URL's path prefix (none for Prometheus and Thanos, /prometheus for Mimir, "
        "/select/<tenant>/prometheus for VictoriaMetrics cluster)"
    )


def detect(api: PrometheusAPI, kind: str = "auto") -> Backend:
    probes = {
        "status/buildinfo": "buildinfo",
        "status/tsdb": "tsdb",
        "stores": "stores",
        "/vmalert/api/v1/rules": "rules",
        "rules": "rules",
        "targets": "targets",
    }
    answers = api.map(lambda path: api.get(path, shape=probes[path]), probes)
    buildinfo, tsdb, stores, vmalert, rules, targets = answers
    info = buildinfo if isinstance(buildinfo, dict) else {}
    if kind == "auto":
        kind = _kind(info, tsdb, stores, vmalert)
    version = str(info.get("version", "")) if kind != "victoriametrics" else ""
    rules_capability = _rules(kind, rules, vmalert)
    return Backend(
        kind=kind,
        version=version,
        rules=rules_capability,
        targets=_targets(kind, targets),
        tsdb=Capability(True) if isinstance(tsdb, dict) else _absent(tsdb, "status/tsdb"),
        rule_groups=tuple(rules["groups"]) if rules_capability.available else (),
        active_targets=tuple(targets.get("activeTargets") or ()) if isinstance(targets, dict) else (),
        tsdb_status=tsdb if isinstance(tsdb, dict) else None,
    )


def _kind(info: dict[str, Any], tsdb: object, stores: object, vmalert: object) -> str:
    application = str(info.get("application", "")).lower()
    if "mimir" in application or "cortex" in application:
        return "mimir"
    if isinstance(tsdb, dict) and "totalSeries" in tsdb:
        return "victoriametrics"
    if isinstance(vmalert, QueryFailed) and "vmalert.proxyURL" in str(vmalert):
        return "victoriametrics"
    if isinstance(stores, dict):
        return "thanos"
    return "prometheus"


def _absent(failure: object, path: str) -> Capability:
    """Why a capability is not there: the server does not serve it, or it failed to answer."""
    if isinstance(failure, QueryFailed) and not failure.answered:
        return Capability(False, f"{path} could not be asked ({failure})", unasked=True)
    return Capability(
        False, f"{path} not served" + (f" ({failure})" if isinstance(failure, QueryFailed) else "")
    )


def _rules(kind: str, rules: object, vmalert: object) -> Capability:
    if kind == "victoriametrics" and not isinstance(vmalert, dict):
        if isinstance(vmalert, QueryFailed) and "vmalert.proxyURL" not in str(vmalert):
            return Capability(False, f"its vmalert proxy fails: {vmalert}", unasked=not vmalert.answered)
        return Capability(
            False, "VictoriaMetrics serves rules only when proxied to vmalert (-vmalert.proxyURL)"
        )
    if isinstance(rules, dict) and isinstance(rules.get("groups"), list):
        return Capability(True)
    return _absent(rules, "rules")


def _targets(kind: str, targets: object) -> Capability:
    if not isinstance(targets, dict):
        return _absent(targets, "targets")
    if kind == "victoriametrics" and not targets.get("activeTargets"):
        return Capability(False, "VictoriaMetrics lists only its own -promscrape targets, and it has none")
    return Capability(True)
