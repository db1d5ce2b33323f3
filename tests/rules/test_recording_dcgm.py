"""The GPU plane's recording rules: source matchers, the cost shape (one series per GPU, the rest per pod),
and the labels consumers join on."""

from __future__ import annotations

import re
from pathlib import Path

import promql_parser
import pytest

from obspack import conventions as c
from obspack.config import load_config
from obspack.promql import metric_names
from obspack.rules.recording import dcgm

CUSTOM = load_config(Path(__file__).resolve().parents[1] / "fixtures" / "custom.yaml")
RAW_DCGM = re.compile(r"\bDCGM_FI_\w+")


def _rules() -> list[tuple[str, str, str]]:
    return [(g.name, r.record, r.expr) for g in dcgm.groups(CUSTOM) for r in g.rules]  # type: ignore[union-attr]


def _outer_labels(expr: str) -> list[str]:
    outer = promql_parser.parse(expr)
    while isinstance(outer, promql_parser.ParenExpr):
        outer = outer.expr
    assert isinstance(outer, promql_parser.AggregateExpr), expr
    return list(outer.modifier.labels)


def test_every_raw_dcgm_read_carries_the_configured_matchers() -> None:
    reads = 0
    for _, record, expr in _rules():
        for m in RAW_DCGM.finditer(expr):
            reads += 1
            assert expr[m.end() :].startswith('{job=~"nvidia-dcgm-exporter"'), (record, expr)
    assert reads >= len(dcgm.SUMMARIES) + 3  # every summary, and the attribution's three label modes


def test_rules_over_every_gpu_sit_at_most_two_to_a_group() -> None:
    """Each costs 0.1-0.3 s at 8,000 GPUs, and the rules of a group run one after the other."""
    per_group: dict[str, int] = {}
    for group, _, expr in _rules():
        per_group[group] = per_group.get(group, 0) + bool(RAW_DCGM.search(expr))
    assert max(per_group.values()) <= 2, per_group
    assert sum(per_group.values()) == len(dcgm.SUMMARIES) + 1


def test_the_attribution_reads_raw_series_and_the_pods_recorded_before_it_in_its_group() -> None:
    """It feeds the GPU alert, which may be one group hop from raw series: the only record it reads is the
    vLLM pods with their models, made from raw series earlier in the same group (no group boundary)."""
    rules = _rules()
    order = [record for _, record, _ in rules]
    group, attribution = next((group, expr) for group, record, expr in rules if record == c.GPU_INFO)
    records = {name for name in metric_names(attribution) if ":" in name and not name.startswith("vllm:")}
    assert records == {c.VLLM_POD_MODEL}
    pods_group, pods = next((group, expr) for group, record, expr in rules if record == c.VLLM_POD_MODEL)
    assert pods_group == group and order.index(c.VLLM_POD_MODEL) < order.index(c.GPU_INFO)
    assert all(":" not in name or name.startswith("vllm:") for name in metric_names(pods))
    assert _outer_labels(attribution) == [CUSTOM.cluster_label, *dcgm.KEY]  # topk by the exporter key
    # the doctor prices GPUs before any record exists: from raw series, the same attribution
    inline = dcgm.attribution(CUSTOM)
    assert all(":" not in name or name.startswith("vllm:") for name in metric_names(inline))
    # the same text once the record is the raw expression, but for layout and the parentheses that keep the
    # raw expression's `or` under the joins (tests/doctor/test_broken_fleets.py prices a fleet with it)
    def bare(expr: str) -> str:
        return re.sub(r"[\s()]", "", expr)

    assert bare(inline) == bare(attribution.replace(c.VLLM_POD_MODEL, pods))


def test_only_the_attribution_is_per_gpu_everything_else_per_pod() -> None:
    """The series budget: one series per GPU held, a handful per pod (docs/rules.md, "The GPU plane"), and
    the two per model of the GPU page's mean utilisation."""
    for _, record, expr in _rules():
        if record == c.GPU_INFO:
            continue
        if record in (c.MODEL_GPU_UTILIZATION_SUM, c.MODEL_GPU_COUNT):
            assert _outer_labels(expr) == [CUSTOM.cluster_label, "namespace", "model_name"], record
            continue
        if record == c.VLLM_POD_MODEL:  # the pods' models, or the pods where no model is known: each leg per pod
            legs, node = [], promql_parser.parse(expr)
            while isinstance(node, promql_parser.BinaryExpr):
                legs.append(node.rhs)
                node = node.lhs
            pods = {CUSTOM.cluster_label, "namespace", "pod"}
            assert len(legs) == 2 and all(pods <= set(_outer_labels(str(leg))) <= pods | {"model_name"} for leg in (node, *legs))
            continue
        if record == c.POD_NODE_GPU_COUNT:  # a pod's GPUs share its node and model: per pod, or per MIG profile
            assert _outer_labels(expr) == [CUSTOM.cluster_label, *dcgm.NODE_GPUS]
            assert dcgm.NODE_GPUS[: len(dcgm.POD_MODEL)] == dcgm.POD_MODEL
            assert set(dcgm.NODE_GPUS) - set(dcgm.POD_MODEL) == {"modelName", "Hostname", "GPU_I_PROFILE"}
            continue
        per = ("namespace", "pod") if record == c.VLLM_POD else dcgm.POD_MODEL  # the pods, before their models
        assert _outer_labels(expr) == [CUSTOM.cluster_label, *per], record


@pytest.mark.parametrize("summary", dcgm.SUMMARIES, ids=lambda s: s.record)
def test_summaries_join_raw_fields_to_the_attribution_on_the_exporter_key(summary: dcgm.Summary) -> None:
    expr = dcgm.summary_expr(CUSTOM, summary)
    assert f"* on ({CUSTOM.cluster_label}, instance, gpu, GPU_I_ID) group_left (namespace, pod, model_name)" in expr
    assert metric_names(expr) - {c.GPU_INFO} <= set(RAW_DCGM.findall(expr))
