"""Ready changes: patches name only what changes, keep requests under limits, and skip custom resources."""

from __future__ import annotations

import json

from obspack.rightsize import patches
from obspack.rightsize.model import (
    Confidence,
    Key,
    Knob,
    Level,
    Memory,
    Risk,
    Workload,
)
from obspack.rightsize.sizing import GIB, MIB


def memory(**changes: object) -> Memory:
    values = dict(
        load_peak=28 * GIB, serving_peak=12 * GIB, serving_p99=12 * GIB, traffic_peak=12 * GIB, split=True,
        oom_kills=0, usage_at_kill=None, current_request=32 * GIB, current_limit=32 * GIB, request=14 * GIB,
        limit=33024 * MIB, request_rule="", limit_rule="", risk=Risk.TIGHT, peak_to_limit=0.875,
        limit_change=True, request_change=True,
    )
    values.update(changes)
    return Memory(**values)  # type: ignore[arg-type]


def workload(kind: str = "Deployment", m: Memory | None = None, knobs: tuple[Knob, ...] = (), env=()) -> Workload:  # noqa: ANN001
    return Workload(
        key=Key("gpu-east", "llm", kind, "vllm/a b", "vllm"), owner_guessed=False, models=(), images=(), pods=1,
        memory=m or memory(), gpu=None, knobs=knobs, env=env, releases=(),
        confidence=Confidence(Level.HIGH, 4000, 14 * 86400, 0), alive=True,
    )


def test_quantities_are_whole_gi_or_mi() -> None:
    assert patches.quantity(30 * GIB) == "30Gi" and patches.quantity(33024 * MIB) == "33024Mi"


def test_a_deployment_patch_sets_the_changed_memory_and_quotes_the_command() -> None:
    (owner,) = patches.owner_patches((workload(),))
    assert owner.patch == {
        "spec": {"template": {"spec": {"containers": [
            {"name": "vllm", "resources": {"limits": {"memory": "33024Mi"}, "requests": {"memory": "14Gi"}}}
        ]}}}
    }
    assert owner.command == (
        "kubectl -n llm patch deployment 'vllm/a b' --type strategic -p "
        + "'" + json.dumps(owner.patch, separators=(",", ":"), sort_keys=True) + "'"
    )
    assert owner.file_name == "gpu-east_llm_deployment_vllm-a-b.yaml"


def test_only_the_limit_changes_unless_the_current_request_would_exceed_it() -> None:
    only_limit = memory(request_change=False, current_request=10 * GIB, limit=30 * GIB, request=10.5 * GIB)
    assert patches.container_change(workload(m=only_limit))["resources"] == {"limits": {"memory": "30Gi"}}
    above = memory(request_change=False, current_request=32 * GIB, limit=16 * GIB, request=15 * GIB)
    assert patches.container_change(workload(m=above))["resources"] == {
        "limits": {"memory": "16Gi"}, "requests": {"memory": "15Gi"}
    }


def test_a_leaderworkerset_gets_its_changes_and_arguments_but_no_strategic_merge_patch() -> None:
    knob = Knob("--max-model-len", 131072, "", 8192.0, "", True)
    suggestion = Knob("--max-num-seqs", None, "", 24.0, "", False)
    env = (("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "fragmented"),)
    (owner,) = patches.owner_patches((workload("LeaderWorkerSet", knobs=(knob, suggestion), env=env),))
    assert owner.patch is None and owner.command is None and "leaderWorkerTemplate" in owner.where
    assert owner.containers[0]["env"] == [{"name": "PYTORCH_CUDA_ALLOC_CONF", "value": "expandable_segments:True"}]
    assert owner.args == (("vllm", ("--max-model-len=8192",)),)
    assert patches.suggested_args(workload(knobs=(knob, suggestion))) == ("--max-model-len=8192", "--max-num-seqs=24")


def test_nothing_to_change_gives_no_patch() -> None:
    quiet = memory(risk=Risk.OK, limit_change=False, request_change=False)
    assert patches.owner_patches((workload(m=quiet),)) == ()


def test_the_text_report_shows_control_characters_in_names_escaped() -> None:
    from obspack.rightsize.model import Report, Rules
    from obspack.rightsize.report import text

    hostile = Workload(**{**workload().__dict__, "key": Key("c", "ns\x1b[2J", "Deployment", "web\nfake line", "vllm")})
    rules = Rules(0.15, 1.25, 100 * MIB, 256 * MIB, 0.1, 0.15, 7 * 86400, 100)
    shown = text(Report("http://p", "Prometheus", 0, 14 * 86400, 900, 600, rules, (hostile,), (), (), 1, 0.1))
    assert "\x1b" not in shown and "fake line" not in shown.split("\n")[0]
    assert "ns\\x1b[2J/Deployment/web\\nfake line [vllm]" in shown


def test_patch_files_are_written_per_owner_and_an_unwritable_folder_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    import pytest
    import yaml

    from obspack.rightsize.settings import OptionError
    from obspack.rightsize.write import write_patches

    (path,) = write_patches(tmp_path / "out", (workload(),))
    assert path.name == "gpu-east_llm_deployment_vllm-a-b.yaml"
    assert yaml.safe_load(path.read_text()) == patches.owner_patches((workload(),))[0].patch
    assert path.read_text().startswith("# kubectl -n llm patch deployment 'vllm/a b'")
    (tmp_path / "file").write_text("")
    with pytest.raises(OptionError, match="cannot write"):
        write_patches(tmp_path / "file" / "out", (workload(),))


def test_a_password_in_the_url_is_not_shown() -> None:
    from obspack.rightsize.model import Report, Rules
    from obspack.rightsize.report import as_json, text

    rules = Rules(0.15, 1.25, 100 * MIB, 256 * MIB, 0.1, 0.15, 7 * 86400, 100)
    report = Report("https://admin:s3cret@prom.example:9090/prometheus", "Mimir", 0, 14 * 86400, 900, 600, rules, (), (), (), 1, 0.1)
    assert "s3cret" not in text(report) and "s3cret" not in json.dumps(as_json(report))
    assert as_json(report)["prometheus"] == "https://***@prom.example:9090/prometheus"
