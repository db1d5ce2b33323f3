"""Writers: one function per output format, each a pure function from the pack to file texts.

The layout is a contract that users' tools, the Helm chart and the tests read:
    prometheus/   plain rule files (recording rules, alerts) for Prometheus
    thanos/       the same groups for Thanos Ruler, with partial_response_strategy
    mimir/        the same groups as Mimir ruler namespaces (mimirtool rules load/sync)
    vmalert/      the same groups for vmalert, expressions rewritten to MetricsQL (docs/engines.md)
    kubernetes/   a PrometheusRule and one Grafana-sidecar ConfigMap per dashboard; autoscaling/: the KEDA
                  ScaledObjects or HPAs of autoscaling.autoscalers, and the prometheus-adapter rules
    grafana/      one JSON file per dashboard
    runbooks/     one Markdown runbook per alert
    tests/        promtool unit tests of the alerts, for the user's CI
    alertmanager/ an example routing tree with inhibitions
    README.md     what each folder holds and how it was made
"""

from __future__ import annotations

import json
from collections.abc import Callable

from obspack.conventions import MARKER
from obspack.memo import per_config
from obspack.pack import Dashboard, Pack, autoscaling
from obspack.render import thanos, vmalert, yamlfmt
from obspack.render.mimir import mimir_files
from obspack.rules.model import RuleGroup
from obspack.templating import render_template

RECORDING_FILE = "prometheus/recording-rules.yaml"
ALERTS_FILE = "prometheus/alerts.yaml"
PROMETHEUS_RULE_FILE = "kubernetes/prometheusrule.yaml"


def header(pack: Pack) -> str:
    """The first line of every file: obspack's marker and version, not what it was rendered from (the
    config's digest is in README.md alone, so that a change of one setting changes only the files it
    touches)."""
    return f"{MARKER} {pack.version}. Do not edit: change the config and run `obspack render`."


def _yaml_file(pack: Pack, data: object, *, multi: bool = False) -> str:
    body = yamlfmt.dump_all(data) if multi else yamlfmt.dump(data)  # type: ignore[arg-type]
    return f"# {header(pack)}\n{body}"


def _rule_docs(
    pack: Pack, recording_file: str, alerts_file: str, group: Callable[[RuleGroup], dict[str, object]]
) -> dict[str, dict[str, object]]:
    """An engine's two rule files, the recording groups and the alert groups, each group as `group` writes it."""
    return {
        recording_file: {"groups": [group(g) for g in pack.recording_groups]},
        alerts_file: {"groups": [group(g) for g in pack.alert_groups]},
    }


def rule_files(pack: Pack) -> dict[str, str]:
    docs = _rule_docs(pack, RECORDING_FILE, ALERTS_FILE, RuleGroup.to_dict)
    return {path: _yaml_file(pack, doc) for path, doc in docs.items()}


def prometheus_rule(pack: Pack) -> dict[str, object]:
    pr = pack.prometheus_rule
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": pr["name"],
            "namespace": pr["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "obspack", **dict(sorted(pr["labels"].items()))},  # type: ignore[union-attr]
        },
        "spec": {"groups": [g.to_dict() for g in pack.recording_groups + pack.alert_groups]},
    }


def dashboard_json(pack: Pack, dashboard: Dashboard) -> str:
    return _dashboard_json(pack, dashboard.name)


@per_config
def _dashboard_json(pack: Pack, name: str) -> str:
    """A dashboard's JSON, serialised once per pack (the Grafana file and its ConfigMap carry the same)."""
    dashboard = next(d for d in pack.dashboards if d.name == name)
    model = {"__generated": header(pack), **dashboard.model}
    return json.dumps(model, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def dashboard_configmap(pack: Pack, dashboard: Dashboard) -> dict[str, object]:
    g = pack.grafana
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"obspack-dashboard-{dashboard.name}",
            "namespace": g["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "obspack", **dict(sorted(g["configmap_labels"].items()))},  # type: ignore[union-attr]
            "annotations": {str(g["folder_annotation"]): str(g["folder"])},
        },
        "data": {f"{dashboard.name}.json": dashboard_json(pack, dashboard)},
    }


