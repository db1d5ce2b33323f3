"""`obspack rightsize` against a real Prometheus holding a fleet whose right answers are known by construction
(obspack/demo/rightsize_fleet.py). Each test names the tolerance it holds: exact where the samples are exact and the
rule is arithmetic, a stated margin where an estimate (interpolation in a histogram bucket, a rate's
extrapolation, a share of time) sits between."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.prometheus import Prometheus
from obspack.demo.rightsize_fleet import DAY, END
from obspack.rightsize import prices, queries
from tests.rightsize.command import GIB, MIB, knob, report, run, workload
from tests.support.prometheus import backfill_openmetrics, running_prometheus

pytestmark = [pytest.mark.e2e, pytest.mark.tool]


@pytest.fixture(scope="module")
def prom(fleet_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    data = tmp_path_factory.mktemp("rightsize-prometheus") / "data"
    backfill_openmetrics(fleet_file, data, max_block="4320h")  # the whole window in one block: one pass
    with running_prometheus(data) as server:
        yield server


@pytest.fixture(scope="module")
def found(prom: Prometheus) -> tuple[int, dict]:
    return report(prom.url)


def test_a_load_peak_of_28gi_under_a_32gi_limit_sizes_the_limit_from_load_and_the_request_from_serving(found) -> None:
    """Exact: samples are exactly 28 GiB while loading and 12 GiB after. The first pod started before the
    window; its replacement (same template) loaded inside it."""
    w = workload(found[1], "rs-load")
    m = w["memory"]
    assert (w["kind"], w["name"], w["container"], w["pods"]) == ("Deployment", "vllm-load", "vllm", 2)
    assert m["load_peak_bytes"] == 28 * GIB and m["serving_peak_bytes"] == 12 * GIB == m["serving_p99_bytes"]
    assert m["load"] == {"peak_bytes": 28 * GIB, "source": "observed", "detail": ""}
    assert m["recommended"] == {"limit_bytes": 33024 * MIB, "request_bytes": 14 * GIB}  # 28 x 1.15, 12 x 1.15, up to 256Mi
    assert m["current"] == {"limit_bytes": 32 * GIB, "request_bytes": 32 * GIB}
    assert m["decision"] == {"limit": "change", "request": "change"}
    assert m["risk"] == "tight" and m["peak_to_limit"] == pytest.approx(28 / 32)
    assert w["confidence"]["level"] == "high" and w["actionable"] and w["patched"]
    bt = w["backtest"]
    assert (bt["runs"], bt["runs_killed"], bt["days"], bt["days_killed"], bt["loads_before_window"]) == (2, 0, 14, 0, 1)
    assert bt["peak_to_limit"] == pytest.approx(28 / 32.25)
    patch = next(p for p in found[1]["patches"] if p["namespace"] == "rs-load")
    container = patch["patch"]["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "vllm", "resources": {"limits": {"memory": "32.25Gi"}, "requests": {"memory": "14Gi"}}}
    assert patch["kubectl"].startswith("kubectl -n rs-load patch deployment vllm-load --type strategic -p ")


def test_an_oom_kill_at_24gi_bumps_the_limit_to_30gi_once_despite_two_kube_state_metrics_replicas(found) -> None:
    """Exact: the kill happens at the 24 GiB limit; 24 x 1.25 = 30 GiB. The climb's last sample (23.9 GiB)
    lies 12.5 minutes before the next step, past any lookback of its start series: it is serving all the same."""
    w = workload(found[1], "rs-oom")
    m = w["memory"]
    assert m["oom_kills"] == 1 and m["usage_at_kill_bytes"] == 24 * GIB
    assert m["recommended"]["limit_bytes"] == 30 * GIB and m["risk"] == "oom"
    assert m["load_peak_bytes"] == 20 * GIB  # the run after the kill loads at 20 GiB ...
    assert m["serving_peak_bytes"] == pytest.approx(23.9 * GIB, rel=1e-9)  # ... the climb before it was serving
    assert m["serving_p99_bytes"] == 18 * GIB
    assert w["confidence"]["restarts"] == 1
    assert w["backtest"]["runs"] == 2 and not w["backtest"]["kills"]


def test_a_climb_ended_by_a_liveness_restart_is_serving_and_no_oom_kill(found) -> None:
    """Exact: 22 GiB at the climb's last sample, restarted by the kubelet (reason Error): 22 x 1.15 = 25.3,
    up to 25.5 GiB, above the 24 GiB limit that the climb came within 8% of."""
    w = workload(found[1], "rs-liveness")
    m = w["memory"]
    assert m["serving_peak_bytes"] == 22 * GIB and m["load_peak_bytes"] == 20 * GIB
    assert m["oom_kills"] == 0 and w["confidence"]["restarts"] == 1 and m["risk"] == "tight"
    assert m["recommended"]["limit_bytes"] == 25.5 * GIB and m["decision"]["limit"] == "change"


def test_a_pod_started_before_the_window_keeps_its_limit_and_gets_no_cut(found) -> None:
    """96 GiB limit, serving at 20 GiB, its 30 GiB load 20 days back and nowhere else: the rule alone says
    23 GiB, which would kill the next start. The limit stays; the request follows serving."""
    w = workload(found[1], "rs-longrun")
    m = w["memory"]
    assert m["load"]["source"] == "not seen" and m["computed"]["limit_bytes"] == 23 * GIB
    assert m["decision"] == {"limit": "keep", "request": "change"}
    assert m["recommended"] == {"limit_bytes": 96 * GIB, "request_bytes": 23 * GIB}
    assert w["confidence"]["level"] == "medium" and w["backtest"]["loads_unknown"] == 1
    patch = next(p for p in found[1]["patches"] if p["namespace"] == "rs-longrun")
    assert patch["patch"]["spec"]["template"]["spec"]["containers"] == [{"name": "vllm", "resources": {"requests": {"memory": "23Gi"}}}]


def test_the_load_before_the_window_sizes_the_limit_while_the_backend_holds_it(found) -> None:
    """Exact: the run started 3 days before the window and loaded 30 GiB there: 30 x 1.15 = 34.5 GiB."""
    w = workload(found[1], "rs-prewindow")
    m = w["memory"]
    assert m["load"]["source"] == "before the window" and m["load"]["peak_bytes"] == 30 * GIB
    assert "warm-8c7d6e5f4-b2n3m, started 2026-09-19T10:00Z" == m["load"]["detail"]
    assert m["recommended"]["limit_bytes"] == 34.5 * GIB and m["decision"]["limit"] == "change"
    assert w["confidence"]["level"] == "medium" and w["backtest"]["loads_before_window"] == 1
    assert w["backtest"]["peak_bytes"] == 30 * GIB and not w["backtest"]["kills"]


def test_a_workload_takes_its_load_from_another_of_the_same_image_and_model_that_loaded_in_the_window(found) -> None:
    chat, canary = workload(found[1], "rs-canary", name="chat"), workload(found[1], "rs-canary", name="chat-canary")
    assert chat["memory"]["load"]["source"] == "same image and model"
    assert chat["memory"]["load"]["detail"] == "gpu-east rs-canary/Deployment/chat-canary [vllm]"
    assert chat["memory"]["recommended"]["limit_bytes"] == 30 * GIB == canary["memory"]["recommended"]["limit_bytes"]
    assert chat["patched"] and chat["confidence"]["level"] == "medium"
    # the canary's own data covers 9 of 14 days: low confidence, a patch only on request
    assert canary["confidence"]["level"] == "low" and canary["actionable"] and not canary["patched"]


def test_prompts_whose_p999_is_7500_tokens_cap_max_model_len_131072_at_8192(found) -> None:
    """p99.9 within 1 token (linear interpolation in the 5,000-10,000 bucket, as histogram_quantile does);
    the refused share between 0 and 0.2% (the requests above the cut, estimated within their bucket)."""
    k = knob(workload(found[1], "rs-context"), "--max-model-len")
    assert k["current"] == 131072 and k["recommended"] == 8192 and k["change"]
    assert k["measured"]["prompt_p999"] == pytest.approx(7500, abs=1)
    assert k["measured"]["generation_p999"] == pytest.approx(350, abs=1)
    assert k["measured"]["requests"] == pytest.approx(1_000_000 * 14 / 15, rel=0.01)  # 14 of the pod's 15 days
    assert 0 < k["measured"]["refused_share"] < 0.002
    assert "--max-model-len=8192" in next(p for p in found[1]["patches"] if p["namespace"] == "rs-context")["vllm_args"]["vllm"]


def test_a_running_peak_of_12_suggests_max_num_seqs_24_and_the_routers_500_is_not_counted(found) -> None:
    """Exact. vLLM does not export --max-num-seqs, so 256 cannot be seen: the value is a suggestion that
    does not count as a change unless requests queued while the KV cache had room."""
    w = workload(found[1], "rs-batch")
    k = knob(w, "--max-num-seqs")
    assert (w["kind"], w["name"]) == ("StatefulSet", "batch-llm")
    assert k["measured"]["running_peak"] == 12 and k["recommended"] == 24 and not k["change"]
    assert "--max-num-seqs=24" in w["suggested_args"]


def test_a_kv_cache_that_preempts_is_too_small_with_its_remedies(found) -> None:
    """Preemptions within 1% (a rate over the window, extrapolated), the share of time with capacity waits
    within 1 point (every other hour by day: a quarter), utilization exact (0.85 + 0.95 - 0.86)."""
    w = workload(found[1], "rs-kv")
    g = w["gpu"]
    assert (w["kind"], w["name"]) == ("LeaderWorkerSet", "kv-lws")
    assert g["kv_cache"]["verdict"] == "too small" and g["kv_cache"]["waits_by_reason"]
    assert g["kv_cache"]["preemptions"] == pytest.approx(500, rel=0.01)
    assert g["kv_cache"]["waiting_share"] == pytest.approx(0.25, abs=0.01)
    assert g["gpu_memory_utilization"] == 0.85 and g["recommended_gpu_memory_utilization"] == 0.94
    assert g["projected_peak_ratio"] == pytest.approx(0.95)
    prefix = knob(w, "--enable-prefix-caching")
    assert prefix["recommended"] == "off" and prefix["change"] and prefix["measured"]["hit_rate"] == pytest.approx(0.02)
    assert w["env"][0]["name"] == "PYTORCH_CUDA_ALLOC_CONF" and w["env"][0]["value"] == "expandable_segments:True"
    patch = next(p for p in found[1]["patches"] if p["namespace"] == "rs-kv")
    assert patch["patch"] is None and patch["kubectl"] is None and "leaderWorkerTemplate" in patch["where"]
    assert patch["vllm_args"]["vllm"] == ["--gpu-memory-utilization=0.94", "--no-enable-prefix-caching"]


def test_a_release_that_raised_ram_30_percent_is_flagged_and_unchanged_gpu_memory_is_not(found) -> None:
    """Within 0.5 points: the peaks are exact samples. Starts come from kube-state-metrics only here."""
    releases = workload(found[1], "rs-release")["releases"]
    assert [r["image"].rsplit(":", 1)[1] for r in releases] == ["v0.30.0", "v0.31.0"]
    old, new = releases
    assert not old["flagged"] and new["flagged"]
    assert (old["load_peak_bytes"], new["load_peak_bytes"]) == (20 * GIB, 26 * GIB)
    assert new["rises"]["load"] == pytest.approx(0.30, abs=0.005)
    assert new["rises"]["serving"] == pytest.approx(0.30, abs=0.005)
    assert new["rises"]["GPU"] == pytest.approx(0.0, abs=0.005)
    assert "release raised memory" in workload(found[1], "rs-release")["risks"]


def test_two_days_of_data_is_not_enough_data_and_gives_no_advice_of_any_kind(found) -> None:
    """Span within an hour of 2 days (the first sample is dated at the hour). Measured values stay; no
    limit, request, vLLM argument, environment or utilization is advised, and no patch is written."""
    w = workload(found[1], "rs-new")
    assert w["confidence"]["level"] == "not enough data" and not w["actionable"]
    assert w["confidence"]["span_s"] == pytest.approx(2 * DAY, abs=3600)
    assert w["memory"]["recommended"] == {"limit_bytes": None, "request_bytes": None}
    assert w["memory"]["load_peak_bytes"] == 13 * GIB  # measured values are still shown
    assert w["memory"]["current"]["limit_bytes"] == 16 * GIB  # cAdvisor's spec limit, no kube-state-metrics
    assert (w["kind"], w["name"], w["owner_guessed"]) == ("Deployment", "fresh-app", True)
    assert w["suggested_args"] == [] and w["env"] == [] and w["changes"] == []
    assert all(k["recommended"] is None and not k["change"] for k in w["vllm_args"])
    assert knob(w, "--max-model-len")["measured"]["prompt_p999"] == pytest.approx(1900, abs=1)
    assert w["gpu"]["recommended_gpu_memory_utilization"] is None and w["gpu"]["advice"] == []
    assert not any(p["namespace"] == "rs-new" for p in found[1]["patches"])


def test_a_well_sized_workload_in_two_clusters_has_nothing_to_change(found) -> None:
    for cluster in ("gpu-east", "gpu-west"):
        w = workload(found[1], "rs-ok", cluster)
        assert not w["actionable"] and w["changes"] == [] and w["risks"] == []
        assert w["memory"]["recommended"] == {"limit_bytes": 12.75 * GIB, "request_bytes": 11.5 * GIB}
        assert w["memory"]["decision"] == {"limit": "keep", "request": "keep"}
        assert w["gpu"]["kv_cache"]["verdict"] == "fits"
        assert w["env"] == []  # a ratio of 1 on 20 MiB of split blocks is under the alert's floor


def test_the_fleet_exits_1_and_the_json_is_the_documented_schema(found) -> None:
    code, doc = found
    assert code == 1 == doc["exit_code"] and doc["schema"] == "obspack.rightsize/v2"
    assert doc["summary"] == {"workloads": 15, "actionable": 11, "patched": 10, "not_enough_data": 1, "include_low": False}
    assert doc["failed_queries"] == [] and doc["window_s"] == 14 * DAY and doc["step_s"] == 900


def test_the_number_of_requests_is_fixed_by_the_questions_not_by_the_fleet(prom: Prometheus, found, tmp_path: Path) -> None:
    cfg = ObspackConfig()
    plan = queries.Plan(at=END, window_s=14 * DAY, step_s=900, load_s=600)
    priced = len(prices.queries(cfg, plan))  # the GPUs of each pod, for what the recommendations save
    asked = len(queries.discovery(cfg, plan)) + len(queries.measurements(cfg, plan)) + priced + 1  # + the load before the window
    assert found[1]["requests"] == asked + 1 + 6  # + the connection check and the backend's six probes
    config = tmp_path / "obspack.yaml"
    config.write_text(yaml.safe_dump({"selectors": {k: 'namespace="rs-ok"' for k in ("vllm", "cadvisor", "kube_state_metrics")}}))
    smaller = report(prom.url, "--config", str(config))[1]
    cadvisor_only = queries.Plan(at=END, window_s=14 * DAY, step_s=900, load_s=600, starts=("cadvisor",))
    alone = len(queries.discovery(cfg, plan)) + len(queries.measurements(cfg, cadvisor_only)) + priced  # nothing before the window
    assert len(smaller["workloads"]) == 2 and smaller["requests"] == alone + 1 + 6


def test_a_config_scoped_to_the_well_sized_namespace_exits_0(prom: Prometheus, tmp_path: Path) -> None:
    scoped = 'namespace="rs-ok"'
    config = tmp_path / "obspack.yaml"
    config.write_text(yaml.safe_dump({"selectors": {k: scoped for k in ("vllm", "cadvisor", "kube_state_metrics", "exporter")}}))
    code, out, _ = run(prom.url, "--config", str(config))
    assert code == 0, out
    assert "2 workloads, 0 with recommendations or risks" in out
    assert "rs-ok/Deployment/steady" in out and "rs-load" not in out


def test_the_text_report_shows_current_and_recommended_the_backtest_and_only_safe_patches(prom: Prometheus, tmp_path: Path) -> None:
    code, out, err = run(prom.url, "--patches", str(tmp_path / "patches"))
    assert code == 1
    lines = out.splitlines()
    assert lines[4].split() == ["WORKLOAD", "MEMORY", "LIMIT", "MEMORY", "REQUEST", "RISKS", "KV", "CACHE", "BACKTEST", "CONFIDENCE"]
    row = next(line for line in lines if line.startswith("gpu-east rs-load/Deployment/vllm-load"))
    assert row.split()[3:9] == ["32Gi", "->", "32.25Gi", "32Gi", "->", "14Gi"] and row.endswith("14d high")
    assert "0/2 runs, 0/14 days killed, peak 87%" in row
    longrun = next(line for line in lines if line.startswith("gpu-east rs-longrun"))
    assert longrun.split()[3:8] == ["96Gi", "kept", "96Gi", "->", "23Gi"]
    kv = next(line for line in lines if line.startswith("gpu-east rs-kv"))
    assert "KV full" in kv and "too small" in kv
    assert "  limit       32Gi -> 32.25Gi (peak 28Gi x 1.15, rounded up to 256Mi; raised); risk tight (peak at 88% of the limit)" in lines
    assert (
        "  backtest    with 32.25Gi, 0 of 2 runs and 0 of 14 days would have been OOM-killed; peak 87% of the limit "
        "(the model load before the window counted); with 14Gi requested, the working set's p99 was above it on 0 of 14 days"
    ) in lines
    assert any(line.startswith("  limit       96Gi kept (the model load was not seen, so it is not lowered") for line in lines)
    assert "  vLLM        set --no-enable-prefix-caching (now on): prefix cache hit rate 2.0% over the window while the KV cache is too small" in lines
    assert "  vLLM        --enable-prefix-caching: keep it on (prefix cache hit rate 50.0% over the window)" in lines
    assert "  data        2d, 577 samples, 0 restarts: not enough data (2d of data, 7d needed)" in lines
    assert "  patch       withheld: low confidence (data covers 9d of the 14d window); --include-low writes it" in lines
    assert "limit = highest peak x 1.15" in out and "never lowered without a model-load peak" in out
    files = sorted(p.name for p in (tmp_path / "patches").iterdir())
    assert "gpu-east_rs-load_deployment_vllm-load.yaml" in files and not any("kv-lws" in f or "chat-canary" in f for f in files)
    patch = yaml.safe_load((tmp_path / "patches" / "gpu-east_rs-oom_deployment_vllm-oom.yaml").read_text())
    assert patch["spec"]["template"]["spec"]["containers"] == [{"name": "vllm", "resources": {"limits": {"memory": "30Gi"}}}]
    assert f"wrote {len(files)} patch files" in err
    code, _, err = run(prom.url, "--patches", str(tmp_path / "low"), "--include-low")
    canary = (tmp_path / "low" / "gpu-east_rs-canary_deployment_chat-canary.yaml").read_text()
    assert "# confidence: vllm: low\n" in canary and f"wrote {len(files) + 1} patch files" in err


def test_a_folder_that_cannot_take_the_patches_loses_no_report(prom: Prometheus, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, out, err = run(prom.url, "--patches", str(tmp_path / "file" / "patches"))
    assert code == 2 and "15 workloads" in out and err.startswith("error: --patches ")


def test_what_if_counts_the_oom_kill_a_limit_below_the_kill_would_repeat(prom: Prometheus) -> None:
    """The kill was at 24 GiB with samples up to 23.9 GiB: 24 GiB would be killed again, the bump passes."""
    code, doc = report(prom.url, "--what-if", "limit=24Gi", "--workload", "rs-oom/vllm-oom")
    assert code == 1 and [w["name"] for w in doc["workloads"]] == ["vllm-oom"]
    w = doc["what_if"]
    assert not w["passes"] and w["backtest"]["runs_killed"] == 1 and w["backtest"]["days_killed"] == 1
    code, doc = report(prom.url, "--what-if", "limit=30Gi", "--workload", "rs-oom/vllm-oom")
    assert code == 0 and doc["what_if"]["passes"]
    code, out, _ = run(prom.url, "--what-if", "limit=20Gi", "--workload", "gpu-east/rs-load/vllm-load")
    assert code == 1 and "what if limit=20Gi on gpu-east rs-load/Deployment/vllm-load [vllm]: does not pass" in out
    assert "  with 20Gi, 2 of 2 runs and 1 of 14 days would have been OOM-killed; peak 140% of the limit" in out


def test_autoscaling_targets_come_from_where_the_ttft_slo_burned(prom: Prometheus) -> None:
    """rs-scale's TTFT SLO burns from a queue of 4 per engine up, every day: a queue target of 3 (80% of 4),
    the KV cache's default kept (it did not matter), 6 replicas at the peak (2 x 8 / 3). The block printed
    for obspack.yaml is a valid config with that autoscaler."""
    code, doc = report(prom.url, "--autoscaling")
    assert code == 1
    (scale,) = [m for m in doc["autoscaling"] if m["namespace"] == "rs-scale"]
    assert (scale["queue_target"], scale["kv_cache_target"], scale["replicas_needed_at_peak"]) == (3, None, 6)
    assert scale["replicas_now"] == 2 and scale["workloads"] == [{"kind": "Deployment", "name": "scale", "container": "vllm"}]
    assert "burned in" in scale["basis"] and "at 4 requests waiting per engine or more" in scale["basis"]
    quiet = [m for m in doc["autoscaling"] if m["namespace"] == "rs-load"][0]
    assert quiet["queue_target"] is None and "histogram" in quiet["basis"]  # no TTFT data there
    block = yaml.safe_load(doc["autoscaling_config"])
    cfg = ObspackConfig.model_validate(block)
    (scaler,) = cfg.autoscaling.autoscalers
    assert (scaler.namespace, scaler.target.name, scaler.max_replicas, scaler.model) == ("rs-scale", "scale", 7, "Qwen/Qwen3-8B")
    assert cfg.autoscaling.models[0].queue == 3
    # what more replicas cost a month: 4 more replicas of the pod's GPUs, in GPU-hours (no prices set)
    assert scale["saving"]["change"] == "replicas 2 -> 6" and doc["currency"] == "GPU-hours"
    assert scale["saving"]["gpus_freed"] < 0 and scale["saving"]["per_month"] == scale["saving"]["gpus_freed"] * 730
    code, out, _ = run(prom.url, "--autoscaling")
    assert "\n# paste into obspack.yaml:\nautoscaling:\n" in out
    assert "replicas 2 -> 6: adds " in out and "GPU-hours a month more (the replicas the peak needed)" in out
