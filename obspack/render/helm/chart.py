"""The chart's files: Chart.yaml, the sidecar patch, the hand-written templates, and every other file of a
complete chart; and the config that renders what the chart renders with given values."""

from __future__ import annotations

import json
from typing import Any

from obspack import __version__, slos
from obspack.config import (
    ObspackConfig,
)
from obspack.pack import stamp
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
    STATIC_DIR,
    STATIC_TARGETS,
    generated_comment,
)
from obspack.render.helm.rules import chart_pack, helpers_tpl, rule_template
from obspack.render.helm.values import values_schema, values_yaml


def chart_files(cfg: ObspackConfig) -> dict[str, str]:
    """Every file of the chart, keyed by its POSIX path relative to the chart root, sorted: a complete
    chart that `helm install` takes as it is, with the config's settings baked in and its values' defaults."""
    source = stamp(cfg)
    files = {
        "Chart.yaml": chart_yaml(cfg),
        "values.yaml": values_yaml(cfg),
        "values.schema.json": json.dumps(values_schema(cfg), indent=2) + "\n",
        HELPERS_TEMPLATE: helpers_tpl(source),
        RULE_TEMPLATE: rule_template(cfg),
        SIDECAR_PATCH: sidecar_patch(source),
        **static_files(source),
    }
    pack = chart_pack(cfg)
    for d in pack.dashboards:
        files[f"{DASHBOARD_DIR}/{d.name}.json"] = dashboard_json(pack, d)
    return dict(sorted(files.items()))


def static_files(source: str) -> dict[str, str]:
    """The hand-written templates (obspack/render/helm/static), each under obspack's header so that a later
    render may replace it: a Go template comment that leaves no blank line, or `#` in .helmignore."""
    files = {}
    for path in sorted(STATIC_DIR.iterdir()):
        if not path.is_file():
            continue
        rel = STATIC_TARGETS.get(path.name, f"templates/{path.name}")
        comment = generated_comment(source)
        head = f"# {comment}\n" if rel == ".helmignore" else f"{{{{- /* {comment} */ -}}}}\n"
        files[rel] = head + path.read_text(encoding="utf-8")
    return files


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


def chart_version(cfg: ObspackConfig) -> str:
    """obspack's version; a chart rendered from another config carries the config's digest as SemVer build
    metadata (0.1.0+config.3f2a...), so `helm list` tells the two apart. appVersion, the exporter image's
    tag, stays obspack's version."""
    if cfg == ObspackConfig():
        return __version__
    return f"{__version__}+{stamp(cfg).replace(' ', '.')}"


def chart_yaml(cfg: ObspackConfig) -> str:
    data = {
        "apiVersion": "v2",
        "name": "obspack",
        "description": "Prometheus rules, Grafana dashboards and an exporter for vLLM on Kubernetes GPU nodes",
        "type": "application",
        "version": chart_version(cfg),
        "appVersion": __version__,
        "kubeVersion": ">=1.25.0-0",
        "keywords": ["vllm", "gpu", "prometheus", "grafana", "monitoring"],
    }
    return f"# {generated_comment(stamp(cfg))}\n" + yamlfmt.dump(data)


def exporter_probe() -> dict[str, Any]:
    return {
        "httpGet": {"path": "/healthz", "port": SIDECAR_PORT_NAME},
        "periodSeconds": 10,
        "timeoutSeconds": 2,
    }


def sidecar_patch(source: str) -> str:
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
        f"# {generated_comment(source)}",
        "# Adds the obspack exporter as a sidecar to a vLLM Deployment (or StatefulSet):",
        "#   kubectl -n <namespace> patch deployment <vllm> --type strategic --patch-file sidecar-patch.yaml",
        "# `name: vllm` must be the name of your vLLM container: it gets the CUDA probe's folder and",
        "# OBSPACK_PROBE_DIR (the probe runs only where obspack is installed in the vLLM image; without it the",
        "# exporter still serves the KV-cache series). Change --target if vLLM does not listen on port 8000.",
        "# Then scrape the sidecars with the chart: --set sidecar.podMonitor.enabled=true",
    ]
    return "\n".join(head) + "\n" + yamlfmt.dump(patch)
