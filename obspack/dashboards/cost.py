"""vLLM / Cost: what the GPUs of vLLM pods cost over the dashboard's range, per model, team and workload;
the cost per million tokens over time; the GPU-hours that sat idle or asleep and who holds them; what the
prefix cache saved. Every number reads the cost records (obspack/rules/recording/cost.py); sums over the
range multiply the records' samples by the evaluation step (docs/cost.md)."""

from __future__ import annotations

from grafanalib.core import Dashboard, Panel

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.config.cost import GPU_HOURS
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import dashboard, triage_from_row
from obspack.rules.recording.cost import integral

NAME = c.COST_DASHBOARD
RANGE = "$__range"
MODEL = ("namespace", "model_name")
MODEL_LEGEND = "{{namespace}} {{model_name}}"
TOP = 20
# Grafana's currency units; any other currency is shown as a suffix.
CURRENCY_UNITS = {code: f"currency{code}" for code in ("USD", "EUR", "GBP", "JPY", "CHF", "INR", "BRL", "SEK", "NOK", "DKK", "PLN", "CZK", "ZAR", "KRW")}
IDLE = 'state="idle"'
ASLEEP = 'state="asleep"'
NOT_SERVING = 'state=~"idle|asleep"'
IDLE_STEPS = p.above(0.25, 0.5)  # a quarter of the GPU-hours idle is worth a look; half is money burnt


def money(cfg: ObspackConfig) -> str:
    currency = cfg.cost.currency
    return "suffix: GPU-h" if currency == GPU_HOURS else CURRENCY_UNITS.get(currency, f"suffix: {currency}")


def per_million(cfg: ObspackConfig) -> str:
    unit = "GPU-h" if cfg.cost.currency == GPU_HOURS else cfg.cost.currency
    return f"suffix: {unit}/M tok"


def over(cfg: ObspackConfig, record: str, *labels: str, matchers: str = "", variables: tuple[str, ...] = q.MODEL) -> str:
    """A per-hour record (GPUs, money) summed over the dashboard's range: GPU-hours, or money."""
    selector = record + c.selector(q.scope(cfg, *variables), matchers)
    return integral(cfg, selector, RANGE, *labels)


def rec(cfg: ObspackConfig, record: str, *matchers: str) -> str:
    """A per-model record filtered by the cluster, namespace and model variables, and `matchers`."""
    return record + c.selector(q.scope(cfg, *q.MODEL), *matchers)


def tokens_over(cfg: ObspackConfig, direction: str, *labels: str) -> str:
    """Tokens per second summed over the range's samples (the same samples the cost sums)."""
    selector = rec(cfg, c.MODEL_TOKENS, f'tokens="{direction}"')
    return f"sum by ({c.by(cfg, *labels)}) (sum_over_time({selector}[{RANGE}]))"


def cost_per_million_over(cfg: ObspackConfig, direction: str) -> str:
    cost = rec(cfg, c.MODEL_COST, f'tokens="{direction}"')
    keep = c.by(cfg, *MODEL)
    return (
        f"1e6 * sum by ({keep}) (sum_over_time({cost}[{RANGE}]))\n"
        f"/ on ({keep})\n(3600 * {tokens_over(cfg, direction, *MODEL)} > 0)"
    )


def idle_share(cfg: ObspackConfig, *labels: str) -> str:
    keep = c.by(cfg, *labels)
    idle = f"sum by ({keep}) (sum_over_time({rec(cfg, c.MODEL_GPUS_ALLOCATED, IDLE)}[{RANGE}]))"
    held = f"sum by ({keep}) (sum_over_time({rec(cfg, c.MODEL_GPUS_ALLOCATED)}[{RANGE}]))"
    return f"(\n  {idle}\n  or on ({keep}) 0 * {held}\n)\n/ on ({keep})\n({held} > 0)"


