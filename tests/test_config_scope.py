"""`scope`: the namespaces and clusters the pack watches, set once and applied to every source with the
label that source carries them in (DCGM's per label mode), so that every reader of the selectors (rules,
dashboards, runbooks, shipped tests, doctor, rightsize) gets it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig, load_config
from obspack.pack import build
from obspack.pack.walk import expressions
from obspack.promql import selectors
from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files
from obspack.rules.recording import dcgm
from tests.support.needed import needed_only
from tests.support.packs import write_files
from tests.support.tools import require_tool

SCOPE = {"scope": {"namespace_regex": "llm-.*", "cluster_regex": "prod-.*"}, "cluster_label": "k8s_cluster"}
NAMESPACE, CLUSTER = ("namespace", "=~", "llm-.*"), ("k8s_cluster", "=~", "prod-.*")


def _config(data: dict[str, object]) -> ObspackConfig:
    return ObspackConfig.model_validate(data)


def test_every_source_gets_the_scope_in_front_of_its_own_matchers() -> None:
    cfg = _config({**SCOPE, "selectors": {"vllm": 'job="vllm"'}})
    scoped = 'namespace=~"llm-.*", k8s_cluster=~"prod-.*"'
    assert cfg.selectors.vllm == f'{scoped}, job="vllm"'
    for source in ("cadvisor", "kube_state_metrics", "exporter"):
        assert getattr(cfg.selectors, source) == scoped
    # DCGM's namespace label depends on how it is scraped: the cluster here, the namespace per label mode
    assert cfg.selectors.dcgm == 'k8s_cluster=~"prod-.*"'
    text = dcgm.normalised(cfg, "DCGM_FI_DEV_FB_USED")
    for mode in ('exported_pod!="", exported_namespace=~"llm-.*"', 'pod_name!="", pod_namespace=~"llm-.*"',
                 'pod_name="", namespace=~"llm-.*"'):  # fmt: skip
        assert 'DCGM_FI_DEV_FB_USED{k8s_cluster=~"prod-.*", exported_pod' in text and mode in text, mode


def test_a_config_read_back_stays_the_same() -> None:
    cfg = _config({**SCOPE, "selectors": {"vllm": 'job="vllm", namespace=~"llm-.*"'}})
    assert cfg.selectors.vllm == 'k8s_cluster=~"prod-.*", job="vllm", namespace=~"llm-.*"', "not added twice"
    again = ObspackConfig.model_validate(cfg.model_dump(by_alias=True, mode="json"))
    assert again == cfg
    assert _config({}).selectors == ObspackConfig().selectors


def test_every_raw_selector_of_the_pack_carries_the_scope(tmp_path: Path) -> None:
    pack = build(_config({**SCOPE, "cost": {"node_pool_label": "karpenter.sh/nodepool"}}))
    raw = nodes = 0
    for _, expr in expressions(pack):
        for metric, matchers in selectors(expr):
            if ":" in metric or metric in ("ALERTS", "ALERTS_FOR_STATE", "up"):
                continue  # records of the pack's own rules, alert states, and scrape health
            raw += 1
            assert CLUSTER in matchers, (metric, matchers, expr)
            # DCGM's and KEDA's namespace depends on how they are scraped (exported_namespace without
            # honor_labels): DCGM is scoped per label mode, KEDA's series by the vLLM namespaces they join.
            # A node is in no namespace: kube-state-metrics' node series are asked for none.
            if metric.startswith("kube_node_"):
                nodes += 1
                assert not any(m[0] == "namespace" for m in matchers), (metric, matchers, expr)
            elif not metric.startswith(("DCGM_", "keda_")):
                assert NAMESPACE in matchers, (metric, matchers, expr)
    assert raw > 50 and nodes >= 2
    # the runbooks' queries too: the scale-up-blocked runbook asks each node for its allocatable GPUs
    blocked = dict(pack.runbooks)["vllm-autoscaler-scale-up-blocked"]
    allocatable = [line for line in blocked.splitlines() if "kube_node_status_allocatable{" in line]
    assert allocatable and all("namespace" not in line and 'k8s_cluster=~"prod-.*"' in line for line in allocatable)


@pytest.mark.tool
def test_series_outside_the_scope_are_not_read_and_the_shipped_tests_pass(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    path = tmp_path / "obspack.yaml"
    path.write_text(yaml.safe_dump({**SCOPE, "slos": {"enabled": False}}), encoding="utf-8")
    pack = build(load_config(path))
    assert not pack.missing_tests, "the shipped tests' incidents move into the scope"
    out = tmp_path / "pack"
    write_files(pack_files(pack), out)
    series = "vllm:kv_cache_usage_perc{{k8s_cluster={c!r}, namespace={n!r}, pod=\"p\", model_name=\"m\"}}"
    scope_test = {
        "rule_files": ["../prometheus/recording-rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": series.format(c=c, n=n).replace("'", '"'), "values": "0.5x10"}
                for c, n in (("prod-a", "llm-a"), ("prod-a", "team-b"), ("dev-x", "llm-a"))
            ],
            "promql_expr_test": [{
                "expr": "namespace_pod_model:vllm_kv_cache_usage:max",
                "eval_time": "5m",
                "exp_samples": [{
                    "labels": 'namespace_pod_model:vllm_kv_cache_usage:max{k8s_cluster="prod-a", namespace="llm-a", '
                    'pod="p", model_name="m"}',
                    "value": 0.5,
                }],
            }],
        }],
    }  # fmt: skip
    (out / "tests" / "scope_test.yaml").write_text(yaml.safe_dump(scope_test), encoding="utf-8")
    tests = sorted(str(p.relative_to(out / "tests")) for p in (out / "tests").glob("*_test.yaml"))
    # each file with the groups its checks need (tests/support/needed.py); every group passes the check
    checked = subprocess.run([promtool, "check", "rules", *(str(out / rel) for rel in (RECORDING_FILE, ALERTS_FILE))],
                             capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    where = needed_only(out / "tests", tests, tmp_path / "needed")
    done = subprocess.run([promtool, "test", "rules", *tests], cwd=where, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
