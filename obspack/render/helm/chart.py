"""The chart's files, written from its model (obspack.pack.chart): Chart.yaml, values, the rule template,
the dashboards, the sidecar patch and the hand-written templates: a complete chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from obspack import __version__
from obspack.pack.chart import Chart
from obspack.pack.chart.layout import (
    AUTOSCALING_DIR,
    DASHBOARD_DIR,
    EXPORTER_IMAGE,
    EXPORTER_PORT,
    EXPORTER_RESOURCES,
    EXPORTER_SECURITY,
    HELPERS_TEMPLATE,
    PROBE_DIR,
    RULE_TEMPLATE,
    SIDECAR_PATCH,
    SIDECAR_POD_LABEL,
    SIDECAR_PORT_NAME,
    generated_comment,
)
from obspack.render import yamlfmt
from obspack.render.files import dashboard_json
from obspack.render.helm.rules import helpers_tpl, rule_template
from obspack.render.helm.values import values_schema, values_yaml

# The hand-written templates, shipped in the package (the wheel carries them like any file of `obspack/`):
# each is copied into the chart's templates/ with obspack's header, `helmignore` as `.helmignore`.
STATIC_DIR = Path(__file__).parent / "static"
STATIC_TARGETS = {"helmignore": ".helmignore"}


def chart_files(chart: Chart) -> dict[str, str]:
    """Every file of the chart, keyed by its POSIX path relative to the chart root, sorted: a complete
    chart that `helm install` takes as it is, with the config's settings baked in and its values' defaults."""
    files = {
        "Chart.yaml": chart_yaml(chart),
        "values.yaml": values_yaml(chart),
        "values.schema.json": json.dumps(values_schema(chart), indent=2) + "\n",
        HELPERS_TEMPLATE: helpers_tpl(),
        RULE_TEMPLATE: rule_template(chart),
        SIDECAR_PATCH: sidecar_patch(),
        **static_files(),
    }
    for d in chart.pack.dashboards:
        files[f"{DASHBOARD_DIR}/{d.name}.json"] = dashboard_json(chart.pack, d)
    for name, docs in chart.pack.autoscaling.files:
        files[f"{AUTOSCALING_DIR}/{name}"] = f"# {generated_comment()}\n" + yamlfmt.dump_all(list(docs))
    return dict(sorted(files.items()))


def static_files() -> dict[str, str]:
    """The hand-written templates (obspack/render/helm/static), each under obspack's header so that a later
    render may replace it: a Go template comment that leaves no blank line, or `#` in .helmignore."""
    files = {}
    for path in sorted(STATIC_DIR.iterdir()):
        if not path.is_file():
            continue
        rel = STATIC_TARGETS.get(path.name, f"templates/{path.name}")
        comment = generated_comment()
        head = f"# {comment}\n" if rel == ".helmignore" else f"{{{{- /* {comment} */ -}}}}\n"
        files[rel] = head + path.read_text(encoding="utf-8")
    return files


# ---------------------------------------------------------------------------------------------------------
# Chart.yaml and the sidecar patch


def chart_yaml(chart: Chart) -> str:
    data = {
        "apiVersion": "v2",
        "name": "obspack",
        "description": "Prometheus rules, Grafana dashboards and an exporter for vLLM on Kubernetes GPU nodes",
        "type": "application",
        "version": chart.version,
        "appVersion": __version__,
        "kubeVersion": ">=1.25.0-0",
        "keywords": ["vllm", "gpu", "prometheus", "grafana", "monitoring"],
    }
    return f"# {generated_comment()}\n" + yamlfmt.dump(data)


def exporter_probe() -> dict[str, Any]:
    return {
        "httpGet": {"path": "/healthz", "port": SIDECAR_PORT_NAME},
        "periodSeconds": 10,
        "timeoutSeconds": 2,
    }


def sidecar_patch() -> str:
    """A strategic-merge patch that adds the exporter (and the CUDA probe's shared folder) to a vLLM pod."""
    exporter = {
        "name": "obspack-exporter",
        "image": f"{EXPORTER_IMAGE}:{__version__}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["obspack", "exporter"],
        "args": [
            "--target=http://127.0.0.1:8000/metrics",
            f"--listen=0.0.0.0:{EXPORTER_PORT}",
            f"--probe-dir={PROBE_DIR}",
        ],
        "ports": [{"name": SIDECAR_PORT_NAME, "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        "readinessProbe": exporter_probe(),
        "livenessProbe": {**exporter_probe(), "failureThreshold": 6},
        "resources": EXPORTER_RESOURCES,
        "securityContext": EXPORTER_SECURITY,
        "volumeMounts": [
            {"name": "obspack-probe", "mountPath": PROBE_DIR, "readOnly": True},
            {"name": "obspack-tmp", "mountPath": "/tmp"},
        ],
    }
    vllm = {
        "name": "vllm",
        "env": [{"name": "OBSPACK_PROBE_DIR", "value": PROBE_DIR}],
        "volumeMounts": [{"name": "obspack-probe", "mountPath": PROBE_DIR}],
    }
    patch = {
        "spec": {
            "template": {
                "metadata": {"labels": dict(SIDECAR_POD_LABEL)},
                "spec": {
                    "containers": [vllm, exporter],
                    "volumes": [
                        {"name": "obspack-probe", "emptyDir": {"sizeLimit": "16Mi"}},
                        {"name": "obspack-tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            }
        }
    }
    head = [
        f"# {generated_comment()}",
        "# Adds the obspack exporter as a sidecar to a vLLM Deployment (or StatefulSet):",
        "#   kubectl -n <namespace> patch deployment <vllm> --type strategic --patch-file sidecar-patch.yaml",
        "# `name: vllm` must be the name of your vLLM container: it gets the CUDA probe's folder and",
        "# OBSPACK_PROBE_DIR (the probe runs only where obspack is installed in the vLLM image; without it the",
        "# exporter still serves the KV-cache series). Change --target if vLLM does not listen on port 8000.",
        "# Then scrape the sidecars with the chart: --set sidecar.podMonitor.enabled=true",
    ]
    return "\n".join(head) + "\n" + yamlfmt.dump(patch)
