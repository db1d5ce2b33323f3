"""The chart's generated files: Chart.yaml, the sidecar patch, and every file obspack owns in helm/obspack;
and the config that renders what the chart renders with given values."""

from __future__ import annotations

import json
from typing import Any

from obspack import __version__, slos
from obspack.config import (
    ObspackConfig,
)
from obspack.render import yamlfmt
from obspack.render.files import dashboard_json
from obspack.render.helm.layout import (
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
from obspack.render.helm.rules import chart_pack, helpers_tpl, rule_template
from obspack.render.helm.values import values_schema, values_yaml


def chart_files(cfg: ObspackConfig) -> dict[str, str]:
    """Every generated file of the chart, keyed by its POSIX path relative to the chart root, sorted."""
    files = {
        "Chart.yaml": chart_yaml(),
        "values.yaml": values_yaml(cfg),
        "values.schema.json": json.dumps(values_schema(cfg), indent=2) + "\n",
        HELPERS_TEMPLATE: helpers_tpl(),
        RULE_TEMPLATE: rule_template(cfg),
        SIDECAR_PATCH: sidecar_patch(),
    }
    pack = chart_pack(cfg)
    for d in pack.dashboards:
        files[f"{DASHBOARD_DIR}/{d.name}.json"] = dashboard_json(pack, d)
    return dict(sorted(files.items()))


def config_from_values(values: dict[str, Any], base: ObspackConfig | None = None) -> ObspackConfig:
    """The obspack config that renders what the chart renders with these (complete, merged) values.

    Settings the chart does not expose (selectors, cluster label, dashboard datasource, ...) come from
    `base`, the config the chart was generated from.
    """
    data = (base or ObspackConfig()).model_dump(by_alias=True, mode="json")
    dashboards = values["dashboards"]
    alerts = {
        name: {**settings, **values["alerts"].get(name, {})} for name, settings in data["alerts"].items()
    }
    chart_slos = values["slos"]
    data["slos"].update(enabled=chart_slos["enabled"], labels=chart_slos["labels"])
    for sli in slos.SLIS:
        data["slos"][sli].update(chart_slos[sli])
    data.update(
        alerts=alerts,
        common_labels=values["commonLabels"],
        runbook_base_url=values["runbookBaseURL"],
        rule_interval=values["ruleInterval"] or None,
    )
    data["prometheus_rule"]["labels"] = {**values["monitoringLabels"], **values["prometheusRule"]["labels"]}
    data["grafana"].update(
        url=values["grafanaURL"],
        folder=dashboards["folder"],
        folder_annotation=dashboards["folderAnnotation"],
        configmap_labels=dashboards["labels"],
    )
    return ObspackConfig.model_validate(data)


# ---------------------------------------------------------------------------------------------------------
# Chart.yaml and the sidecar patch


def chart_yaml() -> str:
    data = {
        "apiVersion": "v2",
        "name": "obspack",
        "description": "Prometheus rules, Grafana dashboards and an exporter for vLLM on Kubernetes GPU nodes",
        "type": "application",
        "version": __version__,
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
