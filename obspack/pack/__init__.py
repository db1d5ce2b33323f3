"""The pack stage, between the config and the writers: `build(cfg) -> Pack` derives every rule group,
alert, dashboard, runbook, shipped test and the Alertmanager example once; the writers (obspack.render)
and the readers of live servers (obspack.doctor) take the Pack."""

from obspack.pack.build import build, stamp
from obspack.pack.model import Dashboard, Pack, Sources

__all__ = ["Dashboard", "Pack", "Sources", "build", "stamp"]
