"""The dashboard linter on every dashboard (default and customised configs), and the linter on broken input."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from obspack import conventions as c
from obspack.catalogue import vllm_features
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from obspack.dashboards.defaults import LINK_TAG
from tests.dashboards.lint import annotations, lint, panels, queries

CUSTOM = ObspackConfig.model_validate(
    {
        "cluster_label": "k8s_cluster",
        "selectors": {
            "vllm": 'job="vllm"',
            "cadvisor": 'job="kubelet", metrics_path="/metrics/cadvisor"',
            "kube_state_metrics": 'job="kube-state-metrics"',
            "dcgm": 'job="nvidia-dcgm-exporter"',
            "exporter": 'job="obspack-exporter"',
        },
        "alerts": {"VLLMKVCacheUsageHigh": {"ratio": 0.8}, "VLLMKVCacheUsageCritical": {"ratio": 0.85}},
        "grafana": {"tags": ["llm", "gpu"], "refresh": "1m", "datasource": "thanos"},
    }
)
CONFIGS = {"default": ObspackConfig(), "custom": CUSTOM}


def _dashboards(cfg: ObspackConfig) -> dict[str, dict[str, Any]]:
    return dict(all_dashboards(cfg))


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_dashboard_passes_the_linter(config: str, name: str) -> None:
    model = _dashboards(CONFIGS[config])[name]
    assert lint(name, model) == []


def test_every_dashboard_of_the_conventions_is_built_in_order() -> None:
    assert [name for name, _ in all_dashboards(ObspackConfig())] == list(c.DASHBOARDS)


def test_output_is_deterministic_plain_json() -> None:
    first = json.dumps(all_dashboards(ObspackConfig()), sort_keys=True)
    assert first == json.dumps(all_dashboards(ObspackConfig()), sort_keys=True)
    assert json.loads(first) == [list(pair) for pair in all_dashboards(ObspackConfig())]


def test_config_reaches_tags_refresh_datasource_and_cluster_label() -> None:
    for name, model in all_dashboards(CUSTOM):
        assert model["tags"] == ["llm", "gpu", LINK_TAG], name  # the dropdown of links finds the pages by it
        assert model["refresh"] == "1m", name
        variables = {v["name"]: v for v in model["templating"]["list"]}
        assert variables["datasource"]["current"]["value"] == "thanos"
        assert variables["cluster"]["query"].endswith(", k8s_cluster)")
        for where, expr in queries(model):  # panels and annotations
            assert 'k8s_cluster=~"$cluster"' in expr, (name, where)
            assert 'cluster=~"$cluster"' not in expr.replace("k8s_cluster", ""), (name, where)


@pytest.mark.parametrize(
    ("metric", "matcher"),
    [
        ("vllm:time_to_first_token_seconds_bucket", 'job="vllm"'),
        ("kube_pod_container_status_restarts_total", 'job="kube-state-metrics"'),
        ("kube_pod_container_status_last_terminated_exitcode", 'job="kube-state-metrics"'),
        ("kube_pod_owner", 'job="kube-state-metrics"'),
        ("kube_replicaset_owner", 'job="kube-state-metrics"'),
        ("kube_replicaset_created", 'job="kube-state-metrics"'),
        ("kube_pod_container_info", 'job="kube-state-metrics"'),
        ("obspack_cuda_allocator_reserved_bytes", 'job="obspack-exporter"'),
        ("obspack_vllm_kv_cache_blocks", 'job="obspack-exporter"'),
    ],
)
def test_raw_series_carry_the_configured_source_matchers(metric: str, matcher: str) -> None:
    seen = 0
    for _, model in all_dashboards(CUSTOM):
        for where, expr in queries(model):  # panels and annotations
            for part in expr.split(metric + "{")[1:]:
                seen += 1
                assert part.startswith(matcher), (where, expr)
    assert seen, f"no dashboard reads {metric}"


def test_panels_read_raw_dcgm_series_only_from_the_selected_pods_exporter() -> None:
    """A raw DCGM field over every GPU at every step takes seconds at 8,000 GPUs (docs/benchmarks.md):
    fleet-wide panels read the per-pod summaries, and per-GPU panels narrow every raw DCGM selector to the
    dcgm-exporter of the selected pod's node (`$gpu_instance`), which the page's variables define."""
    reads = 0
    for name, model in all_dashboards(CUSTOM):
        names = {v["name"] for v in model["templating"]["list"]}
        for panel in panels(model):
            for target in panel.get("targets") or []:
                for m in re.finditer(r"\bDCGM_FI_\w+(\{[^}]*\})?", target["expr"]):
                    reads += 1
                    assert 'instance=~"$gpu_instance"' in (m.group(1) or ""), (name, panel["title"], m.group(0))
                    assert "gpu_instance" in names, name
    assert reads >= 10


def _thresholds(model: dict[str, Any], title: str) -> list[float]:
    panel = next(p for p in panels(model) if p["title"] == title)
    return [
        s["value"] for s in panel["fieldConfig"]["defaults"]["thresholds"]["steps"] if s["value"] is not None
    ]


def test_triage_page_marks_restarts_oom_kills_alerts_and_rollouts_on_its_time_axis() -> None:
    triage = _dashboards(CUSTOM)[c.TRIAGE_DASHBOARD]
    marks = {a["name"]: a for a in annotations(triage)}
    assert set(marks) == {"OOM kills", "Restarts", "Firing alerts", "Rollouts", "Images on this pod"}
    assert all(a["enable"] and not a["hide"] and a["datasource"]["uid"] == "${datasource}" for a in marks.values())
    assert marks["Rollouts"]["useValueForTime"], "a ReplicaSet's creation time is the rollout's time"
    assert 'reason="OOMKilled"' in marks["OOM kills"]["expr"]
    assert "unless on" in marks["Restarts"]["expr"], "an OOM kill is marked once, as an OOM kill"
    assert 'pod=~"$pod"' in marks["Firing alerts"]["expr"] and 'alertstate="firing"' in marks["Firing alerts"]["expr"]
    for name in ("VLLMContainerOOMKilled", "ObspackExporterTargetDown"):
        assert name in marks["Firing alerts"]["expr"]
    for other in ("vllm-fleet", "vllm-slos"):
        assert annotations(_dashboards(CUSTOM)[other]) == [], "the marks belong to the one-pod page"


def test_triage_page_tables_name_the_firing_alerts_and_the_last_termination() -> None:
    triage = _dashboards(CUSTOM)[c.TRIAGE_DASHBOARD]
    tables = {p["title"]: p for p in panels(triage) if p["type"] == "table"}
    alerts = tables["Firing obspack alerts on this pod"]
    assert "ALERTS{" in alerts["targets"][0]["expr"] and "ALERTS_FOR_STATE{" in alerts["targets"][1]["expr"]
    ended = tables["Last termination: reason, exit code, time"]
    exprs = [t["expr"] for t in ended["targets"]]
    assert [m in e for m, e in zip(("_reason{", "_exitcode{", "_timestamp{"), exprs)] == [True, True, True]
    assert all(t["instant"] and t["format"] == "table" for t in ended["targets"] + alerts["targets"])
    units = {
        o["matcher"]["options"]: next(p["value"] for p in o["properties"] if p["id"] == "unit")
        for o in ended["fieldConfig"]["overrides"]
    }
    assert units == {"Value #B": "none", "Value #C": "dateTimeAsIso"}


def test_alert_thresholds_come_from_the_config() -> None:
    default, custom = _dashboards(ObspackConfig()), _dashboards(CUSTOM)
    assert _thresholds(default["vllm-kv-prefix-cache"], "KV cache usage per pod") == [0.9, 0.95]
    assert _thresholds(custom["vllm-kv-prefix-cache"], "KV cache usage per pod") == [0.8, 0.85]
    assert _thresholds(custom[c.TRIAGE_DASHBOARD], "KV cache usage") == [0.8, 0.85]
    triage = default[c.TRIAGE_DASHBOARD]
    cfg = ObspackConfig()
    assert _thresholds(triage, "Container memory: working set / limit") == [
        cfg.alerts.VLLMHostMemoryNearLimit.ratio
    ]
    assert _thresholds(triage, "GPU framebuffer used / total") == [cfg.alerts.VLLMGPUMemoryNearFull.ratio]


def test_alert_thresholds_are_drawn_on_the_graphs() -> None:
    triage = _dashboards(ObspackConfig())[c.TRIAGE_DASHBOARD]
    drawn = {
        p["title"]
        for p in panels(triage)
        if p["type"] == "timeseries"
        and p["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off"
    }
    assert {
        "Container memory: working set / limit",
        "GPU framebuffer used / total",
        "KV cache usage",
    } <= drawn


# ---------------------------------------------------------------------------------------------------
# Variables and links


def _variables(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in model["templating"]["list"]}


@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_variables_are_chained(name: str) -> None:
    v = _variables(_dashboards(ObspackConfig())[name])
    assert list(v)[:5] == ["datasource", "cluster", "namespace", "model", "pod"]
    features = [feature.key for feature in vllm_features.FEATURES] if name == "vllm-fleet" else []
    assert list(v)[5:] in ([], ["gpu_instance"], features, ["pool"] if name == c.GATEWAY_DASHBOARD else [])
    assert "$cluster" in v["namespace"]["query"]
    assert "$namespace" in v["model"]["query"] and "$cluster" in v["model"]["query"]
    assert "$model" in v["pod"]["query"], "picking a model must narrow the pods"
    assert v["model"]["includeAll"] and v["model"]["current"]["value"] == "$__all"


def test_triage_page_selects_exactly_one_pod() -> None:
    v = _variables(_dashboards(ObspackConfig())[c.TRIAGE_DASHBOARD])
    for name in ("cluster", "namespace", "pod"):
        assert not v[name]["multi"] and not v[name]["includeAll"], name


@pytest.mark.parametrize("name", [c.TRIAGE_DASHBOARD, "gpu-by-workload"])
def test_per_gpu_panels_follow_one_pod_through_its_exporter(name: str) -> None:
    """The pod is a single value, and the hidden exporter variable lists that pod's exporters: All, with no
    allValue, is the alternation of what it found (never `.*`, which would read every GPU)."""
    v = _variables(_dashboards(ObspackConfig())[name])
    assert not v["pod"]["multi"] and not v["pod"]["includeAll"]
    gpu = v["gpu_instance"]
    assert gpu["hide"] == 2 and gpu["includeAll"] and gpu["allValue"] is None
    assert '$pod"' in gpu["query"] and gpu["query"].endswith(", instance)")


def test_alert_links_open_the_triage_page_with_its_variables() -> None:
    from obspack.rules.alerts import dashboard_url

    url = dashboard_url(ObspackConfig())
    path, query = url.split("?")
    triage = _dashboards(ObspackConfig())[c.TRIAGE_DASHBOARD]
    assert path == f"/d/{triage['uid']}/{c.TRIAGE_DASHBOARD}"
    names = {pair.split("=")[0].removeprefix("var-") for pair in query.split("&")}
    assert names <= set(_variables(triage))


@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_dashboards_link_to_each_other_with_variables_and_time(name: str) -> None:
    """One dropdown of the dashboards tagged obspack, which every page carries, even with tags of the user's."""
    for cfg in (ObspackConfig(), ObspackConfig.model_validate({"grafana": {"tags": ["gpu"]}})):
        dashboards = _dashboards(cfg)
        [link] = dashboards[name]["links"]
        assert (link["type"], link["tags"], link["asDropdown"]) == ("dashboards", [LINK_TAG], True)
        assert link["includeVars"] and link["keepTime"]
        assert all(LINK_TAG in d["tags"] for d in dashboards.values())


