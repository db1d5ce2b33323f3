"""helm/obspack with the real helm binary: lint, render, schema errors, and validation of what it renders."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from obspack.config import ObspackConfig
from obspack.pack.chart import build_chart, layout
from obspack.render.helm import values_schema
from tests.helm.conftest import CHART, EVERYTHING, FIXTURES, NAMESPACE, Helm, by_kind, load, one
from tests.support.tools import require_tool

OPERATOR_KINDS = ("PrometheusRule", "ServiceMonitor", "PodMonitor")


# ---------------------------------------------------------------------------------------------------------
# lint and render


@pytest.mark.parametrize("values", [None, EVERYTHING], ids=["defaults", "everything"])
def test_lint_strict_is_clean(helm: Helm, values: Path | None) -> None:
    result = helm.run("lint", "--strict", str(CHART), *(["--values", str(values)] if values else []))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


def test_defaults_render_rules_and_dashboards_only(default_docs: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in default_docs)
    dashboards = sorted(p.stem for p in (CHART / "files" / "dashboards").glob("*.json"))
    assert kinds == sorted(["PrometheusRule"] + ["ConfigMap"] * len(dashboards))
    rule = one(default_docs, "PrometheusRule")
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    for cm in by_kind(default_docs, "ConfigMap"):
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["annotations"] == {"k8s-sidecar-target-directory": "vLLM"}


def test_everything_file_changes_every_group_of_settings() -> None:
    defaults = load(CHART / "values.yaml")
    everything = load(EVERYTHING)
    assert set(everything) == set(defaults), "values-everything.yaml must set every top-level value"
    assert set(everything["alerts"]) == set(defaults["alerts"]), "and touch every alert"
    for section in ("prometheusRule", "dashboards", "exporter", "vllmMonitor"):
        unchanged = [k for k, v in defaults[section].items() if everything[section].get(k, v) == v]
        assert unchanged in ([], ["enabled"]), f"{section}: not changed by the fixture: {unchanged}"


def test_everything_reaches_the_manifests(everything_docs: list[dict[str, Any]]) -> None:
    rule = one(everything_docs, "PrometheusRule")
    assert rule["metadata"]["namespace"] == "rules"
    assert {"release": "kps", "role": "alert-rules"}.items() <= rule["metadata"]["labels"].items()
    assert rule["metadata"]["annotations"] == {"owner": "ml-platform"}
    assert all(g["interval"] == "1m" for g in rule["spec"]["groups"])

    for cm in by_kind(everything_docs, "ConfigMap"):
        assert cm["metadata"]["namespace"] == "grafana"
        assert {"grafana_dashboard": "yes", "team": "inference"}.items() <= cm["metadata"]["labels"].items()
        assert cm["metadata"]["annotations"] == {"grafana_folder": "LLM serving"}

    deployment = one(everything_docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "registry.example.com/obspack-exporter:0.1.0-rc1"
    assert container["imagePullPolicy"] == "Always"
    assert container["args"] == [
        "--target=http://vllm-0.vllm.llm.svc:8000/metrics",
        "--target=http://vllm-1.vllm.llm.svc:8000/metrics",
        "--listen=[::]:9500",
        "--window=10m",
        "--timeout=3s",
        "--max-bytes=64MiB",
        "--timeout=4s",
    ]
    assert container["env"] == [{"name": "OBSPACK_LOG_LEVEL", "value": "DEBUG"}]
    assert container["ports"][0]["containerPort"] == 9500
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "512Mi"}
    assert pod["serviceAccountName"] == "obspack-exporter-sa"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"][0]["key"] == "dedicated"
    assert "nodeAffinity" in pod["affinity"]
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "inference"
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {"example.com/owner": "ml-platform"}
    assert one(everything_docs, "ServiceAccount")["metadata"]["name"] == "obspack-exporter-sa"
    assert one(everything_docs, "Service")["spec"]["ports"][0]["port"] == 9500

    service_monitors = {m["metadata"]["name"]: m for m in by_kind(everything_docs, "ServiceMonitor")}
    exporter_sm = service_monitors["obspack-exporter"]
    assert exporter_sm["metadata"]["labels"]["release"] == "kps"
    assert exporter_sm["metadata"]["labels"]["scrape"] == "exporter"
    assert exporter_sm["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}
    ]

    vllm_sm = service_monitors["obspack-vllm"]
    assert vllm_sm["metadata"]["namespace"] == "llm"
    assert vllm_sm["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "vllm"}}
    assert vllm_sm["spec"]["namespaceSelector"] == {"matchNames": ["llm"]}
    assert vllm_sm["spec"]["endpoints"][0]["port"] == "metrics"

    sidecar_pm = one(everything_docs, "PodMonitor")
    assert sidecar_pm["metadata"]["namespace"] == "llm"
    assert sidecar_pm["spec"]["namespaceSelector"] == {"matchNames": ["llm", "llm-canary"]}
    assert sidecar_pm["spec"]["podMetricsEndpoints"][0]["interval"] == "20s"
    assert {"release": "kps", "scrape": "sidecar"}.items() <= sidecar_pm["metadata"]["labels"].items()


def test_vllm_pod_monitor(helm: Helm) -> None:
    docs = helm.template(
        extra=("--set", "vllmMonitor.enabled=true", "--set", "vllmMonitor.selector.matchLabels.app=vllm")
    )
    monitor = one(docs, "PodMonitor")
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "http"
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "vllm"}}


def test_everything_off_renders_nothing(helm: Helm) -> None:
    result = helm.run(
        "template",
        "obspack",
        str(CHART),
        "--set",
        "prometheusRule.enabled=false",
        "--set",
        "dashboards.enabled=false",
    )
    assert result.returncode == 0, result.stderr
    assert [d for d in yaml.safe_load_all(result.stdout) if d] == []


# ---------------------------------------------------------------------------------------------------------
# values.schema.json and the templates' own checks: readable errors


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--set", "alerts.VLLMKVCacheUsageHigh.ratio=high"],
            "alerts.VLLMKVCacheUsageHigh.ratio: Invalid type. Expected: number, given: string",
        ),
        (
            ["--set", "alerts.VLLMKVCacheUsageHigh.enabled=maybe"],
            "alerts.VLLMKVCacheUsageHigh.enabled: Invalid type. Expected: boolean",
        ),
        (
            ["--set", "alerts.VLLMKVCacheUsageHigh.treshold=1"],
            "alerts.VLLMKVCacheUsageHigh: Additional property treshold is not allowed",
        ),
        (
            ["--set", "alerts.VLLMKVCacheUsageHihg.enabled=false"],
            "alerts: Additional property VLLMKVCacheUsageHihg is not allowed",
        ),
        (["--set", "exporterr.enabled=true"], "(root): Additional property exporterr is not allowed"),
        (
            ["--set-json", "alerts.VLLMKVCacheUsageHigh.ratio=1.5"],
            "alerts.VLLMKVCacheUsageHigh.ratio: Must be less than or equal to 0.999",
        ),
        (
            ["--set", "alerts.VLLMKVCacheUsageHigh.for=5 minutes"],
            "alerts.VLLMKVCacheUsageHigh.for: Does not match pattern",
        ),
        (
            ["--set", "alerts.VLLMKVCacheUsageHigh.severity=page"],
            "alerts.VLLMKVCacheUsageHigh.severity: alerts.VLLMKVCacheUsageHigh.severity must be one of the following",
        ),
        (["--set", "commonLabels.severity=x"], 'commonLabels: Property name of "severity" does not match'),
        (["--set", "runbookBaseURL=https://x.example.com/a b"], "runbookBaseURL: Does not match pattern"),
        (["--set", "exporter.enabled=true"], "exporter.enabled is true but exporter.targets is empty"),
        (["--set", "vllmMonitor.enabled=true"], "vllmMonitor.selector is empty"),
    ],
    ids=lambda v: v[-1] if isinstance(v, list) else None,
)
def test_bad_values_fail_with_a_readable_error(helm: Helm, args: list[str], expected: str) -> None:
    assert expected in helm.template_error(*args)


def test_schema_and_config_agree_on_alert_settings() -> None:
    """values.schema.json accepts what obspack's config accepts, and rejects what it rejects."""
    schema = values_schema(build_chart(ObspackConfig()))
    alert_schema = schema["properties"]["alerts"]["properties"]["VLLMPrefixCacheHitRateLow"]
    cases = [
        ({"ratio": 0.5, "for": "1h30m", "window": "90s"}, True),
        ({"ratio": 0}, False),
        ({"ratio": 1.01}, False),
        ({"for": "5"}, False),
        ({"for": "5min"}, False),
        ({"min_query_tokens_per_second": -1}, False),
        ({"labels": {"team": "a"}}, True),
        ({"labels": {"alertname": "a"}}, False),
        ({"labels": {"bad-name": "a"}}, False),
        ({"labels": {"__meta": "a"}}, False),
        ({"labels": {"pod": "a"}}, False),
        ({"labels": {"team": ""}}, False),
        ({"labels": {"team": "{{ $value }}"}}, False),
        ({"labels": {"_team": "a"}}, True),
        ({"ratio": 0.95}, False),
        ({"severity": "page"}, False),
    ]
    for settings, ok in cases:
        schema_ok = jsonschema.Draft7Validator(alert_schema).is_valid(
            {**_defaults("VLLMPrefixCacheHitRateLow"), **settings}
        )
        try:
            ObspackConfig.model_validate({"alerts": {"VLLMPrefixCacheHitRateLow": settings}})
            config_ok = True
        except ValidationError:
            config_ok = False
        assert (schema_ok, config_ok) == (ok, ok), settings


