"""The command's values: bad ones are one clear line and exit code 2, never a traceback."""

from __future__ import annotations

import pytest

from obspack.rightsize.settings import OptionError, step_for, window_options
from tests.rightsize.command import run


def options(**overrides: object) -> tuple[int, int, int, float]:
    values = {"window": "14d", "load_window": "10m", "min_history": "7d", "release_rise": 0.15, **overrides}
    return window_options(**values)  # type: ignore[arg-type]


def test_the_defaults_and_the_step_that_keeps_a_window_under_3000_steps() -> None:
    assert options() == (14 * 86400, 600, 7 * 86400, 0.15)
    assert step_for(14 * 86400) == 900 and step_for(90 * 86400) == 2640
    assert options(window="3d")[2] == 3 * 86400  # the minimum history never exceeds the window


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"window": "two weeks"}, "--window 'two weeks': give a Prometheus duration"),
        ({"window": "6h"}, "at least 1d"),
        ({"load_window": "30s"}, "at least 1m"),
        ({"load_window": "8d"}, "at most half the window"),
        ({"release_rise": 0.0}, "a share above 0"),
        ({"min_history": "0s"}, "--min-history '0s'"),
    ],
)
def test_bad_values_name_the_option_and_what_it_accepts(overrides: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        options(**overrides)


def test_the_cli_prints_one_error_line_and_exits_2_before_asking_anything() -> None:
    code, out, err = run("http://127.0.0.1:9", "--window", "1h")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["error: --window '1h': at least 1d (peaks over less than a day say little)"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--workload", "llm/chat"), "error: --workload names the workload of a --what-if: give --what-if too"),
        (("--what-if", "replicas=2"), "error: --what-if 'replicas=2': give SETTING=VALUE, SETTING one of limit, request, "
         "gpu-memory-utilization (e.g. limit=40Gi or gpu-memory-utilization=0.85)"),
        (("--what-if", "limit=40GB"), "error: --what-if 'limit=40GB': give a memory size as Kubernetes does, e.g. 40Gi or 39936Mi"),
    ],
)
def test_what_if_values_are_checked_before_asking_anything(args: tuple[str, ...], message: str) -> None:
    code, out, err = run("http://127.0.0.1:9", *args)
    assert code == 2 and out == "" and err.strip().splitlines() == [message]
