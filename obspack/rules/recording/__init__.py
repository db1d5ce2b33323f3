"""Recording rules, one group per source. They normalise vLLM versions, DCGM label modes and
duplicate kube-state-metrics/cAdvisor series once, so alerts and dashboards stay short and fast."""

from __future__ import annotations

from obspack.config import ObspackConfig
from obspack.memo import per_config
from obspack.rules.model import RuleGroup
from obspack.rules.recording import autoscaling, cost, dcgm, kubernetes, roles, slo, vllm


@per_config
def all_recording_groups(cfg: ObspackConfig) -> tuple[RuleGroup, ...]:
    return (
        kubernetes.group(cfg),
        vllm.group(cfg),
        autoscaling.group(cfg),
        *dcgm.groups(cfg, after_attribution=cost.rules(cfg)),
        cost.price_group(cfg),
        roles.group(cfg),
        *vllm.latency_groups(cfg),
        vllm.prefix_cache_group(cfg),
        *slo.groups(cfg),
        *cost.goodput_groups(cfg),
    )
