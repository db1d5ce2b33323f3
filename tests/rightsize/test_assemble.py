"""From rows to workloads without a server: what is said when a source is missing."""

from __future__ import annotations

from obspack.rightsize.assemble import Settings, assemble
from obspack.rightsize.measure import Measurements, parse
from obspack.rightsize.model import Level
from obspack.rightsize.queries import Plan

GIB = 1024**3
PLAN = Plan(at=2_000_000_000, window_s=14 * 86400, step_s=600, load_s=600)
SETTINGS = Settings(min_history_s=7 * 86400, release_rise=0.15, prefix_low=0.3, fragmentation_high=0.3)
CONTAINER = ("c", "ns", "api-5d8f9c7b6d-x2k9p", "vllm")
IMAGE = (*CONTAINER, "vllm/vllm-openai:v0.33.0")


def test_no_workload_says_so_and_where_to_look() -> None:
    workloads, notes = assemble(Measurements({"containers": {}}), PLAN, SETTINGS)
    assert workloads == () and notes[0].startswith("no vLLM workloads found in the window")


def test_a_container_without_cadvisor_data_is_not_enough_data_with_the_reason() -> None:
    workloads, notes = assemble(Measurements({"containers": {CONTAINER: 1}}), PLAN, SETTINGS)
    (w,) = workloads
    assert w.confidence.level is Level.NONE and "no cAdvisor working set" in w.confidence.reasons[0]
    assert w.memory.limit is None and not w.actionable and w.gpu is None
    assert any("no cAdvisor working set" in n for n in notes) and any("no kube-state-metrics" in n for n in notes)


def test_without_start_times_the_whole_window_stands_in_for_serving_and_confidence_drops() -> None:
    rows = {
        "containers": {CONTAINER: 1},
        "ram_peak": {IMAGE: 20 * GIB},
        "ram_p99": {IMAGE: 18 * GIB},
        "ram_points": {IMAGE: 4000},
        "ram_first_seen": {IMAGE: PLAN.at - PLAN.window_s},
        "ram_now": {CONTAINER: 18 * GIB},
    }
    (w,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert not w.memory.split and w.memory.load_peak is None
    assert (w.memory.serving_peak, w.memory.serving_p99) == (20 * GIB, 18 * GIB)
    assert w.memory.limit == 23 * GIB and w.confidence.level is Level.LOW
    assert any("not told apart" in r for r in w.confidence.reasons)
    assert w.memory.risk.value == "unknown"  # no limit known without kube-state-metrics


def test_hostile_rows_are_counted_and_left_out() -> None:
    result = [
        {"metric": {"cluster": "c", "namespace": "ns", "pod": "p", "container": "vllm"}, "value": [1, "1"]},
        {"metric": "not a map", "value": [1, "1"]},
        {"metric": {"pod": 7}, "value": [1, "1"]},
        {"metric": {"pod": "q"}, "value": [1, "many"]},
        {"metric": {"pod": "r"}, "value": [1, "NaN"]},
        "a string",
    ]
    rows, bad = parse(result, ("cluster", "namespace", "pod", "container"))
    assert rows == {("c", "ns", "p", "vllm"): 1.0} and bad == 4
    assert parse({"not": "a list"}, ("pod",)) == ({}, 1)
    _, notes = assemble(Measurements({"containers": rows}, malformed=bad), PLAN, SETTINGS)
    assert "4 answer rows were not Prometheus API rows and were left out" in notes


def test_a_workload_gone_before_the_end_is_reported_but_never_counted() -> None:
    rows = {
        "containers": {CONTAINER: 1},
        "ram_serving_peak": {IMAGE: 20 * GIB},
        "ram_serving_p99": {IMAGE: 18 * GIB},
        "ram_load_peak": {IMAGE: 30 * GIB},
        "ram_points": {IMAGE: 4000},
        "ram_first_seen": {IMAGE: PLAN.at - PLAN.window_s},
        "oom_kills": {CONTAINER: 1},
        "ksm_present": {("c",): 10},
    }
    (gone,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert not gone.alive and not gone.actionable
    # No limit known at the kill: the peak (30 GiB) stands in for the usage at it, x 1.25.
    assert gone.memory.risk.value == "oom" and gone.memory.limit == 37.5 * GIB  # measured and sized, not counted
    (alive,), _ = assemble(Measurements({**rows, "ram_now": {CONTAINER: 18 * GIB}}), PLAN, SETTINGS)
    assert alive.actionable and alive.memory.risk.value == "oom"
