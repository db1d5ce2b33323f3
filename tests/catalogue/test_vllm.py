"""The vLLM catalogue against the release survey: every histogram's bounds in every surveyed release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from obspack.catalogue import vllm

SURVEY = Path(__file__).parents[1] / "fixtures" / "vllm-metrics-survey.json"
RELEASES: dict[str, dict[str, object]] = json.loads(SURVEY.read_text())["releases"]


@pytest.mark.parametrize("metric", sorted(vllm.BUCKETS))
def test_bucket_table_matches_every_surveyed_release(metric: str) -> None:
    for release, metrics in RELEASES.items():
        got = vllm.bounds_in(metric, release)
        assert (list(got) if got else None) == metrics.get(metric), f"{metric} in {release}"


def test_the_survey_lists_only_histograms_the_table_knows() -> None:
    """A histogram added to the extract without a row here would go unchecked."""
    surveyed = {name for metrics in RELEASES.values() for name in metrics if name != "http_requests_total"}
    assert surveyed == set(vllm.BUCKETS)


def test_a_release_between_two_surveyed_rows_has_no_bounds_rather_than_a_guess() -> None:
    assert vllm.bounds_in(vllm.E2E, "0.6.3") == (1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)
    assert vllm.bounds_in(vllm.E2E, "0.6.4") is None
    assert vllm.bounds_in(vllm.ITERATION_TOKENS, "0.8.0") is None
    assert vllm.bounds_in(vllm.ITERATION_TOKENS, "0.8.5") == vllm.bounds_in(vllm.ITERATION_TOKENS, "0.33.0")


def test_token_count_bounds_are_one_two_five_up_to_the_model_length() -> None:
    assert vllm.token_count_bounds(8192) == (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
    assert vllm.token_count_bounds(5000)[-1] == 5000  # a bound equal to the length is kept
    assert vllm.token_count_bounds(1) == (1,)


def test_a_generation_gives_its_release_bounds_and_refuses_what_it_does_not_export() -> None:
    assert vllm.V1.bounds(vllm.TTFT)[-1] == 2560.0
    assert vllm.V0.bounds(vllm.TTFT)[-1] == 10.0
    assert vllm.V0.bounds(vllm.V0.token_latency) == vllm.bounds_in(vllm.TPOT, "0.6.3")
    with pytest.raises(KeyError, match="vLLM 0.6.3 exports no vllm:inter_token_latency_seconds"):
        vllm.V0.bounds(vllm.ITL)
