"""`build(cfg)` composes the whole pack in memory, as data, once: the rule groups, the alert catalogue,
the dashboards, runbooks, shipped unit tests and the Alertmanager example. It is the only reader of the
config on the way to the files; the writers read the Pack."""

from __future__ import annotations

import hashlib

from obspack import __version__
from obspack.config import ObspackConfig, defaults, flat_dump
from obspack.config.cost import GPU_HOURS
from obspack.dashboards import all_dashboards
from obspack.errors import RenderError
from obspack.pack.alertmanager import alertmanager_example
from obspack.pack.autoscaling import manifests
from obspack.pack.model import Costs, Dashboard, Pack, Price, Sources
from obspack.pack.shipped_tests.alerts import rule_tests
from obspack.pack.shipped_tests.slos import slo_rule_tests
from obspack.rules.alerts import alert_groups, all_alerts, enabled
from obspack.rules.recording import all_recording_groups
from obspack.rules.recording import cost as cost_rules
from obspack.runbooks import render_runbooks


def stamp(cfg: ObspackConfig) -> str:
    """What the generated headers say the pack came from: the settings' digest, not the file's name, so
    that renaming or reformatting the config leaves the output as it is."""
    if cfg == defaults():
        return "built-in defaults"
    digest = hashlib.sha256(cfg.model_dump_json(by_alias=True).encode()).hexdigest()[:12]
    return f"config {digest}"


def costs(cfg: ObspackConfig) -> Costs:
    cost = cfg.cost
    source = "opencost" if cost.source == "opencost" else ("gpu_hours" if cost.currency == GPU_HOURS else "config")
    return Costs(
        source=source,
        currency=cost.currency,
        prices=tuple(
            Price(cost_rules.blank_tolerant(p.model_regex), p.hourly, p.cluster_regex, p.node_pool_regex)
            for p in cost.gpus
        ),
        default_hourly=cost.default_hourly,
        node_pool_label=cost_rules.ksm_label(cost.node_pool_label) if cost.node_pool_label else "",
        opencost_selector=cost.opencost.selector,
        in_use=cost_rules.in_use(cfg),
    )


def build(cfg: ObspackConfig) -> Pack:
    groups = alert_groups(cfg)
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
        sources=Sources(
            selectors=flat_dump(cfg.selectors),
            image_regex=cfg.vllm_containers.image_regex,
            name_regex=cfg.vllm_containers.name_regex,
        ),
        recording_groups=all_recording_groups(cfg),
        alert_groups=groups,
        alerts=tuple(a for a in all_alerts(cfg) if enabled(cfg, a.alert)),
        dashboards=dashboards,
        runbooks=tuple(sorted(render_runbooks(cfg).items())),
        rule_tests=tuple(sorted({**tests, **slo_tests}.items())),
        missing_tests=tuple(missing + slo_missing),
        alertmanager=alertmanager_example(cfg),
        prometheus_rule=flat_dump(cfg.prometheus_rule),
        grafana=flat_dump(cfg.grafana),
        autoscaling=manifests(cfg),
        costs=costs(cfg),
    )
