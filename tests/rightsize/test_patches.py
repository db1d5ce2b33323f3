"""Ready changes: patches name exactly what the report shows changing, only for safe confidence and real names,
and the files are written so that no label value and no link can do harm."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from obspack.rightsize import patches
from obspack.rightsize.model import (
    Confidence,
    Decision,
    Key,
    Knob,
    Level,
    Load,
    LoadSource,
    Memory,
    Risk,
    Workload,
)
from obspack.rightsize.settings import OptionError
from obspack.rightsize.sizing import GIB, MIB
from obspack.rightsize.write import write_patches


def memory(**changes: object) -> Memory:
    values = dict(
        load_peak=28 * GIB, serving_peak=12 * GIB, serving_p99=12 * GIB, traffic_peak=12 * GIB, window_peak=28 * GIB,
        split=True, load=Load(28 * GIB, LoadSource.OBSERVED), oom_kills=0, usage_at_kill=None,
        current_request=32 * GIB, current_limit=32 * GIB, computed_request=14 * GIB, computed_limit=68352 * MIB,
        request=14 * GIB, limit=68352 * MIB, request_decision=Decision.CHANGE, limit_decision=Decision.CHANGE,
        request_rule="", limit_rule="", risk=Risk.TIGHT, peak_to_limit=0.875,
    )
    values.update(changes)
    return Memory(**values)  # type: ignore[arg-type]


def workload(
    kind: str = "Deployment",
    m: Memory | None = None,
    knobs: tuple[Knob, ...] = (),
    env=(),  # noqa: ANN001
    name: str = "vllm-chat",
    level: Level = Level.HIGH,
    cluster: str = "gpu-east",
) -> Workload:
    return Workload(
        key=Key(cluster, "llm", kind, name, "vllm"), owner_guessed=False, models=(), images=(), pods=1,
        memory=m or memory(), gpu=None, knobs=knobs, env=env, releases=(),
        confidence=Confidence(level, 4000, 14 * 86400, 0, ("why",) if level is not Level.HIGH else ()), alive=True,
    )


def test_a_deployment_patch_sets_the_changed_memory_in_the_units_the_report_prints() -> None:
    """The table says 66.75Gi; the patch says 66.75Gi too (not 68352Mi), a quantity Kubernetes takes."""
    (owner,) = patches.owner_patches((workload(),))
    assert owner.patch == {
        "spec": {"template": {"spec": {"containers": [
            {"name": "vllm", "resources": {"limits": {"memory": "66.75Gi"}, "requests": {"memory": "14Gi"}}}
        ]}}}
    }
    assert owner.command == (
        "kubectl -n llm patch deployment vllm-chat --type strategic -p "
        + "'" + json.dumps(owner.patch, separators=(",", ":"), sort_keys=True) + "'"
    )
    assert owner.file_name == "gpu-east_llm_deployment_vllm-chat.yaml"


def test_the_patch_carries_exactly_the_decisions() -> None:
    only_limit = memory(request_decision=Decision.KEEP, current_request=10 * GIB, limit=30 * GIB, request=10 * GIB)
    assert patches.container_change(workload(m=only_limit))["resources"] == {"limits": {"memory": "30Gi"}}
    kept = memory(limit_decision=Decision.KEEP, limit=32 * GIB, risk=Risk.OK)
    assert patches.container_change(workload(m=kept))["resources"] == {"requests": {"memory": "14Gi"}}


def test_patches_only_for_high_and_medium_confidence_unless_low_is_asked_for_never_without_data() -> None:
    found = tuple(workload(name=f"w-{level.name.lower()}", level=level) for level in Level)
    names = [o.name for o in patches.owner_patches(found)]
    assert names == ["w-high", "w-medium"]
    with_low = patches.owner_patches(found, include_low=True)
    assert [o.name for o in with_low] == ["w-high", "w-medium", "w-low"]
    assert with_low[2].confidence == ("vllm: low",)


def test_an_owner_whose_names_are_not_kubernetes_names_gets_no_patch() -> None:
    for name in ("web\nfake: line", "vllm/a b", "x" * 254, "UPPER"):
        assert patches.owner_patches((workload(name=name),)) == ()
    assert len(patches.owner_patches((workload(name="a" * 253),))) == 1  # the longest legal name


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
    quiet = memory(risk=Risk.OK, limit_decision=Decision.KEEP, request_decision=Decision.KEEP)
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
    (path,) = write_patches(tmp_path / "out", (workload(),))
    assert path.name == "gpu-east_llm_deployment_vllm-chat.yaml"
    assert yaml.safe_load(path.read_text()) == patches.owner_patches((workload(),))[0].patch
    assert path.read_text().startswith("# kubectl -n llm patch deployment vllm-chat")
    assert "# confidence: vllm: high\n" in path.read_text()
    (tmp_path / "file").write_text("")
    with pytest.raises(OptionError, match="cannot write"):
        write_patches(tmp_path / "file" / "out", (workload(),))


def test_a_link_at_a_patch_files_name_is_refused_and_its_target_untouched(tmp_path) -> None:  # noqa: ANN001
    outside = tmp_path / "outside.yaml"
    outside.write_text("precious\n")
    folder = tmp_path / "patches"
    folder.mkdir()
    os.symlink(outside, folder / "gpu-east_llm_deployment_vllm-chat.yaml")
    with pytest.raises(OptionError, match="is a symbolic link; obspack does not write through links"):
        write_patches(folder, (workload(),))
    assert outside.read_text() == "precious\n" and not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_owners_whose_names_differ_only_in_unsafe_characters_get_their_own_files(tmp_path) -> None:  # noqa: ANN001
    found = tuple(workload(cluster=cluster) for cluster in ("prod_eu", "prod-eu", "prod/eu"))
    written = write_patches(tmp_path, found)
    assert len({p.name for p in written}) == 3 == len(list(tmp_path.iterdir()))
    assert "prod-eu_llm_deployment_vllm-chat.yaml" in {p.name for p in written}  # the one that needed no change


def test_a_253_character_name_gives_a_file_name_the_file_system_takes(tmp_path) -> None:  # noqa: ANN001
    (path,) = write_patches(tmp_path, (workload("StatefulSet", name="a" * 253),))
    assert len(path.name) < 255 and path.read_text().count("\n") > 3


def test_control_characters_never_reach_a_patch_file_as_a_line(tmp_path) -> None:  # noqa: ANN001
    """A container name carrying a newline, ESC or NUL: its owner gets no patch; a vLLM argument line is
    escaped in the comment anyway."""
    knob = Knob("--max-model-len", 131072, "", 8192.0, "", True)
    hostile = Workload(**{**workload(knobs=(knob,)).__dict__, "key": Key("c", "llm", "Deployment", "chat", "v\nllm: x\x1b\x00")})
    assert write_patches(tmp_path / "a", (hostile,)) == []
    from obspack.rightsize.write import _comment

    assert _comment("set on v\nreplicas: 0\x1b\x00") == "# set on v\\nreplicas: 0\\x1b\\x00\n"


def test_a_password_in_the_url_is_not_shown() -> None:
    from obspack.rightsize.model import Report, Rules
    from obspack.rightsize.report import as_json, text

    rules = Rules(0.15, 1.25, 100 * MIB, 256 * MIB, 0.1, 0.15, 7 * 86400, 100)
    report = Report("https://admin:s3cret@prom.example:9090/prometheus", "Mimir", 0, 14 * 86400, 900, 600, rules, (), (), (), 1, 0.1)
    assert "s3cret" not in text(report) and "s3cret" not in json.dumps(as_json(report))
    assert as_json(report)["prometheus"] == "https://***@prom.example:9090/prometheus"
