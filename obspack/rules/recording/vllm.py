"""The vLLM engine plane, normalised across versions.

- KV usage: `vllm:kv_cache_usage_perc` (0.9.2+) or `vllm:gpu_cache_usage_perc` (up to 0.11). `or` keeps the
  new series where both exist (0.9.2-0.10.2 emit both with equal values).
- Prefix cache: `vllm:prefix_cache_*` (0.9.2+) or `vllm:gpu_prefix_cache_*` (0.7.3-0.11).
- Gauges may carry a `pid` label per API-server process (multiprocess mode, 0.9.2-0.11.0): max over pid.
- Data-parallel engines (`engine` label, 0.8.3+) are summed (counts) or maxed (usage) per pod and model;
  the alerts that judge each engine read raw series instead (obspack/rules/engines.py).
- production-stack's router re-exports some gauges under the same names with a `server` label and no
  `model_name`: `model_name!=""` keeps engine series only.
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.catalogue.vllm import HAS_MODEL, POD_MODEL
from obspack.config import ObspackConfig
from obspack.rules import roles
from obspack.rules.model import RecordingRule, RuleGroup


def sel(cfg: ObspackConfig, *extra: str) -> str:
    """vLLM engine series: the configured matchers, `model_name!=""`, then `extra`."""
    return c.selector(cfg.selectors.vllm, HAS_MODEL, *extra)


def gauge_sum(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    """Sum a vLLM gauge over engines per pod and model, after collapsing per-process copies."""
    return f"sum by ({c.by(cfg, *POD_MODEL)}) (max without (pid) ({metric}{sel(cfg, *extra)}))"


def counter_rate(
    cfg: ObspackConfig, metrics: tuple[str, ...], window: str, keep: tuple[str, ...] = POD_MODEL, *extra: str
) -> str:
    """Rate of a counter that vLLM renamed: the first name present wins per series, then sum. `extra`
    matchers narrow it (runbooks: one pod)."""
    return f"sum by ({c.by(cfg, *keep)}) (\n  {_rates(cfg, metrics, window, *extra)}\n)"


def _rates(cfg: ObspackConfig, metrics: tuple[str, ...], window: str, *extra: str) -> str:
    """Per series, the rate of the first of `metrics` present (the names vLLM gave one counter)."""
    return "\n  or\n  ".join(f"rate({m}{sel(cfg, *extra)}[{window}])" for m in metrics)


def users_rate(cfg: ObspackConfig, metrics: tuple[str, ...], window: str, keep: tuple[str, ...]) -> str:
    """`counter_rate` without the pods that only prefill (obspack/rules/roles.py), as the SLO records count
    requests: a prefill pod runs each user request a second time, as a one-token request (its first token
    is the prefill step alone). `unless` makes the group abort on Thanos' partial data, as the SLO groups do:
    each latency record has a group of its own."""
    users = roles.without(cfg, _rates(cfg, metrics, window), "prefill")
    return f"sum by ({c.by(cfg, *keep)}) (\n{textwrap.indent(users, '  ')}\n)"


def pod_model(cfg: ObspackConfig, running: str = c.RUNNING) -> str:
    """One series per vLLM pod carrying its model_name, for `group_left (model_name)` joins.

    `running` is the running-requests record, possibly with matchers. topk makes each pod unique on the
    join labels even if it ever reported two model names."""
    pod = c.by(cfg, "namespace", "pod")
    return f"topk by ({pod}) (1, group by ({pod}, model_name) ({running}))"


def asleep(cfg: ObspackConfig, window: str = "", *extra: str) -> str:
    """The pods with an engine put to sleep (its `awake` sleep state reads 0), one series per pod: now, or
    at any sample within `window`. A sleeping engine serves nothing on purpose (its API answers 503), and
    the gauges it stopped updating keep their last values, so serving alerts leave these pods out with
    `unless on (cluster, namespace, pod)`. Engines older than 0.11.1 have no sleep state: never asleep."""
    awake = f"{f.SLEEP_STATE}{sel(cfg, f.AWAKE, *extra)}"
    series = f"min_over_time({awake}[{window}])" if window else awake
    return f"group by ({c.by(cfg, 'namespace', 'pod')}) ({series} == 0)"


def unless_asleep(cfg: ObspackConfig, expr: str, window: str = "", *extra: str) -> str:
    """`expr` without the pods that sleep now (or slept within `window`)."""
    return f"{expr}\nunless on ({c.by(cfg, 'namespace', 'pod')})\n{asleep(cfg, window, *extra)}"


NOT_REPORTED = "not reported (vLLM before 0.20)"


def waiting_by_reason(cfg: ObspackConfig) -> str:
    """Waiting requests per model and reason (vLLM 0.20+: `capacity`, `deferred`). The requests of engines
    that report no reason (before 0.20) are the model's queue less the reasons reported, under a reason of
    their own, for the models that have such pods (more pods in the queue record than reporting reasons),
    so that the reasons add up to the queue. Subtraction and `and`, not `unless`: the record stays right
    on partial data (Thanos) and its group keeps `warn`."""
    keep = c.by(cfg, "namespace", "model_name")
    pm = c.by(cfg, *POD_MODEL)
    reported = f"max without (pid) ({f.WAITING_BY_REASON}{sel(cfg)})"

    def per_model(what: str, of: str) -> str:
        return f"{what} by ({keep}) ({of})"

    def less(total: str, part: str) -> str:
        return f"{total} - ({part} or 0 * {total})"

    unexplained = less(per_model("sum", c.WAITING), per_model("sum", reported))
    older_pods = less(per_model("count", c.WAITING), per_model("count", f"group by ({pm}) ({reported})"))
    return (
        f"sum by ({keep}, reason) ({reported})\nor\n"
        f"label_replace(\n  ({unexplained})\n  and on ({keep})\n  ({older_pods} > 0),\n"
        f'  "reason", "{NOT_REPORTED}", "", ""\n)'
    )


def kv_fetch_by_stage(cfg: ObspackConfig) -> str:
    """Requests on decode pods waiting for their KV from a prefill pod, per model and stage (vLLM 0.32+)."""
    return f"sum by ({c.by(cfg, 'namespace', 'model_name', 'stage')}) (max without (pid) ({f.KV_FETCH_BY_STAGE}{sel(cfg)}))"


def engines_asleep(cfg: ObspackConfig) -> str:
    """Engines asleep per model (sleep mode), 0 while every engine of the model is awake."""
    return f"sum by ({c.by(cfg, 'namespace', 'model_name')}) (1 - max without (pid) ({f.SLEEP_STATE}{sel(cfg, f.AWAKE)}))"


def refused_share(cfg: ObspackConfig) -> str:
    """Requests refused at admission over all that reached the pod (refused or finished), over 5m, for the pods
    refusing now only (`> 0` first): the record has series only while a pod refuses."""
    pm = c.by(cfg, *POD_MODEL)
    rejected = counter_rate(cfg, (f.ADMISSION_REJECTIONS,), "5m")
    finished = counter_rate(cfg, (f.REQUEST_SUCCESS,), "5m")
    return f"({rejected} > 0)\n/ on ({pm})\n(\n{rejected}\n+ on ({pm})\n{finished}\n)"


KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # 0.9.2+ name first
PREFIX_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")


def prefix_hits_rate(cfg: ObspackConfig, window: str, *extra: str) -> str:
    return counter_rate(cfg, PREFIX_HITS, window, POD_MODEL, *extra)


def prefix_queries_rate(cfg: ObspackConfig, window: str, *extra: str) -> str:
    return counter_rate(cfg, PREFIX_QUERIES, window, POD_MODEL, *extra)


def group(cfg: ObspackConfig) -> RuleGroup:
    pm = c.by(cfg, *POD_MODEL)
    rules = [
        RecordingRule(
            record=c.KV_USAGE,
            expr=f"""
                max by ({pm}) (
                  {KV_USAGE[0]}{sel(cfg)}
                  or
                  {KV_USAGE[1]}{sel(cfg)}
                )
            """,
        ),
        RecordingRule(record=c.RUNNING, expr=gauge_sum(cfg, "vllm:num_requests_running")),
        RecordingRule(record=c.WAITING, expr=gauge_sum(cfg, "vllm:num_requests_waiting")),
        RecordingRule(record=c.WAITING_BY_REASON, expr=waiting_by_reason(cfg)),
        RecordingRule(record=c.GENERATION_RATE, expr=counter_rate(cfg, ("vllm:generation_tokens_total",), "5m")),
        RecordingRule(record=c.PROMPT_RATE, expr=counter_rate(cfg, ("vllm:prompt_tokens_total",), "5m")),
        RecordingRule(record=c.PREEMPTION_RATE, expr=counter_rate(cfg, ("vllm:num_preemptions_total",), "5m")),
        RecordingRule(
            record=c.PREFIX_HIT_RATIO,
            expr=f"{prefix_hits_rate(cfg, '5m')}\n/ on ({pm})\n({prefix_queries_rate(cfg, '5m')} > 0)",
        ),
        # The fleet page's feature rows: a few series per model, where the raw gauges of 1,000 pods through
        # `max without (pid)` and a sum took ~0.5 s per graph.
        RecordingRule(record=c.KV_FETCH_BY_STAGE, expr=kv_fetch_by_stage(cfg)),
        RecordingRule(record=c.ENGINES_ASLEEP, expr=engines_asleep(cfg)),
        # ... and its refused share per pod: the raw counters of 1,000 pods (5,500 finished-request series)
        # took ~0.8 s per graph; series only while a pod refuses.
        RecordingRule(record=c.REFUSED_SHARE, expr=refused_share(cfg)),
        RecordingRule(
            record=c.REQUEST_RATE,
            expr=counter_rate(
                cfg, ("vllm:request_success_total",), "5m", keep=("namespace", "model_name", "finished_reason")
            ),
        ),
    ]
    return RuleGroup(name=f"{c.GROUP_PREFIX}-vllm.rules", rules=tuple(rules), interval=cfg.rule_interval)


def latency_groups(cfg: ObspackConfig) -> list[RuleGroup]:
    """Histogram buckets per model, so fleet percentiles read a few series instead of every pod's.

    One group per family: each rule reads every pod's buckets (about 25k series at 1,000 pods), and
    Prometheus evaluates groups in parallel but the rules of one group one after the other. The user-facing
    latencies leave out the pods that only prefill, as the SLOs do (`users_rate`); the queue time keeps
    them: a prefill queue that grows is what delays the users' first tokens on a disaggregated model."""
    keep = ("namespace", "model_name", "le")
    sources = {
        "time_to_first_token": ("vllm:time_to_first_token_seconds_bucket",),
        "inter_token_latency": (
            "vllm:inter_token_latency_seconds_bucket",
            "vllm:time_per_output_token_seconds_bucket",
        ),
        "e2e_request_latency": ("vllm:e2e_request_latency_seconds_bucket",),
        "request_queue_time": ("vllm:request_queue_time_seconds_bucket",),
    }

    def record(family: str, metrics: tuple[str, ...]) -> RecordingRule:
        rate = counter_rate if family == "request_queue_time" else users_rate
        return RecordingRule(record=c.latency_bucket_record(family), expr=rate(cfg, metrics, "5m", keep=keep))

    return [
        RuleGroup(
            name=f"{c.GROUP_PREFIX}-vllm-latency-{family.replace('_', '-')}.rules",
            rules=(record(family, metrics),),
            interval=cfg.rule_interval,
        )
        for family, metrics in sources.items()
    ] + [transfer_time_group(cfg)]


