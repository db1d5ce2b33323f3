"""Configs that used to break the pack, each now rendering a pack that `promtool check rules --lint-fatal`
accepts and whose shipped tests exist and pass, or refused with FILE:LINE: selectors with escapes and raw
strings, selectors that narrow the labels the tests vary, selectors that leave too few values (the render
names each missing test), many per-model SLOs, static labels the rules set themselves, image regexes that
take nothing or everything, the lowest prefix-cache threshold and high traffic floors, a vLLM selector
that requires a model, and saturation thresholds far under and over the default."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from obspack.cli import app
from obspack.config import Alerts, load_config
from obspack.errors import ConfigError
from obspack.pack import build
from obspack.pack.shipped_tests import satisfy
from obspack.pack.shipped_tests.slos import ONE_CLUSTER, slo_rule_tests
from obspack.render import vmalert
from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files
from obspack.render.promtool import check_rules
from tests.support.needed import needed_only
from tests.support.packs import write_files
from tests.support.tools import require_tool

ESCAPED = {
    "vllm": 'pod=~"vllm-\\\\d+", job="a\\"b"',
    "kube_state_metrics": "job=`kube\\state`",
}
# Every label the incidents vary, narrowed by regexes and negations; the SLO section on too.
NARROW = {
    "vllm": 'namespace=~"inference-.*", pod=~"vllm-\\\\d+", job="a\\"b", model_name!~"test-.*"',
    "kube_state_metrics": 'job=`kube\\state`, namespace!="kube-system"',
    "dcgm": 'Hostname=~"gpu-.*"',
    "cadvisor": 'container!="POD", job=~"kubelet|cadvisor"',
}


def _config(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "obspack.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _lint(files: dict[str, str]) -> list[str]:
    return check_rules(require_tool("promtool"), {rel: files[rel] for rel in (RECORDING_FILE, ALERTS_FILE)})


@pytest.mark.tool
def test_escaped_selectors_keep_their_escapes_in_every_engine(tmp_path: Path) -> None:
    files = pack_files(build(load_config(_config(tmp_path, {"selectors": ESCAPED}))))
    assert _lint(files) == []
    for rel in (ALERTS_FILE, vmalert.ALERTS_FILE, vmalert.RECORDING_FILE):
        text = yaml.safe_load(files[rel])
        exprs = "\n".join(r["expr"] for g in text["groups"] for r in g["rules"])
        assert 'pod=~"vllm-\\\\d+"' in exprs and 'job="a\\"b"' in exprs, rel
    # a raw string is written as the double-quoted string with the same value
    exprs = [r["expr"] for g in yaml.safe_load(files[ALERTS_FILE])["groups"] for r in g["rules"]]
    assert any('job="kube\\\\state"' in e for e in exprs) and not any("`" in e for e in exprs)
    out = write_files(files, tmp_path / "pack")
    rules = [f"-rule={out / f}" for f in (vmalert.RECORDING_FILE, vmalert.ALERTS_FILE)]
    done = subprocess.run([require_tool("vmalert"), "-dryRun", *rules], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.tool
def test_shipped_tests_exist_and_pass_when_selectors_narrow_every_varied_label(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, {"selectors": NARROW, "slos": {"enabled": False}}))
    pack = build(cfg)
    assert pack.missing_tests == ()
    files = pack_files(pack)
    assert _lint(files) == []
    tests = sorted(rel for rel in files if rel.startswith("tests/"))
    assert tests == [
        "tests/autoscaling_test.yaml", "tests/cost-weekly_test.yaml", "tests/cost_test.yaml",
        "tests/disaggregation_test.yaml", "tests/exporter_test.yaml", "tests/gateway_test.yaml",
        "tests/memory-planes_test.yaml", "tests/vllm-engine_test.yaml", "tests/vllm-features_test.yaml",
    ]  # fmt: skip
    out = write_files(files, tmp_path / "pack")
    names = [Path(t).name for t in tests]  # each with the groups its checks need (tests/support/needed.py)
    done = subprocess.run(
        [require_tool("promtool"), "test", "rules", *names],
        capture_output=True, text=True, cwd=needed_only(out / "tests", names, tmp_path / "needed"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    # the series really are in the narrowed space: what a selector refuses would make the tests vacuous
    series = [s["series"] for f in tests for t in yaml.safe_load(files[f])["tests"] for s in t["input_series"]]
    vllm = [s for s in series if s.startswith("vllm:")]
    assert vllm and all('job="a\\"b"' in s and 'namespace="inference-' in s and 'pod="vllm-' in s for s in vllm)


def _pages_of_a_shipped_test(tmp_path: Path, settings: dict[str, Any], name: str, alert: str, label: str = "pod") -> set[str]:
    """Render `settings`, check that promtool passes the shipped test file `name` (with the groups its checks
    need), and return the pods (or another `label`'s values) its checks expect `alert` to fire for."""
    files = pack_files(build(load_config(_config(tmp_path, {**settings, "slos": {"enabled": False}}))))
    out = write_files(files, tmp_path / "pack")
    done = subprocess.run([require_tool("promtool"), "test", "rules", name], capture_output=True, text=True,
                          cwd=needed_only(out / "tests", [name], tmp_path / "needed"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return {a["exp_labels"][label] for t in yaml.safe_load(files[f"tests/{name}"])["tests"]
            for check in t.get("alert_rule_test", []) if check["alertname"] == alert
            for a in check.get("exp_alerts", [])}  # fmt: skip


@pytest.mark.tool
@pytest.mark.parametrize("containers", [{"image_regex": ""}, {"image_regex": ".*", "name_regex": "worker"}])
def test_the_memory_plane_tests_follow_what_vllm_containers_takes(tmp_path: Path, containers: dict[str, str]) -> None:
    """An empty image regex (off) and one that takes every image: the shipped tests expect the containers
    the rules take for vLLM, not the ones the defaults take (the envoy and the cache worker fire with `.*`)."""
    fired = _pages_of_a_shipped_test(
        tmp_path, {"vllm_containers": containers}, "memory-planes_test.yaml", "VLLMHostMemoryNearLimit"
    )
    assert fired == ({"llama-0", "llama-lws-0-1", "cache-0-1", "proxy-0"} if "name_regex" in containers
                     else {"llama-0", "llama-lws-0-1"})  # fmt: skip


@pytest.mark.tool
def test_the_prefix_cache_tests_hold_at_the_lowest_threshold(tmp_path: Path) -> None:
    """At a 0.1% threshold (the lowest allowed) the pods of the incident that must fire still hit under it:
    the prefill-and-decode pod's 1% did not, and the shipped test expected a page it could not get (found by
    the config fuzz's long profile)."""
    alert = {"VLLMPrefixCacheHitRateLow": {"ratio": 0.001, "for": "0"}}
    fired = _pages_of_a_shipped_test(tmp_path, {"alerts": alert}, "vllm-engine_test.yaml", "VLLMPrefixCacheHitRateLow")
    assert "llama-decode-1" in fired and not fired & {"ds-7c9f", "llama-decode-0", "llama-nixl-0", "llama-1"}


@pytest.mark.tool
def test_a_vllm_selector_that_requires_a_model_leaves_the_router_copy_out(tmp_path: Path) -> None:
    """production-stack's router re-exports the queue gauges without model_name: a selector that requires
    one leaves the router out, as it would live. The shipped test gave the router a model to fit the
    selector, and then expected no page for what had become an engine with a huge queue (config fuzz)."""
    settings = {"selectors": {"vllm": 'model_name=~"meta-llama/.+"'}}
    fired = _pages_of_a_shipped_test(tmp_path, settings, "vllm-engine_test.yaml", "VLLMRequestQueueBacklog")
    assert {"llama-0", "llama-3"} <= fired and "vllm-router-5f9c" not in fired
    text = (tmp_path / "pack" / "tests" / "vllm-engine_test.yaml").read_text(encoding="utf-8")
    router = [line for line in text.splitlines() if 'pod="vllm-router-5f9c"' in line]
    assert router and not any("model_name" in line for line in router)


@pytest.mark.tool
@pytest.mark.parametrize("settings", [{"min_query_tokens_per_second": 627.17},
                                      {"min_query_tokens_per_second": 1_000_000, "window": "2h"}])  # fmt: skip
def test_the_prefix_cache_tests_hold_at_a_high_traffic_floor(tmp_path: Path, settings: dict[str, Any]) -> None:
    """A rate over the window climbs from a counter's first sample: the incident's traffic was ten times
    the floor, under it for the first minutes of a 30-minute window, so the pods that must fire paged late
    (the config fuzz's long profile found 627 tokens per second)."""
    alert = {"VLLMPrefixCacheHitRateLow": settings}
    fired = _pages_of_a_shipped_test(tmp_path, {"alerts": alert}, "vllm-engine_test.yaml", "VLLMPrefixCacheHitRateLow")
    assert {"llama-0", "llama-2", "llama-5", "llama-8"} <= fired and not fired & {"llama-1", "llama-3", "llama-4"}


@pytest.mark.tool
def test_the_speculative_decoding_tests_hold_at_a_high_draft_floor(tmp_path: Path) -> None:
    """The same climb in the acceptance incident, whose drafts were ten times the floor too."""
    alert = {"VLLMSpecDecodeAcceptanceLow": {"min_draft_tokens_per_second": 50}}
    fired = _pages_of_a_shipped_test(tmp_path, {"alerts": alert}, "vllm-features_test.yaml", "VLLMSpecDecodeAcceptanceLow")
    assert fired == {"llama-0", "llama-3"}


@pytest.mark.tool
@pytest.mark.parametrize("saturation", [1.5475155747106215e-233, 0.05, 100])
def test_the_autoscaler_tests_hold_at_any_saturation_threshold(tmp_path: Path, saturation: float) -> None:
    """The idle model beside a maxed-out autoscaler had its KV cache at a tenth of the target, a signal of
    0.1: over a threshold under 0.1, so the autoscaler that must stay quiet paged (the config fuzz's long
    profile found 1.5e-233). It now idles at a tenth of the threshold as well."""
    alert = {"VLLMAutoscalerMaxedOut": {"saturation": saturation, "for": "0"}}
    fired = _pages_of_a_shipped_test(tmp_path, {"alerts": alert}, "autoscaling_test.yaml", "VLLMAutoscalerMaxedOut",
                                     label="horizontalpodautoscaler")  # fmt: skip
    assert fired == {"keda-hpa-chat"}


@pytest.mark.tool
@pytest.mark.parametrize("settings", [{"reversals": 4.0}, {"reversals": 15}, {"reversals": 100, "window": "4h"},
                                      {"reversals": 3, "for": "1h"}, {"reversals": 1, "window": "2m", "for": "10m"},
                                      {"reversals": 100, "window": "1d"}])  # fmt: skip
def test_the_autoscaler_thrashing_tests_hold_at_any_reversals_the_window_allows(tmp_path: Path, settings: dict[str, Any]) -> None:
    """The incident flipped the replicas every 5 minutes: from 4 reversals on, the first rises left the
    30-minute window before the last fall, and the autoscaler that must page did not (config fuzz). The
    flips now fit the window, up to the most it can hold (a minute per rise and per fall; more is refused).
    And it stopped flapping at the k-th fall, so a `for` longer than what was left of the window (20m at
    the defaults) saw the condition end first: the replicas now keep flapping until the alert is checked.
    A day-long window read six series at every minute, over what promtool's test engine holds per query."""
    alert = {"VLLMAutoscalerThrashing": settings}
    fired = _pages_of_a_shipped_test(tmp_path, {"alerts": alert}, "autoscaling_test.yaml", "VLLMAutoscalerThrashing",
                                     label="horizontalpodautoscaler")  # fmt: skip
    assert fired == {"keda-hpa-chat"}


@pytest.mark.tool
@pytest.mark.parametrize("for_", ["0", "1m"])
def test_the_shipped_tests_pass_with_every_alert_at_a_short_for(tmp_path: Path, for_: str) -> None:
    """Every alert with `for: 0`, then `for: 1m`: the incidents' quiet cases must not be waits that a short
    `for` turns into pages (the scale-up-blocked test checked a three-minute wait while it still paged; the
    config fuzz found it)."""
    alerts = {name: {"for": for_} for name, field in Alerts.model_fields.items() if "for_" in field.annotation.model_fields}
    pack = build(load_config(_config(tmp_path, {"alerts": alerts, "slos": {"enabled": False}})))
    assert len(alerts) >= 30 and pack.missing_tests == ()
    out = write_files(pack_files(pack), tmp_path / "pack")
    names = sorted(p.name for p in (out / "tests").glob("*_test.yaml"))
    done = subprocess.run([require_tool("promtool"), "test", "rules", *names], capture_output=True, text=True,
                          cwd=needed_only(out / "tests", names, tmp_path / "needed"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr


def test_the_slo_tests_move_into_what_the_selectors_keep(tmp_path: Path) -> None:
    """The SLO suite picks its models and route inside the selectors and the handler regex, and maps its
    pods and namespace (the promtool run of this file is as long as the default one: test_slo runs those)."""
    slo = {"availability": {"handler_regex": "/v2/.*"}, "models": [{"model_regex": "(?i)qwen/.*"}]}
    cfg = load_config(_config(tmp_path, {"selectors": NARROW, "slos": slo}))
    files, missing = slo_rule_tests(cfg)
    assert missing == [] and list(files) == ["slo_test.yaml"]
    vllm = satisfy.parse(NARROW["vllm"])
    for case in files["slo_test.yaml"]["tests"]:
        for item in case["input_series"]:
            labels = dict(yaml.safe_load("{" + item["series"].split("{", 1)[1].replace("=", ": ")))
            assert all(satisfy.accepts(labels.get(name, ""), [(name, op, v)]) for name, op, v in vllm), item
            if "handler" in labels:
                assert labels["handler"].startswith("/v2/")


def test_selectors_that_leave_too_few_values_name_each_missing_test(tmp_path: Path) -> None:
    config = _config(tmp_path, {"selectors": {"vllm": 'cluster="prod", engine="0"'}})
    pack = build(load_config(config))
    # One cluster alone costs no test (each is built in that cluster, see the next test); one engine costs
    # the tests of two engines side by side, named by what still lacks in one cluster.
    assert pack.missing_tests == tuple(
        f"no test of {alert}: label 'engine': the selectors (engine=\"0\") leave fewer than 2 values, "
        "the test needs that many"
        for alert in ("VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical", "VLLMRequestQueueBacklog",
                      "VLLMZeroThroughput", "VLLMAutoscalerMaxedOut")
    )  # fmt: skip
    result = CliRunner().invoke(app, ["render", "--config", str(config), "--out", str(tmp_path / "pack")])
    assert result.exit_code == 0
    assert result.output.count("warning: no test of ") == 5 and "SLO" not in result.output
    readme = (tmp_path / "pack" / "README.md").read_text()
    assert "## Tests this pack does not ship" in readme and "no test of VLLMRequestQueueBacklog" in readme
    # the alerts whose incidents fit are still tested
    assert sorted(p.name for p in (tmp_path / "pack" / "tests").iterdir()) == [
        "autoscaling_test.yaml", "cost-weekly_test.yaml", "cost_test.yaml", "disaggregation_test.yaml",
        "exporter_test.yaml", "gateway_test.yaml", "memory-planes_test.yaml", "slo_test.yaml",
        "vllm-engine_test.yaml", "vllm-features_test.yaml"]  # fmt: skip


@pytest.mark.tool
def test_a_vllm_selector_pinned_to_one_cluster_keeps_every_test_in_that_cluster(tmp_path: Path) -> None:
    """Incidents whose second cluster only shows a quiet twin are built without it; they still expect
    their alerts to fire, only in the one cluster the selectors leave. The SLO scenarios move their other
    clusters into namespaces of that one. promtool passes them all."""
    pack = build(load_config(_config(tmp_path, {"selectors": {"vllm": 'cluster="prod"'}})))
    assert pack.missing_tests == ()
    files = pack_files(pack)
    tests = sorted(rel for rel in files if rel.startswith("tests/"))
    cases = [case for f in tests for case in yaml.safe_load(files[f])["tests"]]
    narrowed = [case for case in cases if case["name"].endswith(" (one cluster: the selectors leave no other)")]
    # the gateway's five, the KV and zero-throughput ones, the memory planes', the KV transfers', P/D balance
    assert len(narrowed) == 13, [case["name"] for case in narrowed]
    for case in narrowed:
        assert all('cluster="prod"' in item["series"] for item in case["input_series"]), case["name"]
        assert any(check.get("exp_alerts") for check in case["alert_rule_test"]), case["name"]
    assert all('cluster="prod"' in item["series"] for case in cases for item in case["input_series"])
    slo = yaml.safe_load(files["tests/slo_test.yaml"])["tests"]
    assert len(slo) == 7 and all(case["name"].endswith(ONE_CLUSTER) for case in slo)
    # the fast burn: the burning model pages in its own namespace, its healthy twin's does not
    fast = slo[0]
    namespaces = {re.search(r'namespace="([^"]*)"', item["series"]).group(1) for item in fast["input_series"]}
    assert namespaces == {"inference", "inference-prod-b", "inference-prod-c"}, namespaces
    paged = {a["exp_labels"]["namespace"] for check in fast["alert_rule_test"] for a in check.get("exp_alerts", [])}
    assert paged == {"inference"}
    out = write_files(files, tmp_path / "pack")
    names = [Path(t).name for t in tests]
    done = subprocess.run(
        [require_tool("promtool"), "test", "rules", *names],
        capture_output=True, text=True, cwd=needed_only(out / "tests", names, tmp_path / "needed"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert done.stdout.count("SUCCESS") == len(names)


@pytest.mark.tool
def test_many_per_model_slos_stay_one_rule_per_record_and_lint_clean(tmp_path: Path) -> None:
    models = [{"model_regex": f"team-{i}/.*", "time_to_first_token": {"threshold": 5.0}} for i in range(6)]
    pack = build(load_config(_config(tmp_path, {"slos": {"models": models}})))
    files = pack_files(pack)  # the Mimir writer raises past 20 rules a group
    assert _lint(files) == []
    for group in pack.recording_groups:
        records = [(r.record, r.labels) for r in group.rules]  # type: ignore[union-attr]
        assert len(records) == len(set(records)), group.name
    too_many = _config(tmp_path, {"slos": {"models": [{"model_regex": f"m{i}"} for i in range(33)]}})
    with pytest.raises(ConfigError) as err:
        load_config(too_many)
    assert err.value.problems == [f"{too_many}:2: slos.models: 33 entries are too many (allowed: at most 32)"]


@pytest.mark.parametrize("label", ["slo", "long", "short"])
def test_static_labels_may_not_be_labels_the_rules_set(tmp_path: Path, label: str) -> None:
    config = _config(tmp_path, {"common_labels": {label: "gold"}})
    with pytest.raises(ConfigError) as err:
        load_config(config)
    assert err.value.problems == [
        f"{config}:1: common_labels: labels may not set ['{label}']: the alerts carry them from their rules"
    ]


@pytest.mark.tool
def test_validate_reports_what_promtools_linter_finds(tmp_path: Path) -> None:
    files = pack_files(build(load_config(None)))
    doubled = yaml.safe_load(files[RECORDING_FILE])
    doubled["groups"][0]["rules"].append(doubled["groups"][0]["rules"][0])
    problems = check_rules(require_tool("promtool"), {RECORDING_FILE: yaml.safe_dump(doubled), ALERTS_FILE: files[ALERTS_FILE]})
    assert problems and all(p.startswith("promtool check rules --lint-fatal: ") for p in problems)
    assert any("duplicate rule" in p for p in problems), problems
