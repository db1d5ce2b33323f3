"""Finer input series for the rendered unit tests of alerts with short windows.

The incidents in unit_tests.py write their series one sample a minute, in promtool's notation. A range
window shorter than two minutes would hold a single such sample, so rate() and increase() over it are
empty and the test could not fire. For those alerts the series are resampled to a step that puts at
least two samples in the window (never finer than scrape_interval allows, since windows are at least
two scrapes long). Every whole-minute sample keeps its value: gauges hold each minute's value until the
next minute, and counters written `a+bxn` rise by b/k per step and then hold, so rates between whole
minutes are unchanged.
"""

from __future__ import annotations

import re

from obspack import durations
from obspack.config import ObspackConfig, windows

_STEPS = (60, 30, 20, 15, 12, 10, 6, 5, 4, 3, 2, 1)  # seconds that divide a minute
_ITEM = re.compile(
    r"^(?P<start>_|stale|[-+]?[0-9.]+(?:e[-+]?[0-9]+)?)"
    r"(?:(?P<op>[-+])(?P<inc>[0-9.]+(?:e[-+]?[0-9]+)?))?(?:x(?P<times>[0-9]+))?$"
)


def step_seconds(cfg: ObspackConfig, alert: str) -> int:
    """Seconds between input samples for an alert's test: a minute, or less for a short window."""
    shortest = min((durations.parse_ms(w) for loc, w in windows(cfg) if loc[1] == alert), default=120_000)
    return next((s for s in _STEPS if 2 * s * 1000 <= shortest), 1)


def interval(step: int) -> str:
    return "1m" if step == 60 else f"{step}s"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.12f}".rstrip("0")


def per_step(values: str, step: int) -> str:
    """A per-minute promtool series (`1x9 0+6x20 _x3`) at `step` seconds per sample."""
    k = 60 // step
    if k == 1:
        return values
    out = []
    for item in values.split():
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"cannot resample the series item {item!r}")
        start, times = m["start"], int(m["times"] or 0)
        if m["op"] and float(m["inc"]) != 0 and times:
            per = float(m["inc"]) / k
            end = float(start) + (times * float(m["inc"]) * (1 if m["op"] == "+" else -1))
            out.append(f"{start}{m['op']}{_number(per)}x{times * k} {_number(end)}x{k - 2}")
        elif start == "stale":
            out.append(f"stale _x{k - 1}")
        elif start == "_":  # promtool's `_xN` leaves out N samples (a value's `axN` is N+1 samples)
            out.append(f"_x{(times if m['times'] else 1) * k}")
        else:
            out.append(f"{start}x{(times + 1) * k - 1}")
    return " ".join(out)
