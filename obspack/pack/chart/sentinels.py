"""Sentinel values: a config in which every setting the chart exposes holds a unique value, and the Helm
expression that replaces each in the rendered rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from obspack import slos
from obspack.config import (
    Alerts,
    ObspackConfig,
    Severity,
)
from obspack.pack.chart.settings import Setting, exposed_settings
from obspack.rules.recording.slo import le_matcher

# ---------------------------------------------------------------------------------------------------------
# Sentinel rendering


@dataclass
class Sentinels:
    """One set of sentinel values and, for each, the Helm expression that replaces it in the text."""

    index: int  # 0 or 1: two sets, to prove the templates do not depend on which one was used
    replace: dict[str, str] = field(default_factory=dict)  # sentinel text -> Helm expression
    for_lines: dict[str, str] = field(default_factory=dict)  # `for` sentinel -> alert
    interval: str = ""
    runbook_base: str = ""
    grafana_url: str = ""

    LEFTOVER = re.compile(r"0\.[67]\d{3}39|\b9\d{4}s\b|obspack-sentinel|__OBSPACK_")

    @classmethod
    def make(cls, index: int) -> Sentinels:
        s = cls(index=index)
        s.interval = f"{99000 + index}s"
        s.runbook_base = f"https://runbooks.obspack-sentinel-{index}.invalid/base"
        s.grafana_url = f"https://grafana.obspack-sentinel-{index}.invalid"
        s.replace[f"{s.runbook_base}/"] = "{{ $runbookBase }}"
        s.replace[s.grafana_url] = "{{ $grafanaURL }}"
        return s

    def value(self, i: int, setting: Setting) -> Any:
        """The sentinel for the i-th setting (i < 1000); records its replacement."""
        if setting.kind == "duration":
            text = f"{91000 + 1000 * self.index + i}s"
            self.replace[text] = f"{{{{ {setting.value_path} }}}}"
            if setting.key == "for":
                self.for_lines[text] = setting.alert
            return text
        if setting.kind == "float":
            text = f"0.{7 - self.index}{i:03d}3917"
            number = float(text)
            short = format(number, "g")
            assert str(number) == text and short != text
            self.replace[text] = f'{{{{ include "obspack.float" {setting.value_path} }}}}'
            self.replace[short] = f'{{{{ include "obspack.floatG" {setting.value_path} }}}}'
            return number
        raise AssertionError(setting.kind)

    def config(self, cfg: ObspackConfig) -> ObspackConfig:
        """`cfg` with every exposed setting replaced by a sentinel and every alert enabled."""
        updates: dict[str, Any] = {}
        settings = exposed_settings()
        for alert in Alerts.model_fields:
            current = getattr(cfg.alerts, alert)
            update: dict[str, Any] = {
                "enabled": True,
                "severity": (Severity.WARNING, Severity.CRITICAL)[self.index],
                "labels": ({}, {"obspack_sentinel_label": "b"})[self.index],
            }
            for i, setting in enumerate(settings, start=1):
                if setting.alert == alert and setting.kind in ("duration", "float"):
                    update[setting.name] = self.value(i, setting)
            updates[alert] = current.model_copy(update=update)
        return self.slo_config(
            cfg.model_copy(
                update={
                    "alerts": cfg.alerts.model_copy(update=updates),
                    "common_labels": ({}, {"obspack_sentinel_common": "b"})[self.index],
                    "rule_interval": self.interval,
                    "runbook_base_url": self.runbook_base,
                    "grafana": cfg.grafana.model_copy(update={"url": self.grafana_url}),
                }
            )
        )

    def slo_value(self, i: int, sli: str, key: str) -> float:
        """The sentinel of an SLO's objective or threshold; records its replacement."""
        path = f"$.Values.slos.{sli}.{key}"
        number = float(f"0.{7 - self.index}{900 + i:03d}3917")
        if key == "threshold":
            self.replace[le_matcher(number)] = f'{{{{ include "obspack.le" {path} }}}}'
        else:
            self.replace[repr(number)] = f'{{{{ include "obspack.float" {path} }}}}'
        return number

    def slo_config(self, cfg: ObspackConfig) -> ObspackConfig:
        """`cfg` with every SLO on and its objectives and thresholds replaced by sentinels."""
        updates: dict[str, Any] = {"enabled": True, "labels": ({}, {"obspack_sentinel_slo": "b"})[self.index]}
        for i, sli in enumerate(slos.SLIS):
            current = getattr(cfg.slos, sli)
            update: dict[str, Any] = {"enabled": True, "objective": self.slo_value(2 * i, sli, "objective")}
            if "threshold" in type(current).model_fields:
                update["threshold"] = self.slo_value(2 * i + 1, sli, "threshold")
            updates[sli] = current.model_copy(update=update)
        return cfg.model_copy(update={"slos": cfg.slos.model_copy(update=updates)})

    def substitute(self, text: str) -> str:
        for sentinel in sorted(self.replace, key=len, reverse=True):
            text = text.replace(sentinel, self.replace[sentinel])
        return text