def transfer_time_group(cfg: ObspackConfig) -> RuleGroup:
    """KV transfer-time buckets per model and connector (NIXL, Mooncake: each its own buckets, told apart by
    `connector`), for the transfer-time graphs: a few series per model where a connector runs (104 at 1,000
    pods), none elsewhere, where the raw buckets took ~0.35 s per quantile. One record for both connectors,
    so it has series wherever either runs."""
    keep = ("namespace", "model_name", "le")
    legs = "\nor\n".join(
        f'label_replace(\n{textwrap.indent(counter_rate(cfg, (f"{family}_bucket",), "5m", keep=keep), "  ")},\n'
        f'  "connector", "{name}", "", ""\n)'
        for name, family in f.KV_TRANSFER_TIMES.items()
    )
    rules = (RecordingRule(record=c.KV_TRANSFER_TIME, expr=legs),)
    return RuleGroup(name=f"{c.GROUP_PREFIX}-vllm-kv-transfer.rules", rules=rules, interval=cfg.rule_interval)


def prefix_cache_group(cfg: ObspackConfig) -> RuleGroup:
    """Prompt tokens looked up in the prefix cache and found there, per model (either counter name, once per
    engine), for the KV and prefix cache page's token graph: a few series per model where the counters
    exist (28 at 1,000 pods), where the raw counters of 1,000 pods took 0.16 to 0.29 s per load."""
    keep = ("namespace", "model_name")
    rules = (
        RecordingRule(record=c.MODEL_PREFIX_QUERIES, expr=counter_rate(cfg, PREFIX_QUERIES, "5m", keep=keep)),
        RecordingRule(record=c.MODEL_PREFIX_HITS, expr=counter_rate(cfg, PREFIX_HITS, "5m", keep=keep)),
    )
    return RuleGroup(name=f"{c.GROUP_PREFIX}-vllm-prefix-cache.rules", rules=rules, interval=cfg.rule_interval)
