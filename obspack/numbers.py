"""Numbers as a person reads them: 0.7, not the 0.7000000000000001 that `0.8 - 0.1` gives in binary floating
point. Every number obspack computes from a setting and writes into a file goes through `tidy` or `text`."""

from __future__ import annotations

import math

SIGNIFICANT = 12  # floating-point noise sits at the 16th or 17th digit; no setting needs more than 12


def tidy(value: float) -> float:
    """The value rounded to 12 significant digits, which drops the noise of float arithmetic."""
    if not math.isfinite(value) or value == 0:
        return value
    return float(f"{value:.{SIGNIFICANT}g}")


def text(value: float) -> str:
    """The shortest text of the tidy value: 24, 0.3, 1.5e-05 (whole numbers without `.0`)."""
    value = tidy(float(value))
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def percent(ratio: float) -> str:
    """A ratio as a percentage with every digit the setting has: 0.9 -> '90%', 0.855 -> '85.5%'."""
    return f"{text(ratio * 100)}%"
