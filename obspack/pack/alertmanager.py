"""An example Alertmanager config: route by severity (and team), inhibit warnings under criticals.

The whole file is a valid Alertmanager config (`amtool check-config` passes), but the part to copy is
`route.routes[0]`, the obspack sub-route, plus `inhibit_rules` and the `obspack-*` receivers:

- The obspack sub-route matches obspack's own alert names only, so it can sit beside other routes.
- Inside it, one sub-route per `team` label value found in the config (`common_labels` or an alert's
  `labels`) sends that team's alerts to its own receivers; then critical -> pager, warning -> chat,
  info -> ticket.
- VLLMErrorBudgetBurn is per model, not per pod: its pages (critical) go to the pager and its tickets
  (warning) to the ticket receiver, each notification grouped per cluster, namespace, model and SLO.
- Inhibitions (same cluster, namespace and pod): VLLMKVCacheUsageCritical mutes VLLMKVCacheUsageHigh,
  VLLMContainerOOMKilled mutes VLLMHostMemoryNearLimit, and VLLMTargetDown mutes the pod's other obspack
  alerts, except the restart alerts that tell why the target went down. A burn page mutes the ticket of
  the same model and SLO. VLLMPrefillDecodeImbalance mutes VLLMRequestQueueBacklog on the pods of the
  short side (same cluster, namespace and model; `short` equal to the pods' `role`).
  The `engine` label of per-engine alerts (data-parallel engines) is left out of
  `equal` on purpose: a critical KV cache on any engine of a pod mutes every KV warning of that pod, per
  engine or pod-wide, so one pod's KV cache pages once.
- Inhibition (same cluster and namespace): a dead endpoint picker (InferenceGatewayPickerDown) or an
  InferencePool without ready endpoints (InferencePoolNoReadyEndpoints) mutes the symptoms of the engines
  behind it (targets down, zero throughput, SLO burn), so the outage pages once, where the pool is the
  only one of its namespace (the outage's `only_pool_in_namespace="true"`): an InferencePool selects pods
  of its own namespace, but engine alerts carry no pool, so beside a second pool they page. The pool's
  own flow-control rejections are muted under its empty pool (same `inference_pool`). The memory-plane
  alerts that explain an empty pool (OOM kills, restarts, host and GPU memory) stay.

Receivers are placeholders without integrations: add `pagerduty_configs`, `slack_configs`,
`webhook_configs` and so on to the `obspack-*` receivers.
"""

from __future__ import annotations

from obspack.catalogue.gateway import FLOW_POOL
from obspack.config import ObspackConfig, Severity
from obspack.rules import alerts
from obspack.rules.alerts.gateway import ONLY_POOL
from obspack.rules.alerts.slo import ALERT as BURN

DEFAULT_RECEIVER = "default"
PAGER = "obspack-pager"
CHAT = "obspack-chat"
TICKET = "obspack-ticket"
TEAM_LABEL = "team"

SEVERITY_RECEIVERS: tuple[tuple[Severity, str], ...] = (
    (Severity.CRITICAL, PAGER),
    (Severity.WARNING, CHAT),
    (Severity.INFO, TICKET),
)

IMBALANCE = "VLLMPrefillDecodeImbalance"
# Alerts that explain why a vLLM target went down: VLLMTargetDown must not hide them.
DOWN_CAUSES = ("VLLMContainerOOMKilled", "VLLMContainerRestarted")
# A pool outage (its picker dead, or no endpoint ready) and what it makes every engine behind it report.
POOL_OUTAGES = ("InferenceGatewayPickerDown", "InferencePoolNoReadyEndpoints")
POOL_SYMPTOMS = ("VLLMTargetDown", "VLLMZeroThroughput", BURN)
EMPTY_POOL, REJECTIONS = "InferencePoolNoReadyEndpoints", "InferenceGatewayFlowControlRejections"


def team_receivers(team: str) -> tuple[str, str]:
    """The (pager, chat) receivers of one team."""
    return f"obspack-team-{team}-pager", f"obspack-team-{team}-chat"


def _labels_of_enabled(cfg: ObspackConfig) -> dict[str, dict[str, str]]:
    """The extra labels of every enabled alert, by name (the burn alert's settings are `slos`)."""
    names = (*type(cfg.alerts).model_fields, BURN)
    return {name: dict(alerts.settings(cfg, name).labels) for name in names if alerts.enabled(cfg, name)}


def enabled_alerts(cfg: ObspackConfig) -> list[str]:
    return sorted(_labels_of_enabled(cfg))


def teams(cfg: ObspackConfig) -> list[str]:
    """Every value of the `team` label that the config puts on an enabled alert."""
    found = {{**cfg.common_labels, **labels}.get(TEAM_LABEL, "") for labels in _labels_of_enabled(cfg).values()}
    return sorted(t for t in found if t)


