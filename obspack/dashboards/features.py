"""Rows of the fleet page for features only some engines run: disaggregated prefill/decode, KV offload,
speculative decoding, LoRA, admission control and sleep mode (obspack/catalogue/vllm_features.py).

Each row is collapsed (its panels query nothing until it is opened) and repeats over a hidden variable
that counts the engines (or pods) using its feature in the dashboard's range, from that feature's own
series. Where an engine uses the feature, the variable has one value, the count, and the title says it:
"Speculative decoding (engines using it: 12)". Where none does, the variable has no value, and Grafana
still draws the row once: the scenes renderer (`RowRepeaterBehavior`, Grafana 11 and 12) and the older
one alike repeat it over a placeholder whose value is empty and whose text is "None". A title reading
the value (`$var`) would end in "(engines: )"; the title reads the text (`${var:text}`), so an unused
feature's row reads "Speculative decoding (engines using it: None)" before anyone opens it.
"""

from __future__ import annotations

from grafanalib.core import HIDE_VARIABLE, REFRESH_ON_TIME_RANGE_CHANGE, SORT_DISABLED, RowPanel, Template

from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.dashboards import feature_queries as fq
from obspack.dashboards import marks
from obspack.dashboards import panels as p
from obspack.dashboards.defaults import triage_from_row, triage_from_series
from obspack.numbers import percent

MODEL_LEGEND = "{{namespace}} {{model_name}}"
POD_LEGEND = "{{namespace}}/{{pod}}"
# query_result() lists a count as `{} 12 1700000000000`: the value is the count.
COUNT = r"/^\{\} (\d+) /"
BYTES_PER_SECOND = "Bps"
LAST_CHANGE = "dateTimeFromNow"


def _variable(name: str, label: str, count: str) -> Template:
    return Template(
        name=name,
        label=label,
        type="query",
        dataSource=p.DATASOURCE,
        query=f"query_result({count})",
        refresh=REFRESH_ON_TIME_RANGE_CHANGE,
        sort=SORT_DISABLED,
        multi=False,
        includeAll=False,
        regex=COUNT,
        hide=HIDE_VARIABLE,
    )


def variables(cfg: ObspackConfig) -> list[Template]:
    """The hidden variables the rows repeat over, one per feature (named by its key)."""
    engines = {feature.key: fq.engines_using(cfg, feature.markers) for feature in f.FEATURES}
    engines[f.LORA.key] = fq.lora_pods_in_range(cfg)
    engines[f.ADMISSION.key] = fq.engines_using(cfg, f.ADMISSION.markers, per=("pod",))
    engines[f.SLEEP.key] = fq.engines_slept_in_range(cfg)
    return [_variable(feature.key, feature.title, engines[feature.key]) for feature in f.FEATURES]


USING = "engines using it"


def title(feature: f.Feature, what: str = USING) -> str:
    """The row's title: the feature and its count, as the variable's text (the count, or Grafana's "None"
    where no engine uses it)."""
    return f"{feature.title} ({what}: ${{{feature.key}:text}})"


def _row(feature: f.Feature, what: str, panels: list[p.Panel]) -> RowPanel:
    """The feature's collapsed row, repeated over its count; its panels say, instead of "No data", that
    nothing in the selection uses the feature (the row is drawn once even then)."""
    return p.repeated_section(
        title(feature, what),
        feature.key,
        panels,
        no_data=f"No data: nothing in the selection reports this series of {feature.title} (the row's title counts its users)",
    )


def transfer_time(cfg: ObspackConfig, no_data: str | None = None) -> p.Panel:
    """KV transfer time per model and connector (this page's disaggregation row, the disaggregated page)."""
    return p.timeseries(
        "KV transfer time (p50 / p99)",
        *(
            p.target(fq.transfer_time(cfg, quantile), f"p{round(quantile * 100)} {{{{connector}}}} {MODEL_LEGEND}")
            for quantile in (0.5, 0.99)
        ),
        unit=p.SECONDS,
        description=(
            "How long a decode pod takes to read a request's KV cache from its prefill pod (NIXL or "
            "Mooncake), per model and connector, over 5 minutes (the pod filter does not narrow it). A rising "
            "p99 shows a congested or degraded network path before transfers fail or expire; compare with the "
            "failures graph."
        ),
        no_data=no_data,
    )


