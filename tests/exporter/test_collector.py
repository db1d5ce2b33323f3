"""Tests of obspack.exporter.collector: fresh families per scrape, robustness, concurrency, memory bounds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from obspack import __version__
from obspack.demo.fake_vllm import FakeVLLM
from obspack.demo.processes import free_port
from obspack.exporter import collector as collector_module
from obspack.exporter import derive
from obspack.exporter.collector import ExporterCollector
from obspack.exporter.scrape import ScrapeError
from obspack.probe import Probe

from .conftest import payload
from .hostile_target import HostileTarget, trickles

V1 = {"engine": "0", "model_name": "acme/llm-7b"}
T = {**V1, "target": "http://t/metrics"}  # the same engine's series from the target most tests use


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def counters_payload(hits: float, queries: float) -> bytes:
    """v1_single.prom with the prefix-cache counters replaced."""
    series = b'{engine="0",model_name="acme/llm-7b"}'
    text = payload("v1_single.prom")
    text = text.replace(
        b"vllm:prefix_cache_hits_total" + series + b" 250.0",
        b"vllm:prefix_cache_hits_total" + series + b" %r" % hits,
    )
    return text.replace(
        b"vllm:prefix_cache_queries_total" + series + b" 1000.0",
        b"vllm:prefix_cache_queries_total" + series + b" %r" % queries,
    )


def make(
    targets: dict[str, bytes | Exception | Callable[[], bytes]], clock: Clock | None = None, **kwargs: object
) -> tuple[ExporterCollector, CollectorRegistry]:
    """A collector on a fresh registry whose fetch answers from ``targets``."""

    def fetch(url: str, timeout_s: float, max_bytes: int) -> bytes:
        answer = targets[url]
        if isinstance(answer, Exception):
            raise answer
        return answer() if callable(answer) else answer

    registry = CollectorRegistry()
    collector = ExporterCollector(
        list(targets), fetch=fetch, clock=clock or Clock(), registry=registry, **kwargs
    )
    return collector, registry


Snapshot = dict[tuple[str, frozenset], float]


def snapshot(collector: ExporterCollector) -> Callable[..., float | None]:
    """Scrape once; return a lookup ``get(sample_name, labels) -> value or None`` over that one answer."""
    samples: Snapshot = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in collector.collect()
        for s in family.samples
    }
    return lambda name, labels: samples.get((name, frozenset(labels.items())))


@pytest.fixture
def closing() -> Iterator[list[ExporterCollector]]:
    """Collect collectors here to have their thread pools shut down after the test."""
    made: list[ExporterCollector] = []
    yield made
    for c in made:
        c.close()


def test_a_single_target_still_labels_its_series_with_target(closing: list[ExporterCollector]) -> None:
    collector, _registry = make({"http://t/metrics": payload("v1_single.prom")})
    closing.append(collector)
    get = snapshot(collector)
    assert get(derive.KV_CACHE_HEADROOM, V1) is None  # no series without `target`
    assert get(derive.KV_CACHE_BLOCKS, {**T, "state": "used"}) == 250.0
    assert get(derive.KV_CACHE_BLOCKS, {**T, "state": "free"}) == 750.0
    assert get(derive.KV_CACHE_BLOCK_SIZE, T) == 16.0
    assert get(derive.KV_CACHE_FRAGMENTATION, T) == pytest.approx(0.01875)
    assert get(derive.KV_CACHE_HEADROOM, T) == 30.0
    assert get(derive.PREFIX_CACHE_HIT_RATIO_LIFETIME, T) == 0.25
    assert get(derive.PREFIX_CACHE_HIT_RATIO, T) is None  # needs two scrapes
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert get("obspack_target_scrape_errors_total", {"target": "http://t/metrics", "reason": "parse"}) == 0.0
    assert get("obspack_exporter_build_info", {"version": __version__}) == 1.0


def test_several_targets_add_the_target_label(closing: list[ExporterCollector]) -> None:
    collector, _registry = make(
        {"http://a/metrics": payload("v1_single.prom"), "http://b/metrics": payload("v0.prom")}
    )
    closing.append(collector)
    get = snapshot(collector)
    assert get(derive.KV_CACHE_HEADROOM, {**V1, "target": "http://a/metrics"}) == 30.0
    assert (
        get(derive.KV_CACHE_HEADROOM, {"model_name": "facebook/opt-125m", "target": "http://b/metrics"})
        == 36.0
    )
    assert get(derive.KV_CACHE_HEADROOM, V1) is None


def test_windowed_ratio_from_counter_deltas_and_reset(closing: list[ExporterCollector]) -> None:
    clock = Clock()
    state = {"hits": 1000.0, "queries": 4000.0}
    collector, _registry = make(
        {"http://t/metrics": lambda: counters_payload(state["hits"], state["queries"])},
        clock=clock,
        window_s=60,
    )
    closing.append(collector)
    assert snapshot(collector)(derive.PREFIX_CACHE_HIT_RATIO, T) is None
    clock.now += 10
    state.update(hits=1060.0, queries=4100.0)
    get = snapshot(collector)
    assert get(derive.PREFIX_CACHE_HIT_RATIO, T) == pytest.approx(0.6)
    assert get(derive.PREFIX_CACHE_HIT_RATIO_LIFETIME, T) == pytest.approx(1060 / 4100)
    clock.now += 10
    state.update(hits=20.0, queries=100.0)  # vLLM restarted: +20 / +100 since the restart
    get = snapshot(collector)
    assert get(derive.PREFIX_CACHE_HIT_RATIO, T) == pytest.approx((60 + 20) / (100 + 100))
    assert get(derive.PREFIX_CACHE_HIT_RATIO_LIFETIME, T) == pytest.approx(0.2)
    clock.now += 100  # every earlier sample left the 60 s window, and no new queries
    assert snapshot(collector)(derive.PREFIX_CACHE_HIT_RATIO, T) is None


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (ScrapeError("timeout", "slow"), "timeout"),
        (ScrapeError("connection", "refused"), "connection"),
        (ScrapeError("http_status", "HTTP 500"), "http_status"),
        (ScrapeError("too_large", "big"), "too_large"),
        (b"<html>oops</html>\n", "parse"),
        (b'vllm:num_requests_running{model_name="m"} 3\nvllm:kv_cache_usage_per', "parse"),
        (RuntimeError("a bug in a custom fetch"), "connection"),
    ],
    ids=["timeout", "connection", "http_status", "too_large", "garbage", "truncated", "unexpected"],
)
def test_failed_target_is_down_and_counted(
    answer: object, reason: str, closing: list[ExporterCollector]
) -> None:
    collector, registry = make(
        {"http://bad/metrics": answer, "http://good/metrics": payload("v1_single.prom")}
    )
    closing.append(collector)
    for scrape in (1, 2):
        text = generate_latest(registry).decode()
        assert 'obspack_target_up{target="http://bad/metrics"} 0.0' in text
        assert 'obspack_target_up{target="http://good/metrics"} 1.0' in text
        assert (
            f'obspack_target_scrape_errors_total{{reason="{reason}",target="http://bad/metrics"}} {scrape}.0'
            in text
        )
        assert (
            f'obspack_target_scrape_errors_total{{reason="{reason}",target="http://good/metrics"}} 0.0'
            in text
        )
        assert (
            'obspack_vllm_kv_cache_admission_headroom_requests{engine="0",model_name="acme/llm-7b",'
            'target="http://good/metrics"} 30.0' in text
        )
        derived = [line for line in text.splitlines() if line.startswith("obspack_vllm_")]
        assert derived and not [line for line in derived if "http://bad/metrics" in line]


def test_malformed_needed_line_skips_the_sample_and_counts_parse(closing: list[ExporterCollector]) -> None:
    text = payload("v1_single.prom").replace(
        b'vllm:num_requests_running{engine="0",model_name="acme/llm-7b"} 10.0',
        b'vllm:num_requests_running{engine="0",model_name="acme/llm-7b"} ten',
    )
    collector, _registry = make({"http://t/metrics": text})
    closing.append(collector)
    get = snapshot(collector)
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert get("obspack_target_scrape_errors_total", {"target": "http://t/metrics", "reason": "parse"}) == 1.0
    assert get(derive.KV_CACHE_BLOCKS, {**T, "state": "used"}) == 250.0
    assert get(derive.KV_CACHE_HEADROOM, T) is None  # needs the skipped running gauge


def test_router_payload_is_up_with_nothing_derived(closing: list[ExporterCollector]) -> None:
    collector, registry = make({"http://router/metrics": payload("router.prom")})
    closing.append(collector)
    text = generate_latest(registry).decode()
    assert 'obspack_target_up{target="http://router/metrics"} 1.0' in text
    assert not [line for line in text.splitlines() if line.startswith("obspack_vllm_")]


def test_error_inside_derive_marks_the_target_down(
    monkeypatch: pytest.MonkeyPatch, closing: list[ExporterCollector]
) -> None:
    def broken(families: object) -> None:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(derive, "engine_inputs", broken)
    collector, _registry = make({"http://t/metrics": payload("v1_single.prom")})
    closing.append(collector)
    get = snapshot(collector)
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 0.0
    assert get("obspack_target_scrape_errors_total", {"target": "http://t/metrics", "reason": "parse"}) == 1.0


def test_collect_never_raises(monkeypatch: pytest.MonkeyPatch, closing: list[ExporterCollector]) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise MemoryError("pretend")

    collector, registry = make({"http://t/metrics": payload("v1_single.prom")})
    closing.append(collector)
    monkeypatch.setattr(collector_module, "build_families", broken)
    families = collector.collect()
    assert [f.name for f in families] == ["obspack_exporter_build_info"]
    assert registry.get_sample_value("obspack_exporter_build_info", {"version": __version__}) == 1.0


def test_probe_files_become_cuda_series(tmp_path: Path, closing: list[ExporterCollector]) -> None:
    gib = 1 << 30
    stats = {
        0: {
            "reserved_bytes.all.current": 8 * gib,
            "allocated_bytes.all.current": 4 * gib,
            "inactive_split_bytes.all.current": 1 * gib,
            "num_alloc_retries": 3,
            "num_ooms": 1,
        }
    }
    probe = Probe(tmp_path, interval_s=5, source=lambda: stats)
    assert probe.write_once()
    collector, _registry = make({"http://t/metrics": payload("v1_single.prom")}, probe_dir=tmp_path)
    closing.append(collector)
    labels = {"pid": str(probe.pid), "device": "0"}
    get = snapshot(collector)
    assert get("obspack_cuda_allocator_reserved_bytes", labels) == 8 * gib
    assert get("obspack_cuda_allocator_allocated_bytes", labels) == 4 * gib
    assert get("obspack_cuda_allocator_inactive_split_bytes", labels) == 1 * gib
    assert get("obspack_cuda_allocator_fragmentation_ratio", labels) == 0.25  # of the 4 GiB reserved, unused
    assert get("obspack_cuda_alloc_retries_total", labels) == 3.0
    assert get("obspack_cuda_ooms_total", labels) == 1.0
    probe.stop()
    assert (
        snapshot(collector)("obspack_cuda_allocator_reserved_bytes", labels) is None
    )  # the file went with the process


def test_a_hostile_probe_file_costs_only_itself(tmp_path: Path, closing: list[ExporterCollector]) -> None:
    """A probe file nested 100,000 levels deep used to raise RecursionError at every scrape, and every
    series went, obspack_target_up with them (so ObspackExporterTargetDown could never fire)."""
    probe = Probe(tmp_path, interval_s=5, source=lambda: {0: {"reserved_bytes.all.current": 8.0}})
    assert probe.write_once()
    (tmp_path / "4242.json").write_bytes(b"[" * 100_000)
    collector, _registry = make({"http://t/metrics": payload("v1_single.prom")}, probe_dir=tmp_path)
    closing.append(collector)
    get = snapshot(collector)
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert get("obspack_vllm_kv_cache_block_size_tokens", T) is not None
    assert get("obspack_cuda_allocator_reserved_bytes", {"pid": str(probe.pid), "device": "0"}) == 8.0
    probe.stop()


def test_a_failing_probe_reader_costs_only_the_probe_series(
    tmp_path: Path, closing: list[ExporterCollector], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> list[object]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(collector_module, "read_probe_dir", broken)
    collector, _registry = make({"http://t/metrics": payload("v1_single.prom")}, probe_dir=tmp_path)
    closing.append(collector)
    get = snapshot(collector)
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert get("obspack_vllm_kv_cache_block_size_tokens", T) is not None


def test_probe_dir_that_is_a_file_is_harmless(tmp_path: Path, closing: list[ExporterCollector]) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    collector, registry = make({"http://t/metrics": payload("v1_single.prom")}, probe_dir=not_a_dir)
    closing.append(collector)
    assert registry.get_sample_value("obspack_target_up", {"target": "http://t/metrics"}) == 1.0


def test_duplicate_targets_are_scraped_once(closing: list[ExporterCollector]) -> None:
    registry = CollectorRegistry()
    calls: list[str] = []

    def fetch(url: str, timeout_s: float, max_bytes: int) -> bytes:
        calls.append(url)
        return payload("v1_single.prom")

    collector = ExporterCollector(["http://t/metrics", "http://t/metrics"], fetch=fetch, registry=registry)
    closing.append(collector)
    assert registry.get_sample_value(derive.KV_CACHE_HEADROOM, T) == 30.0
    assert calls == ["http://t/metrics"]


# ---------------------------------------------------------------------------------------------------
# Over real HTTP


def test_real_targets_down_slow_and_healthy_side_by_side(fake_vllm: FakeVLLM) -> None:
    slow = FakeVLLM(payload=payload("v1_single.prom"))
    slow.delay_s = 2.0
    refused = f"http://127.0.0.1:{free_port()}/metrics"
    registry = CollectorRegistry()
    collector = ExporterCollector([fake_vllm.url, slow.url, refused], timeout_s=0.3, registry=registry)
    try:
        get = snapshot(collector)
        assert get("obspack_target_up", {"target": fake_vllm.url}) == 1.0
        assert get("obspack_target_up", {"target": slow.url}) == 0.0
        assert get("obspack_target_scrape_errors_total", {"target": slow.url, "reason": "timeout"}) == 1.0
        assert get("obspack_target_scrape_errors_total", {"target": refused, "reason": "connection"}) == 1.0
        assert get(derive.KV_CACHE_HEADROOM, {**V1, "target": fake_vllm.url}) == 30.0
        duration = get("obspack_target_scrape_duration_seconds", {"target": slow.url})
        assert 0.25 < duration < 1.5
    finally:
        collector.close()
        slow.stop()


def test_concurrent_scrapes_share_fetches_and_agree(fake_vllm: FakeVLLM) -> None:
    fake_vllm.delay_s = 0.2  # long enough for the scrapes to overlap
    registry = CollectorRegistry()
    collector = ExporterCollector([fake_vllm.url], timeout_s=2.0, registry=registry)
    answers: list[str] = []
    errors: list[BaseException] = []

    def scrape() -> None:
        try:
            answers.append(generate_latest(registry).decode())
        except BaseException as e:  # noqa: BLE001 (handed to the main thread)
            errors.append(e)

    try:
        threads = [threading.Thread(target=scrape) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert errors == []
        assert len(answers) == 16
        for text in answers:
            assert (
                'obspack_vllm_kv_cache_admission_headroom_requests{engine="0",model_name="acme/llm-7b",'
                f'target="{fake_vllm.url}"}} 30.0' in text
            )
            assert (
                "obspack_target_up" in text and f'obspack_target_up{{target="{fake_vllm.url}"}} 1.0' in text
            )
        assert fake_vllm.requests < 16  # overlapping scrapes shared in-flight fetches
    finally:
        collector.close()


def test_memory_stays_bounded_over_many_scrapes(closing: list[ExporterCollector]) -> None:
    clock = Clock()
    state = {"n": 0}

    def moving() -> bytes:
        state["n"] += 1
        return counters_payload(state["n"] * 3, state["n"] * 10)

    collector, _registry = make({"http://t/metrics": moving}, clock=clock, window_s=300)
    closing.append(collector)
    for _ in range(3000):
        clock.now += 0.5
        families = collector.collect()
    assert len(collector.window) == 1
    assert collector.window.samples(("http://t/metrics", derive.EngineKey("acme/llm-7b", "0"))) <= 258
    ratio = [s.value for f in families if f.name == derive.PREFIX_CACHE_HIT_RATIO for s in f.samples]
    assert ratio == [pytest.approx(0.3)]


def test_each_scrape_starts_a_new_fetch_once_the_last_one_finished(closing: list[ExporterCollector]) -> None:
    """A finished flight stays known to the collector until replaced: it must never answer a later scrape."""
    answers = iter([b"<html>oops</html>\n", payload("v1_single.prom")])
    collector, _ = make({"http://t/metrics": lambda: next(answers)})
    closing.append(collector)
    assert snapshot(collector)("obspack_target_up", {"target": "http://t/metrics"}) == 0.0
    assert snapshot(collector)("obspack_target_up", {"target": "http://t/metrics"}) == 1.0


# ---------------------------------------------------------------------------------------------------
# Hostile targets


def test_headers_trickling_count_as_a_timeout_next_to_a_healthy_target(fake_vllm: FakeVLLM) -> None:
    slow = HostileTarget(trickles(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200))
    registry = CollectorRegistry()
    collector = ExporterCollector([fake_vllm.url, slow.url], timeout_s=0.2, registry=registry)
    try:
        get = snapshot(collector)
        assert get("obspack_target_up", {"target": slow.url}) == 0.0
        assert get("obspack_target_scrape_errors_total", {"target": slow.url, "reason": "timeout"}) == 1.0
        assert get("obspack_target_scrape_duration_seconds", {"target": slow.url}) < 1.0
        assert get("obspack_target_up", {"target": fake_vllm.url}) == 1.0
        assert get(derive.KV_CACHE_HEADROOM, {**V1, "target": fake_vllm.url}) == 30.0
    finally:
        collector.close()
        slow.stop()


def test_a_fetch_that_overruns_is_counted_once_as_a_timeout(
    monkeypatch: pytest.MonkeyPatch, closing: list[ExporterCollector]
) -> None:
    monkeypatch.setattr(collector_module, "_GRACE_S", 0.05)  # the second of grace, shortened for the test
    release = threading.Event()

    def stuck(url: str, timeout_s: float, max_bytes: int) -> bytes:
        release.wait(5)
        raise ScrapeError("connection", "gave up late")

    collector = ExporterCollector(["http://stuck/metrics"], fetch=stuck, timeout_s=0.05)
    closing.append(collector)
    get = snapshot(collector)  # waits timeout + grace, then answers without the flight
    assert get("obspack_target_up", {"target": "http://stuck/metrics"}) == 0.0
    assert (
        get("obspack_target_scrape_errors_total", {"target": "http://stuck/metrics", "reason": "timeout"})
        == 1.0
    )
    release.set()
    collector.close(wait_s=2)
    # the late failure of that same flight is not counted a second time
    errors = {
        s.labels["reason"]: s.value
        for f in collector.collect()
        if f.name == "obspack_target_scrape_errors"
        for s in f.samples
    }
    assert errors["timeout"] == 1.0
    assert errors["connection"] == 1.0  # from the new scrape just made, not from the overrun one


def _parse_threads(monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> list[str]:
    """The names of the threads that parse a payload from now on (each parse waits ``delay_s`` first)."""
    names: list[str] = []
    parse = collector_module.parse_needed

    def recording(*args: object, **kwargs: object) -> object:
        names.append(threading.current_thread().name)
        time.sleep(delay_s)
        return parse(*args, **kwargs)

    monkeypatch.setattr(collector_module, "parse_needed", recording)
    return names


def test_with_the_built_in_fetch_a_collect_flies_one_new_flight_itself(
    fake_vllm: FakeVLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = FakeVLLM(payload=payload("v1_single.prom"))
    names = _parse_threads(monkeypatch)
    collector = ExporterCollector([fake_vllm.url, other.url], registry=None)
    try:
        get = snapshot(collector)
        assert get("obspack_target_up", {"target": fake_vllm.url}) == 1.0
        assert get("obspack_target_up", {"target": other.url}) == 1.0
        assert sorted(names) == sorted([threading.current_thread().name, "obspack-scrape"])
    finally:
        collector.close()
        other.stop()


def test_a_custom_fetch_always_runs_in_a_thread_of_its_own(
    monkeypatch: pytest.MonkeyPatch, closing: list[ExporterCollector]
) -> None:
    names = _parse_threads(monkeypatch)
    collector, _ = make({"http://t/metrics": payload("v1_single.prom")})
    closing.append(collector)
    assert snapshot(collector)("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert names == ["obspack-scrape"]


def test_a_flight_a_collect_flew_past_the_limit_is_counted_once_as_a_timeout(
    fake_vllm: FakeVLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a thread's overrun gives: a timeout, counted once, and the target down in that answer."""
    monkeypatch.setattr(collector_module, "_GRACE_S", 0.05)
    _parse_threads(monkeypatch, delay_s=0.3)
    collector = ExporterCollector([fake_vllm.url], timeout_s=0.05, registry=None)
    try:
        get = snapshot(collector)
        assert get("obspack_target_up", {"target": fake_vllm.url}) == 0.0
        assert get("obspack_target_scrape_errors_total", {"target": fake_vllm.url, "reason": "timeout"}) == 1.0
        assert get("obspack_target_scrape_errors_total", {"target": fake_vllm.url, "reason": "parse"}) == 0.0
    finally:
        collector.close()


