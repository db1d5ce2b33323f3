"""The rightsize command's values, checked: the connection (the doctor's options and checks) and the window.

Every bad value is an `OptionError` (exit code 2) that names the option and what it accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from obspack.doctor import settings as doctor_settings
from obspack.durations import parse_ms
from obspack.errors import ObspackError

DAY = 86400
MIN_STEP_S = 900  # the subqueries' step: coarse enough to be cheap (docs/benchmarks.md), fine enough for a load
MAX_STEPS = 3000  # longer windows get a longer step, so a question never reads more steps than this


class OptionError(ObspackError):
    exit_code = 2


@dataclass(frozen=True)
class Options:
    at: float | None = None  # end of the window, unix seconds; now when unset
    window_s: int = 14 * DAY
    load_s: int = 600
    min_history_s: int = 7 * DAY
    release_rise: float = 0.15
    backend: str = "auto"

    @property
    def step_s(self) -> int:
        return step_for(self.window_s)


def step_for(window_s: int) -> int:
    """The subquery step: 15 minutes, or whole minutes enough to keep a window under MAX_STEPS steps."""
    return max(MIN_STEP_S, math.ceil(window_s / MAX_STEPS / 60) * 60)


def _seconds(value: str, option: str) -> int:
    try:
        seconds = parse_ms(value) // 1000
    except ValueError:
        seconds = 0
    if seconds <= 0:
        raise OptionError(f"{option} {value!r}: give a Prometheus duration such as 10m, 2d or 14d")
    return seconds


def window_options(
    *, window: str, load_window: str, min_history: str, release_rise: float
) -> tuple[int, int, int, float]:
    """(window, load window, minimum history, release rise), checked against each other."""
    window_s = _seconds(window, "--window")
    if window_s < DAY:
        raise OptionError(f"--window {window!r}: at least 1d (peaks over less than a day say little)")
    load_s = _seconds(load_window, "--load-window")
    if load_s < 60:
        raise OptionError(f"--load-window {load_window!r}: at least 1m (it is rounded up to the step anyway)")
    if load_s * 2 > window_s:
        raise OptionError(f"--load-window {load_window!r}: at most half the window")
    min_history_s = min(_seconds(min_history, "--min-history"), window_s)
    if not 0 < release_rise < 10:
        raise OptionError(f"--release-rise {release_rise:g}: a share above 0, e.g. 0.15 for 15%")
    return window_s, load_s, min_history_s, release_rise


def options(
    *, at: str | None, backend: str, window: str, load_window: str, min_history: str, release_rise: float
) -> Options:
    """The rightsize command's own options (the connection is the doctor's: doctor.settings.connection)."""
    window_s, load_s, min_history_s, rise = window_options(
        window=window, load_window=load_window, min_history=min_history, release_rise=release_rise
    )
    return Options(
        at=doctor_settings.parse_time(at),
        window_s=window_s,
        load_s=load_s,
        min_history_s=min_history_s,
        release_rise=rise,
        backend=doctor_settings.backend_kind(backend),
    )