# The failures panels draw only the pods whose transfers fail or expire now (feature_queries).
NO_TRANSFER_FAILURES = "No KV transfer failed or expired in the range"


def disaggregation(cfg: ObspackConfig) -> RowPanel:
    t = cfg.alerts.VLLMKVTransferFailures
    runbook = marks.runbooks(cfg, "VLLMKVTransferFailures")
    return _row(
        f.DISAGGREGATION,
        USING,
        [
            p.timeseries(
                "KV transfers failed or expired per pod",
                p.target(fq.transfer_failures_per_pod(cfg), "{{connector}} {{kind}} " + POD_LEGEND),
                unit=p.PER_SECOND,
                description=(
                    "Failed reads, receives or notifications of KV cache between prefill and decode pods, and "
                    "prefilled blocks that expired unread, per pod and connector: the 20 highest of the pods "
                    "where they happen (nothing while none fails). Decode pods "
                    "count failed reads, prefill pods expired blocks. "
                    + marks.say(
                        cfg,
                        "VLLMKVTransferFailures",
                        "A steady line fires VLLMKVTransferFailures: open the runbook, then the triage page of the pod.",
                        "A steady line means transfers keep failing: open the triage page of the pod.",
                    )
                ),
                thresholds=p.above(None, max(t.rate, 1e-9)),
                links=runbook,
                data_links=[triage_from_series(cfg)],
                no_data=NO_TRANSFER_FAILURES,
            ),
            transfer_time(cfg),
            p.timeseries(
                "KV transferred per model",
                p.target(fq.transferred_bytes(cfg), MODEL_LEGEND),
                unit=BYTES_PER_SECOND,
                description=(
                    "Bytes of KV cache moved from prefill to decode pods per second, per model. It follows "
                    "the prompt tokens of the traffic; a drop with steady traffic means transfers stopped and "
                    "decode pods compute prompts themselves (or fail them)."
                ),
            ),
            p.timeseries(
                "Decode pods: requests waiting for their KV",
                p.target(fq.kv_fetch_by_stage(cfg), "{{stage}} " + MODEL_LEGEND),
                p.target(fq.deferred_waiting(cfg), "deferred " + MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    "Requests on decode pods whose KV cache is on its way, by stage (vLLM 0.32+), and every "
                    "request the scheduler deferred (0.20+; KV transfers are the usual reason here), per model "
                    "(the pod filter does not narrow it). A growing count means transfers are slow or stuck: "
                    "check the transfer time and failures."
                ),
            ),
        ],
    )


def kv_offload(cfg: ObspackConfig) -> RowPanel:
    t = cfg.alerts.VLLMKVOffloadAllocationFailures
    return _row(
        f.KV_OFFLOAD,
        USING,
        [
            p.timeseries(
                "KV offload traffic per model",
                p.target(fq.offload_traffic(cfg, "store"), "store " + MODEL_LEGEND),
                p.target(fq.offload_traffic(cfg, "load"), "load " + MODEL_LEGEND),
                unit=BYTES_PER_SECOND,
                description=(
                    "Bytes per second copied from GPU memory to the offload tier (store) and back (load), per "
                    "model. Loads are prompts served from the tier; stores without loads mean the tier costs "
                    "memory and copies but serves nothing: check the external prefix cache hit rate."
                ),
            ),
            p.timeseries(
                "KV offload tier usage per pod",
                p.target(fq.offload_usage(cfg), POD_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "How full each pod's offload tier is (the CPU spec's cache, or the tiering spec's primary "
                    "tier; the 20 fullest). A tier that stays full evicts blocks before they are reused, and "
                    "new blocks may find no room (allocation failures)."
                ),
                thresholds=p.above(0.9, 0.98),
                soft_max=1,
                data_links=[triage_from_series(cfg)],
            ),
            p.timeseries(
                "KV offload allocation failures per pod",
                p.target(fq.offload_failures_per_pod(cfg), POD_LEGEND),
                unit=p.PER_SECOND,
                description=(
                    "Blocks the offload tier had no room for (or could not promote back), per pod. Requests "
                    "still succeed, but their prefixes are computed again. "
                    + marks.say(
                        cfg,
                        "VLLMKVOffloadAllocationFailures",
                        "A steady line fires VLLMKVOffloadAllocationFailures: follow its runbook.",
                        "A steady line means the tier is too small for the prefixes it is given.",
                    )
                ),
                thresholds=p.above(None, max(t.rate, 1e-9)),
                links=marks.runbooks(cfg, "VLLMKVOffloadAllocationFailures"),
                data_links=[triage_from_series(cfg)],
            ),
            p.timeseries(
                "External prefix cache hit rate per model",
                p.target(fq.external_hit_rate(cfg), MODEL_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "Prompt tokens a KV connector (the offload tier, LMCache or a prefill pod) supplied, over the "
                    "tokens looked up there, per model. Near 0 for long: the tier or cache serves little and "
                    "its memory may be better spent on the GPU's own cache."
                ),
                thresholds=p.below(0.05, 0.2),
                soft_max=1,
            ),
        ],
    )


