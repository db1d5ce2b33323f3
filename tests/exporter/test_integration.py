"""End to end over 127.0.0.1: fake vLLM -> `obspack exporter` process -> real Prometheus -> /api/v1/query."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from obspack.demo.fake_vllm import FakeVLLM
from obspack.demo.processes import prometheus_argv, start_server
from obspack.demo.prometheus import Prometheus
from obspack.probe import Probe
from tests.support.tools import require_tool

from .conftest import exporter_command, payload

pytestmark = pytest.mark.e2e

ENGINE = {"engine": "0", "model_name": "acme/llm-7b"}
GIB = 1 << 30


class MovingCounters:
    """v1_single.prom whose prefix-cache counters grow by 60 hits / 100 queries on every request."""

    def __init__(self) -> None:
        self.requests = 0

    def __call__(self) -> bytes:
        self.requests += 1
        hits, queries = 1000 + 60 * self.requests, 4000 + 100 * self.requests
        series = b'{engine="0",model_name="acme/llm-7b"}'
        text = payload("v1_single.prom")
        text = text.replace(
            b"vllm:prefix_cache_hits_total" + series + b" 250.0",
            b"vllm:prefix_cache_hits_total" + series + b" %d" % hits,
        )
        return text.replace(
            b"vllm:prefix_cache_queries_total" + series + b" 1000.0",
            b"vllm:prefix_cache_queries_total" + series + b" %d" % queries,
        )


@dataclass
class Stack:
    exporter_url: str
    prometheus: Prometheus
    probe_pid: int


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus = require_tool("prometheus")
    tmp = tmp_path_factory.mktemp("e2e")
    probe_dir = tmp / "probe"
    probe_dir.mkdir()
    stats = {
        0: {
            "reserved_bytes.all.current": 8 * GIB,
            "allocated_bytes.all.current": 4 * GIB,
            "inactive_split_bytes.all.current": 1 * GIB,
            "num_alloc_retries": 3,
            "num_ooms": 0,
        }
    }
    probe = Probe(probe_dir, interval_s=1, source=lambda: stats)
    probe.start()
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(probe.stop, timeout=5)
        fake = FakeVLLM(payload=MovingCounters())
        cleanup.callback(fake.stop)
        exporter = start_server(
            "exporter",
            lambda address: [*exporter_command(), "--target", fake.url, "--listen", address, "--window", "1m",
                             "--timeout", "1s", "--probe-dir", str(probe_dir)],
            "/healthz", tmp, cleanup,
        )  # fmt: skip
        config = tmp / "prometheus.yml"
        config.write_text(
            json.dumps(  # JSON is YAML
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [
                        {"job_name": "obspack-exporter", "static_configs": [{"targets": [exporter.address]}]}
                    ],
                }
            )
        )
        server = start_server("prometheus", prometheus_argv(prometheus, config, tmp / "data"), "/-/ready", tmp, cleanup)
        client = cleanup.enter_context(Prometheus(server.url))
        yield Stack(exporter.url, client, probe.pid)


def query(stack: Stack, promql: str) -> list[dict]:
    return stack.prometheus.query(promql)


def wait_for(stack: Stack, promql: str, timeout_s: float = 30) -> list[dict]:
    """Poll until the query returns something (the first scrape lands ~6 s after Prometheus starts)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = query(stack, promql)
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError(f"{promql} stayed empty for {timeout_s}s")


def value(result: list[dict]) -> float:
    (series,) = result
    return float(series["value"][1])


def test_windowed_hit_ratio_reaches_prometheus(stack: Stack) -> None:
    result = wait_for(stack, "obspack_vllm_prefix_cache_hit_ratio")
    (series,) = result
    assert {k: series["metric"][k] for k in ("engine", "model_name", "job")} == {
        **ENGINE,
        "job": "obspack-exporter",
    }
    assert series["metric"]["target"].startswith("http://127.0.0.1:")  # set even with a single target
    assert float(series["value"][1]) == pytest.approx(0.6)


def test_lifetime_hit_ratio_moves_between_start_and_window(stack: Stack) -> None:
    wait_for(stack, "obspack_vllm_prefix_cache_hit_ratio")
    lifetime = value(query(stack, "obspack_vllm_prefix_cache_hit_ratio_lifetime"))
    # (1000 + 60 n) / (4000 + 100 n) for the n-th request, n >= 2 here
    assert (1000 + 120) / (4000 + 200) <= lifetime < 0.6


def test_kv_cache_series_reach_prometheus(stack: Stack) -> None:
    wait_for(stack, "obspack_target_up")
    assert value(query(stack, 'obspack_vllm_kv_cache_blocks{state="used"}')) == 250.0
    assert value(query(stack, 'obspack_vllm_kv_cache_blocks{state="free"}')) == 750.0
    assert value(query(stack, "obspack_vllm_kv_cache_block_size_tokens")) == 16.0
    assert value(query(stack, "obspack_vllm_kv_cache_fragmentation_ratio")) == pytest.approx(0.01875)
    assert value(query(stack, "obspack_vllm_kv_cache_admission_headroom_requests")) == 30.0


def test_target_health_series_reach_prometheus(stack: Stack) -> None:
    result = wait_for(stack, "obspack_target_up")
    assert value(result) == 1.0
    assert result[0]["metric"]["target"].startswith("http://127.0.0.1:")
    errors = query(stack, "obspack_target_scrape_errors_total")
    assert sorted(series["metric"]["reason"] for series in errors) == [
        "connection",
        "http_status",
        "parse",
        "timeout",
        "too_large",
        "too_many_series",
    ]
    assert all(float(series["value"][1]) == 0.0 for series in errors)
    assert 0 < value(query(stack, "obspack_target_scrape_duration_seconds")) < 1.0
    assert value(query(stack, "obspack_exporter_build_info")) == 1.0


def test_cuda_probe_series_reach_prometheus(stack: Stack) -> None:
    result = wait_for(stack, "obspack_cuda_allocator_fragmentation_ratio")
    (series,) = result
    assert series["metric"]["pid"] == str(stack.probe_pid)
    assert series["metric"]["device"] == "0"
    assert float(series["value"][1]) == 0.25
    assert value(query(stack, "obspack_cuda_allocator_reserved_bytes")) == 8 * GIB
    assert value(query(stack, "obspack_cuda_alloc_retries_total")) == 3.0
    assert value(query(stack, "obspack_cuda_ooms_total")) == 0.0


def test_exposition_passes_promtool_lint(stack: Stack) -> None:
    promtool = require_tool("promtool")
    with urllib.request.urlopen(f"{stack.exporter_url}/metrics", timeout=5) as response:
        body = response.read()
    lint = subprocess.run(
        [promtool, "check", "metrics"], check=False, input=body, capture_output=True, timeout=30
    )
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()


def test_prometheus_accepts_every_scrape_of_the_exporter(stack: Stack) -> None:
    wait_for(stack, "obspack_target_up")
    assert value(query(stack, 'up{job="obspack-exporter"}')) == 1.0
    # 6 derived + 3 health families, 6 error reasons, 6 CUDA series and build info, at least
    assert value(query(stack, 'scrape_samples_scraped{job="obspack-exporter"}')) >= 20
