"""The SLO settings: the bucket table against vLLM's releases, threshold and objective checks with FILE:LINE
errors, per-model branches (first match wins), and the window pairs per period and speedup."""

from __future__ import annotations

import json
import re
from pathlib import Path

from obspack import slos
from obspack.catalogue import vllm_latency
from obspack.config import ObspackConfig, Severity, load_config
from tests.test_config import problems, write

SURVEY = Path(__file__).parent / "fixtures" / "vllm-metrics-survey.json"


def _releases() -> dict[str, dict[str, object]]:
    return json.loads(SURVEY.read_text())["releases"]


def test_http_requests_exist_from_0_8_3_only() -> None:
    """Availability needs http_requests_total: absent in the releases before 0.8.3 that were surveyed."""
    for release, metrics in _releases().items():
        assert ("http_requests_total" in metrics) == (tuple(map(int, release.split("."))) >= (0, 8, 3)), (
            release
        )


def test_releases_of_a_bound_in_words() -> None:
    ttft, token = (vllm_latency.TTFT,), (vllm_latency.ITL, vllm_latency.TPOT)
    assert vllm_latency.releases_with(ttft, 2.5) == "every release"
    assert vllm_latency.releases_with(ttft, 20.0) == "0.8.4 and later"
    assert vllm_latency.releases_with(token, 0.2) == "every release"
    assert vllm_latency.releases_with(token, 5.0) == "0.8.4 and later"


def test_a_threshold_that_is_no_bucket_bound_names_the_nearest(tmp_path: Path) -> None:
    found = problems(tmp_path, "slos:\n  time_to_first_token:\n    threshold: 2\n")
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path / 'obspack.yaml'}:3: slos.time_to_first_token.threshold: ")
    assert "the nearest are 1 and 2.5" in found[0] and "vllm:time_to_first_token_seconds" in found[0]
    itl = problems(
        tmp_path, "slos:\n  models:\n    - model_regex: x\n      inter_token_latency: {threshold: 0.12}\n"
    )
    assert (
        "slos.models.0.inter_token_latency.threshold" in itl[0] and "the nearest are 0.1 and 0.15" in itl[0]
    )


def test_both_spellings_of_a_whole_bound_are_accepted(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "slos:\n  time_to_first_token: {threshold: 1}\n"))
    assert cfg.slos.time_to_first_token.threshold == 1.0


def test_branches_first_match_wins_and_inherit_the_defaults() -> None:
    cfg = ObspackConfig.model_validate(
        {
            "slos": {
                "min_requests": 40,
                "models": [
                    {"model_regex": "Qwen/.*", "time_to_first_token": {"threshold": 5, "objective": 0.95}},
                    {"model_regex": ".*", "time_to_first_token": {"enabled": False}, "min_requests": 7},
                ],
            }
        }
    )
    qwen, everything_else = slos.branches(cfg, "time_to_first_token")  # the catch-all turned it off
    assert qwen == slos.Branch(('model_name=~"Qwen/.*"',), 0.95, 5.0, 40)
    # one matcher refuses what every earlier entry takes, each regex in a group of its own
    assert everything_else.matchers == ('model_name!~"(?:Qwen/.*)|(?:.*)"',)
    assert (everything_else.objective, everything_else.threshold) == (0.99, 2.5)
    itl = slos.branches(cfg, "inter_token_latency")
    assert [b.min_requests for b in itl] == [40, 7, 40]
    assert itl[1].matchers == ('model_name=~".*"', 'model_name!~"Qwen/.*"')


def test_earlier_entries_are_refused_with_their_own_flags() -> None:
    entries = [{"model_regex": "(?i)qwen/.*"}, {"model_regex": "llama|mistral"}, {"model_regex": "gemma-.*"}]
    cfg = ObspackConfig.model_validate({"slos": {"models": entries}})
    *_, rest = slos.branches(cfg, "time_to_first_token")
    (matcher,) = rest.matchers
    regex = json.loads(matcher.removeprefix("model_name!~"))
    assert regex == "(?i:qwen/.*)|(?:llama|mistral)|(?:gemma-.*)"
    for model in ("Qwen/Qwen3-8B", "QWEN/x", "llama", "mistral", "gemma-2b"):
        assert re.fullmatch(regex, model), f"{model} belongs to an earlier entry"
    for model in ("llama-3", "phi-4", "xqwen/a"):
        assert not re.fullmatch(regex, model), f"{model} belongs to no earlier entry"


def test_disabled_slos_have_no_branches() -> None:
    cfg = ObspackConfig.model_validate({"slos": {"availability": {"enabled": False}}})
    assert slos.enabled_slis(cfg) == ("time_to_first_token", "inter_token_latency")
    assert slos.enabled_slis(ObspackConfig.model_validate({"slos": {"enabled": False}})) == ()


def test_window_pairs_follow_the_period_and_the_speedup() -> None:
    pairs = slos.window_pairs(ObspackConfig())
    assert [(p.severity, p.long, p.short, p.for_, p.factor) for p in pairs] == [
        (Severity.CRITICAL, "1h", "5m", "2m", 14.4),
        (Severity.CRITICAL, "6h", "30m", "15m", 6),
        (Severity.WARNING, "1d", "2h", "1h", 3),
        (Severity.WARNING, "3d", "6h", "3h", 1),
    ]
    four_weeks = ObspackConfig.model_validate({"slos": {"period": "28d"}})
    assert [p.factor for p in slos.window_pairs(four_weeks)] == [13.44, 5.6, 2.8, 0.933333]
    demo = ObspackConfig.model_validate({"slos": {"speedup": 60}})
    assert [(p.long, p.short, p.for_) for p in slos.window_pairs(demo)] == [
        ("1m", "5s", "2s"), ("6m", "30s", "15s"), ("24m", "2m", "1m"), ("72m", "6m", "3m")
    ]  # fmt: skip
    assert (slos.period(demo), slos.base_window(demo)) == ("12h", "5s")
    assert slos.derived_windows(ObspackConfig()) == ("30m", "1h", "2h", "6h", "1d", "3d")


def test_docs_list_the_bounds_by_release() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "slos.md").read_text()
    assert vllm_latency.bounds_table() in docs, "docs/slos.md: paste vllm_latency.bounds_table() again"
