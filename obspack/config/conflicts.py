"""Settings that are valid alone but not together: windows against the scrape interval, thresholds
against each other, static labels against the cluster label.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from obspack import durations
from obspack.config.alerts import Alerts
from obspack.config.cost import GPU_HOURS
from obspack.config.model import ObspackConfig
from obspack.config.values import _MINUTE, Window, has_type


@dataclass(frozen=True)
class Conflict:
    """Settings that are valid alone but not together; `other` names the setting it conflicts with."""

    loc: tuple[str, ...]
    message: str  # "{other}" in it is replaced by where the other setting is: FILE:LINE, or "the default"
    other: tuple[str, ...] | None = None


def windows(cfg: ObspackConfig) -> list[tuple[tuple[str, ...], str]]:
    """Every configured range window of rate/increase/*_over_time, with its key path."""
    return [(("alerts", alert, name), getattr(getattr(cfg.alerts, alert), name)) for alert, name in _window_fields()]


@functools.cache
def _window_fields() -> tuple[tuple[str, str], ...]:
    """(alert, setting) of every Window setting: the same for every config, looked up once (the shipped
    tests ask for one alert's windows at a time)."""
    return tuple(
        (alert, name)
        for alert, field in Alerts.model_fields.items()
        for name, info in field.annotation.model_fields.items()  # type: ignore[union-attr]
        if has_type(info, Window)
    )


def _event_windows(cfg: ObspackConfig) -> list[tuple[tuple[str, ...], str]]:
    """Windows of alerts that hold only while a past event (a restart, the last sample of a target that
    went down) is inside the window: the alert must get through `for` before the event leaves it."""
    return [
        (("alerts", "VLLMContainerOOMKilled", "window"), cfg.alerts.VLLMContainerOOMKilled.window),
        (("alerts", "VLLMContainerRestarted", "window"), cfg.alerts.VLLMContainerRestarted.window),
        (("alerts", "VLLMTargetDown", "lookback"), cfg.alerts.VLLMTargetDown.lookback),
        (("alerts", "InferenceGatewayPickerDown", "lookback"), cfg.alerts.InferenceGatewayPickerDown.lookback),
        (("alerts", "InferencePoolNoReadyEndpoints", "lookback"), cfg.alerts.InferencePoolNoReadyEndpoints.lookback),
    ]


def conflicts(cfg: ObspackConfig) -> list[Conflict]:
    """Relations between settings: windows against the scrape interval, thresholds against each other."""
    found = []
    scrape = durations.parse_ms(cfg.scrape_interval)
    for loc, window in windows(cfg):
        if durations.parse_ms(window) < 2 * scrape:
            found.append(Conflict(
                loc,
                f"{window!r} is shorter than two scrapes (scrape_interval {cfg.scrape_interval}, {{other}}), so it can hold a "
                f"single sample and the rate is empty (allowed: at least {durations.format_ms(2 * scrape)})",
                ("scrape_interval",),
            ))
    # Two evaluations of the rule groups: every rule_interval when it is set, else Prometheus' default minute.
    evaluation = durations.parse_ms(cfg.rule_interval) if cfg.rule_interval else _MINUTE
    evaluations = f"rule_interval {cfg.rule_interval}" if cfg.rule_interval else "a minute"
    for loc, window in _event_windows(cfg):
        need = durations.parse_ms(getattr(cfg.alerts, loc[1]).for_) + 2 * evaluation
        if durations.parse_ms(window) < need:
            found.append(Conflict(
                loc,
                f"{window!r} is shorter than `for` ({getattr(cfg.alerts, loc[1]).for_}, {{other}}) plus two "
                f"evaluations of {evaluations}: the event leaves the window before the alert can fire "
                f"(allowed: at least {durations.format_ms(need)})",
                (*loc[:2], "for"),
            ))
    static = [(("common_labels",), cfg.common_labels)]
    static += [(("alerts", alert, "labels"), getattr(cfg.alerts, alert).labels) for alert in Alerts.model_fields]
    static.append((("slos", "labels"), cfg.slos.labels))  # VLLMErrorBudgetBurn's
    for loc, labels in static:
        if cfg.cluster_label in labels:
            found.append(Conflict(
                (*loc, cfg.cluster_label),
                f"sets the cluster label ({cfg.cluster_label}, {{other}}), which each alert takes from its rule "
                "(allowed: other label names)",
                ("cluster_label",),
            ))
    high, critical = cfg.alerts.VLLMKVCacheUsageHigh, cfg.alerts.VLLMKVCacheUsageCritical
    if high.enabled and critical.enabled and high.ratio >= critical.ratio:
        found.append(Conflict(
            ("alerts", "VLLMKVCacheUsageHigh", "ratio"),
            f"{high.ratio:g} is not below alerts.VLLMKVCacheUsageCritical.ratio ({critical.ratio:g}, {{other}}) "
            "(allowed: the warning threshold below the critical one)",
            ("alerts", "VLLMKVCacheUsageCritical", "ratio"),
        ))
    thrashing = cfg.alerts.VLLMAutoscalerThrashing
    most = durations.parse_ms(thrashing.window) // _MINUTE // 2
    if thrashing.enabled and thrashing.reversals > most:
        found.append(Conflict(
            ("alerts", "VLLMAutoscalerThrashing", "reversals"),
            f"{thrashing.reversals:g} rises and as many falls cannot fit in the window ({thrashing.window}, {{other}}): "
            f"the replicas are compared minute by minute, so it holds at most {most} of each "
            f"(allowed: at most {most} with this window, or a longer window)",
            ("alerts", "VLLMAutoscalerThrashing", "window"),
        ))
    found += _cost_conflicts(cfg)
    if not any(getattr(cfg.alerts, alert).enabled for alert in Alerts.model_fields):
        found.append(Conflict(("alerts",), "every alert is disabled (allowed: at least one enabled)"))
    found += _autoscalers(cfg)
    return found


def _autoscalers(cfg: ObspackConfig) -> list[Conflict]:
    """Each autoscaler's replicas and wake-up, and one name per namespace."""
    found = []
    seen: dict[tuple[str, str], int] = {}
    for i, a in enumerate(cfg.autoscaling.autoscalers):
        at = ("autoscaling", "autoscalers", str(i))
        if a.max_replicas < max(1, a.min_replicas):
            found.append(Conflict(
                (*at, "max_replicas"),
                f"{a.max_replicas} is below min_replicas ({a.min_replicas}, {{other}}) (allowed: at least "
                "min_replicas, and at least 1)",
                (*at, "min_replicas"),
            ))
        if a.min_replicas == 0 and a.engine == "hpa":
            found.append(Conflict(
                (*at, "min_replicas"),
                "0 needs engine: keda, since an HPA cannot scale to zero (allowed: at least 1 with engine: hpa)",
            ))
        elif a.min_replicas == 0 and not a.wake_query:
            found.append(Conflict(
                (*at, "min_replicas"),
                "0 needs wake_query: with no replica the saturation signal has no series, so nothing would wake "
                "the model (set wake_query to the requests waiting for it elsewhere, e.g. at the inference gateway)",
            ))
        if (a.namespace, a.name) in seen:
            found.append(Conflict(
                (*at, "name"),
                f"{a.name!r} is taken in namespace {a.namespace} by another autoscaler ({{other}}) (allowed: one "
                "name per namespace)",
                ("autoscaling", "autoscalers", str(seen[(a.namespace, a.name)]), "name"),
            ))
        seen.setdefault((a.namespace, a.name), i)
    return found


def _cost_conflicts(cfg: ObspackConfig) -> list[Conflict]:
    """Prices need a currency, OpenCost brings its own prices, and a node pool needs the label naming it."""
    cost, found = cfg.cost, []
    prices = [(("cost", "gpus"), bool(cost.gpus)), (("cost", "default_hourly"), cost.default_hourly is not None)]
    for loc, set_ in prices:
        if set_ and cost.source == "opencost":
            found.append(Conflict(
                loc,
                "a price here conflicts with cost.source opencost ({other}), which reads every price from "
                "OpenCost's node_gpu_hourly_cost (allowed: no prices with opencost, or source config)",
                ("cost", "source"),
            ))
        elif set_ and cost.currency == GPU_HOURS:
            found.append(Conflict(
                loc,
                f"a price needs a currency, and cost.currency is {GPU_HOURS} ({{other}}), the unit of a pack "
                "without prices (allowed: a currency such as USD or EUR)",
                ("cost", "currency"),
            ))
    if cost.source == "opencost" and cost.currency == GPU_HOURS:
        found.append(Conflict(
            ("cost", "source"),
            f"opencost reads prices in money while cost.currency is {GPU_HOURS} ({{other}}) (allowed: the currency "
            "OpenCost prices in, e.g. USD)",
            ("cost", "currency"),
        ))
    for i, entry in enumerate(cost.gpus):
        if entry.node_pool_regex and not cost.node_pool_label:
            found.append(Conflict(
                ("cost", "gpus", str(i), "node_pool_regex"),
                "needs the node label that names the pool, and cost.node_pool_label is empty ({other}) (allowed: "
                "set node_pool_label, e.g. karpenter.sh/nodepool, or leave node_pool_regex empty)",
                ("cost", "node_pool_label"),
            ))
    return found
