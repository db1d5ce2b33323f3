"""Proposed changes to obspack's rules and dashboards, measured by the fleet benchmark next to the current ones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fleet_queries import Dashboard, Window, fill


@dataclass(frozen=True)
class Proposals:
    groups: list[dict[str, Any]] = field(default_factory=list)  # extra recording groups
    replacements: dict[str, str] = field(default_factory=dict)  # target key -> new expr

    def queries(self, dashboard: Dashboard, values: dict[str, str], window: Window) -> Iterator[tuple[str, str]]:
        for target in dashboard.targets:
            if target.key in self.replacements:
                yield target.key, fill(self.replacements[target.key], values, window)


NONE = Proposals()
PROPOSALS = Proposals()
