"""Rendered rules through the real promtool: check rules, and the rendered unit tests of every alert."""

import subprocess
from pathlib import Path

import promql_parser
import pytest
import yaml

from obspack.config import ObspackConfig, load_config
from obspack.demo.stack import E2E_CONFIG
from obspack.pack import build
from obspack.pack.shipped_tests.alerts import rule_tests
from obspack.render.files import ALERTS_FILE, PROMETHEUS_RULE_FILE, RECORDING_FILE, pack_files
from obspack.rules.alerts import all_alerts
from obspack.rules.alerts.slo import ALERT as SLO_ALERT
from tests.support.needed import needed_only
from tests.support.packs import CONFIGS, files, render, write_files
from tests.support.tools import require_tool


def render_named(name: str, tmp_path: Path) -> Path:
    """The pack of a test config (tests/support/packs.CONFIGS), or of "e2e": the demo's config (scrapes and
    evaluations every 5 s, `for` of seconds, short windows)."""
    if name != "e2e":
        return render(name, tmp_path)
    config = tmp_path / "e2e.yaml"
    config.write_text(E2E_CONFIG, encoding="utf-8")
    return write_files(pack_files(build(load_config(config))), tmp_path)


@pytest.fixture(params=[*sorted(CONFIGS), "e2e"])
def rendered(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return render_named(request.param, tmp_path)


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("promtool"), *args], capture_output=True, text=True, cwd=cwd)


def test_rule_files_pass_promtool_check(rendered: Path) -> None:
    done = promtool("check", "rules", str(rendered / RECORDING_FILE), str(rendered / ALERTS_FILE))
    assert done.returncode == 0, done.stdout + done.stderr