def unpriced(cfg: ObspackConfig) -> str:
    """GPUs held now whose model has no price (none in GPU-hours, where every GPU-hour counts 1)."""
    held = q.rec(cfg, c.POD_GPUS_ALLOCATED, q.MODEL)
    price = q.rec(cfg, c.GPU_PRICE, ("cluster",))
    return f"sum(\n  {held}\n  unless on ({c.by(cfg, 'node', 'modelName')})\n  {price}\n)\nor on ()\nvector(0)"


def _stats(cfg: ObspackConfig) -> list[Panel]:
    unit = money(cfg)
    what = "GPU-hours (no prices are set: cost.currency GPU-hours)" if cfg.cost.currency == GPU_HOURS else cfg.cost.currency
    return [
        p.stat(
            "Spend over the range",
            p.target(f"sum(\n{over(cfg, c.WORKLOAD_COST)}\n)", "spend", instant=True),
            unit=unit,
            description=(
                f"What the GPUs held by the selected vLLM pods cost over the dashboard's range, in {what}: each "
                "pod's GPUs at its GPU model's price (docs/cost.md). Serving, idle and asleep GPUs all count: "
                "a GPU held is paid for. The tables below split it by model, team and workload."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "GPU-hours held",
            p.target(f"sum(\n{over(cfg, c.MODEL_GPUS_ALLOCATED)}\n)", "GPU-hours", instant=True),
            unit="suffix: GPU-h",
            description=(
                "GPU-hours the selected vLLM pods held over the range: from dcgm-exporter's pod mapping (a MIG "
                "instance as its share of the GPU, a time-sliced GPU once), or kube-state-metrics' GPU requests "
                "on nodes where DCGM maps none."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "Idle share of GPU-hours",
            p.target(f"(\n  sum(\n{over(cfg, c.MODEL_GPUS_ALLOCATED, matchers=IDLE)}\n  )\n  or on () vector(0)\n)\n/\nsum(\n{over(cfg, c.MODEL_GPUS_ALLOCATED)}\n)", "idle", instant=True),
            unit=p.PERCENT_UNIT,
            description=(
                "The share of those GPU-hours in which the pod ran no request for 5 minutes. High: fewer replicas, "
                "a smaller tensor-parallel degree or sleep mode would free GPUs; the table of idle workloads "
                "below says whose they are (runbook)."
            ),
            thresholds=IDLE_STEPS,
            decimals=1,
            links=marks.runbooks(cfg, "VLLMGPUsMostlyIdle"),
        ),
        p.stat(
            "GPU-hours asleep",
            p.target(f"sum(\n{over(cfg, c.MODEL_GPUS_ALLOCATED, matchers=ASLEEP)}\n)\nor on ()\nvector(0)", "asleep", instant=True),
            unit="suffix: GPU-h",
            description=(
                "GPU-hours held by engines put to sleep (vLLM sleep mode): paid for, serving nothing, on purpose. "
                "Sleep frees GPU memory, not the GPU; a model asleep for long stretches could give its GPUs back."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "Saved by the prefix cache",
            p.target(f"sum(\n{over(cfg, c.MODEL_CACHE_SAVINGS)}\n)\nor on ()\nvector(0)", "saved", instant=True),
            unit=unit,
            description=(
                "What computing the prompt tokens served from the prefix cache would have cost over the range, at "
                "each model's cost per computed input token. 0 with prefix caching off or no repeated prefixes."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "GPUs without a price now",
            p.target(unpriced(cfg), "GPUs"),
            unit=p.NONE,
            description=(
                "GPUs held now whose GPU model no cost.gpus entry matches, with no cost.default_hourly (or no "
                "OpenCost price on their node): their GPU-hours count, their cost does not. Add the model to "
                "cost.gpus; obspack doctor lists the models."
            ),
            thresholds=p.steps("green", (1, "red")),
        ),
    ]


def _tables(cfg: ObspackConfig) -> list[Panel]:
    unit, cpm = money(cfg), per_million(cfg)
    model_targets = [
        over(cfg, c.MODEL_GPUS_ALLOCATED, *MODEL),
        over(cfg, c.WORKLOAD_COST, *MODEL),
        idle_share(cfg, *MODEL),
        cost_per_million_over(cfg, "input"),
        cost_per_million_over(cfg, "output"),
        over(cfg, c.MODEL_CACHE_SAVINGS, *MODEL),
    ]
    columns = [
        p.column("A", "GPU-hours", "suffix: GPU-h"),
        p.column("B", "Spend", unit),
        p.column("C", "Idle share", p.PERCENT_UNIT, IDLE_STEPS),
        p.column("D", "Per million input tokens", cpm),
        p.column("E", "Per million output tokens", cpm),
        p.column("F", "Saved by the prefix cache", unit),
    ]
    if slos.enabled_slis(cfg):
        goodput = q.rec(cfg, c.MODEL_GOODPUT, q.MODEL)
        model_targets.append(f"avg by ({c.by(cfg, *MODEL)}) (avg_over_time({goodput}[{RANGE}]))")
        columns.append(p.column("G", "Goodput share", p.PERCENT_UNIT, p.below(0.9, 0.99)))
    workload = (*MODEL[:1], "workload_type", "workload", "team_name", "model_name")
    idle_cost = over(cfg, c.WORKLOAD_COST, *workload, matchers=IDLE)
    return [
        p.table(
            "Spend per model over the range",
            *(p.target(t, instant=True, table=True) for t in model_targets),
            description=(
                "One row per model: GPU-hours held, spend, the idle share, the cost per million input and output "
                "tokens (a prefill pod's cost goes to input tokens, a decode pod's to output tokens, a pod doing "
                "both splits by prefill and decode time), and what the prefix cache saved"
                + (", and the goodput share (tokens of requests that met the model's SLOs, at least)" if slos.enabled_slis(cfg) else "")
                + ". Sort by spend to find the models worth tuning."
            ),
            columns=columns,
            h=9,
        ),
        p.table(
            "Spend per team over the range",
            p.target(over(cfg, c.WORKLOAD_COST, "team_name"), instant=True, table=True),
            p.target(f"{over(cfg, c.WORKLOAD_COST, 'team_name', matchers=IDLE)}\nor on ({c.by(cfg, 'team_name')})\n0 * {over(cfg, c.WORKLOAD_COST, 'team_name')}", instant=True, table=True),
            description=(
                f"Spend per team (the pod's `{cfg.cost.team_label or 'team'}` label, else its namespace's; empty "
                "where neither says), and the part of it on idle GPUs. A team without a name needs the label "
                "allowlisted in kube-state-metrics (docs/cost.md)."
            ),
            columns=[p.column("A", "Spend", unit), p.column("B", "On idle GPUs", unit)],
            w=8,
            h=9,
        ),
        p.table(
            f"Most expensive idle workloads over the range (top {TOP})",
            p.target(f"topk({TOP},\n{idle_cost}\n)", instant=True, table=True),
            description=(
                "The workloads (Deployment, StatefulSet, LeaderWorkerSet) whose pods held GPUs that ran no "
                "request, by what those idle GPU-hours cost, with their team. Ask the owner about fewer "
                "replicas, a scale-down schedule or sleep mode; obspack rightsize prices each change."
            ),
            columns=[p.column("A", "Idle spend", unit, p.above(None, 0))],
            links=marks.runbooks(cfg, "VLLMGPUsMostlyIdle"),
            w=16,
            h=9,
        ),
    ]


def _over_time(cfg: ObspackConfig) -> list[Panel]:
    unit = money(cfg)
    keep = c.by(cfg, *MODEL)
    panels: list[Panel] = [
        p.timeseries(
            "Cost per hour per model",
            p.target(q.sum_by(cfg, c.MODEL_COST, *MODEL, variables=q.MODEL), MODEL_LEGEND),
            unit=unit,
            description=(
                "What each model's GPUs cost per hour, serving or not. Steps follow replicas: compare with the "
                "tokens it serves below; a step up with no more tokens is capacity nobody uses."
            ),
            stacked=True,
        ),
        p.timeseries(
            "Cost per million tokens, by role",
            p.target(q.max_by(cfg, c.MODEL_COST_PER_MILLION, *MODEL, "role", "tokens", variables=q.MODEL),
                     "{{tokens}} {{role}} " + MODEL_LEGEND),
            unit=per_million(cfg),
            description=(
                "Per model, role (prefill, decode, or both where serving is not disaggregated) and direction, "
                "the cost of a million tokens over the last 5 minutes. Rising at constant traffic: slower "
                "releases or lost batching (runbook). Gaps: no tokens served then."
            ),
            links=marks.runbooks(cfg, "VLLMCostPerMillionTokensRising"),
        ),
        p.timeseries(
            "GPUs held: serving, idle, asleep",
            p.target(q.sum_by(cfg, c.MODEL_GPUS_ALLOCATED, "state", variables=q.MODEL), "{{state}}"),
            unit=p.SHORT,
            description=(
                "GPUs the selected vLLM pods hold, by what they do: serving (a request ran in the last 5 minutes), "
                "idle (none did), asleep (sleep mode). The idle band is what scaling down would free."
            ),
            stacked=True,
        ),
        p.timeseries(
            "Tokens per second per model",
            p.target(q.sum_by(cfg, c.MODEL_TOKENS, *MODEL, "tokens", variables=q.MODEL), "{{tokens}} " + MODEL_LEGEND),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Input tokens (prompts, cached or not, counted on the pods that prefill) and output tokens "
                "(counted on the pods that decode) per model: what the cost above buys."
            ),
        ),
        p.timeseries(
            "Saved by the prefix cache per hour",
            p.target(f"sum by ({keep}) ({q.rec(cfg, c.MODEL_CACHE_SAVINGS, q.MODEL)})", MODEL_LEGEND),
            unit=unit,
            description=(
                "Per hour, what computing the prompt tokens served from the prefix cache would have cost. Falling "
                "with steady traffic: prefixes stopped repeating or the cache got smaller (KV and prefix cache page)."
            ),
        ),
    ]
    if slos.enabled_slis(cfg):
        panels.append(
            p.timeseries(
                "Goodput share per model",
                p.target(q.max_by(cfg, c.MODEL_GOODPUT, *MODEL, variables=q.MODEL), MODEL_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "One less the SLOs' shares of bad events, added up, per model: of requests for time to first "
                    "token and availability, of token gaps for inter-token latency (a request that missed two "
                    "SLOs counts twice). Not weighted by tokens: where the slow requests are the long ones, the "
                    "share of good tokens is lower. The cost per token over this share estimates the cost of what "
                    "met the SLOs."
                ),
                thresholds=p.below(0.9, 0.99),
            )
        )
    return panels


def _pods(cfg: ObspackConfig) -> list[Panel]:
    pod = ("namespace", "pod", "model_name", "state")
    held = over(cfg, c.POD_GPUS_ALLOCATED, *pod, matchers=NOT_SERVING, variables=q.ALL)
    return [
        p.table(
            "Pods holding idle or asleep GPUs over the range",
            p.target(f"topk({TOP * 5},\n{held}\n)", instant=True, table=True),
            description=(
                "The vLLM pods whose GPUs sat idle (no request for 5 minutes) or asleep over the range, with the "
                "GPU-hours. Click a row to open its triage page; the workload and team are in the table above."
            ),
            columns=[p.column("A", "GPU-hours", "suffix: GPU-h", p.above(None, 1))],
            row_links=[triage_from_row(cfg)],
            h=9,
        ),
    ]


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    return dashboard(
        cfg,
        NAME,
        description="What vLLM's GPUs cost: spend per model, team and workload over the range, cost per million "
        "tokens, idle and asleep GPU-hours and who holds them, and the prefix cache's savings.",
        variables=variables.fleet(cfg),
        panels=[
            *_stats(cfg),
            *_tables(cfg),
            p.section("Over time"),
            *_over_time(cfg),
            p.section("Idle and asleep GPUs"),
            *_pods(cfg),
        ],
    )
