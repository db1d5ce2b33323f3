"""From rows to workloads without a server: what is said when a source is missing, where the model load comes
from when the window did not see it, and what is never advised."""

from __future__ import annotations

from obspack.rightsize.assemble import Settings, assemble, needs_before
from obspack.rightsize.measure import Measurements, parse
from obspack.rightsize.model import Decision, Level, LoadSource, Report, Rules
from obspack.rightsize.queries import Plan

GIB = 1024**3
MIB = 1024**2
PLAN = Plan(at=2_000_000_000, window_s=14 * 86400, step_s=600, load_s=600)
T0 = PLAN.at - PLAN.window_s
SETTINGS = Settings(min_history_s=7 * 86400, release_rise=0.15, prefix_low=0.3, fragmentation_high=0.3)
IMG = "vllm/vllm-openai:v0.33.0"
CONTAINER = ("c", "ns", "api-5d8f9c7b6d-x2k9p", "vllm")
IMAGE = (*CONTAINER, IMG)
RUN = (*CONTAINER, "/kubepods/pod1/cid1")
RULES = Rules(0.15, 1.25, 100 * MIB, 256 * MIB, 0.1, 0.15, 7 * 86400, 100)
DAYS = [PLAN.at - i * 86400 for i in range(14)]


def serving_only(container=CONTAINER, run=RUN, limit=96 * GIB, serving=20 * GIB, start=T0 - 20 * 86400) -> dict:  # noqa: ANN001
    """A container that serves at `serving` all window long under `limit`, started at `start`."""
    image = (*container, IMG)
    return {
        "containers": {container: 1},
        "ram_serving_peak": {image: serving},
        "ram_serving_p99": {image: serving},
        "run_peak": {(*run, IMG): serving},
        "run_start": {run: start},
        "ram_points": {image: 4000},
        "ram_first_seen": {image: T0},
        "ram_now": {container: serving},
        "limit_now": {container: limit},
        "request_now": {container: limit},
        "ksm_present": {("c",): 10},
    }


def day_peaks(container=CONTAINER, value=20 * GIB) -> dict:  # noqa: ANN001
    return {"day_peak": {container: {day: value for day in DAYS}}, "day_p99": {container: {day: value for day in DAYS}}}


def test_no_workload_says_so_and_the_report_exits_1_with_the_selectors_tried() -> None:
    workloads, notes = assemble(Measurements({"containers": {}}), PLAN, SETTINGS)
    assert workloads == () and notes[0].startswith("no vLLM workloads found in the window")
    report = Report("http://p", "Prometheus", PLAN.at, PLAN.window_s, 600, 600, RULES, (), notes, (), 1, 0.1, selectors=("x{y}",))
    assert report.exit_code == 1


def test_a_container_without_cadvisor_data_is_not_enough_data_with_the_reason() -> None:
    workloads, notes = assemble(Measurements({"containers": {CONTAINER: 1}}), PLAN, SETTINGS)
    (w,) = workloads
    assert w.confidence.level is Level.NONE and "no cAdvisor working set" in w.confidence.reasons[0]
    assert w.memory.limit is None and not w.actionable and w.gpu is None
    assert any("no cAdvisor working set" in n for n in notes) and any("no kube-state-metrics" in n for n in notes)


