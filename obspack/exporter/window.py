"""Bounded per-engine counter history for the windowed prefix-cache hit ratio.

Apart from the error counters, this is the only state the exporter keeps between scrapes. Each
engine keeps about ``max_samples`` (time, hits, queries) points (never more than max_samples + 2)
no older than the window: a sample that would sit closer than ``2 * window / max_samples`` to the
point before the newest replaces the newest instead of being appended, so frequent or concurrent
scrapes cannot grow the history. Engines not seen for a whole window are forgotten, and
at most ``max_series`` engines are tracked: the engines are kept in the order they were last seen
(an OrderedDict moved to the end on every sample), so making room for a new one drops the stalest
in O(1) whatever the number of engines.

Counter resets (a vLLM restart) are handled as Prometheus does: a counter that goes down is taken
to have restarted from zero, so its increase is its new value. Internally each counter is stored
"adjusted" (raw value plus the sum of the values it had before each reset), and the windowed
ratio is the difference of adjusted hits over the difference of adjusted queries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass, field

from obspack.exporter.derive import hit_ratio

DEFAULT_MAX_SAMPLES = 256
DEFAULT_MAX_SERIES = 4096


@dataclass(slots=True)
class _Point:
    t: float
    hits: float  # adjusted for resets
    queries: float


@dataclass(slots=True)
class _Series:
    points: deque[_Point]
    last_hits: float  # raw values of the newest sample, to detect resets
    last_queries: float
    hits_offset: float = 0.0
    queries_offset: float = 0.0
    last_seen: float = 0.0


@dataclass
class CounterWindow:
    """Keeps recent (hits, queries) counter samples per key and answers the windowed hit ratio."""

    window_s: float
    max_samples: int = DEFAULT_MAX_SAMPLES
    max_series: int = DEFAULT_MAX_SERIES
    _series: OrderedDict[Hashable, _Series] = field(default_factory=OrderedDict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def record(self, key: Hashable, t: float, hits: float, queries: float) -> float | None:
        """Add a sample taken at monotonic time ``t``; return the ratio over the window, or None.

        None until the window holds two samples, and while no query happened in it. A sample older
        than the newest one recorded for ``key`` is not stored, but still answered.
        """
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._new_series(key, t, hits, queries)
            elif t >= series.points[-1].t:
                self._append(series, t, hits, queries)
            if t >= series.last_seen:
                series.last_seen = t
                self._series.move_to_end(key)
            points = series.points
            while len(points) > 1 and points[0].t < t - self.window_s:
                points.popleft()
            if len(points) < 2:
                return None
            oldest, newest = points[0], points[-1]
            return hit_ratio(newest.hits - oldest.hits, newest.queries - oldest.queries)

    def forget_older_than(self, t: float) -> None:
        """Drop every key whose newest sample is older than ``t``."""
        with self._lock:
            for key in [k for k, s in self._series.items() if s.last_seen < t]:
                del self._series[key]

    def __len__(self) -> int:
        return len(self._series)

    def samples(self, key: Hashable) -> int:
        """How many samples are kept for ``key`` (0 if unknown)."""
        with self._lock:
            series = self._series.get(key)
            return 0 if series is None else len(series.points)

    def _new_series(self, key: Hashable, t: float, hits: float, queries: float) -> _Series:
        while self._series and len(self._series) >= self.max_series:
            self._series.popitem(last=False)  # the stalest: keys are kept in last-seen order
        points = deque([_Point(t, hits, queries)], maxlen=self.max_samples + 2)
        series = _Series(points, hits, queries, last_seen=t)
        self._series[key] = series
        return series

    def _append(self, series: _Series, t: float, hits: float, queries: float) -> None:
        if hits < series.last_hits:
            series.hits_offset += series.last_hits
        if queries < series.last_queries:
            series.queries_offset += series.last_queries
        series.last_hits, series.last_queries = hits, queries
        point = _Point(t, hits + series.hits_offset, queries + series.queries_offset)
        points = series.points
        # Compare with the point before the newest, so the newest keeps moving forward and the kept
        # points are at least ``min_gap`` apart two by two: at most max_samples + 2 fit in a window.
        min_gap = 2 * self.window_s / self.max_samples
        if len(points) > 1 and t - points[-2].t < min_gap:
            points[-1] = point
        else:
            points.append(point)
