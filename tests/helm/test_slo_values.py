"""SLO values of the chart: objectives and thresholds reach the rules as `obspack render` writes them, the
switches remove rules, and the schema accepts only bucket bounds vLLM exports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from obspack.pack import build
from obspack.pack.chart import config_from_values
from obspack.render.files import prometheus_rule
from tests.helm.conftest import Helm, merged_values, one


def _groups(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {g["name"]: g["rules"] for g in one(docs, "PrometheusRule")["spec"]["groups"]}


@pytest.mark.parametrize(
    "settings",
    [
        {
            "time_to_first_token": {"threshold": 10, "objective": 0.9},
            "inter_token_latency": {"threshold": 0.025},
        },
        {"availability": {"enabled": False}, "labels": {"team": "serving"}},
        {"enabled": False},
    ],
    ids=["thresholds", "one-off", "all-off"],
)
def test_slo_values_render_what_obspack_renders(helm: Helm, settings: dict[str, Any]) -> None:
    docs = helm.template(extra=("--set-json", f"slos={json.dumps(settings)}"))
    cfg = config_from_values(merged_values({"slos": settings}))
    expected = {g["name"]: g["rules"] for g in prometheus_rule(build(cfg))["spec"]["groups"]}
    assert _groups(docs) == expected
    text = "\n".join(
        f"{r.get('expr', '')}\n{r.get('labels', '')}" for rules in expected.values() for r in rules
    )
    if settings.get("enabled") is False:
        assert not [g for g in expected if g.startswith("obspack-slo")] and "VLLMErrorBudgetBurn" not in text
    if "time_to_first_token" in settings:
        assert 'le=~"10(\\\\.0)?"' in text and 'le="0.025"' in text and "+ 0.9\n" in text


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--set-json", "slos.time_to_first_token.threshold=2"], "slos.time_to_first_token.threshold"),
        (["--set-json", "slos.availability.objective=1"], "slos.availability.objective"),
        (["--set", "slos.availability.threshold=1"], "Additional property threshold is not allowed"),
    ],
)
def test_bad_slo_values_fail_with_a_readable_error(helm: Helm, args: list[str], expected: str) -> None:
    assert expected in helm.template_error(*args)