def test_panels_link_to_runbooks() -> None:
    from obspack.rules.alerts import all_alerts, runbook_url

    cfg = ObspackConfig(runbook_base_url="https://runbooks.example.com/obspack")
    urls = {
        link["url"]
        for _, model in all_dashboards(cfg)
        for panel in panels(model)
        for link in panel.get("links") or []
    }
    runbooks = {runbook_url(cfg, alert.runbook) for alert in all_alerts(cfg)}
    assert urls <= runbooks
    linked = {u.rsplit("/", 1)[1] for u in urls}
    assert len(linked) >= 10, f"only {sorted(linked)} are linked from a panel"


def test_pod_tables_link_rows_to_the_triage_page() -> None:
    fleet = _dashboards(ObspackConfig())["vllm-fleet"]
    table = next(p for p in panels(fleet) if p["title"].startswith("Pods:"))
    links = [
        prop["value"]
        for o in table["fieldConfig"]["overrides"]
        for prop in o["properties"]
        if prop["id"] == "links"
    ]
    url = links[0][0]["url"]
    assert url.startswith(f"/d/{c.dashboard_uid(c.TRIAGE_DASHBOARD)}/{c.TRIAGE_DASHBOARD}?")
    for var in ("cluster", "namespace", "pod"):
        assert f"var-{var}=${{__data.fields.{var}}}" in url


