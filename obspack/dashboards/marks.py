"""What a panel shows of an alert: a link to its runbook, its threshold as a dashed line, a sentence of the
description that names it. Each comes only when the config renders that alert, so switching an alert off
leaves no dead link, no line and no advice about it on any dashboard (tests/dashboards/test_marks.py)."""

from __future__ import annotations

from obspack.config import ObspackConfig
from obspack.dashboards import panels as p
from obspack.memo import per_config
from obspack.rules.alerts import all_alerts, enabled, runbook_url


@per_config
def _slugs(cfg: ObspackConfig) -> dict[str, str]:
    return {a.alert: a.runbook for a in all_alerts(cfg)}


def on(cfg: ObspackConfig, alert: str) -> bool:
    """Whether the pack renders `alert` (an unknown name is a bug in the dashboard: KeyError)."""
    _slugs(cfg)[alert]
    return enabled(cfg, alert)


def runbooks(cfg: ObspackConfig, *alerts: str) -> list[dict[str, object]]:
    """Panel links to the runbooks of the alerts the pack renders (the URL their runbook_url carries)."""
    return [p.link(f"Runbook: {a}", runbook_url(cfg, _slugs(cfg)[a])) for a in alerts if on(cfg, a)]


def say(cfg: ObspackConfig, alert: str, text: str, otherwise: str = "") -> str:
    """`text` (which names the alert) when the pack renders it, else `otherwise`."""
    return text if on(cfg, alert) else otherwise


def dashed(cfg: ObspackConfig, base: str, *levels: tuple[str, float, str]) -> dict[str, object]:
    """A time series' thresholds drawn as dashed lines: `base` colour, then one step per (alert, value,
    colour) that the pack renders; no line at all when it renders none of them."""
    kept = sorted((value, colour) for alert, value, colour in levels if on(cfg, alert))
    return {"thresholds": p.steps(base, *kept), "draw_thresholds": bool(kept)}


def lines_note(cfg: ObspackConfig, *lines: tuple[str, str]) -> str:
    """The sentence that names a panel's dashed lines, (alert, value as shown), of the alerts the pack
    renders: " Dashed line: VLLMGPUMemoryNearFull (97%)." (with a leading space), or nothing."""
    kept = [f"{alert} ({value})" for alert, value in lines if on(cfg, alert)]
    if not kept:
        return ""
    names = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]
    return f" Dashed line{'s' if len(kept) > 1 else ''}: {names}."
