"""The chart's layout as data: where its generated files go, and what the exporter runs with (values.yaml's
defaults and the sidecar patch are written from the same constants, so they cannot drift apart)."""

from __future__ import annotations

from obspack import __version__
from obspack.conventions import MARKER
from obspack.exporter import DEFAULT_PORT

RULE_TEMPLATE = "templates/generated/prometheusrule.yaml"
DASHBOARD_DIR = "files/dashboards"
AUTOSCALING_DIR = "files/autoscaling"  # the ScaledObjects and HPAs of autoscaling.autoscalers, as rendered
HELPERS_TEMPLATE = "templates/generated/_rules.tpl"
SIDECAR_PATCH = "examples/sidecar-patch.yaml"
CHART_SOURCE = "the obspack Helm chart"

# The exporter, as the Deployment and the sidecar patch both run it. values.yaml's defaults and the patch
# are written from these, so the two cannot drift apart. The image is the one .github/workflows/release.yaml
# publishes for each version (ghcr.io/<repository owner>/obspack-exporter:<version>); its tag is the
# chart's appVersion.
EXPORTER_IMAGE = "ghcr.io/obspack/obspack-exporter"
EXPORTER_PORT = DEFAULT_PORT  # 10025; 9400 is dcgm-exporter's
SIDECAR_PORT_NAME = "obspack-metrics"  # port names are at most 15 characters
SIDECAR_POD_LABEL = {"obspack-exporter": "sidecar"}  # the patch adds it; the PodMonitor selects it
PROBE_DIR = "/var/run/obspack-probe"
RUN_AS = 65532  # the conventional "nonroot" uid/gid of distroless images
EXPORTER_RESOURCES = {
    "requests": {"cpu": "20m", "memory": "96Mi"},
    "limits": {"cpu": "500m", "memory": "256Mi"},
}
EXPORTER_POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
EXPORTER_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "privileged": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def generated_comment() -> str:
    """The header of every chart file: obspack's marker (so that a later render may replace the file) and
    version. What the chart was rendered from is in Chart.yaml's version alone (the config's digest as
    SemVer build metadata), so that a change of one setting changes only the files it touches."""
    return (
        f"{MARKER} {__version__}. Do not edit: change the config and render the chart again "
        "(`obspack render --config obspack.yaml --helm CHART`)."
    )
