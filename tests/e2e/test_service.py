"""The service beyond one engine, live: a data-parallel pod whose second engine hangs while the first
serves, and an outage of the endpoint picker (EPP) in front of the pool. A real Prometheus scrapes the fake
vLLM pods (two engines behind one API server each) and a fake llm-d router EPP every 5 s and runs the
rendered rules on its own timers; a real Alertmanager runs the pack's routes and inhibitions.

What must hold: the hung engine pages once, named by its `engine` label, while the healthy two-engine pod
next to it stays quiet; the EPP outage pages once (not once per engine behind it), and nothing else does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.demo import fake_vllm as fv
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, wait_until
from obspack.demo.stack import EPP_JOB, PodSpec, Stack, Tools
from tests.e2e.checks import explained, fired, now, pending_then_firing

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

HUNG = "vllm-dp-hung-0"
HEALTHY = "vllm-dp-healthy-0"
POOL = "llama-3-1-8b"
# Engine 1 of HUNG keeps 14 requests and generates nothing; engine 0 keeps serving.
STUCK = fv.Load(running=14, waiting=0, kv_usage=0.4, requests_per_s=0.0)


@pytest.fixture(scope="module")
def stack(e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    pods = [
        PodSpec(HUNG, fv.NORMAL, node="gpu-node-a", gpus=2, engines=2),
        PodSpec(HEALTHY, fv.NORMAL, node="gpu-node-b", gpus=2, engines=2),
    ]
    with Stack(tmp_path_factory.mktemp("service"), pods, e2e_tools, epp_pool=POOL) as stack:
        with explained(stack):
            stack.wait_for_data()
        yield stack


def firing_notifications(stack: Stack, alertname: str) -> list[dict[str, str]]:
    assert stack.webhook is not None
    return [labels for _, status, labels in stack.webhook.deliveries()
            if status == "firing" and labels["alertname"] == alertname]  # fmt: skip


def test_a_hung_engine_pages_once_by_its_engine_while_its_twin_serves(stack: Stack) -> None:
    with explained(stack):
        started = now(stack)
        stack.set_load(HUNG, STUCK, engine=1)
        track = pending_then_firing(stack, "VLLMZeroThroughput", HUNG, started)
        assert track.labels.get("engine") == "1", track.labels
        assert float(track.last["value"]) == 14, track.last  # the requests stuck in that engine
        delivered = stack.wait_alert(ALERTMANAGER, "VLLMZeroThroughput", HUNG, "active")
        assert delivered.labels.get("engine") == "1"
        wait_until(lambda: firing_notifications(stack, "VLLMZeroThroughput"), 30, "the page of the hung engine")
        assert [n.get("engine") for n in firing_notifications(stack, "VLLMZeroThroughput")] == ["1"]
        assert "VLLMZeroThroughput" not in fired(stack, HEALTHY)  # both its engines serve

        stack.set_load(HUNG, fv.NORMAL, engine=1)
        stack.wait_alert(PROMETHEUS, "VLLMZeroThroughput", HUNG, "inactive")


def test_an_epp_outage_pages_once_and_not_per_engine(stack: Stack) -> None:
    assert stack.prometheus is not None and stack.watcher is not None
    prometheus, watcher = stack.prometheus, stack.watcher
    with explained(stack):
        # The picker is scraped and reports its pool before the outage.
        wait_until(lambda: prometheus.query(f'max(up{{job="{EPP_JOB}"}}) == 1'), 30, "the EPP scraped")
        assert prometheus.query(f'llm_d_epp_ready_endpoints{{name="{POOL}"}} == 2')
        assert not watcher.tracks(PROMETHEUS, "InferenceGatewayPickerDown")

        # The EPP dies: no request reaches the pool, so its engines go idle.
        before = {labels["alertname"] for _, _, labels in stack.webhook.deliveries()} if stack.webhook else set()
        stack.take_down_epp()
        for pod in (HUNG, HEALTHY):
            stack.set_load(pod, fv.IDLE)
        wait_until(lambda: firing_notifications(stack, "InferenceGatewayPickerDown"), stack.wait_s,
                   "the page of the EPP outage")  # fmt: skip
        pages = firing_notifications(stack, "InferenceGatewayPickerDown")
        assert len(pages) == 1, pages
        assert pages[0]["job"] == EPP_JOB and pages[0]["severity"] == "critical", pages
        # Nothing about the engines behind it: no other alert was sent, none fires in Prometheus.
        stack.sleep_scrape()
        sent = {labels["alertname"] for _, status, labels in stack.webhook.deliveries() if status == "firing"} \
            if stack.webhook else set()  # fmt: skip
        assert sent - before <= {"InferenceGatewayPickerDown"}, sent - before
        firing = {a["labels"]["alertname"] for a in prometheus.alerts() if a["state"] == "firing"}
        assert firing == {"InferenceGatewayPickerDown"}, firing