def test_without_start_times_the_whole_window_stands_in_for_serving_and_the_limit_is_not_set_blind() -> None:
    rows = {
        "containers": {CONTAINER: 1},
        "run_peak": {(*RUN, IMG): 20 * GIB},
        "ram_p99": {IMAGE: 18 * GIB},
        "ram_points": {IMAGE: 4000},
        "ram_first_seen": {IMAGE: T0},
        "ram_now": {CONTAINER: 18 * GIB},
    }
    (w,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert not w.memory.split and w.memory.load_peak is None and w.memory.load.source is LoadSource.UNSEEN
    assert (w.memory.serving_peak, w.memory.serving_p99) == (20 * GIB, 18 * GIB)
    assert w.memory.computed_limit == 23 * GIB and w.confidence.level is Level.LOW
    assert w.memory.limit_decision is Decision.NONE  # no current limit known, no load: nothing to set
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
    rows, bad, dropped = parse(result, ("cluster", "namespace", "pod", "container"))
    assert rows == {("c", "ns", "p", "vllm"): 1.0} and bad == 4 and dropped == 0
    assert parse({"not": "a list"}, ("pod",)) == ({}, 1, 0)
    _, notes = assemble(Measurements({"containers": rows}, malformed=bad), PLAN, SETTINGS)
    assert "4 answer rows were not Prometheus API rows and were left out" in notes


def test_absurd_memory_samples_are_left_out_and_counted_never_a_traceback_or_a_negative_limit() -> None:
    """1e308 overflowed the margin (OverflowError); a negative sample gave negative limits."""
    keys = ("cluster", "namespace", "pod", "container", "id", "image")
    hostile = [
        {"metric": dict(zip(keys, (*RUN, IMG))), "value": [1, "1e308"]},
        {"metric": dict(zip(keys, (*CONTAINER, "/other", IMG))), "value": [1, "-2147483648"]},
        {"metric": dict(zip(keys, (*CONTAINER, "/third", IMG))), "value": [1, "+Inf"]},
    ]
    rows, bad, dropped = parse(hostile, keys, most=2.0**50)
    assert rows == {} and bad == 0 and dropped == 3
    base = serving_only()
    del base["run_peak"]
    (w,), notes = assemble(Measurements(base, dropped=dropped), PLAN, SETTINGS)
    assert all(v is None or v >= 0 for v in (w.memory.limit, w.memory.request, w.memory.computed_limit))
    assert "3 values were infinite, negative or absurdly large (a memory over 1 PiB) and were left out" in notes


def test_a_workload_gone_before_the_end_is_reported_but_never_counted() -> None:
    rows = {
        "containers": {CONTAINER: 1},
        "ram_serving_peak": {IMAGE: 20 * GIB},
        "ram_serving_p99": {IMAGE: 18 * GIB},
        "ram_load_peak": {IMAGE: 30 * GIB},
        "run_peak": {(*RUN, IMG): 30 * GIB},
        "ram_points": {IMAGE: 4000},
        "ram_first_seen": {IMAGE: T0},
        "ksm_present": {("c",): 10},
    }
    kills = {"day_oom_kills": {CONTAINER: {DAYS[3]: 1.0}}}
    (gone,), _ = assemble(Measurements(rows, days=kills), PLAN, SETTINGS)
    assert not gone.alive and not gone.actionable
    # No limit known at the kill: the peak (30 GiB) stands in for the usage at it, x 1.25.
    assert gone.memory.risk.value == "oom" and gone.memory.computed_limit == 37.5 * GIB  # measured, not counted
    (alive,), _ = assemble(Measurements({**rows, "ram_now": {CONTAINER: 18 * GIB}}, days=kills), PLAN, SETTINGS)
    assert alive.actionable and alive.memory.risk.value == "oom"


def test_a_limit_is_never_cut_below_a_model_load_the_window_did_not_see() -> None:
    """Started 20 days before a 14-day window under 96 GiB, serving at 20 GiB: the rule alone would give
    23 GiB, and the next start (which loads 30 GiB) would be OOM-killed. The limit stays; the request,
    which kills nothing, follows the serving p99."""
    m = Measurements(serving_only(), days=day_peaks())
    (w,), _ = assemble(m, PLAN, SETTINGS)
    mem = w.memory
    assert mem.load.source is LoadSource.UNSEEN and mem.computed_limit == 23 * GIB
    assert (mem.limit_decision, mem.limit) == (Decision.KEEP, 96 * GIB) and "not lowered" in mem.limit_note
    assert (mem.request_decision, mem.request) == (Decision.CHANGE, 23 * GIB)
    assert w.confidence.level is Level.MEDIUM and w.backtest is not None and w.backtest.loads_unknown == 1
    assert needs_before(m, PLAN) == ((("ns", "api-5d8f9c7b6d-x2k9p"),), T0 - 20 * 86400)


def test_the_load_before_the_window_sizes_the_limit_when_the_backend_still_holds_it() -> None:
    rows = {**serving_only(limit=40 * GIB, start=T0 - 3 * 86400), "load_before_window": {(*RUN, IMG): 30 * GIB}}
    (w,), _ = assemble(Measurements(rows, days=day_peaks()), PLAN, SETTINGS)
    assert w.memory.load.source is LoadSource.BEFORE and w.memory.load.peak == 30 * GIB
    assert (w.memory.limit_decision, w.memory.limit) == (Decision.CHANGE, 34.5 * GIB)  # 30 x 1.15
    assert w.backtest.loads_before == 1 and w.backtest.peak == 30 * GIB and not w.backtest.kills


def test_the_load_of_another_workload_of_the_same_image_and_model_stands_in() -> None:
    canary = ("c", "ns", "chat-canary-9a8b7c6d5-w4e5r", "vllm")
    canary_run = (*canary, "/kubepods/pod2/cid2")
    rows = serving_only(limit=40 * GIB, serving=18 * GIB)
    rows["containers"][canary] = 1
    rows["ram_load_peak"] = {(*canary, IMG): 26 * GIB}
    rows["run_peak"][(*canary_run, IMG)] = 26 * GIB
    rows["ram_points"][(*canary, IMG)] = 4000
    rows["models"] = {(*CONTAINER[:3], "openai/gpt-oss-20b"): 1, (*canary[:3], "openai/gpt-oss-20b"): 1}
    (api, other), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert api.memory.load.source is LoadSource.SIBLING and api.memory.load.peak == 26 * GIB
    assert other.key.name in api.memory.load.detail and api.memory.limit == 30 * GIB
    rows["models"] = {(*CONTAINER[:3], "a-70b-model"): 1, (*canary[:3], "a-7b-model"): 1}  # another model: no
    (api, _), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert api.memory.load.source is LoadSource.UNSEEN and api.memory.limit == 40 * GIB


def test_a_request_shown_kept_is_never_changed_behind_the_readers_back() -> None:
    """The current request (32 GiB) sits within the tolerance of the rule's, but the limit goes to 25.5 GiB:
    the request must go under it, and the report says so instead of "kept"."""
    rows = {**serving_only(limit=48 * GIB, serving=22 * GIB, start=T0 + 86400), "ram_load_peak": {IMAGE: 22 * GIB}}
    rows["ram_serving_p99"] = {IMAGE: 27 * GIB}
    rows["request_now"] = {CONTAINER: 32 * GIB}
    (w,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert w.memory.limit == 25.5 * GIB and w.memory.computed_request == 25.5 * GIB
    assert (w.memory.request_decision, w.memory.request) == (Decision.CHANGE, 25.5 * GIB)


def test_a_gpu_framebuffer_at_99_percent_is_a_risk_counted_with_the_advice_to_lower_utilization() -> None:
    pod = CONTAINER[:3]
    rows = {
        **serving_only(limit=24 * GIB, serving=20 * GIB, start=T0 + 86400),
        "ram_load_peak": {IMAGE: 20 * GIB},
        "kv_peak": {pod: 0.6},
        "kv_p99": {pod: 0.5},
        "fb_peak": {pod: 0.99 * 80 * GIB},
        "fb_total": {pod: 80 * GIB},
        "cache_config": {(*pod, "0.95", "True", "", ""): 1},
    }
    rows["limit_now"] = {CONTAINER: 23 * GIB}
    (w,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert w.gpu_risk and "GPU memory near full" in w.risks and w.actionable
    assert w.gpu.recommended_utilization == 0.91 and "lower --gpu-memory-utilization to 0.91" in w.gpu.advice[0]
    assert "would have peaked at 95%" in w.gpu.advice[0]


def test_not_enough_data_gets_measurements_and_no_advice_of_any_kind() -> None:
    pod = CONTAINER[:3]
    rows = {
        **serving_only(start=PLAN.at - 2 * 86400),
        "ram_first_seen": {IMAGE: PLAN.at - 2 * 86400},
        "ram_points": {IMAGE: 577},
        "kv_peak": {pod: 1.0},
        "kv_p99": {pod: 0.97},
        "preemptions": {pod: 40.0},
        "fb_peak": {pod: 0.86 * 80 * GIB},
        "fb_total": {pod: 80 * GIB},
        "cache_config": {(*pod, "0.85", "True", "524288", "4.0"): 1},
        "running_peak": {pod: 12.0},
        "prompt_tokens": {(*pod, le): n for le, n in (("1000", 500.0), ("10000", 2000.0), ("+Inf", 2000.0))},
        "generation_tokens": {(*pod, le): n for le, n in (("100", 1500.0), ("500", 2000.0), ("+Inf", 2000.0))},
        "prefix_hits": {(*pod, "m"): 1.0},
        "prefix_queries": {(*pod, "m"): 100.0},
        "cuda_fragmentation_p99": {pod: 0.5},
    }
    (w,), _ = assemble(Measurements(rows), PLAN, SETTINGS)
    assert w.confidence.level is Level.NONE and w.memory.limit is None and w.memory.request is None
    assert all(k.recommended is None and not k.change for k in w.knobs) and w.env == ()
    assert w.gpu.recommended_utilization is None and w.gpu.advice == () and w.changes == ()
    assert dict(w.knobs[0].measured)["prompt_p999"] > 0  # the measurements stay
    assert "KV cache too small" in w.risks  # a fact, not advice: it still counts


def test_a_recommendation_whose_backtest_kills_is_withheld() -> None:
    """The safety net: should a day's peak (another question) reach the limit the rules gave, the limit is
    not recommended at all."""
    rows = {**serving_only(limit=40 * GIB, serving=20 * GIB, start=T0 + 86400), "ram_load_peak": {IMAGE: 20 * GIB}}
    (w,), _ = assemble(Measurements(rows, days=day_peaks(value=20 * GIB)), PLAN, SETTINGS)
    assert w.memory.limit == 23 * GIB and not w.backtest.kills
    spiky = day_peaks(value=20 * GIB)
    spiky["day_peak"][CONTAINER][DAYS[5]] = 26 * GIB
    (w,), _ = assemble(Measurements(rows, days=spiky), PLAN, SETTINGS)
    assert w.memory.limit_decision is Decision.NONE and w.memory.limit is None
    assert w.memory.limit_note == (
        "withheld: with 23Gi, 0 of 1 run and 1 of 14 days would have been OOM-killed; peak 113% of the limit"
    )

