"""VLLMErrorBudgetBurn: a model's SLO spends its error budget too fast (multi-window, multi-burn-rate).

One rule per window pair of obspack/slos.py, all named VLLMErrorBudgetBurn: two that page (critical) and
two that open a ticket (warning), told apart by their `long` and `short` labels. Each reads the base-window
records of obspack/rules/recording/slo.py, which are made from raw series, and averages them over its long
window itself: one group boundary from the raw series, whatever the window. The series
carry the cluster label, namespace, model_name and slo; the value is the burn rate over the short window
(1 = the pace that spends exactly the whole budget in the period).

A pair fires only when the long window holds at least the model's `min_requests` requests (by default
1/(1 - objective): with fewer, a single bad request is more than the whole budget of the window). The
count is exact on Prometheus 3; Prometheus 2's windows hold one sample more, which makes it up to one
base-window sample short (about 15% at a 1m evaluation interval): the guard errs on the quiet side.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.rules.model import AlertRule

ALERT = "VLLMErrorBudgetBurn"
RUNBOOK = "vllm-error-budget-burn"


def burn_rate(cfg: ObspackConfig, window: str) -> str:
    """Bad events over all events in the window, in units of the error budget (1 - objective). Longer
    windows average the base-window rates: summed errors over summed events, weighted by traffic."""
    base = slos.base_window(cfg)

    def rate(metric: str) -> str:
        record = c.slo_rate(metric, base)
        return record if window == base else f"avg_over_time({record}[{window}])"

    return f"{rate('errors')}\n/ {rate('events')}\n/ (1 - {c.SLO_OBJECTIVE})"


def requests_in(cfg: ObspackConfig, window: str) -> str:
    """The model's requests in the window: its base-window rates summed over the window, times the
    evaluation interval (the base window over the samples it holds). Unlike mean rate x window, this
    counts only what happened while a young record (a new model, new rules) existed."""
    base = slos.base_window(cfg)
    rate = c.slo_rate("requests", base)
    return f"sum_over_time({rate}[{window}]) * {slos.seconds(base)} / count_over_time({rate}[{base}])"


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def error_budget_burn(cfg: ObspackConfig, pair: slos.WindowPair) -> AlertRule:
    factor = f"{pair.factor:g}"
    return AlertRule(
        alert=ALERT,
        expr=(
            f"(\n  {_indent(burn_rate(cfg, pair.short))}\n) > {factor}\n"
            f"and\n(\n  {_indent(burn_rate(cfg, pair.long))}\n) > {factor}\n"
            f"and\n{requests_in(cfg, pair.long)}\n>= {c.SLO_MIN_REQUESTS}"
        ),
        for_=pair.for_,
        severity=pair.severity,
        labels=(("long", pair.long), ("short", pair.short)),
        summary="vLLM users get slow or failed responses: a model spends its error budget too fast.",
        description=(
            "{{ $labels.namespace }}/{{ $labels.model_name }}: the {{ $labels.slo }} SLO spent its error "
            "budget {{ $value | humanize }} times as fast as the period allows over the last "
            f"{pair.short}, and more than {factor} times over {pair.long}."
        ),
        runbook=RUNBOOK,
        triage="kubectl -n {{ $labels.namespace }} get pods -o wide",
        dashboard=c.SLO_DASHBOARD,
    )


def page_fast(cfg: ObspackConfig) -> AlertRule:
    return error_budget_burn(cfg, slos.window_pairs(cfg)[0])


def page_slow(cfg: ObspackConfig) -> AlertRule:
    return error_budget_burn(cfg, slos.window_pairs(cfg)[1])


def ticket_fast(cfg: ObspackConfig) -> AlertRule:
    return error_budget_burn(cfg, slos.window_pairs(cfg)[2])


def ticket_slow(cfg: ObspackConfig) -> AlertRule:
    return error_budget_burn(cfg, slos.window_pairs(cfg)[3])


ALERTS = (page_fast, page_slow, ticket_fast, ticket_slow)
