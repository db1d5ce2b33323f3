"""`obspack rightsize` against VictoriaMetrics holding the same fleet as the Prometheus tests: the same
answers, within the stated tolerances (MetricsQL's rates do not extrapolate, its subqueries align on its
own grid)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rightsize.command import GIB, MIB, knob, report, workload
from tests.support.tools import require_tool
from tests.support.victoria import VictoriaMetrics

pytestmark = [pytest.mark.e2e, pytest.mark.tool]


@pytest.fixture(scope="module")
def found(fleet_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict]]:
    folder = tmp_path_factory.mktemp("rightsize-victoriametrics")
    vm = VictoriaMetrics(require_tool("victoria-metrics"), folder)
    try:
        vm.import_text(fleet_file)
        yield report(vm.url)
    finally:
        vm.stop()


def test_victoriametrics_gives_the_same_host_memory_answers(found) -> None:
    code, doc = found
    assert code == 1 and doc["failed_queries"] == [] and doc["backend"].startswith("VictoriaMetrics")
    load = workload(doc, "rs-load")["memory"]
    assert load["load_peak_bytes"] == 28 * GIB and load["serving_p99_bytes"] == 12 * GIB
    assert load["recommended"] == {"limit_bytes": 33024 * MIB, "request_bytes": 14 * GIB}
    oom = workload(doc, "rs-oom")["memory"]
    assert oom["oom_kills"] == 1 and oom["recommended"]["limit_bytes"] == 30 * GIB


def test_victoriametrics_gives_the_same_vllm_answers(found) -> None:
    doc = found[1]
    context = knob(workload(doc, "rs-context"), "--max-model-len")
    assert context["recommended"] == 8192 and context["measured"]["prompt_p999"] == pytest.approx(7500, abs=1)
    assert knob(workload(doc, "rs-batch"), "--max-num-seqs")["measured"]["running_peak"] == 12
    kv = workload(doc, "rs-kv")["gpu"]
    assert kv["kv_cache"]["verdict"] == "too small" and kv["recommended_gpu_memory_utilization"] == 0.94
    assert kv["kv_cache"]["preemptions"] == pytest.approx(500, rel=0.02)


def test_victoriametrics_flags_the_release_and_the_short_history(found) -> None:
    doc = found[1]
    new = workload(doc, "rs-release")["releases"][-1]
    assert new["flagged"] and new["rises"]["load"] == pytest.approx(0.30, abs=0.005)
    assert workload(doc, "rs-new")["confidence"]["level"] == "not enough data"
    assert not workload(doc, "rs-ok", "gpu-west")["actionable"]


def test_victoriametrics_counts_every_run_to_its_end_and_cuts_no_limit_blind(found) -> None:
    """The climbs before a kill and a liveness restart are serving; the load before the window and the
    sibling's load size their limits; the long-running pod keeps its limit; the days and the kill add up."""
    doc = found[1]
    assert workload(doc, "rs-oom")["memory"]["serving_peak_bytes"] == pytest.approx(23.9 * GIB, rel=1e-9)
    assert workload(doc, "rs-liveness")["memory"]["serving_peak_bytes"] == 22 * GIB
    prewindow = workload(doc, "rs-prewindow")["memory"]
    assert prewindow["load"]["source"] == "before the window" and prewindow["recommended"]["limit_bytes"] == 34.5 * GIB
    chat = workload(doc, "rs-canary", name="chat")["memory"]
    assert chat["load"]["source"] == "same image and model" and chat["recommended"]["limit_bytes"] == 30 * GIB
    longrun = workload(doc, "rs-longrun")["memory"]
    assert longrun["decision"]["limit"] == "keep" and longrun["recommended"]["limit_bytes"] == 96 * GIB
    oom = workload(doc, "rs-oom")["backtest"]
    assert (oom["runs"], oom["days"], oom["runs_killed"]) == (2, 14, 0)