def _configmap_yaml(pack: Pack, configmap: dict[str, object]) -> str:
    """The ConfigMap as YAML, its dashboard JSON as a literal block written directly: the YAML emitter
    would inspect every character of a large string, and JSON needs no escaping inside a literal block."""
    data: dict[str, str] = configmap["data"]  # type: ignore[assignment]
    head = _yaml_file(pack, {k: v for k, v in configmap.items() if k != "data"})
    blocks = "".join(
        f"  {key}: |\n" + "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())
        for key, text in data.items()
    )
    return f"{head}data:\n{blocks}"


def kubernetes_files(pack: Pack) -> dict[str, str]:
    out = {PROMETHEUS_RULE_FILE: _yaml_file(pack, prometheus_rule(pack))}
    for d in pack.dashboards:
        out[f"kubernetes/dashboards/{d.name}.yaml"] = _configmap_yaml(pack, dashboard_configmap(pack, d))
    return out


AUTOSCALING_DIR = "kubernetes/autoscaling"


def autoscaling_files(pack: Pack) -> dict[str, str]:
    """One file per autoscaler (a ScaledObject, or an HPA), and the prometheus-adapter rules the HPAs need
    (its config's `externalRules`; the adapter's Helm chart takes the list as `rules.external`)."""
    out = {f"{AUTOSCALING_DIR}/{name}": _yaml_file(pack, list(docs), multi=True) for name, docs in pack.autoscaling.files}
    if pack.autoscaling.adapter_rules:
        rules = {"externalRules": list(pack.autoscaling.adapter_rules)}
        out[f"{AUTOSCALING_DIR}/{autoscaling.ADAPTER_FILE}"] = _yaml_file(pack, rules)
    return out


def grafana_files(pack: Pack) -> dict[str, str]:
    return {f"grafana/{d.name}.json": dashboard_json(pack, d) for d in pack.dashboards}


def runbook_files(pack: Pack) -> dict[str, str]:
    return {f"runbooks/{slug}.md": f"<!-- {header(pack)} -->\n{text}" for slug, text in pack.runbooks}


def engine_files(pack: Pack) -> dict[str, str]:
    """The rule files for Thanos Ruler, Mimir's ruler and vmalert (one writer module each)."""
    docs = {
        **_rule_docs(pack, thanos.RECORDING_FILE, thanos.ALERTS_FILE, lambda g: thanos.thanos_group(g, pack.cluster_label)),
        **mimir_files(pack),
        **_rule_docs(pack, vmalert.RECORDING_FILE, vmalert.ALERTS_FILE, lambda g: vmalert.vmalert_group(g).to_dict()),
    }
    return {path: _yaml_file(pack, doc) for path, doc in docs.items()}


def test_files(pack: Pack) -> dict[str, str]:
    return {f"tests/{name}": _yaml_file(pack, data) for name, data in pack.rule_tests}


def alertmanager_files(pack: Pack) -> dict[str, str]:
    return {"alertmanager/alertmanager.yaml": _yaml_file(pack, pack.alertmanager)}


def readme(pack: Pack, paths: list[str]) -> str:
    text = render_template("pack-README.md.j2", pack=pack, paths=sorted(paths))
    return f"<!-- {MARKER} {pack.version} from {pack.source}. Do not edit: change the config and run `obspack render`. -->\n{text}"


def pack_files(pack: Pack) -> dict[str, str]:
    """Every file of the pack, keyed by its POSIX path relative to the output folder, sorted."""
    files: dict[str, str] = {}
    writers = (
        rule_files,
        engine_files,
        kubernetes_files,
        autoscaling_files,
        grafana_files,
        runbook_files,
        test_files,
        alertmanager_files,
    )
    for writer in writers:
        files.update(writer(pack))
    files["README.md"] = readme(pack, list(files))
    return dict(sorted(files.items()))
