"""The latency histograms the SLOs read and the bucket bounds vLLM exports for them, by release.

A latency SLO counts a request as good when it falls in the bucket `le=<threshold>`, so a threshold must
be a bound vLLM really exports. The bounds below were read from vLLM's released source (the extract the
test suite checks this table against is tests/fixtures/vllm-slo-metrics.json). From 0.32 an operator may
replace them with `--custom-histogram-buckets`; the rules leave out pods that lack the threshold's bucket
instead of counting all their requests as slow.
"""

from __future__ import annotations

from dataclasses import dataclass

TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
TPOT = "vllm:time_per_output_token_seconds"  # ITL's older name: default up to 0.11, hidden 0.12-0.14, gone in 0.15

# The histograms of each latency SLO; for inter-token latency the first name present wins per series.
SLO_HISTOGRAMS = {"time_to_first_token": (TTFT,), "inter_token_latency": (ITL, TPOT)}

_TTFT_UP_TO_0_8_3 = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)
_TOKEN_UP_TO_0_8_3 = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)


@dataclass(frozen=True)
class Bounds:
    """The bucket bounds (seconds, +Inf left out) a histogram has from release `first` to `last` (None:
    open end)."""

    first: str | None
    last: str | None
    bounds: tuple[float, ...]

    def covers(self, release: str) -> bool:
        v = _version(release)
        return (self.first is None or _version(self.first) <= v) and (
            self.last is None or v <= _version(self.last)
        )


BUCKETS: dict[str, tuple[Bounds, ...]] = {
    TTFT: (
        Bounds(None, "0.8.3", _TTFT_UP_TO_0_8_3),
        Bounds("0.8.4", None, _TTFT_UP_TO_0_8_3 + (20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)),
    ),
    TPOT: (
        Bounds(None, "0.8.3", _TOKEN_UP_TO_0_8_3),
        Bounds("0.8.4", "0.11.2", _TOKEN_UP_TO_0_8_3 + (5.0, 7.5, 10.0, 20.0, 40.0, 80.0)),
    ),
    ITL: (Bounds("0.10.2", None, _TOKEN_UP_TO_0_8_3 + (5.0, 7.5, 10.0, 20.0, 40.0, 80.0)),),
}


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".")[:3])


def bounds_in(metric: str, release: str) -> tuple[float, ...] | None:
    """The bounds `metric` has in `release`, or None when that release does not export it by default."""
    return next((b.bounds for b in BUCKETS[metric] if b.covers(release)), None)


def boundaries(metrics: tuple[str, ...]) -> tuple[float, ...]:
    """Every bound any release exports for any of `metrics`, ascending."""
    return tuple(sorted({bound for m in metrics for b in BUCKETS[m] for bound in b.bounds}))


def releases_with(metrics: tuple[str, ...], bound: float) -> str:
    """Which releases export the bucket `le=<bound>` for `metrics`, in words."""
    ranges = [b for m in metrics for b in BUCKETS[m] if bound in b.bounds]
    if any(b.first is None for b in ranges) and any(b.last is None for b in ranges):
        return "every release"
    firsts = [b.first for b in ranges if b.first]
    return f"{min(firsts, key=_version)} and later"


def check_bound(value: float, metrics: tuple[str, ...]) -> float:
    """`value` if it is a bucket bound of `metrics`, else a ValueError that names the nearest bounds."""
    allowed = boundaries(metrics)
    if value in allowed:
        return value
    below = [b for b in allowed if b < value]
    above = [b for b in allowed if b > value]
    nearest = " and ".join(f"{b:g}" for b in (below[-1:] + above[:1]))
    raise ValueError(
        f"{value:g} s is not a bucket bound of {' / '.join(metrics)}; the nearest are {nearest} "
        f"(allowed: {', '.join(f'{b:g}' for b in allowed)}; docs/slos.md lists them by vLLM release)"
    )


def bounds_table() -> str:
    """A Markdown table of every bound, and the releases that export it per SLO (docs/slos.md holds it)."""
    families = {
        "time to first token": SLO_HISTOGRAMS["time_to_first_token"],
        "inter-token latency": SLO_HISTOGRAMS["inter_token_latency"],
    }
    bounds = sorted({b for metrics in families.values() for b in boundaries(metrics)})
    lines = ["| bound (s) | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for bound in bounds:
        cells = [releases_with(m, bound) if bound in boundaries(m) else "-" for m in families.values()]
        lines.append(f"| {bound:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