def _defaults(alert: str) -> dict[str, Any]:
    return load(CHART / "values.yaml")["alerts"][alert]


# ---------------------------------------------------------------------------------------------------------
# validation of the rendered manifests


def _closed(node: Any) -> Any:
    """The cloudcoil CRD schema with unknown keys forbidden, and Go-only `(?i)` flags dropped."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        if isinstance(node.get("pattern"), str):
            node["pattern"] = node["pattern"].replace("(?i)", "")
        for value in node.values():
            _closed(value)
    elif isinstance(node, list):
        for value in node:
            _closed(value)
    return node


@pytest.fixture(scope="module")
def operator_schemas() -> dict[str, tuple[Any, jsonschema.Draft202012Validator]]:
    from cloudcoil.models.prometheus_operator import v1

    out = {}
    for kind in OPERATOR_KINDS:
        model = getattr(v1, kind)
        out[kind] = (model, jsonschema.Draft202012Validator(_closed(model.model_json_schema(by_alias=True))))
    return out


def _validate(doc: dict[str, Any], operator_schemas: dict[str, Any]) -> None:
    kind = doc["kind"]
    if kind in operator_schemas:
        model, validator = operator_schemas[kind]
        model.model_validate(doc)
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, f"{kind} {doc['metadata']['name']}: {errors}"
    else:
        kubernetes_validate.validate(doc, "1.30.0", strict=True)


@pytest.mark.parametrize("render", ["default_docs", "everything_docs"])
def test_manifests_match_kubernetes_and_operator_schemas(
    render: str, request: pytest.FixtureRequest, operator_schemas: dict[str, Any]
) -> None:
    for doc in request.getfixturevalue(render):
        _validate(doc, operator_schemas)


def test_closed_operator_schema_catches_unknown_keys(
    default_docs: list[dict[str, Any]], operator_schemas: dict[str, Any]
) -> None:
    rule = copy.deepcopy(one(default_docs, "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["recrod"] = "x"
    with pytest.raises(AssertionError, match="recrod"):
        _validate(rule, operator_schemas)


@pytest.mark.parametrize("render", ["default_docs", "everything_docs"])
def test_promtool_accepts_the_rule_groups(
    render: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    promtool = require_tool("promtool")
    rule = one(request.getfixturevalue(render), "PrometheusRule")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------------------
# secure by default, and the sidecar


def _assert_locked_down(container: dict[str, Any]) -> None:
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind]), kind


def test_exporter_is_secure_by_default(helm: Helm) -> None:
    docs = helm.template(
        extra=("--set", "exporter.enabled=true", "--set", "exporter.targets={http://vllm:8000/metrics}")
    )
    assert sorted({d["kind"] for d in docs}) == [
        "ConfigMap",
        "Deployment",
        "PrometheusRule",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
    ]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    assert one(docs, "ServiceAccount")["automountServiceAccountToken"] is False
    _assert_locked_down(pod["containers"][0])


def _strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """Enough of kubectl's strategic merge for the sidecar patch: lists of named items merge by name."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = _strategic_merge(base[k], v, k) if k in base else v
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and key in ("containers", "env", "volumes", "volumeMounts")
    ):
        merge_key = "mountPath" if key == "volumeMounts" else "name"
        out = list(base)
        for item in patch:
            index = next((i for i, b in enumerate(out) if b[merge_key] == item[merge_key]), None)
            if index is None:
                out.append(item)
            else:
                out[index] = _strategic_merge(out[index], item)
        return out
    return patch


