"""Switching an alert off leaves nothing behind: for every alert, render the pack with it disabled (the SLO
burn alert: with the SLOs off) and find its name and runbook slug in no file: no dashboard link or dashed
line, no README row, no inhibition, no runbook page or link to one, no test."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from obspack.config import ObspackConfig
from obspack.dashboards.marks import dashed, lines_note, runbooks, say
from obspack.pack import build
from obspack.render.files import pack_files
from obspack.rules.alerts import all_alerts
from obspack.rules.alerts.slo import ALERT as SLO_ALERT

ALERTS = {a.alert: a.runbook for a in all_alerts(ObspackConfig())}


@cache
def _files(disabled: str = "") -> dict[str, str]:
    if not disabled:
        return pack_files(build(ObspackConfig()))
    off = {"slos": {"enabled": False}} if disabled == SLO_ALERT else {"alerts": {disabled: {"enabled": False}}}
    return pack_files(build(ObspackConfig.model_validate(off)))


def _mentions(files: dict[str, str], alert: str) -> dict[str, int]:
    name, slug = re.compile(rf"\b{alert}\b"), ALERTS[alert]
    found = {path: len(name.findall(text)) + text.count(slug) for path, text in files.items()}
    return {path: n for path, n in found.items() if n}


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_a_disabled_alert_is_named_nowhere_in_the_pack(alert: str) -> None:
    enabled = _mentions(_files(), alert)
    # the control: with the alert on, the pack names it (its page, the README's table, its links)
    assert f"runbooks/{ALERTS[alert]}.md" in enabled and "README.md" in enabled, enabled
    assert _mentions(_files(alert), alert) == {}


def test_the_prefix_cache_panels_lose_their_line_and_links_with_the_alert() -> None:
    """The case that was found: three KV-page panels linked the runbook of a disabled alert, and one drew its
    threshold as a dashed line."""

    def panel(files: dict[str, str], title: str) -> dict[str, Any]:
        page = json.loads(files["grafana/vllm-kv-prefix-cache.json"])
        return next(p for p in page["panels"] if p["title"] == title)

    def style(files: dict[str, str]) -> str:
        return panel(files, "Prefix cache hit rate per pod")["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"]

    def runbook_links(files: dict[str, str]) -> int:
        page = json.loads(files["grafana/vllm-kv-prefix-cache.json"])
        return sum(link["title"] == "Runbook: VLLMPrefixCacheHitRateLow" for p in page["panels"] for link in p.get("links", []))

    assert style(_files()) == "dashed" and runbook_links(_files()) == 3
    assert style(_files("VLLMPrefixCacheHitRateLow")) == "off" and runbook_links(_files("VLLMPrefixCacheHitRateLow")) == 0


def test_the_marks_keep_only_what_the_pack_renders() -> None:
    off = ObspackConfig.model_validate({"alerts": {"VLLMKVCacheUsageHigh": {"enabled": False}}})
    assert [link["title"] for link in runbooks(off, "VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical")] == [
        "Runbook: VLLMKVCacheUsageCritical"
    ]
    assert say(off, "VLLMKVCacheUsageHigh", " (VLLMKVCacheUsageHigh)", " (fallback)") == " (fallback)"
    lines = (("VLLMKVCacheUsageHigh", "90%"), ("VLLMKVCacheUsageCritical", "95%"))
    assert lines_note(off, *lines) == " Dashed line: VLLMKVCacheUsageCritical (95%)."
    assert lines_note(ObspackConfig(), *lines) == (
        " Dashed lines: VLLMKVCacheUsageHigh (90%) and VLLMKVCacheUsageCritical (95%)."
    )
    levels = (("VLLMKVCacheUsageHigh", 0.9, "orange"), ("VLLMKVCacheUsageCritical", 0.95, "red"))
    assert dashed(off, "green", *levels) == {
        "thresholds": [{"color": "green", "value": None}, {"color": "red", "value": 0.95}],
        "draw_thresholds": True,
    }
    none = ObspackConfig.model_validate(
        {"alerts": {"VLLMKVCacheUsageHigh": {"enabled": False}, "VLLMKVCacheUsageCritical": {"enabled": False}}}
    )
    assert dashed(none, "green", *levels)["draw_thresholds"] is False
    with pytest.raises(KeyError):
        say(off, "VLLMNoSuchAlert", "x")
