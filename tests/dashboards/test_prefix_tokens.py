"""The KV and prefix cache page's "Prefix cache tokens: queried and hit" on a real promtool, through the
per-model records it reads: each engine's counter counted once under either of vLLM's names (0.9.2-0.10.2
engines serve both), router copies (no model_name) never, and the pod filter does not narrow it."""

from __future__ import annotations

from pathlib import Path

from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.packs import records_of
from tests.support.tools import promtool_record_test

WHERE = 'cluster="c1", namespace="llm"'
# (series labels, counter names it is served under, prompt tokens looked up per minute, found per minute)
ENGINES = (
    ('pod="new-0", model_name="llama", engine="0"', ("vllm:prefix_cache",), 600, 300),
    ('pod="new-0", model_name="llama", engine="1"', ("vllm:prefix_cache",), 1200, 300),
    ('pod="both-0", model_name="llama"', ("vllm:prefix_cache", "vllm:gpu_prefix_cache"), 1800, 600),
    ('pod="old-0", model_name="llama"', ("vllm:gpu_prefix_cache",), 600, 0),
    ('pod="router-0", server="http://new-0:8000"', ("vllm:gpu_prefix_cache",), 6000, 6000),
)


def _targets(pod: str) -> tuple[str, str]:
    page = dict(all_dashboards(ObspackConfig()))["vllm-kv-prefix-cache"]
    values = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": pod}
    queried, hit = panel_queries(page, "Prefix cache tokens: queried and hit", values)
    return queried, hit


def test_tokens_queried_and_hit_per_model(tmp_path: Path) -> None:
    series = []
    for labels, names, queries, hits in ENGINES:
        for name in names:
            series += [
                {"series": f"{name}_queries_total{{{WHERE}, {labels}}}", "values": f"0+{queries}x20"},
                {"series": f"{name}_hits_total{{{WHERE}, {labels}}}", "values": f"0+{hits}x20"},
            ]
    llama = '{cluster="c1", namespace="llm", model_name="llama"}'
    queried, hit = _targets(".*")
    # per second: (600 + 1200 + 1800 + 600) / 60 looked up, (300 + 300 + 600 + 0) / 60 found
    checks = [
        {"expr": queried, "eval_time": "10m", "exp_samples": [{"labels": llama, "value": 70}]},
        {"expr": hit, "eval_time": "10m", "exp_samples": [{"labels": llama, "value": 20}]},
        # one pod picked: still the model's tokens (the page's per-model graphs say so)
        {"expr": _targets("old-0")[0], "eval_time": "10m", "exp_samples": [{"labels": llama, "value": 70}]},
    ]
    promtool_record_test(tmp_path, records_of("-vllm-prefix-cache.rules"), series, checks)
