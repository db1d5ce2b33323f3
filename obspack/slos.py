"""What the config's `slos:` section means, as data that the rules, the SLO page, the unit tests and the chart
share: the SLIs, the settings each model gets, and the alert windows.

- Three SLIs per model: time to first token, inter-token latency and availability (docs/slos.md).
- Settings: `branches(cfg, sli)` splits the models into the `slos.models` entries (first match wins) and
  the rest, each with its objective, latency threshold and low-traffic guard. Each branch becomes its own
  recording rules, so every model gets the settings of exactly one branch.
- Windows: the SRE workbook's four pairs of a long and a short window. A pair fires when both windows burn
  the budget faster than `factor` times the rate that would spend exactly the whole budget in the period;
  factor = share of the budget spent in the long window x period / long window, so 14.4, 6, 3 and 1 over
  30 days (13.44, 5.6, 2.8 and 0.93 over 28). `speedup` divides every duration for demos and live tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from obspack.config import ObspackConfig, Severity, promql_string
from obspack.durations import format_s, parse_ms
from obspack.memo import per_config

SLIS = ("time_to_first_token", "inter_token_latency", "availability")
TITLES = {
    "time_to_first_token": "Time to first token",
    "inter_token_latency": "Inter-token latency",
    "availability": "Availability",
}
MINUTE, HOUR, DAY = 60, 3600, 86400


def seconds(text: str) -> int:
    """Whole seconds of a Prometheus duration."""
    return parse_ms(text) // 1000


@dataclass(frozen=True)
class Branch:
    """The models one settings entry covers (model_name matchers) and what they get."""

    matchers: tuple[str, ...]
    objective: float
    threshold: float | None  # seconds, for the latency SLIs
    min_requests: float | None  # None: 1 / (1 - objective)


@per_config
def branches(cfg: ObspackConfig, sli: str) -> tuple[Branch, ...]:
    """The rule branches of one SLI: one per `slos.models` entry that keeps it enabled, then the rest."""
    slos = cfg.slos
    base = getattr(slos, sli)
    out = []
    earlier: list[str] = []
    for entry in slos.models:
        mine = getattr(entry, sli)
        enabled = base.enabled if mine.enabled is None else mine.enabled
        if enabled:
            out.append(
                Branch(
                    matchers=(f"model_name=~{promql_string(entry.model_regex)}", *_none_of(earlier)),
                    objective=base.objective if mine.objective is None else mine.objective,
                    threshold=_threshold(base, getattr(mine, "threshold", None)),
                    min_requests=slos.min_requests if entry.min_requests is None else entry.min_requests,
                )
            )
        earlier.append(entry.model_regex)
    if base.enabled:
        out.append(Branch(_none_of(earlier), base.objective, _threshold(base, None), slos.min_requests))
    return tuple(out)


def _none_of(regexes: list[str]) -> tuple[str, ...]:
    """One matcher refusing every model the earlier entries take: `model_name!~"(?:a)|(?:b)"` (Prometheus
    anchors the whole alternation, so it refuses exactly what each regex matches). A regex's leading flags
    become the flags of its own group: `(?i)qwen.*` is `(?i:qwen.*)`."""
    if not regexes:
        return ()
    if len(regexes) == 1:
        return (f"model_name!~{promql_string(regexes[0])}",)
    return (f"model_name!~{promql_string('|'.join(map(_grouped, regexes)))}",)


def _grouped(regex: str) -> str:
    flags = re.match(r"\(\?([a-zA-Z]+)\)", regex)
    return f"(?{flags.group(1)}:{regex[flags.end():]})" if flags else f"(?:{regex})"


def _threshold(base: object, override: float | None) -> float | None:
    return override if override is not None else getattr(base, "threshold", None)


@per_config
def enabled_slis(cfg: ObspackConfig) -> tuple[str, ...]:
    """The SLIs that have at least one branch (none when slos.enabled is false)."""
    if not cfg.slos.enabled:
        return ()
    return tuple(sli for sli in SLIS if branches(cfg, sli))


@dataclass(frozen=True)
class WindowPair:
    """One burn-rate alert: both windows must burn faster than `factor`, held for `for_`."""

    severity: Severity
    long: str
    short: str
    for_: str
    factor: float


# (severity, long, short, for, share of the period's budget spent in the long window at the threshold)
_PAIRS = (
    (Severity.CRITICAL, HOUR, 5 * MINUTE, 2 * MINUTE, 0.02),
    (Severity.CRITICAL, 6 * HOUR, 30 * MINUTE, 15 * MINUTE, 0.05),
    (Severity.WARNING, DAY, 2 * HOUR, HOUR, 0.10),
    (Severity.WARNING, 3 * DAY, 6 * HOUR, 3 * HOUR, 0.10),
)
_PERIODS = {"30d": 30 * DAY, "28d": 28 * DAY}


@per_config
def period(cfg: ObspackConfig) -> str:
    return format_s(_PERIODS[cfg.slos.period] // cfg.slos.speedup, one_unit=True)


@per_config
def window_pairs(cfg: ObspackConfig) -> tuple[WindowPair, ...]:
    k = cfg.slos.speedup
    budget_period = _PERIODS[cfg.slos.period]
    return tuple(
        WindowPair(
            severity=severity,
            long=format_s(long // k, one_unit=True),
            short=format_s(short // k, one_unit=True),
            for_=format_s(for_ // k, one_unit=True),
            factor=round(share * budget_period / long, 6),
        )
        for severity, long, short, for_, share in _PAIRS
    )


@per_config
def base_window(cfg: ObspackConfig) -> str:
    """The window rates are taken over from the raw series: the shortest window of the table."""
    return min((p.short for p in window_pairs(cfg)), key=seconds)


@per_config
def derived_windows(cfg: ObspackConfig) -> tuple[str, ...]:
    """Every other window of the table, ascending; the alert averages the base window's records over each."""
    windows = {w for p in window_pairs(cfg) for w in (p.long, p.short)} - {base_window(cfg)}
    return tuple(sorted(windows, key=seconds))


@per_config
def recorded_windows(cfg: ObspackConfig) -> tuple[str, ...]:
    """The long windows, ascending: recorded from the base window's records for the SLO page's burn rates."""
    return tuple(sorted({p.long for p in window_pairs(cfg)} - {base_window(cfg)}, key=seconds))
