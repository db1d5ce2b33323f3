"""The latency histograms the SLOs read, and which of their bucket bounds vLLM exports, by release.

A latency SLO counts a request as good when it falls in the bucket `le=<threshold>`, so a threshold must
be a bound vLLM really exports. The bounds are the catalogue's (obspack/catalogue/vllm.py, checked
against the release survey's extract in tests/fixtures/vllm-metrics-survey.json). From 0.32 an operator may
replace them with `--custom-histogram-buckets`; the rules leave out pods that lack the threshold's bucket
instead of counting all their requests as slow.
"""

from __future__ import annotations

from obspack.catalogue.vllm import BUCKETS, ITL, TPOT, TTFT, version

# The histograms of each latency SLO; for inter-token latency the first name present wins per series.
SLO_HISTOGRAMS = {"time_to_first_token": (TTFT,), "inter_token_latency": (ITL, TPOT)}


def boundaries(metrics: tuple[str, ...]) -> tuple[float, ...]:
    """Every bound any release exports for any of `metrics`, ascending."""
    return tuple(sorted({bound for m in metrics for b in BUCKETS[m] for bound in b.bounds}))


def releases_with(metrics: tuple[str, ...], bound: float) -> str:
    """Which releases export the bucket `le=<bound>` for `metrics`, in words."""
    ranges = [b for m in metrics for b in BUCKETS[m] if bound in b.bounds]
    if any(b.first is None for b in ranges) and any(b.last is None for b in ranges):
        return "every release"
    firsts = [b.first for b in ranges if b.first]
    return f"{min(firsts, key=version)} and later"


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
