"""What the doctor says about the inference pool's endpoint picker, asked of a real Prometheus: a router
v0.10 EPP emitting both names (one era, counted once), a GAIE v1.0 EPP with the pre-v1.1 names, a pool
whose endpoints include a pod obspack does not scrape (with GAIE's `-rank-N` endpoint names), and EPP
targets refused for want of a bearer token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.config import ObspackConfig
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.backends import Backend, Capability
from obspack.doctor.checks import SelectorChecks, State, Window
from obspack.doctor.gateway import era, gateway_survey, refused_findings
from obspack.doctor.needs import Leaf, Selector
from obspack.pack import build
from tests.doctor.fakes import empty_prometheus, serve
from tests.support.prometheus import backfill_openmetrics, running_prometheus

PACK = build(ObspackConfig())
END = 1_790_000_000 // 60 * 60
HOURS = 1
ROUTER = 'cluster="east",namespace="llm",job="llm-d-router-epp",pod="epp-0"'
GAIE = 'cluster="east",namespace="old",job="gaie-epp",pod="epp-0"'


def _backend(*targets: dict) -> Backend:
    on = Capability(True)
    return Backend("prometheus", "3.5.0", on, on, on, active_targets=targets)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusAPI]:
    root = tmp_path_factory.mktemp("gateway")
    times = range(END - HOURS * 3600, END + 1, 60)
    series = {
        "vllm:num_requests_running": [('cluster="east",namespace="llm",pod="llama-0",model_name="m"', 2.0)],
        "llm_d_epp_info": [(f'{ROUTER},build_ref="v0.10.0",commit="71f4f099"', 1.0)],
        "inference_extension_info": [(f'{ROUTER},build_ref="v0.10.0",commit="71f4f099"', 1.0),
                                     (f'{GAIE},build_ref="v1.0.0",commit="abc"', 1.0)],
        "llm_d_epp_per_endpoint_queue_size": [(f'{ROUTER},name="llama",model_server_endpoint="llama-0-rank-0"', 1.0),
                                              (f'{ROUTER},name="llama",model_server_endpoint="llama-1-rank-0"', 3.0)],
        "inference_pool_per_pod_queue_size": [(f'{ROUTER},name="llama",model_server_pod="llama-0-rank-0"', 1.0),
                                              (f'{ROUTER},name="llama",model_server_pod="llama-1-rank-0"', 3.0)],
    }
    with (root / "fleet.om").open("w") as out:
        for name, rows in series.items():
            out.write(f"# TYPE {name} gauge\n")
            for labels, value in rows:
                out.writelines(f"{name}{{{labels}}} {value} {t}\n" for t in times)
        out.write("# TYPE inference_model_request counter\n")
        out.writelines(f'inference_model_request_total{{{GAIE},model_name="m",target_model_name="m"}} {i} {t}\n'
                       for i, t in enumerate(times))
        out.write("# EOF\n")
    backfill_openmetrics(root / "fleet.om", root / "data", max_block="24h")
    with running_prometheus(root / "data") as prom, PrometheusAPI(Connection(prom.url)) as client:
        yield client


@pytest.mark.e2e
@pytest.mark.tool
def test_each_epp_is_named_with_its_era_and_uncovered_pools_are_problems(api: PrometheusAPI) -> None:
    refused = {"labels": {"job": "llm-d-router-epp"}, "health": "down",
               "lastError": "server returned HTTP status 401 Unauthorized"}
    report, findings = gateway_survey(api, PACK, _backend(refused), END, 3600)
    assert report is not None and report.found
    assert report.details["epps"] == {
        "EPP llm/llm-d-router-epp (east)": "llm-d router v0.9+ (llm_d_epp_*, legacy names dual-emitted), build v0.10.0",
        "EPP old/gaie-epp (east)": "GAIE up to v1.0 (inference_model_*), build v1.0.0",
    }
    assert report.summary.startswith("2 EPPs: GAIE up to v1.0 (inference_model_*); llm-d router v0.9+")
    found = {(f.level.value, f.subject): f for f in findings}
    assert ("note", "EPP llm/llm-d-router-epp (east)") not in found, "a current EPP is no finding"
    old = found[("note", "EPP old/gaie-epp (east)")].message
    assert old.startswith("GAIE up to v1.0 (inference_model_*)") and "upgrade the EPP" in old
    pool = found[("problem", "pool llm/llama (east)")]
    assert pool.message.startswith("1 endpoint the picker routes to without vLLM series") and "(llama-1)" in pool.message
    assert "401" in found[("problem", "job llm-d-router-epp")].message
    assert len([f for f in found if f[1].startswith("pool ")]) == 1, "both twins of the queue series count once"


def test_no_epp_is_a_note_and_an_unknown_legacy_epp_is_gaie() -> None:
    assert era(["inference_pool_ready_pods"]).startswith("GAIE (legacy names")
    assert era(["inference_extension_info", "llm_d_epp_info", "inference_objective_request_total"]).startswith("llm-d router")
    assert era(["inference_objective_request_total", "inference_extension_info"]).startswith("GAIE v1.1 to v1.5")


def test_only_refused_epp_targets_are_reported() -> None:
    targets = [
        {"labels": {"job": "llm-d-router-epp"}, "health": "down", "lastError": "server returned HTTP status 403 Forbidden"},
        {"labels": {"job": "vllm"}, "health": "down", "lastError": "server returned HTTP status 401 Unauthorized"},
        {"labels": {"job": "gaie-epp"}, "health": "down", "lastError": "context deadline exceeded"},
        {"labels": {"job": "keppler"}, "health": "down", "lastError": "server returned HTTP status 401 Unauthorized"},
    ]
    found = refused_findings(targets)
    assert [(f.subject, f.level.value) for f in found] == [("job llm-d-router-epp", "problem")]
    assert "403" in found[0].message and "--metrics-endpoint-auth=false" in found[0].action


def _waits(api: PrometheusAPI, metric: str) -> tuple[State, str, bool]:
    check = SelectorChecks(api, Window(END, 3600), {}).check(Leaf(Selector(metric, ())))
    return check.state, check.reason, check.optional


@pytest.mark.e2e
@pytest.mark.tool
def test_the_epps_series_wait_for_an_epp_and_then_for_their_own_event(api: PrometheusAPI) -> None:
    """With an EPP here, its errors wait for an error and its own time per request for a router v0.9+;
    with none, every EPP series waits for one to be scraped, and what reads only them is no finding."""
    errors = _waits(api, "llm_d_epp_request_error_total")
    assert errors == (State.EVENT, "appears only when the EPP answers a request with an error", False)
    processing = _waits(api, "llm_d_epp_request_processing_duration_seconds_bucket")
    assert processing == (State.EVENT, "appears only when the EPP is an llm-d router v0.9 or later", False)
    assert _waits(api, "llm_d_epp_disagg_decision_total")[0] is State.EVENT
    with serve(empty_prometheus) as fake, PrometheusAPI(Connection(fake.url)) as empty:
        for metric in ("llm_d_epp_info", "llm_d_epp_request_error_total", "llm_d_epp_flow_control_requests_total",
                       "llm_d_inference_scheduler_pd_decision_total"):
            state, reason, optional = _waits(empty, metric)
            assert (state, optional) == (State.EVENT, True) and "an endpoint picker (EPP) is scraped" in reason
