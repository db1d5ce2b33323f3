"""How late an alert fires after its condition became visible, on the live stack.

An alert whose path from raw series crosses at most one rule-group boundary fires no later than
`for` + 2 evaluation intervals + 1 scrape interval after the exporters start to show its condition: up
to a scrape until Prometheus has the sample, an evaluation of the group recording what the alert reads,
an evaluation of the alert's group, then `for`. `Lag` compares what Prometheus recorded (the first
`ALERTS{alertstate="firing"}` sample, stamped with its evaluation time) with that budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from obspack import durations
from obspack.demo.stack import Stack


@dataclass(frozen=True)
class Onset:
    """When an alert's condition became visible at the fake exporters (Unix seconds)."""

    alert: str
    pod: str
    at: float


@dataclass(frozen=True)
class Lag:
    alert: str
    pod: str
    seconds: float  # from the onset to the evaluation that fired it
    for_s: float
    budget_s: float  # for + 2 evaluation intervals + 1 scrape interval

    @property
    def on_time(self) -> bool:
        return self.seconds <= self.budget_s


def _seconds(duration: str) -> float:
    return durations.parse_ms(duration) / 1000


def _settings(stack: Stack, alert: str) -> object:
    return getattr(stack.settings.alerts, alert)


def for_seconds(stack: Stack, alert: str) -> float:
    return _seconds(_settings(stack, alert).for_)  # type: ignore[attr-defined]


def window_seconds(stack: Stack, alert: str) -> float:
    """The alert's configured `window`, for conditions that need a whole window to show."""
    return _seconds(_settings(stack, alert).window)  # type: ignore[attr-defined]


def measure(stack: Stack, onset: Onset, timeout: float | None = None) -> Lag:
    """Wait until the alert has fired after its onset, and say how late that was."""
    for_s = for_seconds(stack, onset.alert)
    budget = for_s + 3 * stack.interval_s  # two evaluation intervals and one scrape interval
    what = f"{onset.alert} on {onset.pod} to fire"
    fired = stack.wait_until(
        lambda: stack.first_firing(onset.alert, onset.pod, onset.at), timeout or budget + 30, what, 0.5
    )
    return Lag(onset.alert, onset.pod, round(fired - onset.at, 1), for_s, budget)


def table(lags: list[Lag], interval_s: int) -> str:
    """A Markdown table of the lags, for the test output and docs/benchmarks.md."""
    head = [
        f"| alert | pod | for | lag (s) | budget: for + 3 x {interval_s} s | on time |",
        "|---|---|---|---|---|---|",
    ]
    rows = [
        f"| {lag.alert} | {lag.pod} | {lag.for_s:g} s | {lag.seconds:.1f} | {lag.budget_s:g} | {'yes' if lag.on_time else '**no**'} |"
        for lag in lags
    ]
    return "\n".join(head + rows)
