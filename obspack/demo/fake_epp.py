"""A fake endpoint picker (the llm-d router's EPP, v0.10): `/metrics` with the pool it routes to.

It reports what a real EPP derives from its model servers: the pool's ready endpoints, the average KV cache
use, queue and running requests, and the queue of each endpoint, read from the fake vLLM pods it is given;
plus the requests it routed and its scheduling latency. As router v0.9 and v0.10 do, every series comes
twice: under its canonical `llm_d_epp_*` name and under the deprecated GAIE name it replaced (with that
name's labels). Stop it (`stop()`) for an EPP outage: its target then refuses connections.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence

from prometheus_client.utils import floatToGoString

from obspack.catalogue import gateway as gw
from obspack.demo.fake_vllm import CONTENT_TYPE, FakeVLLM
from obspack.demo.serving import TEXT, Answer, LocalServer

BUILD = "v0.10.0"
SCHEDULING_BUCKETS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
SCHEDULING_S = 0.0015  # each request's pick takes this long (all in one bucket)


class FakeEPP(LocalServer):
    """The EPP of `pool`, routing `model` to those of the pods `endpoints()` returns (name, fake vLLM) that
    serve it."""

    def __init__(self, pool: str, model: str, endpoints: Callable[[], Sequence[tuple[str, FakeVLLM]]]) -> None:
        self.pool, self.model, self.endpoints = pool, model, endpoints
        self._routed = 0.0
        self._last = time.monotonic()
        self._count_lock = threading.Lock()
        super().__init__(self._answer, "fake-epp")

    def _answer(self, path: str) -> Answer:
        if path == "/metrics":
            return 200, CONTENT_TYPE, self.exposition().encode()
        return 404, TEXT, b"not found\n"

    def exposition(self) -> str:
        ready = [(name, fake) for name, fake in self.endpoints() if not fake.down and fake.engine.model_name == self.model]
        loads = {name: [e.load for e in fake.engines] for name, fake in ready}
        with self._count_lock:
            now = time.monotonic()
            self._routed += sum(load.requests_per_s for ls in loads.values() for load in ls) * (now - self._last)
            self._last = now
            routed = math.floor(self._routed)

        def mean(values: list[float]) -> float:
            return sum(values) / len(values) if values else 0.0

        pool = {"name": self.pool}
        model = {"model_name": self.model, "target_model_name": self.model}
        lines: list[str] = []

        def family(name: str, kind: str, samples: list[tuple[dict[str, str], float]]) -> None:
            """A family's lines; a counter's samples named `<family>_total` (the catalogue names samples)."""
            declared = name.removesuffix("_total") if kind == "counter" else name
            lines.append(f"# HELP {declared} [ALPHA] Fake endpoint picker metric.\n# TYPE {declared} {kind}\n")
            sample = f"{declared}_total" if kind == "counter" else name
            for labels, value in samples:
                text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                lines.append(f"{sample}{{{text}}} {floatToGoString(value)}\n")

        for name in (gw.INFO.canonical, gw.INFO.legacy):
            family(name, "gauge", [({"build_ref": BUILD, "commit": "0123abcd"}, 1.0)])
        kv = mean([max(x.kv_usage for x in ls) for ls in loads.values()])
        gauges = {
            gw.READY: float(len(ready)),
            gw.AVG_KV: kv,
            gw.AVG_QUEUE: mean([sum(x.waiting for x in ls) for ls in loads.values()]),
            gw.AVG_RUNNING: mean([sum(x.running for x in ls) for ls in loads.values()]),
        }
        for twins, value in gauges.items():
            for name in (twins.canonical, twins.legacy):
                family(name, "gauge", [(pool, value)])
        for name, label in ((gw.ENDPOINT_QUEUE.canonical, gw.ENDPOINT_LABEL.canonical),
                            (gw.ENDPOINT_QUEUE.legacy, gw.ENDPOINT_LABEL.legacy)):
            family(name, "gauge", [({**pool, label: n}, float(sum(x.waiting for x in ls))) for n, ls in loads.items()])
        family(gw.REQUESTS, "counter", [({**model, "fairness_id": "default-flow", "priority": "0"}, routed)])
        family(gw.OBJECTIVE_REQUESTS, "counter", [({**model, "priority": "0"}, routed)])
        for name in (gw.SCHEDULER_E2E.canonical, gw.SCHEDULER_E2E.legacy):
            lines.append(f"# HELP {name} [ALPHA] Scheduling latency.\n# TYPE {name} histogram\n")
            for le in SCHEDULING_BUCKETS:
                lines.append(f'{name}_bucket{{le="{floatToGoString(le)}"}} {routed if le >= SCHEDULING_S else 0}\n')
            lines.append(f'{name}_bucket{{le="+Inf"}} {routed}\n{name}_sum {routed * SCHEDULING_S}\n{name}_count {routed}\n')
        family(gw.FLOW_SATURATION.canonical, "gauge", [({gw.FLOW_POOL: self.pool}, kv)])
        return "".join(lines)
