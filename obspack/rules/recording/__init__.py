"""Recording rules, one group per source. They normalise vLLM versions, DCGM label modes and
duplicate kube-state-metrics/cAdvisor series once, so alerts and dashboards stay short and fast."""

from __future__ import annotations

from obspack.config import ObspackConfig
from obspack.rules.model import RuleGroup
from obspack.rules.recording import dcgm, kubernetes, slo, vllm


def all_recording_groups(cfg: ObspackConfig) -> list[RuleGroup]:
    return [kubernetes.group(cfg), vllm.group(cfg), *dcgm.groups(cfg), *vllm.latency_groups(cfg), *slo.groups(cfg)]
