"""The backtest: the window's own samples replayed against a limit and a request (pure).

A run (one cgroup: one start of a container) would have been OOM-killed under a limit its working set
reached: the highest sample of the run in the window, or its model load before the window where that is
measured or inferred. A run the kernel did kill in the window is killed again by any limit at or under the
limit it had then: what it needed above that is unknown. A day would have been killed under a limit one of
its samples reached, or on which such a kill happened; a day's working-set p99 above the request means the
pod ran over its request for more than 1% of that day (the first pods a node under memory pressure evicts).
"""

from __future__ import annotations

from collections import Counter

from obspack.rightsize.model import Backtest, History, Run

__all__ = ["History", "Run", "replay", "sentence"]

def replay(history: History, limit: float | None, request: float | None) -> Backtest:
    """What `limit` and `request` would have done to the window's samples."""
    peaks = [v for r in history.runs for v in (r.peak, r.load_before) if v is not None]
    peaks += list(history.day_peaks.values())
    peak = max(peaks) if peaks else None
    recur = limit is not None and history.usage_at_kill is not None and limit <= history.usage_at_kill
    runs_killed = 0
    per_container = Counter(r.container for r in history.runs)
    over = Counter(
        r.container
        for r in history.runs
        if limit is not None and max((v for v in (r.peak, r.load_before) if v is not None), default=0.0) >= limit
    )
    for container, runs in per_container.items():
        kills = history.kills.get(container, 0) if recur else 0
        runs_killed += min(runs, over[container] + kills)
    days_killed = sum(
        1
        for day, value in history.day_peaks.items()
        if limit is not None and (value >= limit or (recur and history.day_kills.get(day, 0) > 0))
    )
    return Backtest(
        limit=limit,
        request=request,
        runs=len(history.runs),
        runs_killed=runs_killed,
        loads_before=sum(1 for r in history.runs if r.before and r.load_before is not None),
        loads_unknown=sum(1 for r in history.runs if r.before and r.load_before is None),
        days=len(history.day_peaks),
        days_killed=days_killed,
        days_over_request=sum(1 for v in history.day_p99s.values() if request is not None and v > request),
        peak=peak,
    )


def sentence(bt: Backtest, limit_text: str) -> str:
    """"with 24Gi, 0 of 9 runs and 0 of 14 days would have been OOM-killed; peak 83% of the limit"."""
    runs = f"{bt.runs_killed} of {bt.runs} run{'s' if bt.runs != 1 else ''}"
    days = f"{bt.days_killed} of {bt.days} day{'s' if bt.days != 1 else ''}"
    text = f"with {limit_text}, {runs} and {days} would have been OOM-killed"
    if bt.peak_ratio is not None:
        text += f"; peak {bt.peak_ratio:.0%} of the limit"
    if bt.loads_before:
        loads = "the model load" if bt.loads_before == 1 else f"{bt.loads_before} model loads"
        text += f" ({loads} before the window counted)"
    return text
