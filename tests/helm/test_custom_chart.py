"""A chart rendered from a user's own config with one command (`obspack render --config X --helm DIR`) is a
complete chart: helm lints and installs it as it is, and its rules and dashboards carry that config's cluster
label and selectors, which Helm values cannot set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from obspack import __version__
from obspack.cli import app
from obspack.config import ObspackConfig, load_config
from obspack.errors import RenderError
from obspack.pack import build, stamp
from obspack.pack.chart import build_chart, config_from_values
from obspack.pack.chart.layout import EXPORTER_IMAGE
from obspack.render.files import MARKER, prometheus_rule
from obspack.render.helm import chart_files
from obspack.render.write import MANIFEST, write
from tests.helm.conftest import Helm, by_kind, merged_values, one

# A kube-prometheus-stack team's config: its own cluster label, a `job=` selector per source, a team label.
CONFIG = """\
cluster_label: k8s_cluster
selectors:
  vllm: 'job="vllm"'
  cadvisor: 'job="kubelet", metrics_path="/metrics/cadvisor"'
  kube_state_metrics: 'job="kube-state-metrics"'
  dcgm: 'job="nvidia-dcgm-exporter"'
common_labels: {team: ml-platform}
alerts:
  VLLMKVCacheUsageHigh: {ratio: 0.85}
prometheus_rule: {labels: {release: kps}}
"""
OVERRIDES = {"alerts": {"VLLMKVCacheUsageHigh": {"ratio": 0.8}}, "commonLabels": {"team": "inference"}}


def render(*args: str) -> Any:
    return CliRunner().invoke(app, ["render", *args])


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config, chart): the chart written by the one documented command."""
    root = tmp_path_factory.mktemp("custom-chart")
    config = root / "obspack.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    result = render("--config", str(config), "--out", str(root / "generated"), "--helm", str(root / "chart"))
    assert result.exit_code == 0, result.output
    return config, root / "chart"


@pytest.fixture(scope="module")
def docs(
    helm: Helm, made: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, Any]]:
    values = tmp_path_factory.mktemp("values") / "overrides.yaml"
    values.write_text(yaml.safe_dump(OVERRIDES), encoding="utf-8")
    return helm.template(values, chart=made[1])


def _rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]


def test_one_command_writes_a_complete_chart_that_lints_clean(helm: Helm, made: tuple[Path, Path]) -> None:
    config, folder = made
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert written == sorted([*chart_files(build_chart(load_config(config))), MANIFEST])
    for rel in ("templates/_helpers.tpl", "templates/dashboards.yaml", "templates/exporter-deployment.yaml"):
        assert rel in written, f"{rel}: the hand-written templates ship with obspack"
    # every file carries obspack's marker, so that a later render may replace it (JSON: in its __generated key)
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix != ".json":
            assert MARKER in path.read_text(encoding="utf-8").splitlines()[0], path
    result = helm.run("lint", "--strict", str(folder))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


def test_the_users_cluster_label_and_selectors_reach_the_prometheus_rule(docs: list[dict[str, Any]]) -> None:
    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kps", "monitoringLabels default from the config"
    exprs = "\n".join(r["expr"] for r in _rules(docs))
    assert 'kube_pod_container_status_restarts_total{job="kube-state-metrics"' in exprs
    assert 'container_memory_working_set_bytes{job="kubelet", metrics_path="/metrics/cadvisor"' in exprs
    assert "by (k8s_cluster, namespace, pod" in exprs
    assert "by (cluster," not in exprs and "(cluster)" not in exprs, "the default cluster label is gone"
    alerts = {r["alert"]: r for r in _rules(docs) if "alert" in r}
    # values still change what can change per install: the team label and a threshold
    assert alerts["VLLMZeroThroughput"]["labels"]["team"] == "inference"
    assert "> 0.8" in alerts["VLLMKVCacheUsageHigh"]["expr"]


def test_the_custom_chart_renders_what_obspack_renders_for_that_config(
    made: tuple[Path, Path], docs: list[dict[str, Any]]
) -> None:
    config, folder = made
    cfg = config_from_values(merged_values(OVERRIDES, chart=folder), base=load_config(config))
    assert cfg.cluster_label == "k8s_cluster" and cfg.alerts.VLLMKVCacheUsageHigh.ratio == 0.8
    assert one(docs, "PrometheusRule")["spec"]["groups"] == prometheus_rule(build(cfg))["spec"]["groups"]


def test_the_custom_charts_dashboards_read_the_same_series(docs: list[dict[str, Any]]) -> None:
    triage = next(
        cm for cm in by_kind(docs, "ConfigMap") if cm["metadata"]["name"].endswith("pod-memory-planes")
    )
    model = json.loads(next(iter(triage["data"].values())))
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["cluster"]["query"].endswith(", k8s_cluster)")
    text = json.dumps(model)
    assert 'kube_pod_container_status_restarts_total{job=\\"kube-state-metrics\\"' in text


def test_the_custom_chart_names_its_config_and_pulls_the_released_image(
    helm: Helm, made: tuple[Path, Path]
) -> None:
    config, folder = made
    meta = yaml.safe_load((folder / "Chart.yaml").read_text(encoding="utf-8"))
    assert meta["version"] == f"{__version__}+{stamp(load_config(config)).replace(' ', '.')}"
    assert meta["appVersion"] == __version__
    deployment = one(
        helm.template(
            chart=folder,
            extra=("--set", "exporter.enabled=true", "--set", "exporter.targets={http://vllm:8000/metrics}"),
        ),
        "Deployment",
    )
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"{EXPORTER_IMAGE}:{__version__}"
    )


def test_rendering_again_replaces_obspacks_files_but_never_a_hand_edited_one(made: tuple[Path, Path]) -> None:
    # (the command writes the chart with render.write, as below; the pack itself is left out for speed)
    config, first = made
    folder = first.parent / "again"
    cfg = load_config(config)
    write(folder, chart_files(build_chart(cfg)))
    # a new setting: the chart is updated in place
    lower = ObspackConfig.model_validate(yaml.safe_load(CONFIG.replace("ratio: 0.85", "ratio: 0.75")))
    assert write(folder, chart_files(build_chart(lower))).stale
    assert "ratio: 0.75" in (folder / "values.yaml").read_text(encoding="utf-8")
    # a template the user rewrote by hand (no obspack header any more) is theirs: refused, nothing changes
    notes = folder / "templates" / "NOTES.txt"
    notes.write_text("our own notes\n", encoding="utf-8")
    with pytest.raises(
        RenderError, match="refusing to overwrite files obspack did not write: templates/NOTES.txt"
    ):
        write(folder, chart_files(build_chart(cfg)))
    assert notes.read_text(encoding="utf-8") == "our own notes\n"
    assert "ratio: 0.75" in (folder / "values.yaml").read_text(encoding="utf-8"), "all or nothing"