def test_a_flight_left_to_the_collect_is_flown_even_when_starting_another_fails(
    fake_vllm: FakeVLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If a second target's thread cannot start, the collect still flies the flight it kept for itself:
    left unflown, every later scrape of that target would wait on it and count a timeout."""
    collector = ExporterCollector([fake_vllm.url, "http://127.0.0.1:9/metrics"], timeout_s=0.5, registry=None)
    start = threading.Thread.start

    def refuse(thread: threading.Thread) -> None:
        if thread.name == "obspack-scrape":
            raise RuntimeError("can't start new thread")
        start(thread)

    try:
        with monkeypatch.context() as m:
            m.setattr(threading.Thread, "start", refuse)
            assert [f.name for f in collector.collect()] == ["obspack_exporter_build_info"]  # the failed answer
        get = snapshot(collector)
        assert get("obspack_target_up", {"target": fake_vllm.url}) == 1.0
        assert get("obspack_target_scrape_errors_total", {"target": fake_vllm.url, "reason": "timeout"}) == 0.0
    finally:
        collector.close()


def engines_payload(models: int) -> bytes:
    """A payload with ``models`` engines: running, KV usage and one cache config shared by all."""
    families = (("vllm:num_requests_running", "4"), ("vllm:kv_cache_usage_perc", "0.5"))
    lines = [
        f'{family}{{engine="0",model_name="m{i:05d}"}} {value}\n'
        for family, value in families
        for i in range(models)
    ]
    lines.append('vllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1.0\n')
    return "".join(lines).encode()


@pytest.mark.parametrize(("models", "dropped"), [(50_000, 1.0), (256, 0.0)])
def test_too_many_engines_keep_the_target_up_with_what_fits(
    models: int, dropped: float, closing: list[ExporterCollector]
) -> None:
    collector, _ = make({"http://t/metrics": engines_payload(models)}, timeout_s=30)
    closing.append(collector)
    families = {f.name: f for f in collector.collect()}
    errors = {s.labels["reason"]: s.value for s in families["obspack_target_scrape_errors"].samples}
    assert [s.value for s in families["obspack_target_up"].samples] == [1.0]
    assert errors == {reason: (dropped if reason == "too_many_series" else 0.0) for reason in errors}
    headroom = families[derive.KV_CACHE_HEADROOM].samples
    assert len(headroom) == min(models, collector.max_engines) == 256
    assert headroom[0].labels["model_name"] == "m00000"  # the first engines in (model, engine) order
    assert headroom[-1].labels["model_name"] == "m00255"


def test_absurd_cache_config_and_values_leave_the_target_up(closing: list[ExporterCollector]) -> None:
    text = payload("v1_single.prom").replace(
        b'num_gpu_blocks="1000"', b'num_gpu_blocks="1' + b"0" * 400 + b'"'
    )
    text += b'vllm:num_requests_running{engine="1",model_name="acme/llm-7b"} +Inf\n'
    text += b'vllm:kv_cache_usage_perc{engine="1",model_name="acme/llm-7b"} NaN\n'
    collector, _ = make({"http://t/metrics": text})
    closing.append(collector)
    get = snapshot(collector)
    assert get("obspack_target_up", {"target": "http://t/metrics"}) == 1.0
    assert get("obspack_target_scrape_errors_total", {"target": "http://t/metrics", "reason": "parse"}) == 0.0
    assert get(derive.KV_CACHE_BLOCK_SIZE, T) is None  # the config is not believed
    assert get(derive.PREFIX_CACHE_HIT_RATIO_LIFETIME, T) == 0.25  # the rest still derives


def test_a_megabyte_model_name_is_skipped_and_counted(closing: list[ExporterCollector]) -> None:
    huge = b'model_name="' + b"x" * (1 << 20) + b'"'
    declared = b"# TYPE vllm:num_requests_running gauge\n"  # in its family's block, where it is read
    text = payload("v1_single.prom").replace(declared, declared + b'vllm:num_requests_running{engine="1",' + huge + b"} 3\n")
    assert len(text) > 1 << 20
    collector, registry = make({"http://t/metrics": text})
    closing.append(collector)
    exposition = generate_latest(registry)
    assert len(exposition) < 20_000
    assert b'obspack_target_scrape_errors_total{reason="parse",target="http://t/metrics"} 1.0' in exposition
    assert (
        b'obspack_vllm_kv_cache_admission_headroom_requests{engine="0",model_name="acme/llm-7b",'
        b'target="http://t/metrics"} 30.0' in exposition
    )


# ---------------------------------------------------------------------------------------------------
# Logs: a target's trouble once when it starts and once when it ends


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_failing_target_logs_its_first_failure_and_its_recovery_once(
    caplog: pytest.LogCaptureFixture, closing: list[ExporterCollector]
) -> None:
    answers = iter(
        [ScrapeError("timeout", "no complete answer within 2s")] * 3
        + [payload("v1_single.prom")] * 2
        + [ScrapeError("connection", "ConnectionRefusedError: [Errno 111] Connection refused")]
    )

    def next_answer() -> bytes:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    collector, _ = make({"http://t/metrics": next_answer})
    closing.append(collector)
    caplog.set_level(logging.DEBUG, logger="obspack.exporter")
    for _ in range(3):
        collector.collect()
    assert _warnings(caplog) == [
        "target http://t/metrics: down (timeout: no complete answer within 2s); "
        "repeats are logged at DEBUG until it ends"
    ]
    assert (
        len([r for r in caplog.records if r.levelno == logging.DEBUG and "down again" in r.getMessage()]) == 2
    )
    caplog.clear()
    collector.collect()
    collector.collect()
    assert _warnings(caplog) == ["target http://t/metrics: no longer down, after 3 scrapes"]
    caplog.clear()
    collector.collect()
    assert _warnings(caplog) == [
        "target http://t/metrics: down (connection: ConnectionRefusedError: [Errno 111] Connection refused); "
        "repeats are logged at DEBUG until it ends"
    ]


def test_going_over_the_series_cap_is_logged_once_and_when_it_fits_again(
    caplog: pytest.LogCaptureFixture, closing: list[ExporterCollector]
) -> None:
    answers = iter([engines_payload(3), engines_payload(3), engines_payload(2)])
    collector, _ = make({"http://t/metrics": lambda: next(answers)}, max_engines=2)
    closing.append(collector)
    caplog.set_level(logging.INFO, logger="obspack.exporter")
    for _ in range(3):
        collector.collect()
    assert _warnings(caplog) == [
        "target http://t/metrics: over the series cap (1 engine past the first 2 left out, counted as "
        "too_many_series); repeats are logged at DEBUG until it ends",
        "target http://t/metrics: no longer over the series cap, after 2 scrapes",
    ]
