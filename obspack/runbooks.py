"""Runbooks: one Markdown page per alert, rendered from templates/runbooks/<slug>.md.j2."""

from __future__ import annotations

from obspack.config import ObspackConfig
from obspack.rules.alerts import all_alerts
from obspack.templating import render_template


def render_runbooks(cfg: ObspackConfig) -> dict[str, str]:
    alerts = all_alerts(cfg)
    return {a.runbook: render_template("runbooks/generic.md.j2", alert=a, cfg=cfg) for a in alerts}
