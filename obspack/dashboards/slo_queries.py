"""Queries of the SLO page. Per model and SLO they read the SLO records (obspack/rules/recording/slo.py),
which sit one or two group hops from the raw series; per pod they read the raw histograms and HTTP
counters with each model's own threshold, which is cheap with the page's variables narrowing them.

Ratios divide by `(events > 0)`, so a model without traffic shows no value rather than NaN.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.dashboards import queries as q
from obspack.rules.alerts.slo import ALERT
from obspack.rules.recording import slo as recording


def _selected(cfg: ObspackConfig) -> str:
    """The selector of the page's selected clusters, namespaces and models."""
    return c.selector(q.scope(cfg, *q.MODEL))


def rec(cfg: ObspackConfig, record: str) -> str:
    """An SLO record narrowed to the selected clusters, namespaces and models."""
    return q.rec(cfg, record, q.MODEL)


def _ratio(window: str, match: str) -> str:
    """The share of bad events over the window, per SLO record that `match` (a `{...}` selector) picks."""
    return f"{c.slo_rate('errors', window)}{match}\n/ ({c.slo_rate('events', window)}{match} > 0)"


def burn(window: str, match: str) -> str:
    """How fast the window spends the budget, per SLO record that `match` (a `{...}` selector) picks: 1
    spends exactly the whole budget in the period. The page and the runbook share it."""
    return f"{_ratio(window, match)}\n/ (1 - {c.SLO_OBJECTIVE}{match})"


def good_share(cfg: ObspackConfig, window: str) -> str:
    """The SLI: the share of good events over the window."""
    return f"1 - {_ratio(window, _selected(cfg))}"


def burn_rate(cfg: ObspackConfig, window: str) -> str:
    """How fast the window spends the budget of the selected models: 1 spends exactly the whole budget in
    the period."""
    return burn(window, _selected(cfg))


def budget_left(cfg: ObspackConfig) -> str:
    """The share of the period's error budget not spent yet (below 0: the objective is missed)."""
    return f"1 - {burn_rate(cfg, slos.period(cfg))}"


def objective(cfg: ObspackConfig) -> str:
    return rec(cfg, c.SLO_OBJECTIVE)


def burn_alerts_firing(cfg: ObspackConfig) -> str:
    """Zero, not "No data", when no budget burns."""
    sel = c.selector(f'alertname="{ALERT}"', 'alertstate="firing"', q.scope(cfg, *q.MODEL))
    return f"count(ALERTS{sel}) or vector(0)"


def pod_bad_share(cfg: ObspackConfig, sli: str) -> str:
    """Per pod (and model): the share of its events that miss the SLO now, from the raw series."""
    return recording.pod_bad_share(cfg, sli, "$__rate_interval", q.scope(cfg, *q.ALL), q.scope(cfg, *q.POD))
