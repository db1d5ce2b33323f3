"""Resampled unit-test series keep every whole-minute value, so the rendered tests' expectations hold."""

import pytest

from obspack.config import ObspackConfig
from obspack.pack.shipped_tests.sampling import per_step, step_seconds
from tests.support.victoria import expand


@pytest.mark.parametrize("values", ["1x9 0x10", "0+3000x20 60000x15", "_x9 1x12", "1 _ _x2 3", "0x5 40x25", "0.72x2 0.95x4 0.72x20", "7"])
@pytest.mark.parametrize("step", [1, 5, 10, 30])
def test_whole_minutes_keep_their_values(values: str, step: int) -> None:
    k = 60 // step
    before, after = expand(values), expand(per_step(values, step))
    assert len(after) == len(before) * k
    def rounded(series: list[float | None]) -> list[float | None]:
        return [None if v is None else round(v, 6) for v in series]

    assert rounded(after[::k]) == rounded(before)


def test_counters_rise_evenly_and_never_drop_between_minutes() -> None:
    after = expand(per_step("0+3000x20 60000x15", 10))
    assert all(b >= a for a, b in zip(after, after[1:])), "a drop would read as a counter reset"
    assert after[1] - after[0] == pytest.approx(500)


def test_only_alerts_with_short_windows_sample_finer() -> None:
    cfg = ObspackConfig.model_validate(
        {"scrape_interval": "1s", "alerts": {"VLLMZeroThroughput": {"window": "10s"}, "VLLMTargetDown": {"lookback": "90s"}}}
    )
    assert step_seconds(cfg, "VLLMZeroThroughput") == 5
    assert step_seconds(cfg, "VLLMTargetDown") == 30
    assert step_seconds(cfg, "VLLMContainerOOMKilled") == 60
    assert step_seconds(cfg, "VLLMKVCacheUsageHigh") == 60
    assert per_step("1x9", 60) == "1x9"
