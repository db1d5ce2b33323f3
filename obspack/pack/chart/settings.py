"""The alert settings the chart exposes as values, read from the per-alert settings classes of the config."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic.fields import FieldInfo

from obspack.config import (
    Alerts,
    Duration,
    LabelMap,
    Severity,
    Window,
    has_type,
)
from obspack.rules.model import AlertRule

# ---------------------------------------------------------------------------------------------------------
# The alert settings the chart exposes, read from the per-alert settings classes in obspack/config/alerts.py


@dataclass(frozen=True)
class Setting:
    alert: str  # key under `alerts`
    name: str  # pydantic field name (for_)
    key: str  # key in values.yaml and obspack.yaml (for)
    kind: str  # bool, severity, labels, duration, float, or fixed (not a value: baked in from the config)
    info: FieldInfo

    @property
    def value_path(self) -> str:
        return f"$.Values.alerts.{self.alert}.{self.key}"


def _kind(name: str, info: FieldInfo) -> str:
    # enabled, severity and labels are templated structurally (see _alert_block); a new setting of one of
    # those types would need templating of its own, so it is fixed, like regexes and other text.
    if name == "enabled" and info.annotation is bool:
        return "bool"
    if name == "severity" and info.annotation is Severity:
        return "severity"
    if name == "labels" and has_type(info, LabelMap):
        return "labels"
    if has_type(info, Duration) or has_type(info, Window):
        return "duration"
    if info.annotation is float:
        return "float"
    return "fixed"  # baked into the chart from the config it is rendered from


def exposed_settings() -> list[Setting]:
    out = []
    for alert, alert_field in Alerts.model_fields.items():
        for name, info in alert_field.annotation.model_fields.items():  # type: ignore[union-attr]
            out.append(Setting(alert, name, info.alias or name, _kind(name, info), info))
    return out


def zero_durations() -> tuple[str, ...]:
    """The `for` values obspack leaves out of a rule, asked of the rule model itself."""
    probe = {
        "alert": "A",
        "expr": "1",
        "severity": Severity.INFO,
        "summary": "",
        "description": "",
        "runbook": "",
    }
    candidates = ("0ms", "0s", "0m", "0h", "0d", "0w", "0y")
    return tuple(d for d in candidates if "for" not in AlertRule(**probe, for_=d).to_dict())