def _quote(value: str) -> str:
    """A double-quoted matcher value, escaped the way Alertmanager's matcher parser reads it."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _eq(label: str, value: str) -> str:
    return f"{label}={_quote(value)}"


def _one_of(label: str, values: list[str]) -> str:
    return f"{label}=~{_quote('|'.join(values))}"


def _burn_group_by(cfg: ObspackConfig) -> list[str]:
    return ["alertname", cfg.cluster_label, "namespace", "model_name", "slo"]


def _burn_route(cfg: ObspackConfig, receiver: str) -> dict[str, object]:
    """VLLMErrorBudgetBurn inside a severity route: to `receiver`, one notification group per model and SLO."""
    route: dict[str, object] = {
        "receiver": receiver,
        "matchers": [_eq("alertname", BURN)],
        "group_by": _burn_group_by(cfg),
    }
    if receiver == TICKET:
        route["repeat_interval"] = "24h"
    return route


def _team_route(cfg: ObspackConfig, team: str) -> dict[str, object]:
    pager, chat = team_receivers(team)
    burns = BURN in enabled_alerts(cfg)
    page: dict[str, object] = {
        "receiver": pager,
        "matchers": [_eq("severity", Severity.CRITICAL.value)],
        "repeat_interval": "1h",
    }
    tickets = []
    if burns:
        page["routes"] = [_burn_route(cfg, pager)]
        # The burn alert's tickets (warning) go to the ticket receiver before the team's chat takes warnings.
        tickets = [{**_burn_route(cfg, TICKET), "matchers": [_eq("severity", Severity.WARNING.value), _eq("alertname", BURN)]}]
    info = {"receiver": TICKET, "matchers": [_eq("severity", Severity.INFO.value)], "repeat_interval": "24h"}
    return {
        "receiver": chat,
        "matchers": [_eq(TEAM_LABEL, team)],
        "routes": [page, *tickets, info],
    }


def _severity_routes(cfg: ObspackConfig) -> list[dict[str, object]]:
    """critical -> pager, warning -> chat, info -> ticket; the burn alert's tickets (warning) -> ticket."""
    repeat = {Severity.CRITICAL: "1h", Severity.INFO: "24h"}
    burn = {Severity.CRITICAL: PAGER, Severity.WARNING: TICKET} if BURN in enabled_alerts(cfg) else {}
    routes: list[dict[str, object]] = []
    for severity, receiver in SEVERITY_RECEIVERS:
        route: dict[str, object] = {"receiver": receiver, "matchers": [_eq("severity", severity.value)]}
        if severity in repeat:
            route["repeat_interval"] = repeat[severity]
        if severity in burn:
            route["routes"] = [_burn_route(cfg, burn[severity])]
        routes.append(route)
    return routes


def _inhibit(source: str, targets: list[str], equal: list[str]) -> dict[str, object]:
    target = _eq("alertname", targets[0]) if len(targets) == 1 else _one_of("alertname", targets)
    return {"source_matchers": [_eq("alertname", source)], "target_matchers": [target], "equal": equal}


def inhibit_rules(cfg: ObspackConfig) -> list[dict[str, object]]:
    """Warnings muted under the critical alert that explains them, on the same pod (rules with a disabled
    side are left out)."""
    enabled = set(enabled_alerts(cfg))
    pod = [cfg.cluster_label, "namespace", "pod"]
    pairs = [
        ("VLLMKVCacheUsageCritical", ["VLLMKVCacheUsageHigh"], [*pod, "model_name"]),
        ("VLLMContainerOOMKilled", ["VLLMHostMemoryNearLimit"], [*pod, "container"]),
        # the pool's alerts carry no pod: an engine down never explains them
        ("VLLMTargetDown", sorted(enabled - {"VLLMTargetDown", BURN, *DOWN_CAUSES, *alerts.topic_alerts(cfg, "gateway")}), pod),
    ]
    rules = []
    for source, targets, equal in pairs:
        kept = [t for t in targets if t in enabled]
        if source in enabled and kept:
            rules.append(_inhibit(source, kept, equal))
    if {IMBALANCE, "VLLMRequestQueueBacklog"} <= enabled:
        # One imbalance alert per model says which side is short: its pods' queue alerts add nothing to it.
        for role in ("prefill", "decode"):
            rules.append(
                {
                    "source_matchers": [_eq("alertname", IMBALANCE), _eq("short", role)],
                    "target_matchers": [_eq("alertname", "VLLMRequestQueueBacklog"), _eq("role", role)],
                    "equal": [cfg.cluster_label, "namespace", "model_name"],
                }
            )
    outages = [a for a in POOL_OUTAGES if a in enabled]
    symptoms = [a for a in POOL_SYMPTOMS if a in enabled]
    if outages and symptoms:
        source = _eq("alertname", outages[0]) if len(outages) == 1 else _one_of("alertname", outages)
        target = _eq("alertname", symptoms[0]) if len(symptoms) == 1 else _one_of("alertname", symptoms)
        rules.append(
            {
                "source_matchers": [source, _eq(ONLY_POOL, "true")],
                "target_matchers": [target],
                "equal": [cfg.cluster_label, "namespace"],
            }
        )
    if {EMPTY_POOL, REJECTIONS} <= enabled:
        rules.append(_inhibit(EMPTY_POOL, [REJECTIONS], [cfg.cluster_label, "namespace", FLOW_POOL]))
    if BURN in enabled:
        rules.append(
            {
                "source_matchers": [_eq("alertname", BURN), _eq("severity", Severity.CRITICAL.value)],
                "target_matchers": [_eq("alertname", BURN), _eq("severity", Severity.WARNING.value)],
                "equal": [cfg.cluster_label, "namespace", "model_name", "slo"],
            }
        )
    return rules


def alertmanager_example(cfg: ObspackConfig) -> dict[str, object]:
    team_names = teams(cfg)
    obspack_route = {
        "receiver": CHAT,
        "matchers": [_one_of("alertname", enabled_alerts(cfg))],
        "routes": [*(_team_route(cfg, t) for t in team_names), *_severity_routes(cfg)],
    }
    receivers = [DEFAULT_RECEIVER, PAGER, CHAT, TICKET]
    for team in team_names:
        receivers.extend(team_receivers(team))
    return {
        "route": {
            "receiver": DEFAULT_RECEIVER,
            "group_by": ["alertname", cfg.cluster_label, "namespace", "pod"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [obspack_route],
        },
        "inhibit_rules": inhibit_rules(cfg),
        "receivers": [{"name": name} for name in receivers],
    }
