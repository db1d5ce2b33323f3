"""A loaded rule group against the rendered one, rule by rule: one alert name with a rule per window pair,
and one record with a rule per SLO, are matched by name and static labels, not by name alone."""

from __future__ import annotations

import copy
from typing import Any

import promql_parser

from obspack.config import ObspackConfig
from obspack.doctor.deployed import compare
from obspack.pack import build
from obspack.rules.model import RuleGroup

PACK = build(ObspackConfig())
BURN = next(
    g for g in PACK.alert_groups if any(getattr(r, "alert", "") == "VLLMErrorBudgetBurn" for r in g.rules)
)
TTFT = next(g for g in PACK.recording_groups if g.name == "obspack-slo-time-to-first-token.rules")
AVAILABILITY = next(g for g in PACK.recording_groups if g.name == "obspack-slo-availability.rules")


def as_loaded(group: RuleGroup) -> dict[str, Any]:
    """The group as /api/v1/rules lists it."""
    rules = []
    for rule in (r.to_dict() for r in group.rules):
        alerting = "alert" in rule
        listed = {
            "name": rule.get("alert") or rule["record"],
            "query": rule["expr"],
            "labels": rule.get("labels", {}),
        }
        if alerting:
            seconds = promql_parser.parse_duration(rule["for"]).total_seconds() if "for" in rule else 0
            listed |= {"duration": seconds, "annotations": rule["annotations"]}
        rules.append({**listed, "type": "alerting" if alerting else "recording"})
    return {"name": group.name, "rules": rules}


def test_rules_of_one_name_are_told_apart_by_their_labels() -> None:
    assert [r.alert for r in BURN.rules].count("VLLMErrorBudgetBurn") == 4
    assert compare(BURN, as_loaded(BURN)) == ()
    assert compare(TTFT, as_loaded(TTFT)) == ()


def test_a_changed_rule_of_several_is_named_by_its_labels() -> None:
    loaded = as_loaded(BURN)
    slow_page = next(r for r in loaded["rules"] if r["labels"].get("long") == "6h")
    slow_page["duration"] = 60
    assert compare(BURN, loaded) == (
        'VLLMErrorBudgetBurn{long="6h", severity="critical", short="30m"} differs in for',
    )


def test_a_rule_whose_labels_changed_differs_in_labels() -> None:
    loaded = as_loaded(BURN)
    ticket = next(r for r in loaded["rules"] if r["labels"].get("long") == "3d")
    ticket["labels"] = {**ticket["labels"], "severity": "info"}
    assert compare(BURN, loaded) == (
        'VLLMErrorBudgetBurn{long="3d", severity="warning", short="6h"} differs in labels',
    )


def test_missing_and_reordered_rules() -> None:
    loaded = as_loaded(TTFT)
    assert compare(TTFT, {**loaded, "rules": loaded["rules"][::-1]}) == ("its rules are in another order",)
    burns = as_loaded(BURN)
    without_fast_page = [r for r in burns["rules"] if r["labels"].get("long") != "1h"]
    assert compare(BURN, {**burns, "rules": without_fast_page}) == (
        'VLLMErrorBudgetBurn{long="1h", severity="critical", short="5m"} is not loaded',
    )
    # a record's only rule on each side is compared, whatever its labels: here edited into another SLO's
    other = copy.deepcopy(as_loaded(AVAILABILITY)["rules"][0])
    assert compare(TTFT, {**loaded, "rules": [other, *loaded["rules"][1:]]}) == (
        "namespace_model_slo:vllm_slo_errors:rate5m differs in query, labels",
    )
