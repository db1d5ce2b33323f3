"""The fleet page's feature rows: collapsed, each repeated over a hidden variable that counts the engines
using its feature from that feature's own series, so a fleet without the feature shows one closed row
titled "(engines: None)" and runs none of its queries."""

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
        assert f"${feature.key}" in row["title"], "the title says how many engines use it, or None"
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
