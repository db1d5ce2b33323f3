"""A change of one setting changes only the files whose content it touches: the config's digest is in the
pack's README.md and the chart's version alone, never in every file's header."""

from __future__ import annotations

from pathlib import Path

from obspack.config import ObspackConfig, load_config
from obspack.pack import build
from obspack.pack.chart import build_chart
from obspack.render.files import pack_files
from obspack.render.helm import chart_files


def _changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    assert set(before) == set(after)
    return sorted(rel for rel in before if before[rel] != after[rel])


def _one_threshold(tmp_path: Path) -> ObspackConfig:
    path = tmp_path / "obspack.yaml"
    path.write_text("alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: 0.85\n", encoding="utf-8")
    return load_config(path)


def test_one_threshold_changes_only_the_files_that_show_it(tmp_path: Path) -> None:
    before, after = pack_files(build(ObspackConfig())), pack_files(build(_one_threshold(tmp_path)))
    changed = _changed(before, after)
    # 45 files; today 14 change: the README (digest), the alert in each engine's file and the
    # PrometheusRule, its runbook, its shipped test, the three dashboards that draw it, each twice.
    assert "README.md" in changed and len(changed) <= 14, changed
    for rel in changed:
        if rel != "README.md" and not rel.startswith("tests/"):  # a test's samples move with the threshold
            assert "0.85" in after[rel] or "85%" in after[rel], f"{rel} changed but does not show the new value"
    for rel in ("prometheus/recording-rules.yaml", "alertmanager/alertmanager.yaml", "runbooks/vllm-kv-cache-usage-critical.md"):
        assert rel not in changed
    for rel, text in after.items():
        if rel != "README.md":
            assert " from " not in text.splitlines()[0], rel


def test_the_chart_keeps_the_digest_in_its_version_alone(tmp_path: Path) -> None:
    cfg = _one_threshold(tmp_path)
    before, after = chart_files(build_chart(ObspackConfig())), chart_files(build_chart(cfg))
    changed = _changed(before, after)
    assert "Chart.yaml" in changed and "values.yaml" in changed
    assert all(rel.startswith("files/dashboards/") for rel in changed if rel not in ("Chart.yaml", "values.yaml")), changed
    assert "+config." in after["Chart.yaml"]
    assert not any(" from " in text.splitlines()[0] for rel, text in after.items() if rel != "Chart.yaml")
