"""The rightsize command's values, checked: the connection (the doctor's options and checks) and the window.

Every bad value is an `OptionError` (exit code 2) that names the option and what it accepts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from obspack.doctor import settings as doctor_settings
from obspack.durations import parse_ms
from obspack.errors import ObspackError

DAY = 86400
MIN_STEP_S = 900  # the subqueries' step: coarse enough to be cheap (docs/benchmarks.md), fine enough for a load
MAX_STEPS = 3000  # longer windows get a longer step, so a question never reads more steps than this


class OptionError(ObspackError):
    exit_code = 2


WHAT_IF = ("limit", "request", "gpu-memory-utilization")


@dataclass(frozen=True)
class WhatIfAsk:
    """`--what-if SETTING=VALUE` for the workload `--workload` names (or the only one)."""

    setting: str  # one of WHAT_IF
    value: float  # bytes, or a share of the card
    text: str  # the value as the user wrote it
    workload: str | None = None  # [CLUSTER/]NAMESPACE/NAME[:CONTAINER]


@dataclass(frozen=True)
class Options:
    at: float | None = None  # end of the window, unix seconds; now when unset
    window_s: int = 14 * DAY
    load_s: int = 600
    min_history_s: int = 7 * DAY
    release_rise: float = 0.15
    backend: str = "auto"
    include_low: bool = False  # also write the patches of low-confidence workloads
    what_if: WhatIfAsk | None = None
    autoscaling: bool = False  # also derive autoscaling targets from the TTFT SLO's history

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


_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<unit>Ki|Mi|Gi|Ti|k|M|G|T)?$")
_UNITS = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def memory_quantity(text: str) -> float:
    """A memory size as Kubernetes writes it (40Gi, 39936Mi, 42G, 1.5Gi, bytes); ValueError otherwise."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(text)
    value = float(match["number"]) * _UNITS[match["unit"]]
    if not 0 < value <= 2**50:
        raise ValueError(text)
    return value


def what_if(text: str, workload: str | None) -> WhatIfAsk:
    """`limit=40Gi`, `request=20Gi` or `gpu-memory-utilization=0.85`, checked."""
    setting, _, value = text.partition("=")
    setting, value = setting.strip().lstrip("-"), value.strip()
    if setting not in WHAT_IF or not value:
        raise OptionError(
            f"--what-if {text!r}: give SETTING=VALUE, SETTING one of {', '.join(WHAT_IF)} "
            "(e.g. limit=40Gi or gpu-memory-utilization=0.85)"
        )
    if setting == "gpu-memory-utilization":
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not 0 < number <= 1:
            raise OptionError(f"--what-if {text!r}: the utilization is a share of the card above 0 and at most 1, e.g. 0.85")
        return WhatIfAsk(setting, number, value, workload)
    try:
        size = memory_quantity(value)
    except ValueError:
        raise OptionError(f"--what-if {text!r}: give a memory size as Kubernetes does, e.g. 40Gi or 39936Mi") from None
    return WhatIfAsk(setting, size, value, workload)


def options(
    *,
    at: str | None,
    backend: str,
    window: str,
    load_window: str,
    min_history: str,
    release_rise: float,
    include_low: bool = False,
    what_if_text: str | None = None,
    workload: str | None = None,
    autoscaling: bool = False,
) -> Options:
    """The rightsize command's own options (the connection is the doctor's: doctor.settings.connection)."""
    window_s, load_s, min_history_s, rise = window_options(
        window=window, load_window=load_window, min_history=min_history, release_rise=release_rise
    )
    if workload is not None and what_if_text is None:
        raise OptionError("--workload names the workload of a --what-if: give --what-if too")
    return Options(
        at=doctor_settings.parse_time(at),
        window_s=window_s,
        load_s=load_s,
        min_history_s=min_history_s,
        release_rise=rise,
        backend=doctor_settings.backend_kind(backend),
        include_low=include_low,
        what_if=what_if(what_if_text, workload) if what_if_text is not None else None,
        autoscaling=autoscaling,
    )
