"""Alert groups. Each topic module lists its alert functions; this index only joins them and applies
the cross-cutting settings (enabled flags, extra labels, runbook and dashboard links) in one place."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.alerts import exporter, memory, vllm
from obspack.rules.model import AlertRule, RuleGroup

AlertFn = Callable[[ObspackConfig], AlertRule]

TOPICS: tuple[tuple[str, tuple[AlertFn, ...]], ...] = (
    ("memory-planes", memory.ALERTS),
    ("vllm-engine", vllm.ALERTS),
    ("exporter", exporter.ALERTS),
)


def runbook_url(cfg: ObspackConfig, slug: str) -> str:
    base = cfg.runbook_base_url
    if not base:
        return f"runbooks/{slug}.md"
    return f"{base.rstrip('/')}/{slug}.md"


def dashboard_url(cfg: ObspackConfig) -> str:
    """Link to the triage dashboard with the alert's cluster, namespace and pod preselected."""
    uid = c.dashboard_uid(c.TRIAGE_DASHBOARD)
    cl = cfg.cluster_label
    query = (
        f"var-cluster={{{{ $labels.{cl} }}}}&var-namespace={{{{ $labels.namespace }}}}"
        "&var-pod={{ $labels.pod }}"
    )
    return f"{cfg.grafana.url.rstrip('/')}/d/{uid}/{c.TRIAGE_DASHBOARD}?{query}"


def finish(cfg: ObspackConfig, rule: AlertRule) -> AlertRule:
    """Add the config's labels, the cluster to the description, and the links."""
    settings = getattr(cfg.alerts, rule.alert)
    labels = {**cfg.common_labels, **settings.labels}
    cluster = f"{{{{ with $labels.{cfg.cluster_label} }}}} Cluster: {{{{ . }}}}.{{{{ end }}}}"
    finished = AlertRule(
        **{**rule.__dict__, "labels": tuple(sorted(labels.items())), "description": rule.description + cluster}
    )
    return finished.with_links(runbook_url(cfg, rule.runbook), dashboard_url(cfg))


def alert_groups(cfg: ObspackConfig, topics: Iterable[tuple[str, tuple[AlertFn, ...]]] = TOPICS) -> list[RuleGroup]:
    groups = []
    for topic, fns in topics:
        rules = tuple(finish(cfg, fn(cfg)) for fn in fns)
        enabled = tuple(r for r in rules if getattr(cfg.alerts, r.alert).enabled)
        if enabled:
            groups.append(RuleGroup(name=f"{c.GROUP_PREFIX}-{topic}.alerts", rules=enabled, interval=cfg.rule_interval))
    return groups


def all_alerts(cfg: ObspackConfig) -> list[AlertRule]:
    """Every alert of the catalogue, enabled or not, finished with links (for runbooks and docs)."""
    return [finish(cfg, fn(cfg)) for _, fns in TOPICS for fn in fns]