def test_sidecar_patch_makes_a_valid_scraped_pod(helm: Helm) -> None:
    patch = load(CHART / layout.SIDECAR_PATCH)
    patched = _strategic_merge(load(FIXTURES / "vllm-deployment.yaml"), patch)
    kubernetes_validate.validate(patched, "1.30.0", strict=True)

    template = patched["spec"]["template"]
    containers = {c["name"]: c for c in template["spec"]["containers"]}
    assert set(containers) == {"vllm", "obspack-exporter"}
    vllm, sidecar = containers["vllm"], containers["obspack-exporter"]
    assert {"name": "HF_HOME", "value": "/models"} in vllm["env"]  # the vLLM container keeps what it had
    probe_dir = next(e["value"] for e in vllm["env"] if e["name"] == "OBSPACK_PROBE_DIR")
    assert f"--probe-dir={probe_dir}" in sidecar["args"]
    assert {m["mountPath"] for m in vllm["volumeMounts"]} >= {"/models", probe_dir}
    _assert_locked_down(sidecar)

    # The chart's PodMonitor selects exactly the patched pods, on the sidecar's port.
    monitor = one(helm.template(extra=("--set", "sidecar.podMonitor.enabled=true")), "PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    ports = {p["name"] for p in sidecar["ports"]}
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] in ports
    assert monitor["spec"]["namespaceSelector"] == {"any": True}


def test_sidecar_runs_the_exporter_as_the_deployment_does(helm: Helm) -> None:
    """Same image, security context, resources and health checks in both ways of running the exporter."""
    docs = helm.template(
        extra=("--set", "exporter.enabled=true", "--set", "exporter.targets={http://vllm:8000/metrics}")
    )
    deployed = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    patch = load(CHART / layout.SIDECAR_PATCH)
    sidecar = next(
        c for c in patch["spec"]["template"]["spec"]["containers"] if c["name"] == "obspack-exporter"
    )
    for key in ("image", "command", "securityContext", "resources"):
        assert sidecar[key] == deployed[key], key
    for probe in ("readinessProbe", "livenessProbe"):
        assert sidecar[probe]["httpGet"]["path"] == deployed[probe]["httpGet"]["path"] == "/healthz"
    assert sidecar["ports"][0]["containerPort"] == deployed["ports"][0]["containerPort"]


def test_no_rbac_anywhere(everything_docs: list[dict[str, Any]]) -> None:
    kinds = {d["kind"] for d in everything_docs}
    assert not kinds & {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
