"""A dashboard linter for obspack's Grafana JSON models: each check returns readable problem strings.

It checks what Grafana cannot check at import and what on-call needs: every query on the datasource
variable, rates over `$__rate_interval`, a unit, a description and thresholds on every panel, unique
panel ids, the stable uid, no empty or unparsable queries, modern panel types only, a sane grid; and the
same query checks on annotation queries, each with a unique name and a title.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import promql_parser

from obspack import conventions as c
from obspack.promql import grafana_to_promql

Model = dict[str, Any]

DATASOURCE_UID = "${datasource}"
MODERN_PANELS = {"timeseries", "stat", "gauge", "bargauge", "table", "heatmap", "row"}
REQUIRED_VARIABLES = ("datasource", "cluster", "namespace", "model", "pod")
MIN_DESCRIPTION = 60  # long enough to say what the panel shows and what to do
MIN_SCHEMA_VERSION = 36  # datasource references as objects
_RANGE = re.compile(r"\[([^\]]*)\]")


def panels(model: Model) -> Iterator[Model]:
    """Every panel, including those nested in collapsed rows."""
    for panel in model.get("panels", []):
        yield panel
        yield from panel.get("panels", []) or []


def fill(expr: str, values: dict[str, str]) -> str:
    """A query as Grafana sends it: each `$name` in `values` replaced by its value (variables, and macros
    by their name without the `$`: `__rate_interval`, `__interval`); any other stays as it is."""
    return re.sub(r"\$([A-Za-z_]\w*)", lambda m: values.get(m.group(1), m.group(0)), expr)


def panel_queries(model: Model, title: str, values: dict[str, str]) -> list[str]:
    """The queries of the panel titled `title`, filled with `values` (`fill`)."""
    panel = next(p for p in panels(model) if p["title"] == title)
    return [fill(t["expr"], values) for t in panel["targets"]]


def _where(panel: Model) -> str:
    return f"panel {panel.get('id')} {panel.get('title')!r}"


def check_identity(name: str, model: Model) -> list[str]:
    problems = []
    if model.get("uid") != c.dashboard_uid(name):
        problems.append(f"uid {model.get('uid')!r} is not the stable {c.dashboard_uid(name)!r}")
    if model.get("title") != c.DASHBOARDS.get(name):
        problems.append(f"title {model.get('title')!r} is not {c.DASHBOARDS.get(name)!r}")
    if not isinstance(model.get("schemaVersion"), int) or model["schemaVersion"] < MIN_SCHEMA_VERSION:
        problems.append(f"schemaVersion {model.get('schemaVersion')} is older than {MIN_SCHEMA_VERSION}")
    if model.get("rows"):
        problems.append("uses the legacy rows API; put panels (and row panels) in `panels`")
    return problems


def check_variables(model: Model) -> list[str]:
    problems = []
    variables = {v.get("name"): v for v in model.get("templating", {}).get("list", [])}
    missing = [name for name in REQUIRED_VARIABLES if name not in variables]
    if missing:
        problems.append(f"missing variables {missing}")
    ds = variables.get("datasource", {})
    if ds and (ds.get("type") != "datasource" or ds.get("query") != "prometheus"):
        problems.append("the datasource variable must be of type datasource, query prometheus")
    for name, variable in variables.items():
        if (
            variable.get("type") == "query"
            and (variable.get("datasource") or {}).get("uid") != DATASOURCE_UID
        ):
            problems.append(f"variable {name} does not query the datasource variable")
    return problems


def _panel_unit(panel: Model) -> str:
    return ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("unit") or ""


def _panel_steps(panel: Model) -> list[Any]:
    thresholds = ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("thresholds") or {}
    return thresholds.get("steps") or []


def check_target(panel: Model, target: Model) -> list[str]:
    where = f"{_where(panel)} target {target.get('refId')}"
    expr = (target.get("expr") or "").strip()
    if not expr:
        return [f"{where}: empty query"]
    problems = []
    if (target.get("datasource") or {}).get("uid") != DATASOURCE_UID:
        problems.append(f"{where}: does not use the datasource variable")
    for window in _RANGE.findall(expr):
        allowed = {"$__rate_interval"} | ({"$__range"} if target.get("instant") else set())
        if window not in allowed:
            problems.append(f"{where}: range [{window}] should be [$__rate_interval]")
    if "$cluster" not in expr:
        problems.append(f"{where}: not filtered by $cluster")
    try:
        promql_parser.parse(grafana_to_promql(expr))
    except Exception as e:  # noqa: BLE001 - the parser raises bare ValueErrors
        problems.append(f"{where}: does not parse: {e}")
    return problems


def check_panel(panel: Model) -> list[str]:
    where = _where(panel)
    kind = panel.get("type")
    if kind not in MODERN_PANELS:
        return [f"{where}: panel type {kind!r} is not one of {sorted(MODERN_PANELS)}"]
    if kind == "row":
        return []
    problems = []
    if len((panel.get("description") or "").strip()) < MIN_DESCRIPTION:
        problems.append(f"{where}: description missing or too short to say what to do")
    if not _panel_unit(panel):
        problems.append(f"{where}: no unit")
    if not _panel_steps(panel):
        problems.append(f"{where}: no thresholds")
    if (panel.get("datasource") or {}).get("uid") != DATASOURCE_UID:
        problems.append(f"{where}: panel datasource is not the datasource variable")
    targets = panel.get("targets") or []
    if not targets:
        problems.append(f"{where}: no queries")
    ref_ids = [t.get("refId") for t in targets]
    if len(set(ref_ids)) != len(ref_ids) or not all(ref_ids):
        problems.append(f"{where}: refIds missing or repeated: {ref_ids}")
    for target in targets:
        problems += check_target(panel, target)
    return problems


def check_grid(model: Model) -> list[str]:
    problems = []
    taken: dict[tuple[int, int], str] = {}
    for panel in model.get("panels", []):
        pos = panel.get("gridPos") or {}
        x, y, w, h = (pos.get(k) for k in ("x", "y", "w", "h"))
        if not all(isinstance(v, int) for v in (x, y, w, h)) or x < 0 or w <= 0 or h <= 0 or x + w > 24:
            problems.append(f"{_where(panel)}: bad gridPos {pos}")
            continue
        for cell in ((cx, cy) for cx in range(x, x + w) for cy in range(y, y + h)):
            if cell in taken:
                problems.append(f"{_where(panel)}: overlaps {taken[cell]}")
                break
            taken[cell] = _where(panel)
    return problems


def check_ids(model: Model) -> list[str]:
    ids = [p.get("id") for p in panels(model)]
    if not all(isinstance(i, int) for i in ids):
        return [f"panels without an integer id: {ids}"]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    return [f"panel ids repeated: {repeated}"] if repeated else []


def check_titles(model: Model) -> list[str]:
    """Titles name panels in reviews, links and test exemptions, so they are unique per dashboard."""
    titles = [p.get("title") for p in panels(model) if p.get("type") != "row"]
    repeated = sorted({t for t in titles if titles.count(t) > 1})
    return [f"panel titles repeated: {repeated}"] if repeated else []


def annotations(model: Model) -> list[Model]:
    """The dashboard's annotation queries (Grafana's built-in one left out)."""
    return [a for a in (model.get("annotations") or {}).get("list", []) if not a.get("builtIn")]


def check_annotations(model: Model) -> list[str]:
    """Annotation queries get the checks of panel queries (datasource variable, $cluster, ranges, parsing),
    a unique name, a title, and a minimum step."""
    problems = []
    names = [a.get("name") for a in annotations(model)]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(f"annotation names repeated: {repeated}")
    for a in annotations(model):
        where = {"id": "annotation", "title": a.get("name")}
        target = {"refId": "Anno", "expr": a.get("expr"), "datasource": a.get("datasource")}
        problems += check_target(where, target)
        if not a.get("titleFormat"):
            problems.append(f"annotation {a.get('name')!r}: no title")
        if not a.get("step"):
            problems.append(f"annotation {a.get('name')!r}: no step")
    return problems


def queries(model: Model) -> Iterator[tuple[str, str]]:
    """(where, expr) of every panel query and annotation query."""
    for panel in panels(model):
        for target in panel.get("targets") or []:
            yield f"{panel.get('title')} [{target.get('refId')}]", target.get("expr") or ""
    for a in annotations(model):
        yield f"annotation {a.get('name')}", a.get("expr") or ""


def lint(name: str, model: Model) -> list[str]:
    """Every problem of one dashboard; empty when it passes."""
    problems = check_identity(name, model) + check_variables(model) + check_ids(model) + check_grid(model)
    problems += check_titles(model) + check_annotations(model)
    for panel in panels(model):
        problems += check_panel(panel)
    return problems
