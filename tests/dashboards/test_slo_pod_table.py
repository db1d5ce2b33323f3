"""The SLO page's pod table ("Pods: slow and failed shares now") on real PromQL: each column is a share of the
pod's requests (or token gaps), evaluated by `promtool test rules` over pods whose shares are known.

- `slow-0`: a tenth of its first tokens over 2.5 s, a twentieth of its token gaps over 0.2 s, and one request
  in twenty answered 5xx;
- `healthy-0`: every request fast and answered; vLLM has made no 5xx series for it (the instrumentator
  creates a status's series at its first request), and its failed share is still 0, not missing;
- `prefill-0` (llm-d's prefill role) and `asleep-0` (an engine put to sleep) serve no user's request and,
  as in the SLO records, have no row, though they are slow and failing;
- `idle-0` has had no request in the window: no share, so no row;
- `renamed-0` exports its token gaps under both names of vLLM's rename (inter_token_latency and
  time_per_output_token, as releases of the transition do): counted once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.tools import promtool_query_test

# every variable at All and a 5m $__rate_interval
VALUES = {"cluster": ".*", "namespace": ".*", "pod": ".*", "model": ".*", "__rate_interval": "5m"}
MINUTES = 10
ROW = '{{cluster="c1", namespace="llm", pod="{pod}", model_name="m"}}'


def _per_mille(expr: str) -> str:
    return f"round(1000 * (\n{expr}\n))"  # promtool compares floats exactly


def _pod(pod: str, ttft: tuple[int, int], itl: tuple[int, int], http: tuple[int, int]) -> list[dict[str, str]]:
    """One engine's series, minute by minute: (all, fast) first tokens and token gaps, (2xx, 5xx) answers
    per minute (5xx 0: no series, as vLLM exposes a healthy pod)."""
    where = f'cluster="c1", namespace="llm", pod="{pod}"'
    engine = f'{where}, model_name="m", engine="0"'

    def rising(per_minute: int) -> str:
        return f"0+{per_minute}x{MINUTES}"

    series = [{"series": f"vllm:num_requests_running{{{engine}}}", "values": f"4x{MINUTES}"}]
    for metric, (every, fast), le in (
        ("vllm:time_to_first_token_seconds", ttft, "2.5"),
        ("vllm:inter_token_latency_seconds", itl, "0.2"),
    ):
        series += [
            {"series": f"{metric}_count{{{engine}}}", "values": rising(every)},
            {"series": f'{metric}_bucket{{{engine}, le="{le}"}}', "values": rising(fast)},
            {"series": f'{metric}_bucket{{{engine}, le="+Inf"}}', "values": rising(every)},
        ]
    answered, failed = http
    route = f'{where}, handler="/v1/completions", method="POST"'
    series.append({"series": f'http_requests_total{{{route}, status="2xx"}}', "values": rising(answered)})
    if failed:
        series.append({"series": f'http_requests_total{{{route}, status="5xx"}}', "values": rising(failed)})
    return series


def _series() -> list[dict[str, str]]:
    slow = ((100, 90), (1000, 950), (19, 1))
    series = _pod("slow-0", *slow) + _pod("healthy-0", (100, 100), (1000, 1000), (20, 0))
    series += _pod("prefill-0", *slow) + _pod("asleep-0", *slow) + _pod("idle-0", (0, 0), (0, 0), (0, 0))
    renamed = _pod("renamed-0", (100, 100), (1000, 900), (20, 0))
    series += renamed + [
        {**s, "series": s["series"].replace("inter_token_latency", "time_per_output_token")}
        for s in renamed
        if "inter_token_latency" in s["series"]
    ]
    series += [
        {"series": 'kube_pod_labels{cluster="c1", namespace="llm", pod="prefill-0", label_llm_d_ai_role="prefill"}', "values": f"1x{MINUTES}"},
        {"series": 'vllm:engine_sleep_state{cluster="c1", namespace="llm", pod="asleep-0", model_name="m", engine="0", sleep_state="awake"}', "values": f"0x{MINUTES}"},
    ]  # fmt: skip
    return series


def _case(expr: str, shares: dict[str, int]) -> dict[str, Any]:
    return {
        "expr": _per_mille(expr),
        "eval_time": f"{MINUTES}m",
        "exp_samples": [{"labels": ROW.format(pod=pod), "value": v} for pod, v in shares.items()],
    }


def test_each_column_is_the_share_of_the_pods_requests_that_miss(tmp_path: Path) -> None:
    slos = dict(all_dashboards(ObspackConfig()))[c.SLO_DASHBOARD]
    ttft, itl, failed = panel_queries(slos, "Pods: slow and failed shares now", VALUES)
    cases = [
        _case(ttft, {"healthy-0": 0, "slow-0": 100, "renamed-0": 0}),  # 10 of 100 first tokens over 2.5 s
        _case(itl, {"healthy-0": 0, "slow-0": 50, "renamed-0": 100}),  # 50 of 1,000 gaps over 0.2 s
        _case(failed, {"healthy-0": 0, "slow-0": 50, "renamed-0": 0}),  # 1 of 20 answers a 5xx: 5%, not 1 per minute
    ]
    promtool_query_test(tmp_path, _series(), cases)
