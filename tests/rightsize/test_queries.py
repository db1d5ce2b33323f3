"""The questions: all valid PromQL, a fixed number, scoped by the config, reading sources as the rules do."""

from __future__ import annotations

import promql_parser
import pytest

from obspack.config import ObspackConfig
from obspack.promql import metric_names, selectors
from obspack.rightsize import queries

PLAN = queries.Plan(at=1_791_280_800, window_s=14 * 86400, step_s=900, load_s=600, namespaces=("llm", "a.b"))
CUSTOM = ObspackConfig.model_validate(
    {
        "cluster_label": "k8s_cluster",
        "selectors": {"vllm": 'job="vllm"', "cadvisor": 'job="kubelet"', "kube_state_metrics": 'job="ksm"', "dcgm": 'job="dcgm"'},
        "vllm_containers": {"name_regex": "engine"},
    }
)


def every(cfg: ObspackConfig, plan: queries.Plan = PLAN) -> list[queries.Query]:
    return [*queries.discovery(cfg, plan), *queries.measurements(cfg, plan)]


@pytest.mark.parametrize("starts", [("cadvisor",), ("kube_state_metrics",), ("cadvisor", "kube_state_metrics"), ()])
def test_every_question_parses_whichever_start_sources_the_fleet_has(starts: tuple[str, ...]) -> None:
    for cfg in (ObspackConfig(), CUSTOM):
        plan = queries.Plan(**{**PLAN.__dict__, "starts": starts})
        for q in every(cfg, plan):
            promql_parser.parse(q.expr)
            assert q.keys == () or q.keys[0] == cfg.cluster_label


def test_the_number_of_questions_depends_on_nothing_but_the_start_sources() -> None:
    many = queries.Plan(**{**PLAN.__dict__, "namespaces": tuple(f"ns-{i}" for i in range(500))})
    assert len(every(ObspackConfig(), many)) == len(every(ObspackConfig())) == len(every(CUSTOM))
    assert len({q.name for q in every(ObspackConfig())}) == len(every(ObspackConfig()))


def test_the_configured_selectors_and_cluster_label_reach_every_source() -> None:
    wanted = {"vllm:": 'job="vllm"', "container_": 'job="kubelet"', "kube_": 'job="ksm"', "DCGM_": 'job="dcgm"'}
    for q in every(CUSTOM):
        assert "cluster," not in q.expr.replace("k8s_cluster,", "")
        for name, matchers in selectors(q.expr):
            for prefix, matcher in wanted.items():
                if name.startswith(prefix):
                    label, value = matcher.split("=")
                    assert (label, "=", value.strip('"')) in matchers, (q.name, name)


def test_router_copies_pause_containers_and_pod_cgroups_are_left_out() -> None:
    for q in every(ObspackConfig()):
        for name, matchers in selectors(q.expr):
            if name.startswith("vllm:") and name != "vllm:cache_config_info":
                assert ("model_name", "!=", "") in matchers, (q.name, name)
            if name in ("container_memory_working_set_bytes", "container_start_time_seconds") and q.name != "containers":
                assert {("container", "!=", ""), ("container", "!=", "POD"), ("image", "!=", "")} <= set(matchers)


def test_kube_state_metrics_questions_are_scoped_to_the_namespaces_found_unless_that_is_too_long() -> None:
    scoped = next(q for q in every(ObspackConfig()) if q.name == "pod_owner")
    assert 'namespace=~"a\\\\.b|llm"' in scoped.expr
    many = queries.Plan(**{**PLAN.__dict__, "namespaces": tuple(f"namespace-{i}" for i in range(500))})
    unscoped = next(q for q in every(ObspackConfig(), many) if q.name == "pod_owner")
    assert "namespace=~" not in unscoped.expr


def test_the_subqueries_read_the_window_at_the_plan_step_and_the_traffic_mask_reads_running_requests() -> None:
    found = {q.name: q for q in every(ObspackConfig())}
    assert "[14d:15m]" in found["ram_serving_p99"].expr
    assert "vllm:num_requests_running" in metric_names(found["ram_traffic_peak"].expr)
    assert "@ 1791280800.000" in found["ram_load_peak"].expr  # the start set is evaluated once


def test_the_split_reads_each_start_over_the_steps_own_window_so_a_killed_runs_last_step_counts() -> None:
    """A killed cgroup's series go stale a scrape after the kill: an instant read of its start at the next
    step finds nothing. Every start is read with a range function over the step, like the samples."""
    found = {q.name: q for q in every(ObspackConfig())}
    serving, load = found["ram_serving_peak"].expr, found["ram_load_peak"].expr
    assert "min_over_time(container_start_time_seconds{" in serving and "[15m]) <= time() - 1500" in serving
    assert "max_over_time(container_start_time_seconds{" in load and "[15m]) > time() - 1500" in load
    assert "min_over_time(kube_pod_container_state_started{" in serving
    assert "max_over_time(vllm:num_requests_running{" in found["ram_traffic_peak"].expr
    for q in found.values():  # no start is read as an instant anywhere in a per-step question
        for name, _ in selectors(q.expr):
            if name in ("container_start_time_seconds", "kube_pod_container_state_started") and ":15m]" in q.expr:
                assert f"{name}{{" not in q.expr.replace(f"_over_time({name}{{", "")


def test_the_backtest_reads_runs_and_days_and_the_days_are_range_questions() -> None:
    found = {q.name: q for q in every(ObspackConfig())}
    assert found["run_peak"].keys == ("cluster", "namespace", "pod", "container", "id", "image")
    assert {n for n, q in found.items() if q.every_s} == {"day_peak", "day_p99", "day_oom_kills"}
    assert "[1d:1h]" in found["day_oom_kills"].expr and "max_over_time(container_memory_working_set_bytes{" in found["day_peak"].expr
    assert found["run_peak"].most == 2.0**50 and found["restarts"].most == 2.0**53  # bytes get the tighter bound


def test_the_question_before_the_window_looks_back_to_the_earliest_start_for_those_pods_only() -> None:
    start = PLAN.at - PLAN.window_s
    q = queries.before_window(ObspackConfig(), PLAN, (("llm", "warm-8c7d6e5f4-b2n3m"),), start - 3 * 86400)
    assert q is not None and q.at == start and q.keys[-2:] == ("id", "image")
    promql_parser.parse(q.expr)
    assert "[3d30m:15m]" in q.expr  # back to the start, plus the load and a step and 'pod=~"warm-8c7d6e5f4-b2n3m"' in q.expr and 'namespace=~"llm"' in q.expr
    assert queries.before_window(ObspackConfig(), PLAN, (("llm", "old"),), start - 100 * 86400) is None
    far = queries.before_window(ObspackConfig(), PLAN, (("llm", "x"),), start - 80 * 86400)
    assert far is not None and ":39m]" in far.expr  # 80 days in at most 3,000 steps
