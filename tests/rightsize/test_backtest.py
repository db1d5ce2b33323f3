"""The backtest replays a workload's own samples against a limit and a request: it must count a kill where one
would have happened, and none where none would."""

from __future__ import annotations

from obspack.rightsize.backtest import History, Run, replay

GIB = 1024**3
A = ("c", "ns", "api-0", "vllm")
B = ("c", "ns", "api-1", "vllm")
DAYS = {float(d): 20 * GIB for d in range(14)}


def history(**changes: object) -> History:
    values = dict(
        runs=(Run(A, 28 * GIB), Run(A, 20 * GIB), Run(B, 21 * GIB)),
        day_peaks={**DAYS, 3.0: 28 * GIB},
        day_p99s={float(d): 18 * GIB for d in range(14)},
    )
    values.update(changes)
    return History(**values)  # type: ignore[arg-type]


def test_a_limit_below_a_known_peak_counts_the_run_and_the_day_it_would_have_killed() -> None:
    bt = replay(history(), 24 * GIB, 20 * GIB)
    assert (bt.runs, bt.runs_killed, bt.days, bt.days_killed) == (3, 1, 14, 1) and bt.kills
    assert bt.peak == 28 * GIB and bt.peak_ratio == 28 / 24


def test_a_limit_above_every_sample_kills_nothing_and_says_how_close_it_came() -> None:
    bt = replay(history(), 32.25 * GIB, 20 * GIB)
    assert (bt.runs_killed, bt.days_killed) == (0, 0) and not bt.kills
    assert round(bt.peak_ratio, 3) == round(28 / 32.25, 3)


def test_a_limit_equal_to_the_peak_kills_the_kernel_acts_at_the_limit() -> None:
    assert replay(history(), 28 * GIB, None).runs_killed == 1


def test_the_oom_kills_of_the_window_recur_under_any_limit_at_or_below_the_one_they_had() -> None:
    """Killed at 24 GiB with samples only up to 23.9 GiB: it needed more than 24 GiB, how much is unknown."""
    killed = history(
        runs=(Run(A, 23.9 * GIB), Run(A, 20 * GIB)),
        kills={A: 1},
        usage_at_kill=24 * GIB,
        day_peaks={**DAYS, 9.0: 23.9 * GIB},
        day_kills={9.0: 1},
    )
    at_kill = replay(killed, 24 * GIB, None)
    assert (at_kill.runs_killed, at_kill.days_killed) == (1, 1)
    assert not replay(killed, 30 * GIB, None).kills  # the OOM bump (x 1.25)


def test_a_load_before_the_window_counts_as_a_sample_of_its_run() -> None:
    before = history(runs=(Run(A, 20 * GIB, before=True, load_before=30 * GIB),), day_peaks=DAYS)
    assert replay(before, 28 * GIB, None).runs_killed == 1 and replay(before, 28 * GIB, None).days_killed == 0
    unknown = replay(history(runs=(Run(A, 20 * GIB, before=True),), day_peaks=DAYS), 28 * GIB, None)
    assert (unknown.loads_before, unknown.loads_unknown, unknown.runs_killed) == (0, 1, 0)


def test_days_over_the_request_are_counted_by_their_p99() -> None:
    busy = history(day_p99s={**{float(d): 18 * GIB for d in range(14)}, 6.0: 22 * GIB})
    assert replay(busy, 32 * GIB, 20 * GIB).days_over_request == 1
    assert replay(busy, 32 * GIB, 24 * GIB).days_over_request == 0
    assert replay(busy, 32 * GIB, None).days_over_request == 0
