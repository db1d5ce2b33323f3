"""The autoscaling signal, live: three fake vLLM replicas of one model go from a healthy load to a saturated
one on a real Prometheus that scrapes and evaluates the rendered rules every second.

- healthy, the signal stays under its target (1) for both models;
- once a scrape shows the saturation, the signal record crosses 1 within one evaluation interval (the record
  reads raw series, in one group);
- the HPA's formula on the live values, ceil(current replicas x signal), gives the replicas the fleet needs
  (the requests waiting for capacity over the queue target per engine), and the other namespace, still
  healthy, stays under 1.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import pytest

from obspack import conventions as c
from obspack.demo import fake_vllm as fv
from obspack.demo.clients import wait_until
from obspack.demo.stack import EXPORTER_JOB, NAMESPACE, VLLM_JOB, PodSpec, Stack, Tools
from tests.e2e.checks import explained

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

INTERVAL_S = 1
QUEUE_TARGET = 3
HOT = ("vllm-chat-0", "vllm-chat-1", "vllm-chat-2")
CALM, CALM_NAMESPACE = "vllm-calm-0", "llm-canary"
HEALTHY = replace(fv.NORMAL, waiting=2, kv_usage=0.35)  # 2 / 3 and 0.35 / 0.8: 0.67
SATURATED = replace(fv.NORMAL, waiting=7, kv_usage=0.7)  # 7 / 3 = 2.33 per replica: 7 engines needed for 21
CONFIG = f"""\
selectors:
  vllm: job="{VLLM_JOB}"
  exporter: job="{EXPORTER_JOB}"
rule_interval: {INTERVAL_S}s
scrape_interval: {INTERVAL_S}s
slos: {{enabled: false}}
autoscaling:
  targets: {{queue: {QUEUE_TARGET}, kv_cache: 0.8}}
"""


def _value(stack: Stack, expr: str) -> float | None:
    assert stack.prometheus is not None
    found = stack.prometheus.query(expr)
    return float(found[0]["value"][1]) if found else None


def test_the_signal_crosses_its_target_within_an_evaluation_and_sizes_the_fleet(
    e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pods = [*(PodSpec(name, HEALTHY) for name in HOT), PodSpec(CALM, HEALTHY, namespace=CALM_NAMESPACE)]
    signal = f'{c.SATURATION}{{namespace="{NAMESPACE}"}}'
    calm = f'{c.SATURATION}{{namespace="{CALM_NAMESPACE}"}}'
    with Stack(tmp_path_factory.mktemp("autoscaling"), pods, e2e_tools, interval_s=INTERVAL_S, config=CONFIG) as stack:
        with explained(stack):
            stack.wait_for_data()
            healthy = wait_until(lambda: _value(stack, signal), 20, "the signal of the healthy fleet")
            assert healthy == pytest.approx(2 / 3) and _value(stack, calm) == pytest.approx(2 / 3)

            for name in HOT:
                stack.set_load(name, SATURATED)
            raw = f'min(vllm:num_requests_waiting{{namespace="{NAMESPACE}", job="{VLLM_JOB}"}}) >= {SATURATED.waiting}'
            seen = wait_until(lambda: _value(stack, raw) is not None and time.monotonic(), 15, "a scrape of the saturation")
            crossed = wait_until(
                lambda: (_value(stack, f"{signal} > 1") or 0) > 1 and time.monotonic(), 15, "the signal to cross 1"
            )
            lag = crossed - seen
            print(f"\nsignal above its target {lag:.2f} s after the raw series showed the saturation")
            assert lag <= INTERVAL_S + 1.0, lag  # one evaluation, and the polling's own granularity

            now = wait_until(lambda: _value(stack, f"{signal} >= {SATURATED.waiting / QUEUE_TARGET}"), 10, "all three")
            current = _value(stack, f'count({c.RUNNING}{{namespace="{NAMESPACE}"}})')
            desired = math.ceil(round((current or 0) * now, 6))
            needed = math.ceil(len(HOT) * SATURATED.waiting / QUEUE_TARGET)  # engines for the whole queue
            assert (current, desired) == (len(HOT), needed) == (3, 7)
            assert (_value(stack, calm) or 0) < 1, "the healthy namespace stays under its target"
