"""`--what-if`: the backtest on a value the user proposes, for the one workload they name."""

from __future__ import annotations

import pytest

from obspack.rightsize.assemble import Settings, assemble
from obspack.rightsize.measure import Measurements
from obspack.rightsize.settings import OptionError, memory_quantity
from obspack.rightsize.settings import what_if as ask
from obspack.rightsize.whatif import what_if
from tests.rightsize.test_assemble import CONTAINER, DAYS, IMAGE, PLAN, T0, day_peaks, serving_only

GIB = 1024**3
SETTINGS = Settings(min_history_s=7 * 86400, release_rise=0.15, prefix_low=0.3, fragmentation_high=0.3)
POD = CONTAINER[:3]


def workloads(**extra: object):  # noqa: ANN201
    rows = {**serving_only(limit=32 * GIB, serving=12 * GIB, start=T0 + 86400), "ram_load_peak": {IMAGE: 28 * GIB}}
    rows["run_peak"] = {k: 28 * GIB for k in rows["run_peak"]}
    rows.update(extra)
    days = day_peaks(value=12 * GIB)
    days["day_peak"][CONTAINER][DAYS[12]] = 28 * GIB
    return assemble(Measurements(rows, days=days), PLAN, SETTINGS)[0]


def test_a_limit_under_the_load_peak_fails_its_backtest_and_one_above_it_passes() -> None:
    low = what_if(workloads(), ask("limit=20Gi", None))
    assert not low.passes and low.backtest.runs_killed == 1 and low.backtest.days_killed == 1
    assert low.answer == "with 20Gi, 1 of 1 run and 1 of 14 days would have been OOM-killed; peak 140% of the limit"
    high = what_if(workloads(), ask("limit=40Gi", "ns/api"))
    assert high.passes and high.answer.endswith("0 of 1 run and 0 of 14 days would have been OOM-killed; peak 70% of the limit")


def test_a_request_above_the_limit_or_under_the_daily_p99_does_not_pass() -> None:
    assert what_if(workloads(), ask("request=16Gi", None)).passes
    assert not what_if(workloads(), ask("request=8Gi", None)).passes  # p99 12 GiB every day
    over = what_if(workloads(), ask("request=48Gi", None))
    assert not over.passes and "above the limit in force (32.25Gi)" in over.answer


def test_a_lower_gpu_memory_utilization_is_never_proven_safe_and_one_that_overfills_the_card_fails() -> None:
    gpu = {
        "kv_peak": {POD: 0.6},
        "kv_p99": {POD: 0.5},
        "fb_peak": {POD: 0.9 * 80 * GIB},
        "fb_total": {POD: 80 * GIB},
        "cache_config": {(*POD, "0.9", "True", "", ""): 1},
    }
    lower = what_if(workloads(**gpu), ask("gpu-memory-utilization=0.85", None))
    assert not lower.passes and "at 64% at least" in lower.answer and "not proven" in lower.answer
    assert dict(lower.facts)["framebuffer_peak_ratio"] == pytest.approx(0.85)
    full = what_if(workloads(**gpu), ask("gpu-memory-utilization=0.5", None))
    assert not full.passes and "the KV cache would have run out" in full.answer
    over = what_if(workloads(**gpu), ask("gpu-memory-utilization=0.98", None))
    assert not over.passes and "peaked at 98% of the card" in over.answer
    ok = what_if(workloads(**gpu), ask("gpu-memory-utilization=0.93", None))
    assert ok.passes and "the KV cache at 58% at most" in ok.answer


@pytest.mark.parametrize(
    ("text", "workload", "message"),
    [
        ("limit 40Gi", None, "give SETTING=VALUE, SETTING one of limit, request, gpu-memory-utilization"),
        ("limit=forty", None, "give a memory size as Kubernetes does, e.g. 40Gi"),
        ("gpu-memory-utilization=85", None, "a share of the card above 0 and at most 1, e.g. 0.85"),
    ],
)
def test_bad_what_ifs_say_what_is_accepted(text: str, workload: str | None, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ask(text, workload)


def test_a_workload_that_is_not_there_or_is_ambiguous_is_named_with_the_candidates() -> None:
    with pytest.raises(OptionError, match=r"--workload 'ns/chat': no such vLLM workload in the window \(found: c ns/Deployment/api \[vllm\]\)"):
        what_if(workloads(), ask("limit=40Gi", "ns/chat"))
    with pytest.raises(OptionError, match="give \\[CLUSTER/\\]NAMESPACE/NAME"):
        what_if(workloads(), ask("limit=40Gi", "api"))


def test_kubernetes_memory_quantities() -> None:
    assert memory_quantity("40Gi") == 40 * GIB and memory_quantity("39936Mi") == 39 * GIB
    assert memory_quantity("1.5Gi") == 1.5 * GIB and memory_quantity("42G") == 42e9 and memory_quantity("1024") == 1024
    for bad in ("", "-1Gi", "1e308", "Gi", "2Pi"):
        with pytest.raises(ValueError):
            memory_quantity(bad)