def test_prometheusrule_spec_passes_promtool_and_the_crd_schema(rendered: Path) -> None:
    from cloudcoil.models.prometheus_operator import v1

    doc = yaml.safe_load((rendered / PROMETHEUS_RULE_FILE).read_text())
    v1.PrometheusRule.model_validate(doc)
    spec = rendered / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc["spec"]))
    done = promtool("check", "rules", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    plain = yaml.safe_load((rendered / RECORDING_FILE).read_text())["groups"] + yaml.safe_load(
        (rendered / ALERTS_FILE).read_text()
    )["groups"]
    assert doc["spec"]["groups"] == plain, "the PrometheusRule carries exactly the plain rule files' groups"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rendered_unit_tests_pass(name: str, tmp_path: Path) -> None:
    """Every shipped file of the defaults and the custom config (the demo's config runs in both group orders
    in test_promtool_order.py). The custom config's SLO file is left to tests/rules/test_slo.py, which runs
    the SLO tests in both orders and checks each SLO's cases for every config: half of this test's time.
    The defaults' files run whole, as users run them; the custom config's with the groups each file's checks
    need (tests/support/needed.py: the same results in a quarter of the time)."""
    rendered = render_named(name, tmp_path)
    files = sorted((rendered / "tests").glob("*_test.yaml"))
    slos = "VLLMErrorBudgetBurn" in (rendered / ALERTS_FILE).read_text()
    assert [f.name for f in files] == [
        "autoscaling_test.yaml",
        "cost-weekly_test.yaml",
        "cost_test.yaml",
        "disaggregation_test.yaml",
        "exporter_test.yaml",
        "gateway_test.yaml",
        "memory-planes_test.yaml",
        *(["slo_test.yaml"] if slos else []),
        "vllm-engine_test.yaml",
        "vllm-features_test.yaml",
    ]
    run = [f.name for f in files if name == "defaults" or f.name != "slo_test.yaml"]
    where = rendered / "tests" if name == "defaults" else needed_only(rendered / "tests", run, tmp_path / "needed")
    done = promtool("test", "rules", *run, cwd=where)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(run)


def test_unit_tests_fail_when_a_threshold_is_wrong(tmp_path: Path) -> None:
    """The rendered tests can fail: loosen one alert's threshold and promtool must report it."""
    rendered = dict(files("defaults"))
    rendered[ALERTS_FILE] = rendered[ALERTS_FILE].replace(
        'vllm:gpu_cache_usage_perc{model_name!=""}) > 0.9\n', 'vllm:gpu_cache_usage_perc{model_name!=""}) > 0.5\n'
    )
    assert "> 0.5" in rendered[ALERTS_FILE]
    write_files(rendered, tmp_path)
    where = needed_only(tmp_path / "tests", ["vllm-engine_test.yaml"], tmp_path / "needed")
    done = promtool("test", "rules", "vllm-engine_test.yaml", cwd=where)
    assert done.returncode != 0
    assert "VLLMKVCacheUsageHigh" in done.stdout + done.stderr


WHO = ("pod", "horizontalpodautoscaler", "scaledObject", "scaledResource", "model_name", "inference_pool", "namespace")


def test_every_alert_has_a_firing_case_and_a_quiet_neighbour() -> None:
    cfg = ObspackConfig()
    tests = [t for f in rule_tests(cfg)[0].values() for t in f["tests"]]  # type: ignore[union-attr]
    for alert in all_alerts(cfg):
        if alert.alert == SLO_ALERT:
            continue  # per model, not per pod: tests/rules/test_slo.py checks its firing and quiet cases
        mine = [t for t in tests if any(c["alertname"] == alert.alert for c in t["alert_rule_test"])]
        assert mine, f"{alert.alert} has no unit test"
        firing = [c for t in mine for c in t["alert_rule_test"] if c["alertname"] == alert.alert and c.get("exp_alerts")]
        assert firing, f"{alert.alert} has no firing case"
        # what an alert is about: a pod, or for the autoscaler alerts an HPA or a ScaledObject, for the
        # gateway's a pool or an EPP's namespace
        who = next(k for k in WHO if k in firing[0]["exp_alerts"][0]["exp_labels"])
        expected = {a["exp_labels"].get(who) for c in firing for a in c["exp_alerts"]}
        labels = (who, "name") if who == "inference_pool" else (who,)  # pool gauges name the pool in `name`
        inputs = {
            s["series"].split(f'{k}="')[1].split('"')[0]
            for t in mine for s in t["input_series"] for k in labels if f', {k}="' in s["series"] or f'{{{k}="' in s["series"]
        }
        assert inputs - expected, f"{alert.alert} has no quiet neighbour in its incident"


def test_disabled_alerts_have_no_tests_and_every_expression_parses() -> None:
    cfg = load_config(CONFIGS["custom"])
    names = {c["alertname"] for f in rule_tests(cfg)[0].values() for t in f["tests"] for c in t["alert_rule_test"]}  # type: ignore[union-attr]
    assert "VLLMTargetDown" not in names and "VLLMKVCacheUsageHigh" in names
    pack = build(cfg)
    for group in pack.recording_groups + pack.alert_groups:
        for rule in group.rules:
            promql_parser.parse(rule.expr)


def test_alert_catalogue_contract() -> None:
    """Names, severities and the labels each alert keeps (its outer `by`) are what users route on."""
    expected = {
        "VLLMHostMemoryNearLimit": "warning", "VLLMContainerOOMKilled": "critical", "VLLMGPUMemoryNearFull": "warning",
        "VLLMKVCacheUsageHigh": "warning", "VLLMKVCacheUsageCritical": "critical", "VLLMRequestQueueBacklog": "warning",
        "VLLMZeroThroughput": "critical", "VLLMTargetDown": "critical", "VLLMRequestPreemptions": "warning",
        "VLLMPrefixCacheHitRateLow": "info", "VLLMKVCacheFragmentationHigh": "warning",
        "VLLMCUDAAllocatorFragmentationHigh": "warning", "ObspackExporterTargetDown": "warning",
        "VLLMContainerRestarted": "warning", "VLLMKVTransferFailures": "warning", "VLLMAdmissionRejections": "warning",
        "VLLMPrefillDecodeImbalance": "warning",
        "VLLMKVOffloadAllocationFailures": "warning", "VLLMSpecDecodeAcceptanceLow": "info",
        "VLLMAutoscalerThrashing": "warning", "VLLMAutoscalerMaxedOut": "warning",
        "VLLMAutoscalerScaleUpBlocked": "warning", "VLLMAutoscalerSignalMissing": "warning",
        "VLLMGPUsMostlyIdle": "info", "VLLMCostPerMillionTokensRising": "info",
        "InferenceGatewayPickerDown": "critical", "InferencePoolNoReadyEndpoints": "critical",
        "InferencePoolSaturated": "warning", "InferenceGatewayFlowControlRejections": "warning",
        "InferenceGatewaySchedulingLatencyHigh": "warning",
    }
    got = {a.alert: a.severity.value for a in all_alerts(ObspackConfig()) if a.alert != SLO_ALERT}
    assert got == expected  # VLLMErrorBudgetBurn's contract: tests/rules/test_slo.py
    for alert in all_alerts(ObspackConfig()):
        annotations = alert.to_dict()["annotations"]
        assert alert.summary.endswith(".") and (alert.summary[0].isupper() or alert.summary.startswith("vLLM"))
        assert "{{" not in alert.summary
        who = {SLO_ALERT: "model_name", "VLLMAutoscalerSignalMissing": "namespace", "VLLMGPUsMostlyIdle": "model_name",
               "VLLMCostPerMillionTokensRising": "model_name", "VLLMPrefillDecodeImbalance": "model_name"}.get(alert.alert, "pod")
        if alert.alert in ("VLLMAutoscalerThrashing", "VLLMAutoscalerMaxedOut"):
            who = "horizontalpodautoscaler"
        if alert.alert in ("InferenceGatewayPickerDown", "InferenceGatewaySchedulingLatencyHigh"):
            who = "job"
        elif alert.alert.startswith("InferencePool") or alert.alert == "InferenceGatewayFlowControlRejections":
            who = "inference_pool"
        assert f"{{{{ $labels.{who} }}}}" in alert.description
        assert {"summary", "description", "runbook_url", "dashboard_url", "triage"} <= set(annotations)
