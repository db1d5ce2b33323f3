"""Small helpers that return grafanalib objects, so a dashboard module reads as a list of panels.

Every helper takes the panel's unit and a description that tells on-call what to do when the panel
looks bad; neither has a default, so a panel without them does not build. Targets get refIds A..Z in
order and always query the `$datasource` variable. `layout()` places panels left to right in rows of
24 columns and returns copies with their grid positions filled in.
"""

from __future__ import annotations

import string
import textwrap
from collections.abc import Iterable, Sequence

import attr
from grafanalib.core import GridPos, Panel, Repeat, RowPanel, Stat, Table, Target, TimeSeries

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
WIDTH = 24

# Units (Grafana's unit ids). FB memory is converted to bytes in the queries, so `bytes` everywhere.
BYTES = "bytes"
PERCENT_UNIT = "percentunit"  # 0-1
PERCENT = "percent"  # 0-100
SECONDS = "s"
SHORT = "short"
NONE = "none"
REQUESTS = "reqps"
TOKENS_PER_SECOND = "suffix: tok/s"  # a custom unit: Grafana has no token unit
PER_SECOND = "suffix: /s"
DATE_TIME = "dateTimeAsIso"  # milliseconds since the epoch, shown as a date and time
CELSIUS = "celsius"
WATT = "watt"

Steps = list[dict[str, object]]


def steps(base: str, *levels: tuple[float, str]) -> Steps:
    """Threshold steps: `base` below the first level, then each (value, colour) upwards."""
    return [{"color": base, "value": None}, *({"color": colour, "value": value} for value, colour in levels)]


def above(warn: float | None, crit: float) -> Steps:
    """Green, then orange from `warn` (if any), then red from `crit`: for values where high is bad."""
    levels = ([(warn, "orange")] if warn is not None and warn < crit else []) + [(crit, "red")]
    return steps("green", *levels)


def below(crit: float, warn: float) -> Steps:
    """Red under `crit`, orange under `warn`, green above: for headroom-like values where low is bad."""
    return steps("red", (crit, "orange"), (warn, "green"))


NEUTRAL = steps("green")  # no level is bad in itself (throughput, latency without an SLO)


def target(expr: str, legend: str = "", *, instant: bool = False, table: bool = False) -> Target:
    """A Prometheus query on the dashboard's datasource variable (refId is set by the panel)."""
    return Target(
        expr=textwrap.dedent(expr).strip(),
        legendFormat=legend,
        instant=instant,
        format="table" if table else "time_series",
        intervalFactor=1,
        datasource=DATASOURCE,
    )


def _ref_ids(targets: Sequence[Target]) -> list[Target]:
    if not targets:
        raise ValueError("a panel needs at least one query")
    if len(targets) > len(string.ascii_uppercase):
        raise ValueError(f"a panel takes at most 26 queries, got {len(targets)}")
    return [attr.evolve(t, refId=ref) for t, ref in zip(targets, string.ascii_uppercase)]


def link(title: str, url: str) -> dict[str, object]:
    """A panel or data link that opens in a new tab."""
    return {"title": title, "url": url, "targetBlank": True}


def _size(w: int, h: int) -> GridPos:
    if not 0 < w <= WIDTH:
        raise ValueError(f"panel width must be 1-{WIDTH}, got {w}")
    return GridPos(h=h, w=w, x=0, y=0)


