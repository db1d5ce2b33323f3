"""Tests of obspack.exporter.window: the windowed hit ratio, counter resets and the memory bounds."""

from __future__ import annotations

import threading

import pytest

from obspack.exporter.window import CounterWindow


def test_absent_until_two_samples() -> None:
    window = CounterWindow(window_s=300)
    assert window.record("e", 0.0, 100, 1000) is None
    assert window.record("e", 10.0, 160, 1100) == pytest.approx(0.6)


def test_ratio_uses_the_oldest_sample_within_the_window() -> None:
    window = CounterWindow(window_s=60)
    window.record("e", 0.0, 0, 0)  # falls out of the window at t=61
    window.record("e", 30.0, 100, 1000)
    assert window.record("e", 61.0, 150, 1100) == pytest.approx(0.5)  # (150-100)/(1100-1000)
    assert window.samples("e") == 2


def test_no_queries_in_window_gives_none() -> None:
    window = CounterWindow(window_s=60)
    window.record("e", 0.0, 50, 100)
    assert window.record("e", 10.0, 50, 100) is None


def test_counter_reset_counts_the_new_value_as_the_increase() -> None:
    window = CounterWindow(window_s=300)
    window.record("e", 0.0, 400, 1000)
    window.record("e", 10.0, 500, 1200)  # +100 / +200
    # vLLM restarted: counters start again from zero; +30 / +40 since the restart
    assert window.record("e", 20.0, 30, 40) == pytest.approx((100 + 30) / (200 + 40))
    assert window.record("e", 30.0, 60, 140) == pytest.approx((100 + 60) / (200 + 140))


def test_reset_right_after_the_first_sample() -> None:
    window = CounterWindow(window_s=300)
    window.record("e", 0.0, 900, 1000)
    assert window.record("e", 10.0, 5, 20) == pytest.approx(0.25)


def test_keys_are_independent() -> None:
    window = CounterWindow(window_s=300)
    window.record(("t1", "a"), 0.0, 0, 0)
    window.record(("t2", "a"), 0.0, 0, 0)
    assert window.record(("t1", "a"), 1.0, 10, 100) == pytest.approx(0.1)
    assert window.record(("t2", "a"), 1.0, 90, 100) == pytest.approx(0.9)


def test_samples_stay_bounded_under_frequent_scrapes() -> None:
    window = CounterWindow(window_s=300, max_samples=16)
    t = 0.0
    for i in range(10_000):  # one scrape every 100 ms for ~17 minutes
        t = i * 0.1
        ratio = window.record("e", t, i * 3, i * 10)
        if i > 0:
            assert ratio == pytest.approx(0.3)
    assert window.samples("e") <= 18
    assert window.record("e", t + 0.05, 3 * 9999, 10 * 9999) == pytest.approx(0.3)


def test_window_span_is_kept_when_thinning() -> None:
    window = CounterWindow(window_s=100, max_samples=10)  # kept points at least 20 s apart two by two
    ratio = None
    for second in range(1, 301):
        # hits = t and queries = t**2, so the ratio 1 / (t_now + t_oldest) reveals the oldest point kept
        ratio = window.record("e", float(second), second, second * second)
    assert ratio is not None
    oldest = 1 / ratio - 300
    assert 200 <= round(oldest, 6) <= 220
    assert window.samples("e") <= 12


def test_forget_older_than_drops_idle_keys() -> None:
    window = CounterWindow(window_s=60)
    window.record("old", 0.0, 1, 2)
    window.record("new", 100.0, 1, 2)
    window.forget_older_than(40.0)
    assert len(window) == 1
    assert window.samples("old") == 0
    assert window.samples("new") == 1


def test_number_of_keys_is_capped() -> None:
    window = CounterWindow(window_s=60, max_series=3)
    for i in range(10):
        window.record(f"k{i}", float(i), 1, 2)
    assert len(window) == 3
    assert window.samples("k9") == 1
    assert window.samples("k0") == 0


def test_sample_older_than_the_newest_is_not_stored() -> None:
    window = CounterWindow(window_s=300)
    window.record("e", 0.0, 0, 0)
    window.record("e", 10.0, 50, 100)
    assert window.record("e", 5.0, 10, 20) == pytest.approx(0.5)  # answered from the stored history
    assert window.samples("e") == 2


def test_concurrent_records_do_not_corrupt_the_history() -> None:
    window = CounterWindow(window_s=1000, max_samples=64)
    errors: list[BaseException] = []

    def worker(key: str) -> None:
        try:
            for i in range(2000):
                window.record(key, float(i), i, 4 * i)
        except BaseException as e:  # noqa: BLE001 (handed to the main thread)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f"k{n % 2}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert window.samples("k0") <= 66
    assert window.record("k0", 2500.0, 5000, 20000) == pytest.approx(0.25)


def test_eviction_drops_the_stalest_key_not_a_recently_updated_one() -> None:
    window = CounterWindow(window_s=600, max_series=3)
    window.record("a", 0.0, 1, 2)
    window.record("b", 1.0, 1, 2)
    window.record("c", 2.0, 1, 2)
    window.record("a", 3.0, 2, 4)  # a is now the freshest
    window.record("d", 4.0, 1, 2)  # makes room by dropping b, the stalest
    assert [window.samples(k) for k in ("a", "b", "c", "d")] == [2, 0, 1, 1]


def test_many_new_keys_keep_the_newest_within_the_cap() -> None:
    # Each new key beyond the cap evicts one: this was a scan of every kept key per eviction.
    window = CounterWindow(window_s=600, max_series=4096)
    for i in range(20_000):
        window.record(i, float(i), 1, 2)
    assert len(window) == 4096
    assert window.samples(19_999) == 1
    assert window.samples(20_000 - 4096) == 1
    assert window.samples(20_000 - 4097) == 0
