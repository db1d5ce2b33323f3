"""The example Alertmanager config for VLLMErrorBudgetBurn: pages to the pager, tickets to the ticket
receiver (a team's label reaches its pager), grouped per model and SLO; a page mutes the ticket of the
same model and SLO. Routing is checked by the real amtool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from obspack.config import ObspackConfig
from obspack.pack.alertmanager import alertmanager_example
from obspack.render import yamlfmt
from tests.support.tools import amtool_route, require_tool

TEAM = {"slos": {"labels": {"team": "serving"}}}
BURN = ["alertname=VLLMErrorBudgetBurn", "cluster=prod", "namespace=llm", "model_name=m", "slo=availability"]

CASES = [
    ("page to the pager", {}, [*BURN, "severity=critical", "long=1h", "short=5m"], "obspack-pager"),
    ("ticket to tickets, not chat", {}, [*BURN, "severity=warning", "long=1d", "short=2h"], "obspack-ticket"),
    ("a team's page to its pager", TEAM, [*BURN, "severity=critical", "team=serving"], "obspack-team-serving-pager"),
    ("a team's ticket to tickets", TEAM, [*BURN, "severity=warning", "team=serving"], "obspack-ticket"),
    ("other warnings still to chat", {}, ["alertname=VLLMKVCacheUsageHigh", "severity=warning"], "obspack-chat"),
]  # fmt: skip


@pytest.mark.tool
@pytest.mark.parametrize(
    ("settings", "labels", "receiver"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_amtool_routes_burns(tmp_path: Path, settings: dict, labels: list[str], receiver: str) -> None:
    amtool = require_tool("amtool")
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yamlfmt.dump(alertmanager_example(ObspackConfig.model_validate(settings))))
    check = subprocess.run([amtool, "check-config", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    amtool_route(amtool, path, receiver, labels)


def test_burns_group_per_model_and_a_page_mutes_the_ticket() -> None:
    config = alertmanager_example(ObspackConfig.model_validate({"cluster_label": "k8s_cluster"}))
    critical, warning = config["route"]["routes"][0]["routes"][:2]
    for route in (critical["routes"][0], warning["routes"][0]):
        assert route["group_by"] == ["alertname", "k8s_cluster", "namespace", "model_name", "slo"]
    burn = [
        r for r in config["inhibit_rules"] if r["source_matchers"][0] == 'alertname="VLLMErrorBudgetBurn"'
    ]
    assert burn == [
        {
            "source_matchers": ['alertname="VLLMErrorBudgetBurn"', 'severity="critical"'],
            "target_matchers": ['alertname="VLLMErrorBudgetBurn"', 'severity="warning"'],
            "equal": ["k8s_cluster", "namespace", "model_name", "slo"],
        }
    ]
    down = next(r for r in config["inhibit_rules"] if r["source_matchers"] == ['alertname="VLLMTargetDown"'])
    assert "VLLMErrorBudgetBurn" not in down["target_matchers"][0], "a burn has no pod to match"


def test_no_slo_no_burn_route() -> None:
    config = alertmanager_example(
        ObspackConfig.model_validate({"slos": {"enabled": False, "labels": {"team": "serving"}}})
    )
    assert "VLLMErrorBudgetBurn" not in yamlfmt.dump(config)
