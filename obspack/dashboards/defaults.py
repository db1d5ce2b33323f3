"""What every obspack dashboard shares, stamped in one place (kubernetes-mixin `defaults.libsonnet`).

uid from the file name (`conventions.dashboard_uid`), tags and refresh from the config, UTC, a shared
crosshair so the planes line up on one time axis, links to the other obspack dashboards (carrying the
variables and time range), panel ids numbered in order, and the JSON model as a plain dict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from grafanalib.core import (
    GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
    Dashboard,
    DashboardLink,
    Panel,
    Template,
    Templating,
    Time,
)

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.dashboards.panels import layout

# Grafana 10.4's schema version: 10.x, 11.x and 12.x load it without running old panel migrations.
SCHEMA_VERSION = 39
TIMEZONE = "utc"
TIME_RANGE = Time("now-3h", "now")


def dashboard_path(name: str) -> str:
    """The in-Grafana path of an obspack dashboard (Grafana prefixes its sub-path to links starting with /)."""
    return f"/d/{c.dashboard_uid(name)}/{name}"


def _triage_url(cfg: ObspackConfig, value: str) -> str:
    """The triage page for one pod; `value` formats a label into the Grafana field reference."""
    pairs = (("cluster", cfg.cluster_label), ("namespace", "namespace"), ("pod", "pod"))
    fields = "&".join(f"var-{var}={value.format(label)}" for var, label in pairs)
    return (
        f"{dashboard_path(c.TRIAGE_DASHBOARD)}?var-datasource=${{datasource}}&{fields}&${{__url_time_range}}"
    )


def triage_from_row(cfg: ObspackConfig) -> dict[str, object]:
    """A table data link: open the triage page for the pod of the clicked row."""
    return {"title": "Triage this pod", "url": _triage_url(cfg, "${{__data.fields.{}}}")}


def triage_from_series(cfg: ObspackConfig) -> dict[str, object]:
    """A time series data link: open the triage page for the pod of the clicked series."""
    return {"title": "Triage this pod", "url": _triage_url(cfg, "${{__field.labels.{}}}")}


def shown(cfg: ObspackConfig) -> dict[str, str]:
    """The dashboards this config renders, name to title: the SLO page only when an SLO is on."""
    return {name: title for name, title in c.DASHBOARDS.items() if name != c.SLO_DASHBOARD or slos.enabled_slis(cfg)}


# Every obspack dashboard carries this tag, and one dropdown lists the others by it (as kubernetes-mixin does):
# one link whatever the number of pages, which keeps the largest dashboards' ConfigMaps under the 256 KiB that
# `kubectl apply` allows.
LINK_TAG = "obspack"


def _tags(cfg: ObspackConfig) -> list[str]:
    return list(dict.fromkeys((*cfg.grafana.tags, LINK_TAG)))


def _links() -> list[DashboardLink]:
    return [
        DashboardLink(
            type="dashboards",
            title="obspack",
            tags=[LINK_TAG],
            asDropdown=True,
            icon="dashboard",
            includeVars=True,
            keepTime=True,
            tooltip="The other obspack dashboards, with the same variables and time range",
        )
    ]


def dashboard(
    cfg: ObspackConfig,
    name: str,
    *,
    description: str,
    variables: Sequence[Template],
    panels: Sequence[Panel],
) -> Dashboard:
    if name not in c.DASHBOARDS:
        raise ValueError(f"unknown dashboard {name!r}: add it to conventions.DASHBOARDS")
    return Dashboard(
        title=c.DASHBOARDS[name],
        uid=c.dashboard_uid(name),
        description=description,
        tags=_tags(cfg),
        refresh=cfg.grafana.refresh,
        timezone=TIMEZONE,
        time=TIME_RANGE,
        schemaVersion=SCHEMA_VERSION,
        graphTooltip=GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        editable=True,
        templating=Templating(list=list(variables)),
        links=_links(),
        panels=layout(panels),
    ).auto_panel_ids()


def to_model(d: Dashboard) -> dict[str, object]:
    """The dashboard's JSON model as plain data (what Grafana imports): what grafanalib's JSON encoder
    writes, read back, without the text in between (half the time)."""
    model = plain(d.to_json_data())
    assert isinstance(model, dict)
    return model


_KEY_WORDS = {True: "true", False: "false", None: "null"}


def plain(value: object) -> object:
    """`json.loads(json.dumps(value, cls=DashboardEncoder))`, built directly: grafanalib objects by their
    `to_json_data()`, tuples as lists, keys as the text JSON gives them, subclasses of str, int and float as
    the plain values; anything else is refused as the encoder refuses it."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, dict):
        return {k if type(k) is str else _key(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, str | int | float):  # a subclass: the encoder writes its plain value
        return json.loads(json.dumps(value))
    to_json_data = getattr(value, "to_json_data", None)
    if to_json_data:
        return plain(to_json_data())
    raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")


def _key(key: object) -> str:
    if isinstance(key, str):
        return str.__str__(key)
    if key is True or key is False or key is None:
        return _KEY_WORDS[key]
    if isinstance(key, int | float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
