"""vmalert files: the Prometheus groups with rewritten expressions, accepted by the real `vmalert -dryRun`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from obspack.metricsql import rewrite
from obspack.render import thanos, vmalert
from obspack.render.files import ALERTS_FILE, RECORDING_FILE
from obspack.rules.model import RuleGroup
from tests.support.chains import Chains
from tests.support.packs import CONFIGS, pack, render
from tests.support.tools import require_tool

PAIRS = {RECORDING_FILE: vmalert.RECORDING_FILE, ALERTS_FILE: vmalert.ALERTS_FILE}


@pytest.fixture(params=sorted(CONFIGS))
def rendered(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return render(request.param, tmp_path)


def _dry_run(*files: Path) -> subprocess.CompletedProcess[str]:
    rules = [f"-rule={f}" for f in files]
    return subprocess.run([require_tool("vmalert"), "-dryRun", *rules], capture_output=True, text=True)


def test_vmalert_dry_run_accepts_every_vmalert_file(rendered: Path) -> None:
    done = _dry_run(*(rendered / f for f in PAIRS.values()))
    assert done.returncode == 0, done.stdout + done.stderr


def test_vmalert_dry_run_rejects_what_it_does_not_know(rendered: Path) -> None:
    done = _dry_run(rendered / thanos.ALERTS_FILE)
    assert done.returncode != 0 and thanos.FIELD in done.stdout + done.stderr


def test_only_the_expressions_differ_and_each_is_the_rewrite_of_the_promql(rendered: Path) -> None:
    for prometheus_file, vmalert_file in PAIRS.items():
        promql = yaml.safe_load((rendered / prometheus_file).read_text())
        metricsql = yaml.safe_load((rendered / vmalert_file).read_text())
        for p_group, m_group in zip(promql["groups"], metricsql["groups"], strict=True):
            for p_rule, m_rule in zip(p_group.pop("rules"), m_group.pop("rules"), strict=True):
                assert m_rule.pop("expr") == rewrite(p_rule["expr"])
                p_rule.pop("expr")
                assert m_rule == p_rule
            assert m_group == p_group
    assert "increase_prometheus(" in (rendered / vmalert.ALERTS_FILE).read_text()
    assert "increase(" not in (rendered / vmalert.ALERTS_FILE).read_text()


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_on_vmalert_every_record_read_is_a_hop(config: str) -> None:
    """vmalert writes records through remote write, asynchronously: a rule does not see a record made
    earlier in its own group at the same evaluation (docs/engines.md, "Timing on vmalert"). Counted
    that way, VLLMHostMemoryNearLimit is three evaluations deep; VLLMErrorBudgetBurn, the GPU alert and the
    autoscaling alerts that read the vLLM pods two (the attribution group records the pods with their
    models first); the cost tickets five each, over windows of a day and a week."""
    p = pack(config)
    alone = [RuleGroup(f"{g.name}#{i}", (r,)) for g in p.recording_groups + p.alert_groups for i, r in enumerate(g.rules)]
    on_prometheus, on_vmalert = Chains([*p.recording_groups, *p.alert_groups]), Chains(alone)
    alerts = [r.alert for g in p.alert_groups for r in g.rules]  # type: ignore[union-attr]
    deeper = {a: on_vmalert.of(a) for a in alerts if on_vmalert.of(a) > on_prometheus.of(a)}
    expected = {
        "VLLMHostMemoryNearLimit": 3, "VLLMErrorBudgetBurn": 2, "VLLMGPUMemoryNearFull": 2, "VLLMAutoscalerScaleUpBlocked": 2,
        "VLLMAutoscalerSignalMissing": 2, "VLLMAutoscalerThrashing": 2, "VLLMGPUsMostlyIdle": 5, "VLLMCostPerMillionTokensRising": 5,
    }  # fmt: skip
    assert deeper == expected, deeper  # not VLLMAutoscalerMaxedOut
