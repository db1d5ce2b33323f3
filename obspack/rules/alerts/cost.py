"""Cost tickets, per model: GPUs held and idle most of a day, and the GPU time a million tokens take rising
week over week. Both read the cost records of the GPU attribution group (one group hop from raw series)
over long windows; neither pages (docs/cost.md).

The weekly comparison is in GPU-hours per million tokens, not money: a price changed in obspack.yaml, or
OpenCost's spot prices moving, would otherwise look like a regression a week later. At constant prices
the money moves by the same share.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.model import AlertRule
from obspack.rules.recording.vllm import sel

MODEL = ("namespace", "model_name")
WHO = "{{ $labels.model_name }} in {{ $labels.namespace }}"
WEEK = "1w"
TWO_WEEKS = "2w"


def _per_model(cfg: ObspackConfig, series: str, window: str) -> str:
    return f"sum by ({c.by(cfg, *MODEL)}) (sum_over_time({series}[{window}]))"


def _week_before(cfg: ObspackConfig, series: str) -> str:
    """The sum over the week before the last one: two weeks less the last (no `offset`, which a record read
    by obspack doctor cannot take)."""
    return f"({_per_model(cfg, series, TWO_WEEKS)} - on ({c.by(cfg, *MODEL)}) {_per_model(cfg, series, WEEK)})"


def gpus_mostly_idle(cfg: ObspackConfig) -> AlertRule:
    """The share of a model's GPU-hours in which its pods held GPUs and ran no request, over the window.
    Only models that held GPUs at the start of the window and still run: a model deployed an hour ago and
    idle since is not idle "most of a day", and a model removed is not a ticket."""
    t = cfg.alerts.VLLMGPUsMostlyIdle
    on = c.by(cfg, *MODEL)
    idle = _per_model(cfg, f'{c.MODEL_GPUS_ALLOCATED}{{state="idle"}}', t.window)
    held = _per_model(cfg, c.MODEL_GPUS_ALLOCATED, t.window)
    # served when the window began and now: the engines' own gauge (raw series, so obspack doctor can check
    # the alert; a model removed stops the ticket at once)
    since = f"group by ({on}) (vllm:num_requests_running{sel(cfg)} offset {t.window})"
    now = f"group by ({on}) (vllm:num_requests_running{sel(cfg)})"
    expr = f"({idle}\n/ on ({on})\n{held}) > {t.ratio:g}\nand on ({on}) {since}\nand on ({on}) {now}"
    return AlertRule(
        alert="VLLMGPUsMostlyIdle",
        expr=expr,
        for_=t.for_,
        severity=t.severity,
        summary="A model's GPUs sat idle most of the day: they are paid for and serve nothing.",
        description=(
            WHO + ": its pods held GPUs and ran no request for {{ $value | humanizePercentage }} of their GPU-hours "
            f"over the last {t.window} (asleep engines not counted as idle). Fewer replicas, a smaller "
            "tensor-parallel degree or sleep mode would free them; see obspack rightsize."
        ),
        runbook="vllm-gpus-mostly-idle",
        triage="kubectl -n {{ $labels.namespace }} get deployments,statefulsets -o wide",
        dashboard=c.COST_DASHBOARD,
    )


def cost_per_million_tokens_rising(cfg: ObspackConfig) -> AlertRule:
    """GPU-hours per million tokens over the last week against the week before: a release that serves
    slower, batching lost to a config change, a traffic mix that keeps GPUs idle."""
    t = cfg.alerts.VLLMCostPerMillionTokensRising
    on = c.by(cfg, *MODEL)

    def per_token(gpus: str, tokens: str) -> str:
        return f"(\n  {gpus}\n  / on ({on})\n  ({tokens} > 0)\n)"

    this = per_token(_per_model(cfg, c.MODEL_GPUS_ALLOCATED, WEEK), _per_model(cfg, c.MODEL_TOKENS, WEEK))
    before = per_token(_week_before(cfg, c.MODEL_GPUS_ALLOCATED), _week_before(cfg, c.MODEL_TOKENS))
    # tokens per second on average in each week: the sums over the samples of each
    rate = f"sum by ({on}) (avg_over_time({c.MODEL_TOKENS}[{WEEK}]))"
    two = f"sum_over_time({c.MODEL_TOKENS}[{TWO_WEEKS}])"
    one = f"sum_over_time({c.MODEL_TOKENS}[{WEEK}])"
    counts = f"(count_over_time({c.MODEL_TOKENS}[{TWO_WEEKS}]) - count_over_time({c.MODEL_TOKENS}[{WEEK}]) > 0)"
    rate_before = f"sum by ({on}) (\n  ({two} - {one})\n  / {counts}\n)"
    floor = f"{t.min_tokens_per_second:g}"
    expr = (
        f"{this}\n/ on ({on})\n{before}\n- 1 > {t.increase:g}\n"
        f"and on ({on}) ({rate} >= {floor})\nand on ({on}) ({rate_before} >= {floor})"
    )
    return AlertRule(
        alert="VLLMCostPerMillionTokensRising",
        expr=expr,
        for_=t.for_,
        severity=t.severity,
        summary="A model's cost per million tokens rose week over week: its GPUs serve fewer tokens per hour.",
        description=(
            WHO + " took {{ $value | humanizePercentage }} more GPU-hours per million tokens over the last 7 days "
            "than over the 7 days before (it fires above a rise of " + f"{t.increase:g}" + ", as a share). Check the "
            "week's releases and engine settings, batching (requests running per pod) and idle GPUs."
        ),
        runbook="vllm-cost-per-million-tokens-rising",
        triage="kubectl -n {{ $labels.namespace }} get deployments,statefulsets -o wide",
        dashboard=c.COST_DASHBOARD,
    )


ALERTS = (gpus_mostly_idle, cost_per_million_tokens_rising)
