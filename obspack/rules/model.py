"""Frozen records of rules as obspack builds them; writers turn these into YAML."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from obspack.config import Severity


def tidy(expr: str) -> str:
    """Dedent a multi-line PromQL block and strip blank edges, so rendered YAML reads cleanly."""
    return textwrap.dedent(expr).strip("\n").rstrip()


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"record": self.record, "expr": tidy(self.expr)}
        if self.labels:
            out["labels"] = dict(sorted(self.labels))
        return out


@dataclass(frozen=True)
class AlertRule:
    """One alert as it reads in review: expr, for, severity, summary, description, runbook slug."""

    alert: str
    expr: str
    for_: str
    severity: Severity
    summary: str
    description: str
    runbook: str
    triage: str = ""
    dashboard: str = ""  # the page its dashboard_url opens (a conventions.DASHBOARDS name); empty: triage
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = field(default=())

    def with_links(self, runbook_url: str, dashboard_url: str) -> AlertRule:
        extra = (("runbook_url", runbook_url),) + ((("dashboard_url", dashboard_url),) if dashboard_url else ())
        return AlertRule(**{**self.__dict__, "annotations": self.annotations + extra})

    def to_dict(self) -> dict[str, object]:
        annotations = {"summary": self.summary, "description": self.description, **dict(self.annotations)}
        if self.triage:
            annotations["triage"] = self.triage
        labels = {**dict(self.labels), "severity": self.severity.value}
        out: dict[str, object] = {"alert": self.alert, "expr": tidy(self.expr)}
        if self.for_ not in ("0s", "0m", "0h"):
            out["for"] = self.for_
        out["labels"] = dict(sorted(labels.items()))
        out["annotations"] = dict(sorted(annotations.items()))
        return out


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]
    interval: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name}
        if self.interval:
            out["interval"] = self.interval
        out["rules"] = [r.to_dict() for r in self.rules]
        return out
