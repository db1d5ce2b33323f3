"""Panels that are empty on some vLLM releases say which release they need, instead of Grafana's "No
data" (its PanelDataErrorView shows `fieldConfig.defaults.noValue` when a query returns no series)."""

from __future__ import annotations

import json
from pathlib import Path

from obspack.catalogue import vllm as v
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from obspack.dashboards.kv_prefix_cache import PREFIX_TOKENS_NO_DATA

RELEASES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "vllm-release-metrics.json").read_text())
COUNTERS = (v.PREFIX_CACHE_QUERIES, v.PREFIX_CACHE_HITS, v.GPU_PREFIX_CACHE_QUERIES, v.GPU_PREFIX_CACHE_HITS)


def test_the_prefix_token_panel_names_the_first_release_with_its_counters() -> None:
    page = dict(all_dashboards(ObspackConfig()))["vllm-kv-prefix-cache"]
    panel = next(p for p in page["panels"] if p["title"] == "Prefix cache tokens: queried and hit")
    assert panel["fieldConfig"]["defaults"]["noValue"] == PREFIX_TOKENS_NO_DATA == (
        "No data: needs vLLM 0.7.3 or later on the V1 engine (V0 engines export no prefix-cache counters)"
    )
    with_counters = {r for name in COUNTERS for r in RELEASES["metrics"][name]["releases"]}
    first = min(with_counters, key=v.version)
    assert first == "0.7.3" and "0.6.3" not in with_counters and "0.6.6" not in with_counters
    assert "from vLLM 0.7.3 on the V1 engine" in panel["description"]