def timeseries(
    title: str,
    *targets: Target,
    unit: str,
    description: str,
    thresholds: Steps = NEUTRAL,
    draw_thresholds: bool = False,
    w: int = 12,
    h: int = 8,
    soft_max: int | None = None,
    stacked: bool = False,
    bars: bool = False,
    links: Iterable[dict[str, object]] = (),
    data_links: Iterable[dict[str, object]] = (),
    overrides: Iterable[dict[str, object]] = (),
    no_data: str | None = None,
) -> TimeSeries:
    """A time series panel. `draw_thresholds` draws the steps as dashed lines (alert thresholds).

    `links` are panel links (runbooks); `data_links` open from a clicked series (e.g. its pod); `no_data`
    replaces Grafana's "No data" where an empty panel has a known reason (a vLLM version, a feature)."""
    return TimeSeries(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_ref_ids(targets),
        unit=unit,
        thresholds=thresholds,
        thresholdsStyleMode="dashed" if draw_thresholds else "off",
        colorMode="palette-classic",
        axisSoftMin=0,
        axisSoftMax=soft_max,
        fillOpacity=60 if bars else (10 if stacked else 0),
        drawStyle="bars" if bars else "line",
        stacking={"mode": "normal", "group": "A"} if stacked else {"mode": "none"},
        showPoints="never",
        spanNulls=False,
        lineWidth=1,
        tooltipMode="multi",
        tooltipSort="desc",
        legendDisplayMode="list",
        legendPlacement="bottom",
        links=list(links),
        overrides=list(overrides),
        maxDataPoints=None,
        gridPos=_size(w, h),
        extraJson=_field_defaults(links=list(data_links) or None, noValue=no_data),
    )


def _field_defaults(**defaults: object) -> dict[str, object] | None:
    """`fieldConfig.defaults` entries grafanalib has no argument for: data links, and the text Grafana shows
    instead of "No data" (`noValue`, which its PanelDataErrorView reads when a query returns no series)."""
    kept = {k: v for k, v in defaults.items() if v is not None}
    return {"fieldConfig": {"defaults": kept}} if kept else None


def stat(
    title: str,
    *targets: Target,
    unit: str,
    description: str,
    thresholds: Steps,
    w: int = 4,
    h: int = 4,
    background: bool = False,
    no_value: str = "no data",
    text: str = "value",
    decimals: int | None = None,
    links: Iterable[dict[str, object]] = (),
    sparkline: bool = True,
) -> Stat:
    """A single-value panel coloured by its thresholds (reduced to the last non-null value), with the
    selected range drawn behind it unless `sparkline` is off (for instant targets)."""
    return Stat(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_ref_ids(targets),
        format=unit,
        thresholds=thresholds,
        color={"mode": "thresholds"},
        colorMode="background" if background else "value",
        graphMode="area" if sparkline else "none",
        reduceCalc="lastNotNull",
        textMode=text,
        noValue=no_value,
        decimals=decimals,
        links=list(links),
        maxDataPoints=None,
        gridPos=_size(w, h),
    )


def column(ref: str, name: str, unit: str, thresholds: Steps | None = None) -> dict[str, object]:
    """A table override: show query `ref`'s value column as `name` with a unit (and coloured cells)."""
    properties: list[dict[str, object]] = [
        {"id": "displayName", "value": name},
        {"id": "unit", "value": unit},
    ]
    if thresholds is not None:
        properties += [
            {"id": "thresholds", "value": {"mode": "absolute", "steps": thresholds}},
            {"id": "custom.cellOptions", "value": {"type": "color-text"}},
        ]
    return {"matcher": {"id": "byName", "options": f"Value #{ref}"}, "properties": properties}


def table(
    title: str,
    *targets: Target,
    description: str,
    columns: Iterable[dict[str, object]],
    hide: Iterable[str] = (),
    unit: str = NONE,
    w: int = 24,
    h: int = 8,
    links: Iterable[dict[str, object]] = (),
    row_links: Iterable[dict[str, object]] = (),
    no_data: str | None = None,
) -> Table:
    """A table of instant queries merged on their labels; `columns` name and unit the value columns."""
    hidden = {"Time": True, **{name: True for name in hide}}
    overrides = list(columns)
    if row_links:
        # Any cell links to the row's pod: put the link on every field.
        overrides.append(
            {
                "matcher": {"id": "byRegexp", "options": ".*"},
                "properties": [{"id": "links", "value": list(row_links)}],
            }
        )
    return Table(
        title=title,
        description=description,
        dataSource=DATASOURCE,
        targets=_ref_ids(targets),
        unit=unit,
        thresholds=NEUTRAL,
        overrides=overrides,
        filterable=True,
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": hidden, "indexByName": {}, "renameByName": {}}},
        ],
        links=list(links),
        maxDataPoints=None,
        gridPos=_size(w, h),
        extraJson=_field_defaults(noValue=no_data),
    )


