"""The dashboards as the Grafana sidecar finds them: one labelled, annotated ConfigMap per dashboard."""

from __future__ import annotations

import json

import pytest
import yaml

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.pack import build
from obspack.render.files import pack_files

MIB = 1024 * 1024
# `kubectl apply` (client side) copies the object into an annotation, and annotations are limited to 256 KiB.
KUBECTL_APPLY_LIMIT = 256 * 1024

CUSTOM = ObspackConfig.model_validate(
    {
        "grafana": {
            "namespace": "grafana",
            "folder": "GPU inference",
            "folder_annotation": "grafana_folder",
            "configmap_labels": {"grafana_dashboard": "obspack", "team": "ml-platform"},
        }
    }
)


@pytest.fixture(scope="module")
def files() -> dict[str, dict[str, str]]:
    return {"default": pack_files(build(ObspackConfig())), "custom": pack_files(build(CUSTOM))}


@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_configmap_carries_the_sidecar_label_and_folder(files: dict[str, dict[str, str]], name: str) -> None:
    text = files["default"][f"kubernetes/dashboards/{name}.yaml"]
    cm = yaml.safe_load(text)
    assert cm["kind"] == "ConfigMap" and cm["apiVersion"] == "v1"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"k8s-sidecar-target-directory": "vLLM"}
    assert cm["metadata"]["namespace"] == "monitoring"
    dashboard = json.loads(cm["data"][f"{name}.json"])
    assert dashboard["uid"] == c.dashboard_uid(name)
    assert cm["data"][f"{name}.json"].rstrip("\n") == files["default"][f"grafana/{name}.json"].rstrip("\n")


@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_configmap_follows_the_grafana_config(files: dict[str, dict[str, str]], name: str) -> None:
    cm = yaml.safe_load(files["custom"][f"kubernetes/dashboards/{name}.yaml"])
    assert cm["metadata"]["namespace"] == "grafana"
    assert {"grafana_dashboard": "obspack", "team": "ml-platform"}.items() <= cm["metadata"]["labels"].items()
    assert cm["metadata"]["annotations"] == {"grafana_folder": "GPU inference"}


@pytest.mark.parametrize("name", list(c.DASHBOARDS))
def test_configmap_fits(files: dict[str, dict[str, str]], name: str) -> None:
    size = len(files["default"][f"kubernetes/dashboards/{name}.yaml"].encode())
    assert size < MIB, f"{name}: {size} bytes; a ConfigMap holds at most 1 MiB"
    assert size < KUBECTL_APPLY_LIMIT, f"{name}: {size} bytes; too big for client-side kubectl apply"
