"""Alert groups. Each topic module lists its alert functions; this index only joins them and applies
the cross-cutting settings (enabled flags, extra labels, runbook and dashboard links) in one place."""

from __future__ import annotations

from collections.abc import Callable

from obspack import conventions as c
from obspack import slos
from obspack.config import AlertSettings, ObspackConfig, SLOs
from obspack.memo import per_config
from obspack.rules.alerts import (
    autoscaling,
    cost,
    disaggregation,
    exporter,
    features,
    gateway,
    memory,
    slo,
    vllm,
)
from obspack.rules.model import AlertRule, RuleGroup

AlertFn = Callable[[ObspackConfig], AlertRule]

TOPICS: tuple[tuple[str, tuple[AlertFn, ...]], ...] = (
    ("memory-planes", memory.ALERTS),
    ("vllm-engine", vllm.ENGINE_ALERTS),
    ("vllm-load", vllm.LOAD_ALERTS),
    ("exporter", exporter.ALERTS),
    ("vllm-features", features.ALERTS),
    ("disaggregation", disaggregation.ALERTS),
    ("autoscaling", autoscaling.ALERTS),
    ("cost", cost.ALERTS),
    ("slo", slo.ALERTS),
    ("gateway", gateway.ALERTS),
)


RUNBOOKS = "runbooks/"  # where runbook_url points when no base URL is set: the pack's own runbooks


def runbook_url(cfg: ObspackConfig, slug: str) -> str:
    base = cfg.runbook_base_url
    if not base:
        return f"{RUNBOOKS}{slug}.md"
    return f"{base.rstrip('/')}/{slug}.md"


# The dashboard variables an alert link sets, per page, and the alert label each one takes.
LINK_VARIABLES = {
    c.TRIAGE_DASHBOARD: ("namespace", "pod"),
    c.SLO_DASHBOARD: ("namespace", "model"),
    c.FLEET_DASHBOARD: ("namespace",),
    c.COST_DASHBOARD: ("namespace", "model"),
    c.DISAGGREGATION_DASHBOARD: ("namespace", "model"),
    c.GATEWAY_DASHBOARD: ("namespace",),
}


def dashboard_url(cfg: ObspackConfig, name: str = c.TRIAGE_DASHBOARD) -> str:
    """Link to a dashboard with the alert's cluster and namespace, and its pod (triage page) or model (SLO
    page), preselected."""
    uid = c.dashboard_uid(name)
    labels = {"cluster": cfg.cluster_label, "model": "model_name"}
    query = "&".join(
        f"var-{v}={{{{ $labels.{labels.get(v, v)} }}}}" for v in ("cluster", *LINK_VARIABLES[name])
    )
    return f"{cfg.grafana.url.rstrip('/')}/d/{uid}/{name}?{query}"


def settings(cfg: ObspackConfig, alert: str) -> AlertSettings | SLOs:
    """Where an alert's `enabled` and `labels` live: alerts.<name>, or slos for the SLO burn alert."""
    return cfg.slos if alert == slo.ALERT else getattr(cfg.alerts, alert)


def enabled(cfg: ObspackConfig, alert: str) -> bool:
    """Whether the alert is rendered: its `enabled`, or for the SLO burn alert, any SLO being on."""
    if alert == slo.ALERT:
        return bool(slos.enabled_slis(cfg))
    return settings(cfg, alert).enabled


def finish(cfg: ObspackConfig, rule: AlertRule) -> AlertRule:
    """Add the config's labels, the cluster to the description, and the links."""
    labels = {**cfg.common_labels, **settings(cfg, rule.alert).labels, **dict(rule.labels)}
    cluster = f"{{{{ with $labels.{cfg.cluster_label} }}}} Cluster: {{{{ . }}}}.{{{{ end }}}}"
    finished = AlertRule(
        **{**rule.__dict__, "labels": tuple(sorted(labels.items())), "description": rule.description + cluster}
    )
    page = rule.dashboard or c.TRIAGE_DASHBOARD
    return finished.with_links(runbook_url(cfg, rule.runbook), dashboard_url(cfg, page))


@per_config
def _catalogue(cfg: ObspackConfig) -> tuple[tuple[str, tuple[AlertRule, ...]], ...]:
    """Every alert of every topic, finished: built once per config."""
    return tuple((topic, tuple(finish(cfg, fn(cfg)) for fn in fns)) for topic, fns in TOPICS)


@per_config
def alert_groups(cfg: ObspackConfig) -> tuple[RuleGroup, ...]:
    """One group per topic with its enabled alerts (a topic without any has no group)."""
    groups = []
    for topic, rules in _catalogue(cfg):
        kept = tuple(r for r in rules if enabled(cfg, r.alert))
        if kept:
            groups.append(RuleGroup(name=f"{c.GROUP_PREFIX}-{topic}.alerts", rules=kept, interval=cfg.rule_interval))
    return tuple(groups)


def topic_alerts(cfg: ObspackConfig, topic: str) -> tuple[str, ...]:
    """The names of one topic's alerts, enabled or not."""
    return tuple(rule.alert for name, rules in _catalogue(cfg) if name == topic for rule in rules)


def all_alerts(cfg: ObspackConfig) -> tuple[AlertRule, ...]:
    """Every alert of the catalogue, enabled or not, finished with links (for runbooks and docs)."""
    return tuple(rule for _, rules in _catalogue(cfg) for rule in rules)
