"""SLO settings: per-model objectives with multi-window, multi-burn-rate alerts (docs/slos.md explains the
defaults).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from obspack.catalogue import vllm_latency
from obspack.config.values import LabelMap, Regex, _entries, _Model

Objective = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
_HISTOGRAMS = vllm_latency.SLO_HISTOGRAMS
TTFTThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["time_to_first_token"]))]
ITLThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["inter_token_latency"]))]
MinRequests = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
_OBJECTIVE = "(allowed: greater than 0 and less than 1, e.g. 0.99)"
_MIN_REQUESTS = "(allowed: greater than 0, at most 1e9)"
SPEEDUPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)  # divisors of 60: every window stays whole seconds


def _speedup(value: int) -> int:
    if value not in SPEEDUPS:
        raise ValueError(f"{value} is not allowed (allowed: {', '.join(map(str, SPEEDUPS))})")
    return value


class TimeToFirstTokenSLO(_Model):
    """Share of requests whose time to first token is at most `threshold` (vllm:time_to_first_token_seconds)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description=f"share of requests that must be good {_OBJECTIVE}")
    threshold: TTFTThreshold = Field(2.5, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class InterTokenLatencySLO(_Model):
    """Share of token gaps of at most `threshold` (vllm:inter_token_latency_seconds, or its older name)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description=f"share of token gaps that must be good {_OBJECTIVE}")
    threshold: ITLThreshold = Field(0.2, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class AvailabilitySLO(_Model):
    """Share of API requests not answered with a 5xx status (http_requests_total, vLLM 0.8.3 and later)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.999, description=f"share of requests that must not fail {_OBJECTIVE}")
    handler_regex: Regex = Field("/v1/.*", description="API routes (the handler label) that count")


class TimeToFirstTokenOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.time_to_first_token")
    objective: Objective | None = Field(None, description=f"unset: as slos.time_to_first_token {_OBJECTIVE}")
    threshold: TTFTThreshold | None = Field(None, description="unset: as slos.time_to_first_token")


class InterTokenLatencyOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.inter_token_latency")
    objective: Objective | None = Field(None, description=f"unset: as slos.inter_token_latency {_OBJECTIVE}")
    threshold: ITLThreshold | None = Field(None, description="unset: as slos.inter_token_latency")


class AvailabilityOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.availability")
    objective: Objective | None = Field(None, description=f"unset: as slos.availability {_OBJECTIVE}")


class ModelSLOs(_Model):
    """SLO settings for the models whose model_name matches `model_regex`; unset keys keep the defaults."""

    model_regex: Regex = Field(description="served model names this entry applies to (full match)")
    time_to_first_token: TimeToFirstTokenOverride = TimeToFirstTokenOverride.model_construct()
    inter_token_latency: InterTokenLatencyOverride = InterTokenLatencyOverride.model_construct()
    availability: AvailabilityOverride = AvailabilityOverride.model_construct()
    min_requests: MinRequests | None = Field(None, description=f"unset: as slos.min_requests {_MIN_REQUESTS}")


class SLOs(_Model):
    """Per-model SLOs and the VLLMErrorBudgetBurn alert (docs/slos.md)."""

    enabled: bool = Field(True, description="render the SLO rules, the VLLMErrorBudgetBurn alert and the SLO page")
    period: Literal["30d", "28d"] = Field("30d", description="the error budget's period (30d or 28d)")
    time_to_first_token: TimeToFirstTokenSLO = TimeToFirstTokenSLO.model_construct()
    inter_token_latency: InterTokenLatencySLO = InterTokenLatencySLO.model_construct()
    availability: AvailabilitySLO = AvailabilitySLO.model_construct()
    min_requests: MinRequests | None = Field(
        None,
        description=f"requests a long window needs before it may alert; unset: one over one minus the objective {_MIN_REQUESTS}",
    )
    models: Annotated[list[ModelSLOs], AfterValidator(_entries)] = Field(
        default_factory=list,
        description="per-model settings, first match wins, e.g. [{model_regex: 'Qwen/.*', "
        "time_to_first_token: {threshold: 5.0}}]",
    )
    labels: LabelMap = Field(default_factory=dict, description="extra static labels on VLLMErrorBudgetBurn")
    speedup: Annotated[int, AfterValidator(_speedup)] = Field(
        1, description="divide the period, windows and `for` by this; 1 in production (60 for demos and live tests)"
    )