def simple_offload(cfg: ObspackConfig) -> RowPanel:
    return _row(
        f.SIMPLE_OFFLOAD,
        USING,
        [
            p.timeseries(
                "Simple CPU offload: blocks in use per pod",
                p.target(fq.simple_offload_used(cfg), POD_LEGEND),
                unit=p.SHORT,
                description=(
                    "KV blocks held in CPU memory by the simple offload connector, per pod (the 20 highest). "
                    "It cannot pass the connector's capacity (the capacity_blocks label of "
                    "vllm:simple_kv_offload_info); flat at that level, the tier is full."
                ),
                data_links=[triage_from_series(cfg)],
            ),
            p.timeseries(
                "Simple CPU offload: blocks loaded back per model",
                p.target(fq.simple_offload_loaded(cfg), MODEL_LEGEND),
                unit=p.PER_SECOND,
                description=(
                    "KV blocks loaded back from CPU memory per second, per model: prompts the offload tier "
                    "saved from recomputation. Near 0 while blocks are in use means the tier holds prefixes "
                    "that do not come back."
                ),
            ),
        ],
    )


def spec_decode(cfg: ObspackConfig) -> RowPanel:
    t = cfg.alerts.VLLMSpecDecodeAcceptanceLow
    return _row(
        f.SPEC_DECODE,
        USING,
        [
            p.timeseries(
                "Draft acceptance rate per model",
                p.target(fq.acceptance(cfg), MODEL_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "Accepted draft tokens over drafted ones, per model. Below "
                    + marks.say(cfg, "VLLMSpecDecodeAcceptanceLow", f"the dashed line ({percent(t.ratio)}, VLLMSpecDecodeAcceptanceLow)", f"{percent(t.ratio)}")
                    + " drafting costs more GPU time than it saves: check the drafter against the traffic, or "
                    "turn speculation off."
                ),
                thresholds=p.below(t.ratio, min(0.999, t.ratio * 2)),
                draw_thresholds=marks.on(cfg, "VLLMSpecDecodeAcceptanceLow"),
                soft_max=1,
                links=marks.runbooks(cfg, "VLLMSpecDecodeAcceptanceLow"),
            ),
            p.timeseries(
                "Tokens per verification step",
                p.target(fq.tokens_per_draft(cfg), MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    "Tokens each verification step yields, per model: one plus the accepted draft tokens per "
                    "draft. At 1 speculation gains nothing; the gain in decode speed is at most this number."
                ),
            ),
            p.timeseries(
                "Acceptance by draft position",
                p.target(fq.acceptance_by_position(cfg), "position {{position}} " + MODEL_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "The share of drafts whose token at each position was accepted, per model. Later positions "
                    "near 0 mean too many tokens are proposed per step: lower num_speculative_tokens."
                ),
                soft_max=1,
            ),
            p.timeseries(
                "Draft tokens per second",
                p.target(fq.draft_tokens(cfg), MODEL_LEGEND),
                unit=p.TOKENS_PER_SECOND,
                description=(
                    "Tokens proposed by the drafter per second, per model: the work speculation adds. Compare "
                    "with the acceptance rate to see what it buys."
                ),
            ),
        ],
    )