def annotation(
    name: str,
    expr: str,
    *,
    title: str,
    text: str,
    color: str,
    tags: Iterable[str] = (),
    value_is_time: bool = False,
) -> dict[str, object]:
    """A Prometheus annotation on the dashboard's time axis: an event wherever the query returns a value
    above zero (consecutive steps make one region), titled and described from its labels (`{{label}}`).
    With `value_is_time` the value is the event's time in milliseconds instead (a creation timestamp)."""
    return {
        "name": name,
        "datasource": DATASOURCE,
        "enable": True,
        "hide": False,
        "iconColor": color,
        "expr": textwrap.dedent(expr).strip(),
        "step": "1m",
        "titleFormat": title,
        "textFormat": text,
        "tagKeys": ",".join(tags),
        "useValueForTime": value_is_time,
    }


def section(title: str) -> RowPanel:
    """A full-width, expanded row header that groups the panels below it."""
    return RowPanel(title=title, gridPos=GridPos(h=1, w=WIDTH, x=0, y=0))


def collapsed_section(title: str, panels: Sequence[Panel]) -> RowPanel:
    """A collapsed row holding `panels`: they query nothing until the row is opened."""
    return RowPanel(title=title, gridPos=GridPos(h=1, w=WIDTH, x=0, y=0), collapsed=True, panels=list(panels))


def repeated_section(title: str, variable: str, panels: Sequence[Panel], no_data: str | None = None) -> RowPanel:
    """A collapsed row holding `panels`, repeated once per value of `variable` (a hidden variable whose
    values exist only where a feature is in use). Its panels query nothing until the row is opened.

    Grafana draws a repeated row once even when its variable has no value (over a placeholder whose value
    is empty and whose text is "None"), so the title should carry the variable's text (`${var:text}`): it
    then says the feature is not in use. `no_data` is what its panels show instead of "No data"."""
    if no_data is not None:
        panels = [_no_data(panel, no_data) for panel in panels]
    return RowPanel(
        title=title,
        gridPos=GridPos(h=1, w=WIDTH, x=0, y=0),
        collapsed=True,
        panels=list(panels),
        repeat=Repeat(variable=variable),
    )


def _no_data(panel: Panel, text: str) -> Panel:
    extra = dict(panel.extraJson or {})
    field = dict(extra.get("fieldConfig") or {})
    field["defaults"] = {**dict(field.get("defaults") or {}), "noValue": text}
    return attr.evolve(panel, extraJson={**extra, "fieldConfig": field})


def _place(panels: Sequence[Panel], y: int) -> tuple[list[Panel], int]:
    """Panels left to right from line `y`, wrapping at 24 columns; a row header always starts a new line
    and a collapsed row's panels are placed below it, as Grafana shows them when it is opened. Returns
    the panels and the next free line."""
    placed: list[Panel] = []
    x = line_height = 0
    for panel in panels:
        pos = panel.gridPos
        if isinstance(panel, RowPanel) or x + pos.w > WIDTH:
            y += line_height
            x = line_height = 0
        if isinstance(panel, RowPanel):
            inside, _ = _place(panel.panels, y + pos.h)
            placed.append(attr.evolve(panel, gridPos=GridPos(h=pos.h, w=pos.w, x=0, y=y), panels=inside))
            y += pos.h
            continue
        placed.append(attr.evolve(panel, gridPos=GridPos(h=pos.h, w=pos.w, x=x, y=y)))
        x += pos.w
        line_height = max(line_height, pos.h)
    return placed, y + line_height


def layout(panels: Sequence[Panel]) -> list[Panel]:
    """Place panels left to right, wrapping at 24 columns; a row header always starts a new line."""
    return _place(panels, 0)[0]
