"""The SLO rules: the alert contract, the live-timing rule (one group boundary from raw series to the alert),
records per model and never per pod, and the rendered promtool tests in both group orders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import promql_parser
import pytest
import yaml

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig, load_config
from obspack.pack import build
from obspack.pack.shipped_tests.alerts import Builder
from obspack.pack.shipped_tests.slos import FILE, _Predictor, _Suite, counter_values, slo_rule_tests
from obspack.promql import metric_names
from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files
from obspack.rules.alerts import alert_groups, all_alerts
from obspack.rules.alerts.slo import ALERT
from obspack.rules.model import RecordingRule
from obspack.rules.recording import all_recording_groups
from obspack.rules.recording.slo import le_matcher
from tests.support.chains import Chains
from tests.support.packs import files, write_files
from tests.support.tools import require_tool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIGS = {
    "defaults": ObspackConfig(),
    "custom": load_config(FIXTURES / "custom.yaml"),
    "speedup": ObspackConfig.model_validate({"slos": {"speedup": 60}, "rule_interval": "1s"}),
    # four, five and six nines side by side: the SLIs cross their guards at other steps than each other
    "tight": ObspackConfig.model_validate(
        {
            "slos": {
                "availability": {"objective": 0.9999},
                "time_to_first_token": {"objective": 0.99999},
                "inter_token_latency": {"objective": 0.999999},
                "speedup": 60,
            },
            "rule_interval": "1s",
        }
    ),
}


def _slo_groups(cfg: ObspackConfig) -> dict[str, list[RecordingRule]]:
    return {g.name: list(g.rules) for g in all_recording_groups(cfg) if "-slo" in g.name}  # type: ignore[misc]


def test_alert_contract() -> None:
    rules = [a for a in all_alerts(ObspackConfig()) if a.alert == ALERT]
    assert [(dict(r.labels)["long"], dict(r.labels)["short"], r.severity.value, r.for_) for r in rules] == [
        ("1h", "5m", "critical", "2m"),
        ("6h", "30m", "critical", "15m"),
        ("1d", "2h", "warning", "1h"),
        ("3d", "6h", "warning", "3h"),
    ]
    for rule, factor in zip(rules, ("14.4", "6", "3", "1")):
        assert rule.expr.count(f") > {factor}\n") == 2, rule.expr
        annotations = rule.to_dict()["annotations"]
        assert (
            "/d/obspack-vllm-slos/vllm-slos?var-cluster={{ $labels.cluster }}" in annotations["dashboard_url"]
        )
        assert "var-model={{ $labels.model_name }}" in annotations["dashboard_url"]
        assert annotations["runbook_url"] == "runbooks/vllm-error-budget-burn.md"
    # every series the alert returns has the cluster, namespace, model and SLO: the records' labels
    sli = [r for rules in _slo_groups(ObspackConfig()).values() for r in rules if dict(r.labels).get("slo")]
    assert {dict(r.labels)["slo"] for r in sli} == set(slos.SLIS)
    for rule in sli:
        if rule.expr.startswith("sum by"):
            assert rule.expr.startswith("sum by (cluster, namespace, model_name) ("), rule.expr


def test_config_labels_reach_the_alert_and_the_cluster_label_every_rule() -> None:
    cfg = CONFIGS["custom"]
    rules = [a for a in all_alerts(cfg) if a.alert == ALERT]
    assert all(
        dict(r.labels)["slo_owner"] == "serving" and dict(r.labels)["team"] == "ml-platform" for r in rules
    )
    for rules_ in _slo_groups(cfg).values():
        for rule in rules_:
            for clause in re.findall(r"\b(?:by|on) \(([^)]*)\)", rule.expr):
                assert clause.startswith("k8s_cluster"), (rule.record, clause)
            assert "pod" not in re.findall(r"sum by \(([^)]*)\) \(\n", rule.expr)[:1], rule.record


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_one_group_boundary_from_raw_series_to_the_alert(name: str) -> None:
    """Each SLI's base-window records read raw series, or records made by an earlier stage of their own
    group; the alert averages them over its windows itself. So a live Prometheus, which runs every group on
    its own timer, lags the alert by at most one interval behind the raw series. The longer-window and
    period records are for the SLO page: one hop, two for its panels."""
    cfg = CONFIGS[name]
    chains = Chains([*all_recording_groups(cfg), *alert_groups(cfg)])
    assert chains.of(ALERT) == 1
    for group in all_recording_groups(cfg):
        if group.name.startswith(f"{c.GROUP_PREFIX}-slo"):
            # the goodput share (for the cost page) reads the base records too
            expected = 1 if group.name.endswith(("-windows.rules", "-period.rules", "-goodput.rules")) else 0
            assert {chains.of(r.record) for r in group.rules} == {expected}, group.name  # type: ignore[union-attr]
            assert len(group.rules) <= 20, f"{group.name}: over Mimir's default rules per group"


def test_records_are_few_per_model() -> None:
    """Series per cluster, namespace and model: each record name is one series per SLO."""
    names = {r.record for rules in _slo_groups(ObspackConfig()).values() for r in rules} - {c.MODEL_GOODPUT}
    assert len(names) == 3 + 2 + 2 * len(slos.recorded_windows(ObspackConfig())) + 2
    assert len(names) * len(slos.SLIS) == 45


def test_le_matches_both_spellings_of_a_whole_bound() -> None:
    assert le_matcher(1.0) == 'le=~"1(\\\\.0)?"' and le_matcher(2.5) == 'le="2.5"'
    regex = promql_parser.parse(f"x{{{le_matcher(10.0)}}}").matchers.matchers[0].value
    assert [v for v in ("10", "10.0", "100", "1000") if re.fullmatch(regex, v)] == ["10", "10.0"]


def test_counter_notation() -> None:
    assert counter_values([0, 10, 10, 10, 5, 5]) == "0 10+10x2 35+5x1"
    assert counter_values([0, 10, 10, 10, 10], frozenset({2})) == "0 10+10x0 0 10+10x1"


def test_the_model_of_the_rules_refuses_a_check_at_a_threshold() -> None:
    suite = _Suite(ObspackConfig(), Builder(ObspackConfig()))
    sli = suite.slis[0]
    from obspack.pack.shipped_tests.slos import Traffic

    exactly = Traffic.of(200, 600, lambda s: 3 * (1 - sli.objective))  # burns at the ticket factor exactly
    verdict = _Predictor(exactly, sli.objective, sli.min_requests, suite.base).condition(150, suite.pairs[2])
    assert verdict is None




def promtool(tests: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("promtool"), "test", "rules", name], capture_output=True, text=True, cwd=tests
    )


def slo_family_only(rendered: dict[str, str]) -> dict[str, str]:
    """The pack's files with only the SLO family's groups in its rule files and in the SLO tests' order.

    The SLO rules read raw series and each other only (checked here), so their tests mean the same without
    the other groups, which promtool would evaluate at every step for nothing (more than half of the time;
    tests/rules/test_promtool.py runs the whole files)."""
    out, kept, dropped, read = dict(rendered), set(), set(), set()
    for name in (RECORDING_FILE, ALERTS_FILE):
        data = yaml.safe_load(out[name])
        for group in data["groups"]:
            family = "-slo" in group["name"]
            (kept if family else dropped).update(r.get("record") for r in group["rules"])
            if family:
                read |= {m for r in group["rules"] for m in metric_names(r["expr"])}
        data["groups"] = [g for g in data["groups"] if "-slo" in g["name"]]
        out[name] = yaml.safe_dump(data, sort_keys=False)
    assert kept - {None} and not read & (dropped - {None}), read & dropped
    tests = yaml.safe_load(out[f"tests/{FILE}"])
    tests["group_eval_order"] = [g for g in tests["group_eval_order"] if "-slo" in g]
    out[f"tests/{FILE}"] = yaml.safe_dump(tests, sort_keys=False)
    return out


def test_rendered_slo_tests_pass_in_either_group_order(tmp_path: Path) -> None:
    """The sped-up config's SLO tests in the file's own order and with the groups reversed, so nothing
    depends on another group running first at the same time (tests/rules/test_promtool.py runs both orders
    of every other rendered test file for the defaults and the custom config)."""
    tests = write_files(slo_family_only(pack_files(build(CONFIGS["speedup"]))), tmp_path) / "tests"
    data = yaml.safe_load((tests / FILE).read_text())
    data["group_eval_order"] = list(reversed(data["group_eval_order"]))
    (tests / "reversed_test.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    for name in ("reversed_test.yaml", FILE):
        done = promtool(tests, name)
        assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


def test_every_slo_fires_and_stays_quiet_in_the_rendered_tests() -> None:
    for name, cfg in CONFIGS.items():
        cases = slo_rule_tests(cfg)[0][FILE]["tests"]
        assert len(cases) == 7, name
        fired = {
            (a["exp_labels"]["slo"], a["exp_labels"]["long"])
            for case in cases
            for check in case["alert_rule_test"]
            for a in check.get("exp_alerts", [])
        }
        assert fired == {(s, p.long) for s in slos.SLIS for p in slos.window_pairs(cfg)}, name
        quiet = [
            case["name"] for case in cases if not any(ch.get("exp_alerts") for ch in case["alert_rule_test"])
        ]
        assert len(quiet) == 5, (name, quiet)


@pytest.mark.parametrize("objective", [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999, 0.9999999])
@pytest.mark.parametrize("sli", slos.SLIS)
def test_the_slo_tests_are_built_for_any_objective(sli: str, objective: float) -> None:
    """A render of a valid objective never stops on its own tests (99.99% stopped it with an
    AssertionError): each SLI alone at the objective, beside the other two at their defaults."""
    cases = slo_rule_tests(ObspackConfig.model_validate({"slos": {sli: {"objective": objective}}}))[0][FILE]["tests"]
    assert len(cases) == 7 and all(case["alert_rule_test"] for case in cases)
    fired = {(a["exp_labels"]["slo"], a["exp_labels"]["long"]) for case in cases for check in case["alert_rule_test"]
             for a in check.get("exp_alerts", [])}  # fmt: skip
    if objective >= 0.99:  # under about 93%, not even every request bad burns the budget 14.4 times as fast
        assert fired == {(s, p.long) for s in slos.SLIS for p in slos.window_pairs(ObspackConfig())}


def test_rendered_slo_tests_pass_with_tight_objectives(tmp_path: Path) -> None:
    """What the model of the rules expects for 99.99% to 99.9999% objectives is what promtool finds."""
    tests = write_files(slo_family_only(pack_files(build(CONFIGS["tight"]))), tmp_path) / "tests"
    done = promtool(tests, FILE)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


def test_rendered_slo_tests_fail_without_the_guard(tmp_path: Path) -> None:
    rendered = dict(files("defaults"))
    rendered[ALERTS_FILE] = rendered[ALERTS_FILE].replace(f">= {c.SLO_MIN_REQUESTS}", f">= 0 * {c.SLO_MIN_REQUESTS}")
    write_files(slo_family_only(rendered), tmp_path)
    done = promtool(tmp_path / "tests", FILE)
    assert done.returncode != 0 and "low traffic stays quiet" in done.stderr, done.stdout + done.stderr
