"""The advice: config changes that fix what the doctor found, as YAML that loads into a valid config."""

from __future__ import annotations

import yaml

from obspack.config import ObspackConfig
from obspack.doctor.advice import advise
from obspack.doctor.checks import Check, State
from obspack.doctor.findings import Fix, Topic, note, problem
from obspack.doctor.needs import Leaf, Selector

CFG = ObspackConfig.model_validate({"selectors": {"vllm": 'job="vllm-engine", namespace=~"ml-.*"'}})
SELECTORS = CFG.selectors.model_dump()


def failing(metric: str, *matchers: tuple[str, str, str], **found: object) -> Check:
    return Check(Leaf(Selector(metric, tuple(sorted(matchers)))), State.MISSING, "reason", **found)  # type: ignore[arg-type]


def applied(cfg: ObspackConfig, text: str) -> ObspackConfig:
    merged = cfg.model_dump(by_alias=True)
    for key, value in (yaml.safe_load(text) or {}).items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) else value
    return ObspackConfig.model_validate(merged)


def test_a_matcher_of_the_config_that_matches_nothing_is_replaced_by_the_values_there_are() -> None:
    matcher = ("job", "=", "vllm-engine")
    check = failing(
        "vllm:num_requests_running", matcher, ("namespace", "=~", "ml-.*"), matcher=matcher, seen=("vllm",)
    )
    advice = advise(SELECTORS, [problem(Topic.ALERT, "VLLMKVCacheUsageHigh", "cannot fire", causes=(check,))])
    assert advice.fixes[0].path == ("selectors", "vllm")
    fixed = applied(CFG, advice.yaml())
    assert fixed.selectors.vllm == 'job="vllm", namespace=~"ml-.*"'
    assert '# job="vllm-engine" matches nothing on vllm:num_requests_running; it has vllm' in advice.yaml()


def test_a_label_that_never_appears_is_dropped_and_many_values_are_not_guessed() -> None:
    label = failing("vllm:num_requests_running", ("namespace", "=~", "ml-.*"), label="namespace")
    many = failing(
        "vllm:num_requests_running",
        ("job", "=", "vllm-engine"),
        matcher=("job", "=", "vllm-engine"),
        seen=tuple("abcd"),
    )
    for check, expected in ((label, 'job="vllm-engine"'), (many, 'namespace=~"ml-.*"')):
        advice = advise(SELECTORS, [problem(Topic.PANEL, "d / p", "would be empty", causes=(check,))])
        assert applied(CFG, advice.yaml()).selectors.vllm == expected


def test_the_packs_own_matchers_and_notes_get_no_config_change() -> None:
    own = failing("container_memory_working_set_bytes", ("container", "!=", ""), label="container")
    findings = [
        problem(Topic.ALERT, "VLLMHostMemoryNearLimit", "cannot fire", causes=(own,)),
        note(
            Topic.PANEL,
            "d / p",
            "empty",
            causes=(
                failing(
                    "vllm:x", ("job", "=", "vllm-engine"), matcher=("job", "=", "vllm-engine"), seen=("vllm",)
                ),
            ),
        ),
    ]
    assert advise(SELECTORS, findings).fixes == ()


def test_an_alert_that_reads_only_an_optional_source_that_is_not_there_can_be_switched_off() -> None:
    probe = failing("obspack_cuda_allocator_fragmentation_ratio")
    alert = problem(Topic.ALERT, "VLLMCUDAAllocatorFragmentationHigh", "cannot fire", causes=(probe,))
    gone = note(Topic.SOURCE, "obspack exporter", "not found: no obspack_target_up series", action="x")
    advice = advise(SELECTORS, [gone, alert])
    assert yaml.safe_load(advice.yaml()) == {
        "alerts": {"VLLMCUDAAllocatorFragmentationHigh": {"enabled": False}}
    }
    assert "# it reads the obspack exporter, which is not here" in advice.yaml()
    assert not applied(CFG, advice.yaml()).alerts.VLLMCUDAAllocatorFragmentationHigh.enabled
    mixed = (probe, failing("vllm:num_requests_running"))
    assert advise(SELECTORS, [gone, problem(Topic.ALERT, "X", "cannot fire", causes=mixed)]).fixes == ()


def test_an_alert_that_reads_the_cuda_probe_that_is_off_can_be_switched_off_saying_so() -> None:
    probe = failing("obspack_cuda_allocator_fragmentation_ratio")
    alert = problem(Topic.ALERT, "VLLMCUDAAllocatorFragmentationHigh", "cannot fire", causes=(probe,))
    off = advise(SELECTORS, [alert], probe_off=True)
    assert "# it reads the CUDA allocator probe of the obspack exporter, which is off" in off.yaml()
    assert "not here" not in off.yaml()
    # The exporter and its probe are here: the alert fails for another reason, and switching it off is no fix.
    assert advise(SELECTORS, [alert]).fixes == ()


def test_fixes_and_actions_carried_by_findings_are_kept_once() -> None:
    fix = Fix(("cluster_label",), "k8s_cluster", "clusters are told apart by k8s_cluster")
    findings = [note(Topic.SOURCE, "cluster label", "m", fixes=(fix,), action="do it")] * 2
    advice = advise(SELECTORS, findings)
    assert advice.fixes == (fix,) and advice.actions == ("do it",)
    assert applied(CFG, advice.yaml()).cluster_label == "k8s_cluster"
