"""Every run counts to its end on a live Prometheus, whose staleness markers are real.

The fake kubelet (obspack/demo/fake_k8s.py) is scraped every second. Its vLLM container serves, climbs to
95% of its limit just after a step boundary and is killed a few seconds later: the kubelet's next
exposition no longer has the old cgroup, so Prometheus marks its series stale one scrape after the kill.
The load/serving split must still count the climb as serving; an instant read of the start at the next
step (what the first version did) finds nothing there, which this test shows too, so it cannot pass by
accident.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.fake_k8s import GIB, Cluster, FakeSources
from obspack.demo.processes import prometheus_argv, start_server
from obspack.demo.prometheus import Prometheus
from obspack.rightsize import queries
from tests.support.tools import require_tool

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

STEP = 6  # seconds: the subquery step of this test (the command's is 15 minutes)
LOAD = 2  # seconds after a start that count as model load
LIMIT = 64 * GIB  # the fake pod's memory limit


def _until_just_after_a_step(offset: float = 0.3) -> None:
    time.sleep(STEP - time.time() % STEP + offset)


def _peak(prom: Prometheus, expr: str, at: float) -> float:
    (row,) = prom.query(f"max({expr})", at) or [{"value": [0, "0"]}]
    return float(row["value"][1])


def test_the_climb_before_a_kill_is_serving_though_its_series_went_stale(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.add("vllm-a", "llm", "node-a")
    cluster.set_host_memory("vllm-a", 0.5)
    sources = FakeSources(cluster)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "800ms"},
                "scrape_configs": [
                    {
                        "job_name": "kubelet",
                        "metrics_path": "/nodes/node-a/metrics/cadvisor",
                        "static_configs": [{"targets": [sources.address], "labels": {"cluster": "c"}}],
                    }
                ],
            }
        )
    )
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(sources.stop)
        argv = prometheus_argv(require_tool("prometheus"), config, tmp_path / "data", "--log.level=warn")
        server = start_server("prometheus", argv, "/-/ready", tmp_path, cleanup)
        began = time.time()
        time.sleep(LOAD + STEP + 1)  # serving at 50%: the next step is past the load
        _until_just_after_a_step()
        climbed = time.time()
        cluster.set_host_memory("vllm-a", 0.95)
        time.sleep(2.5)  # the climb lies inside one step, after its first boundary
        cluster.terminate("vllm-a", "OOMKilled", 137)
        cluster.set_host_memory("vllm-a", 0.5)
        killed = time.time()
        _until_just_after_a_step(1.5)  # the next boundary (3 scrapes after the kill), then one more scrape
        at = time.time()
        assert climbed // STEP == killed // STEP  # the climb and the kill share one step
        with Prometheus(server.url) as prom:
            window = int(at - began) + STEP
            plan = queries.Plan(at=at, window_s=window, step_s=STEP, load_s=LOAD, starts=("cadvisor",))
            fleet = queries.Fleet(ObspackConfig(), plan)
            peak = fleet.step_peak()
            serving = _peak(prom, fleet.over_window("max_over_time", fleet.serving(peak)), at)
            load = _peak(prom, fleet.over_window("max_over_time", fleet.load(peak)), at)
            runs = prom.query(f"count({fleet.working_set(lambda leg: f'last_over_time({leg}[{window}s])')})", at)
            n = LOAD + STEP
            instant = f"(({peak}) and ({fleet.start()} <= time() - {n}))"
            before = _peak(prom, fleet.over_window("max_over_time", instant), at)
    assert float(runs[0]["value"][1]) == 2  # the killed run and the new one: two cgroups
    assert serving == pytest.approx(0.95 * LIMIT, rel=1e-6)  # the climb is serving
    assert load == pytest.approx(0.5 * LIMIT, rel=1e-6)  # the new run's first seconds are load
    assert before == pytest.approx(0.5 * LIMIT, rel=1e-6)  # read as an instant, the climb was lost
