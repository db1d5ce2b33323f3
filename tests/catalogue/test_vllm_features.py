"""Every `vllm:` series the rendered pack reads is one that a released vLLM defines, with labels it sets.

tests/fixtures/vllm-release-metrics.json lists each metric that vLLM 0.6.3 to 0.33.0 define in their
wheels (read from their source: names as scraped, type, labels, releases). A name that no release serves
would leave an alert that never fires or a panel that is always empty, on every fleet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.pack import build
from obspack.pack.walk import expressions
from obspack.promql import selectors

RELEASES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "vllm-release-metrics.json").read_text())
METRICS: dict[str, dict] = RELEASES["metrics"]
# Labels Prometheus or the scrape put on every series, and obspack's own cluster label.
TARGET_LABELS = {"cluster", "namespace", "pod", "container", "job", "instance", "endpoint", "service"}
_PROMQL = re.compile(r"```promql\n(.*?)```", re.S)


def defined(name: str) -> str | None:
    """The metric a scraped series name belongs to (a histogram's `_bucket`, `_sum`, `_count` included)."""
    if name in METRICS:
        return name
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    return base if METRICS.get(base, {}).get("type") in ("histogram", "summary") else None


def problems(exprs: list[tuple[str, str]]) -> list[str]:
    """Each `vllm:` series no release defines, and each matcher on a label the metric never has."""
    out = []
    for where, expr in exprs:
        for name, matchers in selectors(expr):
            if not name.startswith("vllm:"):
                continue
            metric = defined(name)
            if metric is None:
                out.append(f"{where}: {name} is defined by no vLLM release")
                continue
            if METRICS[metric].get("labels_dynamic"):
                continue
            known = set(METRICS[metric]["labels"]) | TARGET_LABELS | ({"le"} if name.endswith("_bucket") else set())
            out += [f"{where}: {name} has no label {label}" for label, _, _ in matchers if label not in known]
    return out


def _pack_expressions() -> list[tuple[str, str]]:
    pack = build(ObspackConfig())
    found = list(expressions(pack))
    for slug, page in pack.runbooks:
        found += [(f"runbook {slug}", re.sub(r"<[a-z-]+>", "x", block)) for block in _PROMQL.findall(page)]
    return found


def test_every_vllm_series_the_pack_reads_is_defined_by_a_release_with_the_labels_it_matches() -> None:
    exprs = _pack_expressions()
    read = {name for _, e in exprs for name, _ in selectors(e) if name.startswith("vllm:")}
    assert len(read) > 40 and {f.SLEEP_STATE, f.ADMISSION_REJECTIONS, f.SPEC_DRAFT_TOKENS} <= read
    assert problems(exprs) == []


def test_the_check_finds_an_invented_name_and_a_label_vllm_never_sets() -> None:
    exprs = [
        ("typo", 'rate(vllm:nixl_num_failed_transfer_total{model_name!=""}[5m])'),
        ("label", 'vllm:num_requests_waiting_by_reason{cause="capacity"}'),
        ("fine", 'sum(rate(vllm:nixl_xfer_time_seconds_bucket{le="0.1", engine="0"}[5m]))'),
    ]
    assert problems(exprs) == [
        "typo: vllm:nixl_num_failed_transfer_total is defined by no vLLM release",
        "label: vllm:num_requests_waiting_by_reason has no label cause",
    ]


def test_the_feature_catalogue_names_series_of_the_releases_it_says() -> None:
    """Every name of obspack/catalogue/vllm_features.py is served by 0.31 or later (sleep state, queue
    reasons, connectors, offload) or, for speculative decoding and LoRA, by earlier releases too."""
    recent = {"0.31.0", "0.32.0", "0.33.0"}
    for name in sorted(f.feature_metrics()):
        assert name in METRICS, name
        assert recent & set(METRICS[name]["releases"]), name
    assert METRICS[f.ADMISSION_REJECTIONS]["releases"] == ["0.32.0", "0.33.0"]
    assert "engine" not in METRICS[f.ADMISSION_REJECTIONS]["labels"]
    assert "model_name" not in METRICS[f.LORA_INFO]["labels"]
