"""Prometheus durations (`30s`, `5m`, `1h30m`), read the way Prometheus reads them.

Prometheus' `model.ParseDuration` takes whole numbers with the units y, w, d, h, m, s and ms, biggest
unit first, each unit at most once, or a bare `0`. The total must fit Go's time.Duration (nanoseconds
in a signed 64-bit integer, about 292 years). The same syntax is used for rule `for:` values, group
intervals and range selectors such as `[5m]`.
"""

from __future__ import annotations

import re

UNIT_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
# Also matches "", which parse_ms refuses; no lookahead, so Go (Helm's JSON schema check) can use it too.
PATTERN = re.compile(r"^(0|([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?)$")
_PART = re.compile(r"([0-9]+)(ms|y|w|d|h|m|s)")
_MAX_NS = 2**63 - 1


def parse_ms(text: str) -> int:
    """Milliseconds of a Prometheus duration; ValueError saying what is wrong."""
    if not text or not PATTERN.match(text):
        raise ValueError(f"{text!r} is not a Prometheus duration (allowed: whole numbers with units y, w, d, h, m, s, ms, biggest first, e.g. 30s, 5m, 1h30m)")
    total = sum(int(n) * UNIT_MS[unit] for n, unit in _PART.findall(text))
    if total * 1_000_000 > _MAX_NS:
        raise ValueError(f"{text!r} is out of Prometheus' range (at most about 292y)")
    return total


_UNITS = ("d", "h", "m", "s", "ms")  # weeks and years are left to the reader: 14d, not 2w


def format_ms(ms: int, *, one_unit: bool = False) -> str:
    """Milliseconds as a Prometheus duration: the shortest spelling (90000 -> 1m30s), or with `one_unit`
    a count of the largest unit that divides it (4_320_000 -> 72m), for windows named in a record."""
    if ms == 0:
        return "0s"
    if one_unit:
        unit = next(u for u in _UNITS if ms % UNIT_MS[u] == 0)
        return f"{ms // UNIT_MS[unit]}{unit}"
    parts = []
    for unit in _UNITS:
        count, ms = divmod(ms, UNIT_MS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def format_s(seconds: float, *, coarse: bool = False, one_unit: bool = False) -> str:
    """Seconds as a Prometheus duration, to the millisecond (0.5 -> 500ms); `coarse`: whole seconds below
    a minute and whole minutes above (95.4 -> 2m), for messages about windows and ages; `one_unit` as
    in format_ms."""
    if coarse:
        seconds = max(int(seconds) if seconds < 60 else round(seconds / 60) * 60, 0)
    return format_ms(round(seconds * 1000), one_unit=one_unit)