def lora(cfg: ObspackConfig) -> RowPanel:
    return _row(
        f.LORA,
        "pods using it",
        [
            p.table(
                "LoRA adapters now, per pod",
                p.target(fq.lora_adapters(cfg), instant=True, table=True),
                description=(
                    "The adapters each pod runs and those its requests wait for now, with the limit "
                    "(max_lora) and when the set last changed. Requests waiting for an adapter means its slots "
                    "are full: raise --max-loras if memory allows, or route each adapter to fewer pods."
                ),
                columns=[p.column("A", "Last change", LAST_CHANGE)],
                row_links=[triage_from_row(cfg)],
                w=16,
            ),
            p.timeseries(
                "Pods with LoRA adapters running and waiting",
                p.target(fq.lora_pods(cfg, "running_lora_adapters"), "running"),
                p.target(fq.lora_pods(cfg, "waiting_lora_adapters"), "waiting"),
                unit=p.SHORT,
                description=(
                    "Pods that run at least one adapter, and pods with requests waiting for an adapter that is "
                    "not loaded. Pods waiting for long: their adapter slots are full (see the table)."
                ),
                w=8,
            ),
        ],
    )


def admission(cfg: ObspackConfig) -> RowPanel:
    t = cfg.alerts.VLLMAdmissionRejections
    runbook = marks.runbooks(cfg, "VLLMAdmissionRejections")
    return _row(
        f.ADMISSION,
        "pods using it",
        [
            p.timeseries(
                "Requests refused at admission per model",
                p.target(fq.refused(cfg), "{{reason}} " + MODEL_LEGEND),
                unit=p.REQUESTS,
                description=(
                    "Requests vLLM refused at once because its queue was at --max-num-queued-reqs or "
                    "--max-num-queued-tokens (the reason), per model. Each one is an error a client saw: add "
                    "replicas or spread the load."
                ),
                stacked=True,
                links=runbook,
            ),
            p.timeseries(
                "Refused share per pod",
                p.target(fq.refused_share_per_pod(cfg), POD_LEGEND),
                unit=p.PERCENT_UNIT,
                description=(
                    "Refused requests over all the requests that reached each pod over 5 minutes: the 20 highest "
                    "of the pods refusing now (nothing while none refuses). "
                    + marks.say(cfg, "VLLMAdmissionRejections", f"Above the dashed line ({percent(t.ratio)}) VLLMAdmissionRejections fires; ")
                    + "one pod far above the others gets more than its share from the load balancer."
                ),
                **marks.dashed(cfg, "green", ("VLLMAdmissionRejections", t.ratio, "red")),
                links=runbook,
                data_links=[triage_from_series(cfg)],
                no_data="No pod in the selection refused a request in the last 5 minutes",
            ),
        ],
    )


def sleep(cfg: ObspackConfig) -> RowPanel:
    return _row(
        f.SLEEP,
        "engines asleep",
        [
            p.timeseries(
                "Engines asleep per model",
                p.target(fq.engines_asleep(cfg), MODEL_LEGEND),
                unit=p.SHORT,
                description=(
                    "Engines put to sleep (sleep mode: weights offloaded or discarded), per model (the pod "
                    "filter does not narrow it; the table lists the pods). A sleeping "
                    "engine answers 503 and serves nothing on purpose, and obspack's serving alerts leave it "
                    "out; traffic still sent to it is a routing problem."
                ),
                w=12,
            ),
            p.table(
                "Pods that slept in the time range",
                p.target(fq.asleep_share_in_range(cfg), instant=True, table=True),
                p.target(fq.asleep_now(cfg), instant=True, table=True),
                description=(
                    "Each pod whose engine slept within the dashboard's time range: the share of the range it "
                    "slept, and whether it sleeps now (1). A pod asleep that should serve: wake it through "
                    "whoever manages sleep mode, or restart it."
                ),
                columns=[p.column("A", "Share of the range asleep", p.PERCENT_UNIT), p.column("B", "Asleep now", p.NONE)],
                row_links=[triage_from_row(cfg)],
                w=12,
            ),
        ],
    )


def rows(cfg: ObspackConfig) -> list[RowPanel]:
    return [
        disaggregation(cfg),
        kv_offload(cfg),
        simple_offload(cfg),
        spec_decode(cfg),
        lora(cfg),
        admission(cfg),
        sleep(cfg),
    ]
