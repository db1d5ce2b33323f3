"""vLLM / Disaggregated serving: the prefill and the decode side of each model side by side (throughput,
queue, KV cache), the prefill:decode ratio, the KV transfers between them, and the endpoint picker's P/D
decisions. Roles come from obspack/rules/roles.py; on a fleet without disaggregation every pod is `both`
and the P/D-only panels say "not in use" instead of "No data"."""

from __future__ import annotations

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import feature_queries as fq
from obspack.dashboards import features, marks, variables
from obspack.dashboards import panels as p
from obspack.dashboards import role_queries as rq
from obspack.dashboards.defaults import dashboard, triage_from_series
from obspack.numbers import percent

NAME = c.DISAGGREGATION_DASHBOARD
ROLE_LEGEND = "{{role}} {{namespace}} {{model_name}}"
MODEL_LEGEND = "{{namespace}} {{model_name}}"
POD_LEGEND = "{{namespace}}/{{pod}}"
NOT_IN_USE = (
    "Not in use: no pod in the selection only prefills or only decodes (roles come from the pod label "
    "disaggregation.role_label, else the pod name patterns)"
)
NO_TRANSFERS = "Not in use: no engine in the selection moves KV cache through NIXL or Mooncake"
NO_TRANSFER_FAILURES = f"{features.NO_TRANSFER_FAILURES} (or none moves KV cache through NIXL or Mooncake)"
# The per-role graphs read records per model and role (obspack/rules/recording/roles.py).
PER_MODEL = " Per model and role: the pod filter does not narrow it (the triage page shows one pod)."
NO_EPP = "Not in use: no llm-d endpoint picker with P/D disaggregation reports its decisions"


def dashboard_for(cfg: ObspackConfig) -> Dashboard:
    t = cfg.alerts.VLLMPrefillDecodeImbalance
    imbalance = marks.runbooks(cfg, "VLLMPrefillDecodeImbalance")
    said = marks.say(
        cfg,
        "VLLMPrefillDecodeImbalance",
        " One side saturated while the other has room fires VLLMPrefillDecodeImbalance.",
    )
    panels = [
        p.section("Balance"),
        p.timeseries(
            "Prefill pods per decode pod",
            p.target(rq.prefill_per_decode(cfg), MODEL_LEGEND),
            unit=p.SHORT,
            description=(
                "Prefill-only pods over decode-only pods, per model. The right ratio follows the traffic: long "
                "prompts with short answers need more prefill, long answers more decode. Compare with the "
                "queues below after each change of the ratio. Per model: the pod filter does not narrow it."
                + said
            ),
            links=imbalance,
            no_data=NOT_IN_USE,
        ),
        p.timeseries(
            "Requests waiting per pod, by role",
            p.target(rq.by_role(cfg, c.ROLE_WAITING), ROLE_LEGEND),
            unit=p.SHORT,
            description=(
                "Average queue per pod of each role. A queue on the prefill side with idle decoders means "
                "prefill is short (or the P:D ratio is off); on decode pods, requests waiting for their KV "
                f"from a prefill pod count too (the fleet page splits them by reason). Above {t.waiting_per_pod:g} "
                "requests waiting for capacity per pod, a side counts as saturated." + said + PER_MODEL
            ),
            thresholds=p.above(None, t.waiting_per_pod),
            draw_thresholds=marks.on(cfg, "VLLMPrefillDecodeImbalance"),
            links=imbalance,
        ),
        p.timeseries(
            "Requests running per pod, by role",
            p.target(rq.by_role(cfg, c.ROLE_RUNNING), ROLE_LEGEND),
            unit=p.SHORT,
            description=(
                "Average batch per pod of each role. Prefill pods run each request for one step (max_tokens 1), "
                "decode pods for the whole answer, so decode batches are larger by design; llm-d's own "
                "imbalance alert compares these averages." + PER_MODEL
            ),
        ),
        p.timeseries(
            "KV cache usage per pod, by role",
            p.target(rq.by_role(cfg, c.ROLE_KV_USAGE), "avg " + ROLE_LEGEND),
            p.target(rq.by_role(cfg, c.ROLE_KV_USAGE_MAX), "max " + ROLE_LEGEND),
            unit=p.PERCENT_UNIT,
            description=(
                "Average and fullest KV cache of each role. High on prefill pods: decode pods are not pulling "
                "the KV they hold (check the transfers below). High on decode pods: they are about to preempt. "
                f"Above {percent(t.kv_ratio)} with requests waiting, a side counts as saturated." + PER_MODEL
            ),
            thresholds=p.above(None, t.kv_ratio),
            soft_max=1,
        ),
        p.section("Throughput"),
        p.timeseries(
            "Prompt tokens per second, by role",
            p.target(rq.by_role(cfg, c.ROLE_PROMPT_RATE), ROLE_LEGEND),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Prompt tokens each role processes per second. Prefill pods compute them; decode pods count "
                "them too but receive most of their KV (see the external prefix cache on the fleet page)." + PER_MODEL
            ),
        ),
        p.timeseries(
            "Generation tokens per second, by role",
            p.target(rq.by_role(cfg, c.ROLE_GENERATION_RATE), ROLE_LEGEND),
            unit=p.TOKENS_PER_SECOND,
            description=(
                "Output tokens each role generates per second. Decode pods carry nearly all of it; a prefill "
                "pod generates one token per request." + PER_MODEL
            ),
        ),
        p.section("KV transfers and routing"),
        features.transfer_time(cfg, no_data=NO_TRANSFERS),
        p.timeseries(
            "KV transfers failed or expired per pod",
            p.target(fq.transfer_failures_per_pod(cfg), "{{connector}} {{kind}} " + POD_LEGEND),
            unit=p.PER_SECOND,
            description=(
                "Failed KV reads or notifications (decode pods) and prefilled blocks that expired unread "
                "(prefill pods), per pod: the 20 highest of the pods where they happen (nothing while none fails). "
                + marks.say(cfg, "VLLMKVTransferFailures", "A steady line fires VLLMKVTransferFailures.")
            ),
            links=marks.runbooks(cfg, "VLLMKVTransferFailures"),
            data_links=[triage_from_series(cfg)],
            no_data=NO_TRANSFER_FAILURES,
        ),
        p.timeseries(
            "Endpoint picker P/D decisions per second",
            p.target(rq.epp_decisions(cfg), "{{decision_type}}"),
            unit=p.PER_SECOND,
            description=(
                "How the llm-d endpoint picker routed requests: prefill-decode (a prefill pod computes the "
                "prompt first) or decode-only (the decode pod computes it itself, e.g. short prompts or a "
                "cache hit). A sudden shift in the mix with steady traffic points at the picker's "
                "configuration, or prefill pods it no longer sees."
            ),
            no_data=NO_EPP,
        ),
    ]
    return dashboard(
        cfg,
        NAME,
        description="Prefill/decode disaggregation: each role's queue, KV cache and throughput, the P:D ratio, "
        "KV transfers and the endpoint picker's decisions.",
        variables=variables.fleet(cfg),
        panels=panels,
    )
