"""`build(cfg)` composes the whole pack in memory, as data. It reads the config; writers never do."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from obspack import __version__
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from obspack.errors import RenderError
from obspack.render.alertmanager import alertmanager_example
from obspack.rules.alerts import alert_groups, all_alerts, enabled
from obspack.rules.model import AlertRule, RuleGroup
from obspack.rules.recording import all_recording_groups
from obspack.rules.slo_tests import slo_rule_tests
from obspack.rules.unit_tests import rule_tests
from obspack.runbooks import render_runbooks


@dataclass(frozen=True)
class Dashboard:
    name: str  # file name without .json
    title: str
    uid: str
    model: dict[str, object]


@dataclass(frozen=True)
class Pack:
    version: str
    source: str  # what the pack was rendered from, for the generated headers (stamp)
    cluster_label: str  # the label every aggregation keeps (engine writers reason about it)
    recording_groups: tuple[RuleGroup, ...]
    alert_groups: tuple[RuleGroup, ...]
    alerts: tuple[AlertRule, ...]  # the enabled alerts (one rule each; several for the burn alert)
    dashboards: tuple[Dashboard, ...]
    runbooks: tuple[tuple[str, str], ...]  # (slug, markdown)
    rule_tests: tuple[tuple[str, dict[str, object]], ...]  # (file name, promtool test file)
    missing_tests: tuple[str, ...]  # enabled alerts or SLOs without a shipped test, and why
    alertmanager: dict[str, object]
    prometheus_rule: dict[str, object]  # name, namespace, labels
    grafana: dict[str, object]  # namespace, folder, folder_annotation, configmap_labels


def stamp(cfg: ObspackConfig) -> str:
    """What the generated headers say the pack came from: the settings' digest, not the file's name, so
    that renaming or reformatting the config leaves the output as it is."""
    if cfg == ObspackConfig():
        return "built-in defaults"
    digest = hashlib.sha256(cfg.model_dump_json(by_alias=True).encode()).hexdigest()[:12]
    return f"config {digest}"


def build(cfg: ObspackConfig) -> Pack:
    groups = tuple(alert_groups(cfg))
    if not groups:
        raise RenderError("every alert is disabled: the pack would have no alerts (enable at least one)")
    dashboards = tuple(
        Dashboard(name=name, title=str(model["title"]), uid=str(model["uid"]), model=model)
        for name, model in all_dashboards(cfg)
    )
    tests, missing = rule_tests(cfg)
    slo_tests, slo_missing = slo_rule_tests(cfg)
    return Pack(
        version=__version__,
        source=stamp(cfg),
        cluster_label=cfg.cluster_label,
        recording_groups=tuple(all_recording_groups(cfg)),
        alert_groups=groups,
        alerts=tuple(a for a in all_alerts(cfg) if enabled(cfg, a.alert)),
        dashboards=dashboards,
        runbooks=tuple(sorted(render_runbooks(cfg).items())),
        rule_tests=tuple(sorted({**tests, **slo_tests}.items())),
        missing_tests=tuple(missing + slo_missing),
        alertmanager=alertmanager_example(cfg),
        prometheus_rule=cfg.prometheus_rule.model_dump(),
        grafana=cfg.grafana.model_dump(),
    )
