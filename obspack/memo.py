"""What is derived from one config object is derived once: `per_config` caches a function's result per
config instance (and further hashable arguments), for as long as that instance lives. The writers use it
the same way on a Pack (a dashboard's JSON, which two files carry).

The pack stage's builders take the config, as the rules and dashboards always have; this is what lets
several of them ask for the same derived model (the alert catalogue, the SLO windows) without building it
again. Results must not be changed by their callers: they are tuples and frozen dataclasses.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def per_config(fn: Callable[P, R]) -> Callable[P, R]:
    cache: dict[tuple[Hashable, ...], tuple[weakref.ref[Any], R]] = {}

    @functools.wraps(fn)
    def cached(cfg: Any, *args: Any) -> R:
        key = (id(cfg), *args)
        hit = cache.get(key)
        if hit is not None and hit[0]() is cfg:
            return hit[1]
        value = fn(cfg, *args)  # type: ignore[call-arg]
        cache[key] = (weakref.ref(cfg, lambda _, k=key: cache.pop(k, None)), value)
        return value

    return cached  # type: ignore[return-value]
