"""The fleet page's two feature records (obspack/rules/recording/vllm.py), on a real promtool: per model,
each engine counted once whatever its per-process (`pid`) copies, router copies (no model_name) left out,
and a model whose engines are all awake shows 0 engines asleep, not nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.rules.recording import vllm
from tests.support.tools import promtool_record_test


def _series(metric: str, pod: str, model: str, value: float, *, values: str = "", **labels: str) -> dict[str, str]:
    """A series of one pod (no model_name where `model` is empty): `value` throughout, or `values`."""
    where = ", ".join(f'{k}="{v}"' for k, v in {"cluster": "a", "namespace": "ns", "pod": pod, **labels}.items())
    if model:
        where += f', model_name="{model}"'
    return {"series": f"{metric}{{{where}}}", "values": values or f"{value:g}x10"}


def _counter(metric: str, pod: str, model: str, per_minute: int, **labels: str) -> dict[str, str]:
    """A counter of one pod rising by `per_minute` each minute."""
    return _series(metric, pod, model, 0, values=f"0+{per_minute}x10", **labels)


def _check(tmp_path: Path, record: str, expr: str, series: list[dict[str, str]], expected: list[dict[str, object]]) -> None:
    check = {"expr": record, "eval_time": "5m", "exp_samples": expected}
    promtool_record_test(tmp_path, [{"record": record, "expr": expr}], series, [check])


@pytest.mark.tool
def test_requests_waiting_for_their_kv_per_model_and_stage(tmp_path: Path) -> None:
    m = f.KV_FETCH_BY_STAGE
    series = [
        # a decode pod served by two API processes: the same gauge twice, under two pids
        _series(m, "d-0", "llama", 3, engine="0", stage="waiting_to_start", pid="11"),
        _series(m, "d-0", "llama", 3, engine="0", stage="waiting_to_start", pid="12"),
        _series(m, "d-0", "llama", 1, engine="0", stage="in_progress", pid="11"),
        _series(m, "d-0", "llama", 1, engine="0", stage="in_progress", pid="12"),
        # a second decode pod of the model, two data-parallel engines
        _series(m, "d-1", "llama", 2, engine="0", stage="waiting_to_start"),
        _series(m, "d-1", "llama", 4, engine="1", stage="waiting_to_start"),
        # the production-stack router's copy: no model_name, left out
        _series(m, "router", "", 50, stage="waiting_to_start"),
    ]
    keep = 'cluster="a", namespace="ns", model_name="llama"'
    _check(tmp_path, c.KV_FETCH_BY_STAGE, vllm.kv_fetch_by_stage(ObspackConfig()), series, [
        {"labels": f'{c.KV_FETCH_BY_STAGE}{{{keep}, stage="in_progress"}}', "value": 1},
        {"labels": f'{c.KV_FETCH_BY_STAGE}{{{keep}, stage="waiting_to_start"}}', "value": 9},
    ])  # fmt: skip


@pytest.mark.tool
def test_engines_asleep_per_model_zero_while_all_are_awake(tmp_path: Path) -> None:
    m = f.SLEEP_STATE
    series = []
    for pod, model, awake in (("q-0", "qwen", 0), ("q-1", "qwen", 1), ("l-0", "llama", 1)):
        for pid in ("11", "12"):  # every state reported by two API processes
            series.append(_series(m, pod, model, awake, engine="0", sleep_state="awake", pid=pid))
            series.append(_series(m, pod, model, 1 - awake, engine="0", sleep_state="weights_offloaded", pid=pid))
    series.append(_series(m, "router", "", 0, sleep_state="awake"))  # a copy without model_name
    _check(tmp_path, c.ENGINES_ASLEEP, vllm.engines_asleep(ObspackConfig()), series, [
        {"labels": f'{c.ENGINES_ASLEEP}{{cluster="a", namespace="ns", model_name="llama"}}', "value": 0},
        {"labels": f'{c.ENGINES_ASLEEP}{{cluster="a", namespace="ns", model_name="qwen"}}', "value": 1},
    ])  # fmt: skip


@pytest.mark.tool
def test_refused_share_only_for_the_pods_refusing(tmp_path: Path) -> None:
    """Refused over refused and finished, per pod; a pod whose counter stands still has no series."""
    rejected, finished = f.ADMISSION_REJECTIONS, f.REQUEST_SUCCESS
    series = [
        _counter(rejected, "busy", "m", 60, engine="0", reason="max_num_queued_reqs"),
        _counter(rejected, "busy", "m", 0, engine="0", reason="max_num_queued_tokens"),
        _counter(finished, "busy", "m", 120, engine="0", finished_reason="stop"),
        _counter(finished, "busy", "m", 60, engine="0", finished_reason="length"),
        # the other side: the same feature on, nothing refused
        _counter(rejected, "calm", "m", 0, engine="0", reason="max_num_queued_reqs"),
        _counter(finished, "calm", "m", 120, engine="0", finished_reason="stop"),
    ]
    _check(tmp_path, c.REFUSED_SHARE, vllm.refused_share(ObspackConfig()), series, [
        {"labels": f'{c.REFUSED_SHARE}{{cluster="a", namespace="ns", pod="busy", model_name="m"}}', "value": 0.25},
    ])  # fmt: skip


@pytest.mark.tool
def test_transfer_time_buckets_per_model_for_each_connector(tmp_path: Path) -> None:
    """Each connector's buckets summed over the model's decode pods, by `le`; router copies left out."""
    (rule,) = vllm.transfer_time_group(ObspackConfig()).rules
    nixl, mooncake = (f"{f.KV_TRANSFER_TIMES[name]}_bucket" for name in ("nixl", "mooncake"))

    def bucket(pod: str, model: str, le: str, per_minute: int, family: str = nixl) -> dict[str, str]:
        return _counter(family, pod, model, per_minute, engine="0", le=le)

    series = [
        bucket("d-0", "m", "0.1", 60), bucket("d-0", "m", "+Inf", 120),
        bucket("d-1", "m", "0.1", 0), bucket("d-1", "m", "+Inf", 60),
        bucket("router", "", "+Inf", 6000),
        # a Mooncake decode pod of the same model: its own buckets, under its own connector
        bucket("m-0", "m", "+Inf", 30, mooncake),
    ]
    record = rule.record  # type: ignore[union-attr]
    keep = 'cluster="a", namespace="ns", model_name="m", connector="nixl"'
    _check(tmp_path, record, rule.expr, series, [
        {"labels": f'{record}{{cluster="a", namespace="ns", model_name="m", connector="mooncake", le="+Inf"}}',
         "value": 0.5},
        {"labels": f'{record}{{{keep}, le="+Inf"}}', "value": 3},
        {"labels": f'{record}{{{keep}, le="0.1"}}', "value": 1},
    ])  # fmt: skip
