"""vLLM / KV and prefix cache: how full the KV cache is, how it is used (blocks, fragmentation, headroom),
how well the prefix cache hits, and what happens when the cache runs out (preemptions, queue)."""

from __future__ import annotations

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig
from obspack.dashboards import marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import queries as q
from obspack.dashboards.defaults import dashboard, triage_from_series
from obspack.numbers import percent

NAME = "vllm-kv-prefix-cache"
POD_LEGEND = "{{namespace}}/{{pod}}"
ENGINE_LEGEND = "{{namespace}}/{{pod}} {{engine}}"
# Headroom below one request means the next average-sized request waits; below four, it soon will.
HEADROOM_CRITICAL = 1
HEADROOM_WARNING = 4
# What the prefix-token panel shows instead of "No data": the counters' first release (V1 0.7.3, in
# tests/fixtures/vllm-release-metrics.json), which no V0 engine exports.
PREFIX_TOKENS_NO_DATA = "No data: needs vLLM 0.7.3 or later on the V1 engine (V0 engines export no prefix-cache counters)"


def _exporter_max(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    return f"max by ({c.by(cfg, *POD_MODEL, 'engine')}) ({q.exporter(cfg, metric, q.ALL, *extra)})"


def _exporter_extremes(cfg: ObspackConfig, metric: str, lowest: bool = False) -> str:
    """Per-engine exporter series for a graph: the highest (or lowest) engines, without a pass over all."""
    return q.extremes(q.exporter(cfg, metric), lowest)


def _blocks(cfg: ObspackConfig, state: str) -> str:
    """Each engine's blocks as the exporter reports them: engines of one pod side by side, and no sum per pod
    at every step (a tenth of the time with every pod selected)."""
    return q.exporter(cfg, "obspack_vllm_kv_cache_blocks", q.ALL, f'state="{state}"')


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    a = cfg.alerts
    kv_high, kv_critical = a.VLLMKVCacheUsageHigh.ratio, a.VLLMKVCacheUsageCritical.ratio
    fragmentation = a.VLLMKVCacheFragmentationHigh.ratio
    hit_low = a.VLLMPrefixCacheHitRateLow.ratio
    pod_links = [triage_from_series(cfg)]
    kv_runbooks = marks.runbooks(cfg, "VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical")
    frag_runbook = marks.runbooks(cfg, "VLLMKVCacheFragmentationHigh")
    prefix_runbook = marks.runbooks(cfg, "VLLMPrefixCacheHitRateLow")
    panels = [
        p.stat(
            "Highest KV cache usage",
            p.target(q.total(cfg, c.KV_USAGE, "max"), "max"),
            unit=p.PERCENT_UNIT,
            description=(
                f"The fullest KV cache in the selection. Orange from {percent(kv_high)}, red from {percent(kv_critical)}: "
                "that pod queues and preempts. Find it in the usage graph below and open its triage page."
            ),
            thresholds=p.above(kv_high, kv_critical),
            decimals=1,
            links=kv_runbooks,
        ),
        p.stat(
            "Prefix cache hit rate",
            p.target(q.prefix_hit_ratio_total(cfg), "hit rate", instant=True),
            p.target(f"avg({q.v0_prefix_hit_rate(cfg)})", "V0 since start", instant=True),
            unit=p.PERCENT_UNIT,
            description=(
                "Prompt tokens served from the prefix cache over tokens looked up, over the selection, now; vLLM V0 "
                "pods have no counters: the mean of their lifetime hit rates shows beside it. Its course over time is "
                "in the graphs of the Prefix cache row. Below "
                f"{percent(hit_low)}" + marks.say(cfg, "VLLMPrefixCacheHitRateLow", " (VLLMPrefixCacheHitRateLow)")
                + " the cache saves little prefill: check that requests sharing a prefix reach the same pod "
                "(session or prefix-aware routing)."
            ),
            thresholds=p.steps("orange", (hit_low, "green")),
            decimals=1,
            links=prefix_runbook,
            sparkline=False,
        ),
        p.stat(
            "Highest fragmentation estimate",
            p.target(f"max({q.exporter(cfg, 'obspack_vllm_kv_cache_fragmentation_ratio')})", "max"),
            unit=p.PERCENT_UNIT,
            description=(
                "Estimated share of used KV slots left empty in partly filled blocks (obspack exporter). Red from "
                f"{percent(fragmentation)}: requests are short for the block size; try a smaller --block-size."
            ),
            thresholds=p.above(None, fragmentation),
            decimals=1,
            links=frag_runbook,
        ),
        p.stat(
            "Lowest admission headroom",
            p.target(f"min({q.exporter(cfg, 'obspack_vllm_kv_cache_admission_headroom_requests')})", "min"),
            unit=p.SHORT,
            description=(
                "How many more requests of today's average KV size fit in the free blocks of the fullest pod "
                f"(obspack exporter). Under {HEADROOM_CRITICAL} the next request waits; under "
                f"{HEADROOM_WARNING} it soon will: scale out before the queue grows."
            ),
            thresholds=p.below(HEADROOM_CRITICAL, HEADROOM_WARNING),
            decimals=1,
        ),
        p.stat(
            "Preemptions per second",
            p.target(q.total(cfg, c.PREEMPTION_RATE), "preemptions/s"),
            unit=p.PER_SECOND,
            description=(
                "Requests preempted per second over the selection. Anything sustained means some KV cache is "
                "too small for its load: find the pod in the graph below."
            ),
            thresholds=p.above(None, max(a.VLLMRequestPreemptions.rate, 1e-9)),
            decimals=2,
            links=marks.runbooks(cfg, "VLLMRequestPreemptions"),
        ),
        p.stat(
            "Requests waiting",
            p.target(q.total(cfg, c.WAITING), "waiting"),
            unit=p.SHORT,
            description=(
                "Requests queued for admission over the selection. A queue with a full KV cache means the cache "
                "is the bottleneck: scale out or lower max_model_len."
            ),
            thresholds=p.above(
                a.VLLMRequestQueueBacklog.min_waiting, a.VLLMRequestQueueBacklog.min_waiting * 4
            ),
        ),
        p.section("KV cache"),
        p.timeseries(
            "KV cache usage per pod",
            p.target(q.per_pod(cfg, c.KV_USAGE), POD_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Share of KV blocks in use per pod."
                + marks.lines_note(
                    cfg, ("VLLMKVCacheUsageHigh", f"{percent(kv_high)}"), ("VLLMKVCacheUsageCritical", f"{percent(kv_critical)}")
                )
                + " A pod near the top queues and preempts while others idle: check the load balancing; all pods "
                "near the top: scale out."
            ),
            **marks.dashed(
                cfg, "green", ("VLLMKVCacheUsageHigh", kv_high, "orange"), ("VLLMKVCacheUsageCritical", kv_critical, "red")
            ),
            soft_max=1,
            links=kv_runbooks,
            data_links=pod_links,
        ),
        p.timeseries(
            "KV cache blocks: used and free",
            p.target(_blocks(cfg, "used"), f"{ENGINE_LEGEND} used"),
            p.target(_blocks(cfg, "free"), f"{ENGINE_LEGEND} free"),
            unit=p.SHORT,
            description=(
                "KV cache blocks per engine (obspack exporter: usage x num_gpu_blocks); a data-parallel pod's "
                "engines each have their own cache. Free blocks near zero means "
                "admission stops. The total is fixed at start by --gpu-memory-utilization and the model size: "
                "raise the former or shard the model (tensor parallel) for more blocks."
            ),
            data_links=pod_links,
        ),
        p.timeseries(
            "KV fragmentation estimate",
            p.target(_exporter_extremes(cfg, "obspack_vllm_kv_cache_fragmentation_ratio"), ENGINE_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Expected empty share of used KV slots: each running request's last block is half empty on "
                "average."
                + marks.lines_note(cfg, ("VLLMKVCacheFragmentationHigh", f"{percent(fragmentation)}"))
                + f" Above {percent(fragmentation)}, blocks are too coarse for these requests: try --block-size 8. The "
                f"{q.TOP} most fragmented engines are drawn."
            ),
            **marks.dashed(cfg, "green", ("VLLMKVCacheFragmentationHigh", fragmentation, "red")),
            links=frag_runbook,
            data_links=pod_links,
        ),
        p.timeseries(
            "Admission headroom (requests)",
            p.target(
                _exporter_extremes(cfg, "obspack_vllm_kv_cache_admission_headroom_requests", lowest=True),
                ENGINE_LEGEND,
            ),
            unit=p.SHORT,
            description=(
                "More requests of today's average KV footprint that fit in the free blocks: free / (used / "
                f"running). Under {HEADROOM_CRITICAL}, new requests wait; a pod trending to zero will queue soon. "
                f"The {q.TOP} engines with the least headroom are drawn."
            ),
            thresholds=p.below(HEADROOM_CRITICAL, HEADROOM_WARNING),
            draw_thresholds=True,
            data_links=pod_links,
        ),
        p.table(
            "KV cache configuration (vllm:cache_config_info)",
            p.target(q.cache_config(cfg), instant=True, table=True),
            p.target(_exporter_max(cfg, "obspack_vllm_kv_cache_block_size_tokens"), instant=True, table=True),
            description=(
                "Each engine's cache configuration: block size, number of GPU blocks, --gpu-memory-utilization, "
                "prefix caching. Capacity in tokens is blocks x block size; if a pod has far fewer blocks than its "
                "peers, it was started with different flags or on a smaller GPU."
            ),
            columns=[p.column("B", "Block size (tokens, exporter)", p.NONE)],
            hide=["Value #A"],  # the info series' value is always 1; its labels are the columns
            h=7,
        ),
        p.section("Prefix cache"),
        p.timeseries(
            "Prefix cache hit rate per pod",
            p.target(q.per_pod(cfg, c.PREFIX_HIT_RATIO), f"{POD_LEGEND} 5m"),
            p.target(
                _exporter_extremes(cfg, "obspack_vllm_prefix_cache_hit_ratio_lifetime", lowest=True),
                f"{ENGINE_LEGEND} since start",
            ),
            p.target(q.v0_prefix_hit_rate(cfg), f"{POD_LEGEND} since start (V0 gauge)"),
            unit=p.PERCENT_UNIT,
            description=(
                "Hits / queried prompt tokens per pod: over 5 minutes (recording rule) and since the engine "
                "started (obspack exporter). vLLM V0 pods have no counters: their own lifetime block hit-rate "
                "gauge is drawn instead."
                + marks.lines_note(cfg, ("VLLMPrefixCacheHitRateLow", f"{percent(hit_low)}"))
                + " Low rates with shared prompts mean requests miss the pod that holds their prefix: use "
                f"prefix-aware routing. Since start: the {q.TOP} lowest engines."
            ),
            thresholds=p.steps("orange", (hit_low, "green")),
            draw_thresholds=marks.on(cfg, "VLLMPrefixCacheHitRateLow"),
            soft_max=1,
            links=prefix_runbook,
            data_links=pod_links,
        ),
        p.timeseries(
            "Prefix cache tokens: queried and hit",
            p.target(q.prefix_tokens_rate(cfg, c.MODEL_PREFIX_QUERIES), "queried {{namespace}} {{model_name}}"),
            p.target(q.prefix_tokens_rate(cfg, c.MODEL_PREFIX_HITS), "hit {{namespace}} {{model_name}}"),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Prompt tokens per second looked up in the prefix cache and found there, per model. A falling hit "
                "share after a deploy or a routing change means prompts no longer share prefixes or reach "
                "different pods. The counters exist from vLLM 0.7.3 on the V1 engine (counted in blocks before "
                "0.9.0, in tokens since); V0 engines (0.6, or VLLM_USE_V1=0) export none: their pods show in the "
                "hit-rate panels only. Per model, over 5 minutes: the pod filter does not narrow it."
            ),
            links=prefix_runbook,
            no_data=PREFIX_TOKENS_NO_DATA,
        ),
        p.section("When the cache runs out"),
        p.timeseries(
            "Preemptions per second per pod",
            p.target(q.per_pod(cfg, c.PREEMPTION_RATE), POD_LEGEND),
            unit=p.PER_SECOND,
            description=(
                "Requests preempted per second to free KV blocks; their work is recomputed later. Sustained "
                "preemption on one pod: that pod is overloaded (check routing); on all: scale out."
            ),
            thresholds=p.above(None, max(a.VLLMRequestPreemptions.rate, 1e-9)),
            links=marks.runbooks(cfg, "VLLMRequestPreemptions"),
            data_links=pod_links,
        ),
        p.timeseries(
            "Requests waiting per pod",
            p.target(q.per_pod(cfg, c.WAITING), POD_LEGEND),
            unit=p.SHORT,
            description=(
                "Requests queued for admission per pod. A queue together with high KV usage means the KV cache "
                "is the limit; a queue with low KV usage points at max_num_seqs or a stuck engine."
            ),
            thresholds=p.above(
                a.VLLMRequestQueueBacklog.min_waiting, a.VLLMRequestQueueBacklog.min_waiting * 4
            ),
            draw_thresholds=True,
            links=marks.runbooks(cfg, "VLLMRequestQueueBacklog"),
            data_links=pod_links,
        ),
    ]
    return dashboard(
        cfg,
        NAME,
        description="vLLM KV cache and prefix cache: usage, blocks, fragmentation, headroom, hit rate, preemptions.",
        variables=variables.fleet(cfg),
        panels=panels,
    )
