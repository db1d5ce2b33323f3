"""vLLM / SLOs: per model, each SLO now against its objective, the error budget left this period, the burn
rate per window, and the pods behind a burn (rows open the triage page)."""

from __future__ import annotations

from grafanalib.core import Dashboard, Panel

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import slo_queries as sq
from obspack.dashboards.defaults import dashboard, triage_from_row
from obspack.rules.alerts.slo import ALERT

NAME = c.SLO_DASHBOARD
LEGEND = "{{slo}} {{namespace}} {{model_name}}"
BURN = "suffix:x"  # burn rates: multiples of the pace that spends exactly the whole budget
# Budget left: red once spent (below 0), orange in its last quarter.
BUDGET_STEPS = p.below(0, 0.25)
POD_COLUMNS = {
    "time_to_first_token": "Time to first token: slow",
    "inter_token_latency": "Inter-token latency: slow gaps",
    "availability": "Requests failed (5xx)",
}


def _burn_panel(
    cfg: ObspackConfig, title: str, pairs: tuple[slos.WindowPair, ...], what: str
) -> p.TimeSeries:
    factors = sorted(pair.factor for pair in pairs)
    return p.timeseries(
        title,
        *(p.target(sq.burn_rate(cfg, pair.long), f"{pair.long} {LEGEND}") for pair in pairs),
        unit=BURN,
        description=(
            f"How fast each model spends its error budget over the {what} windows (1x spends exactly the "
            f"whole budget in {cfg.slos.period}). Dashed lines: the factors that fire {ALERT} "
            f"({', '.join(f'{f:g}x' for f in factors)}) when the short window agrees. A model above a line "
            "burns; the pod table below shows which pods serve its slow or failed requests."
        ),
        thresholds=p.above(factors[0], factors[-1]),
        draw_thresholds=True,
        links=marks.runbooks(cfg, ALERT),
    )


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    pairs = slos.window_pairs(cfg)
    base, period = slos.base_window(cfg), slos.period(cfg)
    runbook = marks.runbooks(cfg, ALERT)
    enabled = slos.enabled_slis(cfg)
    panels: list[Panel] = [
        p.stat(
            "Error budget burns firing",
            p.target(sq.burn_alerts_firing(cfg), "firing"),
            unit=p.NONE,
            description=(
                f"{ALERT} alerts firing now in the selection, pages and tickets. Above zero: find the model "
                "in the table below, then the pods behind it at the bottom of the page, and follow the runbook."
            ),
            thresholds=p.steps("green", (1, "red")),
            links=runbook,
            w=12,
        ),
        p.stat(
            "Lowest error budget left",
            p.target(f"min({sq.budget_left(cfg)})", "lowest"),
            unit=p.PERCENT_UNIT,
            description=(
                f"The error budget left this period ({period}) of the model and SLO that spent the most. Below "
                "zero the objective is missed for the period: slow down risky changes to that model until "
                "the budget recovers."
            ),
            thresholds=BUDGET_STEPS,
            decimals=1,
            w=12,
        ),
        p.table(
            "SLOs per model: objective, SLI and error budget",
            p.target(sq.objective(cfg), instant=True, table=True),
            p.target(sq.good_share(cfg, base), instant=True, table=True),
            p.target(sq.good_share(cfg, period), instant=True, table=True),
            p.target(sq.budget_left(cfg), instant=True, table=True),
            *(p.target(sq.burn_rate(cfg, pair.long), instant=True, table=True) for pair in pairs),
            description=(
                "One row per model and SLO. The SLI is the share of good events (requests, or token gaps for "
                "inter-token latency) over the last "
                f"{base} and over the period; the budget left is the share of the period's allowed bad events "
                "not spent yet. Burn rates above the alert factors mean the budget goes too fast: look at the "
                "pods of that model below."
            ),
            columns=[
                p.column("A", "Objective", p.PERCENT_UNIT),
                p.column("B", f"SLI ({base})", p.PERCENT_UNIT),
                p.column("C", f"SLI ({period})", p.PERCENT_UNIT),
                p.column("D", "Budget left", p.PERCENT_UNIT, BUDGET_STEPS),
                *(
                    p.column(ref, f"Burn {pair.long}", BURN, p.above(None, pair.factor))
                    for ref, pair in zip("EFGH", pairs)
                ),
            ],
            links=runbook,
        ),
        p.section("Over time"),
        p.timeseries(
            f"SLI ({base}) and objective",
            p.target(sq.good_share(cfg, base), LEGEND),
            p.target(sq.objective(cfg), f"objective {LEGEND}"),
            unit=p.PERCENT_UNIT,
            description=(
                f"The share of good events per model and SLO over {base}, with each objective as its own line. "
                "Dips below the objective spend the budget; a dip that lasts is what the burn-rate alert "
                "catches. Match the time of a dip to deploys, traffic and the fleet page."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.timeseries(
            f"Error budget left ({period})",
            p.target(sq.budget_left(cfg), LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                f"The share of the error budget of the last {period} not yet spent, per model and SLO. A line "
                "falling fast is a burn; below zero the objective is missed for the period. It needs "
                f"{period} of Prometheus retention to cover the whole period."
            ),
            thresholds=BUDGET_STEPS,
            draw_thresholds=True,
            soft_max=1,
        ),
        _burn_panel(cfg, "Burn rate: page windows", pairs[:2], "page"),
        _burn_panel(cfg, "Burn rate: ticket windows", pairs[2:], "ticket"),
    ]
    if enabled:
        panels += [
            p.section("Pods behind a burn"),
            p.table(
                "Pods: slow and failed shares now",
                *(p.target(sq.pod_bad_share(cfg, sli), instant=True, table=True) for sli in enabled),
                description=(
                    "One row per vLLM pod of the selected models: the share of its requests (or token gaps) "
                    "that miss each SLO now, with the model's own threshold. A burn on one or two pods points "
                    "to those pods (memory, KV cache, a bad GPU): click the row to open the triage page. A burn "
                    "spread over every pod is load or a bad rollout."
                ),
                columns=[
                    p.column(ref, POD_COLUMNS[sli], p.PERCENT_UNIT, p.above(None, 0.05))
                    for ref, sli in zip("ABC", enabled)
                ],
                row_links=[triage_from_row(cfg)],
                h=10,
            ),
        ]
    return dashboard(
        cfg,
        NAME,
        description="Per-model SLOs: time to first token, inter-token latency and availability against "
        "their objectives, error budgets and burn rates, and the pods behind a burn.",
        variables=variables.fleet(cfg),
        panels=panels,
    )
