"""vLLM / Fleet: every model and pod at a glance, and which one to open on the triage page."""

from __future__ import annotations

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import autoscaling, features, marks, variables
from obspack.dashboards import feature_queries as fq
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import dashboard, triage_from_row, triage_from_series
from obspack.numbers import percent

NAME = "vllm-fleet"
MODEL_LEGEND = "{{namespace}} {{model_name}}"


def _users_tokens(cfg: ObspackConfig, record: str, other_side: str) -> str:
    """A per-model and role token record without the pods of `other_side` (obspack/rules/recording/roles.py):
    the tokens each request counts once. Read per role, not per pod: leaving 1,000 pods out by their role at
    every step of a range took ~0.8 s a graph."""
    selected = record + c.selector(q.scope(cfg, *q.MODEL), f'role!="{other_side}"')
    return f"sum by ({c.by(cfg, 'namespace', 'model_name')}) ({selected})"


def _latency(cfg: ObspackConfig, family: str, title: str, what: str) -> p.TimeSeries:
    # as the records count them (obspack/rules/recording/vllm.py, latency_groups)
    pods = "all its pods" if family == "request_queue_time" else "its pods except those that only prefill, as in the SLOs"
    targets = [
        p.target(q.latency_quantile(cfg, family, quantile), f"p{round(quantile * 100)} {MODEL_LEGEND}")
        for quantile in q.QUANTILES
    ]
    return p.timeseries(
        f"{title} (p50 / p90 / p99)",
        *targets,
        unit=p.SECONDS,
        description=(
            f"{what}, per model over {pods}; 5m histogram rates. If p99 climbs while p50 stays, a few "
            "pods or long prompts are slow: sort the pod table by waiting requests and KV usage and triage the "
            "worst pod. If every percentile climbs, the model is out of capacity: check the queue and scale out."
        ),
        w=6,
    )


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    kv_high = cfg.alerts.VLLMKVCacheUsageHigh.ratio
    kv_critical = cfg.alerts.VLLMKVCacheUsageCritical.ratio
    backlog = cfg.alerts.VLLMRequestQueueBacklog
    pod_links = [triage_from_series(cfg)]
    kv_lines = marks.lines_note(
        cfg, ("VLLMKVCacheUsageHigh", f"{percent(kv_high)}"), ("VLLMKVCacheUsageCritical", f"{percent(kv_critical)}")
    )
    kv_runbooks = marks.runbooks(cfg, "VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical", "VLLMRequestPreemptions")
    panels = [
        p.stat(
            "Pods serving",
            p.target(q.pods_serving(cfg), "pods"),
            unit=p.NONE,
            description=(
                "vLLM pods reporting engine metrics in the selection. A drop means pods stopped serving or "
                "stopped being scraped: look for "
                + marks.say(cfg, "VLLMTargetDown", "VLLMTargetDown and ", "targets down and ")
                + "container restarts."
            ),
            thresholds=p.steps("red", (1, "green")),
        ),
        p.stat(
            "Requests running",
            p.target(q.total(cfg, c.RUNNING), "running"),
            unit=p.SHORT,
            description=(
                "Requests in the engines' running batches. Zero while requests wait means the engines are stuck: "
                + marks.say(cfg, "VLLMZeroThroughput", "see VLLMZeroThroughput and ", "see ")
                + "the per-pod table below."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "Requests waiting",
            p.target(q.total(cfg, c.WAITING), "waiting"),
            unit=p.SHORT,
            description=(
                "Requests queued for admission. A standing queue means the KV cache or batch is full: find the "
                "pod with the longest queue in the table below and open its triage page."
            ),
            thresholds=p.above(backlog.min_waiting, backlog.min_waiting * backlog.waiting_to_running),
        ),
        p.stat(
            "Generation tokens/s",
            p.target(q.total(cfg, c.GENERATION_RATE), "tokens/s"),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Tokens generated per second over the selection (5m rate). A drop with a steady request rate "
                "means engines stall or are preempting: check preemptions and the queue."
            ),
            thresholds=p.NEUTRAL,
        ),
        p.stat(
            "Highest KV cache usage",
            p.target(q.total(cfg, c.KV_USAGE, "max"), "max"),
            unit=p.PERCENT_UNIT,
            description=(
                f"The fullest KV cache of any pod. Orange from {percent(kv_high)}"
                + marks.say(cfg, "VLLMKVCacheUsageHigh", " (VLLMKVCacheUsageHigh)")
                + f", red from {percent(kv_critical)}"
                + marks.say(cfg, "VLLMKVCacheUsageCritical", " (VLLMKVCacheUsageCritical)")
                + ": that pod queues and preempts requests. Open the KV and prefix cache dashboard."
            ),
            thresholds=p.above(kv_high, kv_critical),
            decimals=1,
        ),
        p.stat(
            "Firing obspack alerts",
            p.target(q.firing_alert_count(cfg), "firing"),
            unit=p.NONE,
            description=(
                "obspack alerts firing now in the selected clusters and namespaces. Anything above zero: read the "
                "alert table at the bottom and follow each alert's runbook."
            ),
            thresholds=p.steps("green", (1, "red")),
        ),
        p.section("Load and throughput"),
        p.timeseries(
            "Requests running and waiting",
            p.target(q.sum_by(cfg, c.RUNNING, "namespace", "model_name"), f"running {MODEL_LEGEND}"),
            p.target(q.sum_by(cfg, c.WAITING, "namespace", "model_name"), f"waiting {MODEL_LEGEND}"),
            unit=p.SHORT,
            description=(
                "Requests in the running batch and in the queue, per model. Waiting above "
                f"{backlog.waiting_to_running:g}x running for long"
                + marks.say(cfg, "VLLMRequestQueueBacklog", " (VLLMRequestQueueBacklog)")
                + " means the model is out of KV cache or batch slots: scale out, or lower max_tokens / "
                "max_num_seqs."
            ),
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
            w=6,
        ),
        p.timeseries(
            "Tokens per second",
            p.target(_users_tokens(cfg, c.ROLE_PROMPT_RATE, "decode"), f"prompt {MODEL_LEGEND}"),
            p.target(_users_tokens(cfg, c.ROLE_GENERATION_RATE, "prefill"), f"generation {MODEL_LEGEND}"),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Prompt and generated tokens per second, per model (5m rates), every pod of the model (the pod "
                "filter does not narrow it). On a disaggregated model each request counts once, as on the cost "
                "page: its prompt on the prefill pod, its tokens on the decode pod (a decode pod's copy of the "
                "prompt and a prefill pod's one token are left out). Generation falling to zero while requests "
                "run means a stuck engine"
                + marks.say(cfg, "VLLMZeroThroughput", " (VLLMZeroThroughput)")
                + ": restart the pod after saving its logs."
            ),
            links=marks.runbooks(cfg, "VLLMZeroThroughput"),
            w=6,
        ),
        p.timeseries(
            "Finished requests by reason",
            p.target(q.request_rate_by_reason(cfg), "{{finished_reason}} {{namespace}} {{model_name}}"),
            unit=p.REQUESTS,
            description=(
                "Finished requests per second by finish reason (stop, length, abort, error), every pod. On a "
                "disaggregated model the prefill pods finish each request for 'length' (one token): the "
                "disaggregated-serving page shows each side. A rise of abort or "
                "error means clients time out or the engine fails requests: check latency and the pods' logs. "
                "Many 'length' finishes mean max_tokens cuts answers short."
            ),
            stacked=True,
            w=6,
        ),
        p.timeseries(
            "Requests waiting by reason",
            p.target(fq.waiting_by_reason(cfg), "{{reason}} " + MODEL_LEGEND),
            unit=p.SHORT,
            description=(
                "Waiting requests per model by why they wait (vLLM 0.20+): capacity (no KV cache blocks or batch "
                "slot free: more replicas or a bigger cache help) or deferred (set aside until something else is "
                "ready: a KV transfer from a prefill pod, a structured-output grammar, a LoRA slot; capacity does "
                "not help)."
                + marks.say(cfg, "VLLMRequestQueueBacklog", " VLLMRequestQueueBacklog counts only capacity.")
            ),
            stacked=True,
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
            w=6,
        ),
        p.section("Latency (per model, all pods)"),
        _latency(cfg, "time_to_first_token", "Time to first token", "Time from arrival to the first token"),
        _latency(cfg, "inter_token_latency", "Inter-token latency", "Time between streamed tokens"),
        _latency(cfg, "e2e_request_latency", "End-to-end latency", "Time from arrival to the last token"),
        _latency(cfg, "request_queue_time", "Queue time", "Time requests wait before admission"),
        p.section("KV cache and preemptions"),
        p.timeseries(
            "KV cache usage (highest pod per model)",
            p.target(q.max_by(cfg, c.KV_USAGE, "namespace", "model_name"), f"max {MODEL_LEGEND}"),
            unit=p.PERCENT_UNIT,
            description=(
                "The fullest pod's KV cache per model."
                + kv_lines
                + " Near the top, the engine queues and preempts: scale out or lower max_num_seqs / max_model_len."
            ),
            **marks.dashed(
                cfg, "green", ("VLLMKVCacheUsageHigh", kv_high, "orange"), ("VLLMKVCacheUsageCritical", kv_critical, "red")
            ),
            soft_max=1,
            links=kv_runbooks,
        ),
        p.timeseries(
            "Preemptions per second",
            p.target(q.per_pod(cfg, c.PREEMPTION_RATE), "{{namespace}}/{{pod}}"),
            unit=p.PER_SECOND,
            description=(
                "Requests preempted per second per pod (their KV blocks freed and recomputed later). Any "
                "sustained preemption means the KV cache is too small for the load: click a series to triage "
                "that pod."
            ),
            thresholds=p.above(None, max(cfg.alerts.VLLMRequestPreemptions.rate, 1e-9)),
            links=kv_runbooks,
            data_links=pod_links,
        ),
        p.section("Pods"),
        p.table(
            "Pods: load, KV cache and memory planes",
            p.target(q.sum_by(cfg, c.RUNNING, "namespace", "pod", "model_name"), instant=True, table=True),
            p.target(q.sum_by(cfg, c.WAITING, "namespace", "pod", "model_name"), instant=True, table=True),
            p.target(
                q.sum_by(cfg, c.GENERATION_RATE, "namespace", "pod", "model_name"), instant=True, table=True
            ),
            p.target(q.max_by(cfg, c.KV_USAGE, "namespace", "pod", "model_name"), instant=True, table=True),
            p.target(
                q.sum_by(cfg, c.PREEMPTION_RATE, "namespace", "pod", "model_name"), instant=True, table=True
            ),
            p.target(
                q.with_model(cfg, q.max_by(cfg, c.MEMORY_LIMIT_RATIO, "namespace", "pod", variables=q.POD)),
                instant=True,
                table=True,
            ),
            p.target(
                q.max_by(cfg, c.POD_GPU_FB_RATIO_MAX, "namespace", "pod", "model_name"),
                instant=True,
                table=True,
            ),
            description=(
                "One row per vLLM pod, now. Sort by a column to find the pod closest to a limit: host RAM "
                "(working set / limit), GPU VRAM (framebuffer used), KV cache, queue. Click a row to open the "
                "pod's triage page with it preselected."
            ),
            columns=[
                p.column("A", "Running", p.SHORT),
                p.column("B", "Waiting", p.SHORT, p.above(backlog.min_waiting, backlog.min_waiting * 2)),
                p.column("C", "Generation tokens/s", p.TOKENS_PER_SECOND),
                p.column("D", "KV cache", p.PERCENT_UNIT, p.above(kv_high, kv_critical)),
                p.column("E", "Preemptions/s", p.PER_SECOND),
                p.column(
                    "F",
                    "Host RAM / limit",
                    p.PERCENT_UNIT,
                    p.above(None, cfg.alerts.VLLMHostMemoryNearLimit.ratio),
                ),
                p.column(
                    "G",
                    "GPU VRAM used",
                    p.PERCENT_UNIT,
                    p.above(None, cfg.alerts.VLLMGPUMemoryNearFull.ratio),
                ),
            ],
            row_links=[triage_from_row(cfg)],
            h=10,
        ),
        p.section("Alerts"),
        p.table(
            "Alerts firing now",
            p.target(q.firing_alert_table(cfg), instant=True, table=True),
            description=(
                "obspack alerts firing now. Empty is good. Each alert's runbook_url annotation says what to do; "
                "click a row to open the pod on the triage page."
            ),
            columns=[p.column("A", "Firing", p.NONE)],
            row_links=[triage_from_row(cfg)],
            h=6,
        ),
        autoscaling.row(cfg),
        *features.rows(cfg),
    ]
    return dashboard(
        cfg,
        NAME,
        description=(
            "Every vLLM model and pod at a glance: load, throughput, latency, KV cache, alerts, and the features "
            "some engines run (collapsed rows; their titles count the engines that use each feature)."
        ),
        variables=[*variables.fleet(cfg), *features.variables(cfg)],
        panels=panels,
    )
