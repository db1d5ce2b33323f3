"""Every raw selector the pack reads, checked against the server in stages (as Cloudflare's pint does):

1. present at the time of the check (and, when a function reads a window of it, two samples in that window);
2. otherwise, seen within the lookback window: gone, and since when;
3. otherwise, the metric itself: never present; or a label a matcher needs that never appears on it; or a
   matcher whose value never matches (with the values the label does have);
4. a series that exists only after an event (a terminated container, a firing alert), or only where an
   engine runs a vLLM feature (a KV connector, speculative decoding, LoRA, a recent release), is not
   missing while the source that would report it is there; nor is a series of the inference pool's
   endpoint picker (EPP), an optional source, where no EPP is deployed (`optional`: what reads only such
   series is no finding).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum
from threading import Lock
from typing import Any, TypeVar

from obspack import conventions as c
from obspack.doctor import knowledge as k
from obspack.doctor.api import PrometheusAPI
from obspack.doctor.needs import Leaf, Matcher, Selector
from obspack.durations import format_s

T = TypeVar("T")


class State(str, Enum):
    OK = "ok"
    MISSING = "missing"
    EVENT = "event"  # absent now; appears when something happens, and its source is there
    UNKNOWN = "unknown"  # the server could not answer


@dataclass(frozen=True)
class Window:
    at: float  # unix seconds of the check ("now" by default)
    lookback_s: int

    @property
    def start(self) -> float:
        return self.at - self.lookback_s


@dataclass(frozen=True)
class Check:
    """The verdict on one selector: `reason` says why it is not OK, in words."""

    leaf: Leaf
    state: State
    reason: str = ""
    last_seen: float | None = None  # when a gone selector had its last sample
    label: str | None = None  # a label a matcher needs that never appears on the metric
    matcher: Matcher | None = None  # a matcher whose value never matches
    seen: tuple[str, ...] = ()  # the values `label`/`matcher` has on the metric
    optional: bool = False  # an event series that waits for an optional source none of which is here

    def describe(self) -> str:
        shown = self.leaf.text(longest=40)
        return f"{shown}: {self.reason}" if self.reason else shown


class SelectorChecks:
    """Runs the staged checks for many selectors at once, sharing what several of them ask."""

    def __init__(self, api: PrometheusAPI, window: Window, scopes: dict[str, str]) -> None:
        self.api = api
        self.window = window
        self.scopes = scopes  # source key -> the configured matchers of that source (no braces)
        self._memo: dict[tuple[str, ...], Future[Any]] = {}
        self._lock = Lock()

    def run(self, leaves: Iterable[Leaf], *, diagnose: bool = True) -> dict[Leaf, Check]:
        """Check each selector; without `diagnose`, a missing one is not looked into further (for
        selectors narrowed to one pod, where "none for this pod" is the whole story)."""
        todo = sorted(set(leaves), key=str)
        results = self.api.map(lambda leaf: self.check(leaf, diagnose=diagnose), todo)
        return {
            leaf: r if isinstance(r, Check) else Check(leaf, State.UNKNOWN, f"could not check: {r}")
            for leaf, r in zip(todo, results)
        }

    # -- cached questions -------------------------------------------------------------------------

    def _ask(self, key: tuple[str, ...], fn: Callable[[], T]) -> T:
        """`fn()`, asked once per key: the first caller asks, and callers meanwhile (other threads) wait for
        its answer. A failure is handed to those waiting and forgotten, so a later caller asks again."""
        with self._lock:
            future = self._memo.get(key)
            first = future is None
            if future is None:
                future = self._memo[key] = Future()
        if first:
            try:
                future.set_result(fn())
            except BaseException as e:
                with self._lock:
                    del self._memo[key]
                future.set_exception(e)
                raise
        return future.result()

    def count(self, expr: str) -> float:
        def ask() -> float:
            result = self.api.query(f"count({expr})", self.window.at)
            return float(result[0]["value"][1]) if result else 0.0

        return self._ask(("count", expr), ask)

    def names(self, match: str) -> list[str]:
        w = self.window
        return self._ask(("names", match), lambda: self.api.label_values("__name__", match, w.start, w.at))

    def values(self, label: str, selector: Selector) -> list[str]:
        """The values `label` has on the series `selector` picks, over the lookback window."""
        w = self.window
        match = str(selector) if selector.matchers else f'{{__name__="{selector.metric}"}}'
        return self._ask(("values", label, match), lambda: self.api.label_values(label, match, w.start, w.at))

    def last_seen(self, expr: str) -> float | None:
        """When `expr` had its last sample: the last step of a coarse range query that finds it, then the
        sample's own timestamp from an instant query at that step."""
        w = self.window
        step = max(60, math.ceil(w.lookback_s / 288))
        result = self.api.query_range(f"count({expr})", w.start, w.at, step)
        stamps = [float(t) for series in result for t, _ in series.get("values", [])]
        if not stamps:
            return None
        exact = self.api.query(f"max(timestamp({expr}))", max(stamps))
        return float(exact[0]["value"][1]) if exact else max(stamps)

    # -- the stages -------------------------------------------------------------------------------

    def check(self, leaf: Leaf, *, diagnose: bool = True) -> Check:
        text = str(leaf.selector)
        if self.count(text) > 0:
            if leaf.range_s and self.count(f"count_over_time({text}[{format_s(leaf.range_s, coarse=True)}]) >= 2") == 0:
                return Check(
                    leaf,
                    State.MISSING,
                    f"fewer than two samples in {format_s(leaf.range_s, coarse=True)}: scraped less often than every "
                    f"{format_s(leaf.range_s / 2, coarse=True)}",
                )
            return Check(leaf, State.OK)
        event = k.event_of(leaf.selector.metric)
        if event is not None:
            sibling = self._sibling(leaf.selector, event.sibling)
            if sibling is None or self.count(sibling) > 0:
                return Check(leaf, State.EVENT, f"appears only when {event.when}", optional=self._absent(event))
            # a sibling that itself waits for an optional source (the EPP's build info): so does this series
            upstream = k.event_of(event.sibling or "")
            if upstream is not None and upstream.source is not None:
                return Check(leaf, State.EVENT, f"appears only when {upstream.when}", optional=self._absent(upstream))
        if not diagnose:
            return Check(leaf, State.MISSING, "no series")
        return self.diagnose(leaf)

    def _absent(self, event: k.Event) -> bool:
        """The optional source an event series waits for is not here at all."""
        return event.source is not None and self.count(event.source) == 0

    def _sibling(self, selector: Selector, metric: str | None) -> str | None:
        if metric is None:
            return None
        source = k.source_of(selector.metric)
        scope = self.scopes.get(source.key, "") if source else ""
        return metric + c.selector(scope)

    def diagnose(self, leaf: Leaf) -> Check:
        selector = leaf.selector
        lookback = format_s(self.window.lookback_s, coarse=True)
        if self.names(str(selector)):
            last = self.last_seen(str(selector))
            if last is not None:
                return Check(
                    leaf,
                    State.MISSING,
                    f"gone: last seen {format_s(self.window.at - last, coarse=True)} ago",
                    last_seen=last,
                )
            return Check(leaf, State.MISSING, f"gone: seen within the last {lookback}, not now")
        if not selector.metric or not self.names(f'{{__name__="{selector.metric}"}}'):
            return Check(leaf, State.MISSING, f"never present in the last {lookback}")
        for matcher in selector.matchers:
            if self.names(str(Selector(selector.metric, (matcher,)))):
                continue  # this matcher alone finds series
            label = matcher[0]
            values = self.values(label, Selector(selector.metric))
            if not values:
                return Check(
                    leaf, State.MISSING, f"label {label} never appears on {selector.metric}", label=label
                )
            # The values next to the other matchers are the ones a fix would want (e.g. the engines' job).
            others = Selector(selector.metric, tuple(m for m in selector.matchers if m != matcher))
            seen = (self.values(label, others) if others.matchers else []) or values
            shown = ", ".join(seen[:5]) + (f" and {len(seen) - 5} more" if len(seen) > 5 else "")
            reason = f'{label}{matcher[1]}"{matcher[2]}" never matches (seen: {shown})'
            return Check(leaf, State.MISSING, reason, matcher=matcher, seen=tuple(seen))
        return Check(leaf, State.MISSING, f"its matchers never match together on {selector.metric}")
