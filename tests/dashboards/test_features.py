"""The fleet page's feature rows: collapsed, each repeated over a hidden variable that counts the engines
using its feature from that feature's own series. Grafana still draws a row whose variable lists nothing,
once, over a placeholder whose value is "" and whose text is "None" (RowRepeaterBehavior in Grafana 11 and
12, the older renderer's "None" option alike): the title reads the variable's text, so a fleet without
the feature shows one closed row titled "... (engines using it: None)", and its panels say why they are
empty instead of "No data"."""

from __future__ import annotations

import re
from typing import Any

import pytest

from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from obspack.promql import metric_names
from tests.dashboards.lint import lint

FLEET = dict(all_dashboards(ObspackConfig()))["vllm-fleet"]
VARIABLES = {v["name"]: v for v in FLEET["templating"]["list"]}
ROWS = {row["repeat"]: row for row in FLEET["panels"] if row["type"] == "row" and row.get("repeat")}


def grafana_values(variable: dict[str, Any], results: list[tuple[dict[str, str], float]]) -> list[str]:
    """What Grafana lists for a query_result variable: each result as `name{labels} value timestamp`,
    through the variable's regex (its first group), without repeats."""
    pattern = re.fullmatch(r"/(.*)/", variable["regex"])
    assert pattern, variable["regex"]
    values: list[str] = []
    for labels, value in results:
        name = labels.get("__name__", "")
        text = name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items() if k != "__name__") + "}"
        found = re.search(pattern.group(1), f"{text} {value:g} 1700000000000")
        if found and found.group(1) not in values:
            values.append(found.group(1))
    return values


def test_every_feature_has_a_collapsed_row_repeated_over_its_hidden_variable() -> None:
    assert set(ROWS) == {feature.key for feature in f.FEATURES}
    for feature in f.FEATURES:
        row, variable = ROWS[feature.key], VARIABLES[feature.key]
        assert row["collapsed"] and row["panels"], feature.key
        assert f"${{{feature.key}:text}}" in row["title"], "the title says how many engines use it, or None"
        assert variable["hide"] == 2 and variable["type"] == "query"
        assert not variable["includeAll"] and not variable["multi"], "one value at most: the row is drawn once"
        assert variable["query"].startswith("query_result(count(") and "$__range" in variable["query"]
        assert '$cluster"' in variable["query"] and '$namespace"' in variable["query"]


def test_each_variable_counts_engines_from_its_own_feature_series_only() -> None:
    for feature in f.FEATURES:
        query = VARIABLES[feature.key]["query"]
        read = metric_names(query.removeprefix("query_result(").removesuffix(")"))
        assert read and read <= set(feature.markers), (feature.key, read)


def test_the_variable_lists_the_count_when_engines_use_the_feature_and_nothing_otherwise() -> None:
    variable = VARIABLES[f.SPEC_DECODE.key]
    assert grafana_values(variable, [({}, 12)]) == ["12"]
    assert grafana_values(variable, []) == []


def grafana_row_title(row: dict[str, Any], listed: list[str]) -> str:
    """A repeated row's title as Grafana shows it for its first value; with none listed, over the
    placeholder (value "", text "None"). `$var` reads the value, `${var:text}` the text."""
    value, text = (listed[0], listed[0]) if listed else ("", "None")
    title = re.sub(r"\$\{\w+:text\}", text, row["title"])
    return re.sub(r"\$\{?\w+\}?", value, title)


def test_a_row_reads_as_not_in_use_when_no_engine_uses_the_feature() -> None:
    titles = {key: grafana_row_title(row, []) for key, row in ROWS.items()}
    assert titles[f.SPEC_DECODE.key] == "Speculative decoding (engines using it: None)"
    assert titles[f.LORA.key] == "LoRA adapters (pods using it: None)"
    assert all(not t.endswith(": )") for t in titles.values()), titles
    assert grafana_row_title(ROWS[f.SPEC_DECODE.key], ["12"]) == "Speculative decoding (engines using it: 12)"
    # the bare variable would read its empty value: what Grafana showed before
    assert grafana_row_title({"title": "Speculative decoding (engines: $spec_decode)"}, []) == "Speculative decoding (engines: )"


@pytest.mark.parametrize("feature", f.FEATURES, ids=lambda feature: feature.key)
def test_an_empty_feature_panel_says_why_instead_of_no_data(feature: f.Feature) -> None:
    for panel in ROWS[feature.key]["panels"]:
        shown = panel["fieldConfig"]["defaults"]["noValue"]
        assert shown == (
            f"No data: nothing in the selection reports this series of {feature.title} (the row's title counts its users)"
        ), panel["title"]


@pytest.mark.parametrize("feature", f.FEATURES, ids=lambda feature: feature.key)
def test_panels_of_a_feature_row_read_only_engine_series_and_pass_the_linter(feature: f.Feature) -> None:
    """Feature panels never count production-stack's router copies: every vLLM selector requires a
    model_name, except LoRA's info series, which have none (and which the router does not copy)."""
    row = ROWS[feature.key]
    for panel in row["panels"]:
        for target in panel["targets"]:
            for name in metric_names(target["expr"]):
                if name.startswith("vllm:") and name != f.LORA_INFO:
                    assert re.search(re.escape(name) + r'\{[^}]*model_name!=""', target["expr"]), (panel["title"], name)
    assert lint("vllm-fleet", FLEET) == []