# ---------------------------------------------------------------------------------------------------
# The linter finds what it should


def _broken(mutate: Any) -> list[str]:
    model = copy.deepcopy(_dashboards(ObspackConfig())["vllm-fleet"])
    panel = next(p for p in model["panels"] if p["type"] == "timeseries")
    mutate(model, panel)
    return lint("vllm-fleet", model)


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (lambda m, p: p["fieldConfig"]["defaults"].update(unit=""), "no unit"),
        (lambda m, p: p.update(description=""), "description missing"),
        (lambda m, p: p["fieldConfig"]["defaults"]["thresholds"].update(steps=[]), "no thresholds"),
        (lambda m, p: p.update(type="graph"), "panel type 'graph'"),
        (
            lambda m, p: p["targets"][0].update(
                datasource={"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
            ),
            "does not use the datasource variable",
        ),
        (lambda m, p: p["targets"][0].update(expr='rate(x{cluster=~"$cluster"}[5m])'), "range [5m]"),
        (lambda m, p: p["targets"][0].update(expr='sum(x{cluster=~"$cluster"}'), "does not parse"),
        (lambda m, p: p["targets"][0].update(expr="sum(x)"), "not filtered by $cluster"),
        (lambda m, p: p["targets"][0].update(expr=""), "empty query"),
        (lambda m, p: p.update(targets=[]), "no queries"),
        (lambda m, p: p.update(id=m["panels"][0]["id"]), "panel ids repeated"),
        (lambda m, p: p.update(title=m["panels"][0]["title"]), "panel titles repeated"),
        (lambda m, p: p["gridPos"].update(x=0, y=0), "overlaps"),
        (lambda m, p: m.update(uid="changed"), "stable"),
        (
            lambda m, p: m["templating"].update(list=[v for v in m["templating"]["list"] if v["name"] != "pod"]),
            "missing variables ['pod']",
        ),
        (lambda m, p: m.update(rows=[{"panels": []}]), "legacy rows"),
    ],
)
def test_linter_reports(mutation: Any, expected: str) -> None:
    problems = _broken(mutation)
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (lambda a: a.update(expr="increase(x[5m]) > 0"), "annotation 'OOM kills' target Anno: not filtered by $cluster"),
        (lambda a: a.update(expr='increase(x{cluster=~"$cluster"}[5m])'), "range [5m]"),
        (lambda a: a.update(expr='sum(x{cluster=~"$cluster"}'), "does not parse"),
        (lambda a: a.update(datasource={"type": "prometheus", "uid": "P1"}), "does not use the datasource variable"),
        (lambda a: a.update(titleFormat=""), "annotation 'OOM kills': no title"),
        (lambda a: a.update(name="Restarts"), "annotation names repeated: ['Restarts']"),
    ],
)
def test_linter_reports_annotation_problems(mutation: Any, expected: str) -> None:
    model = copy.deepcopy(_dashboards(ObspackConfig())[c.TRIAGE_DASHBOARD])
    assert lint(c.TRIAGE_DASHBOARD, model) == []
    mutation(annotations(model)[0])
    problems = lint(c.TRIAGE_DASHBOARD, model)
    assert any(expected in problem for problem in problems), problems
