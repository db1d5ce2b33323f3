"""A simulated vLLM fleet on real Prometheus and Alertmanager servers, for `obspack demo`, the tests and
the benchmarks. Everything binds to 127.0.0.1.

Live sources:
- `fake_vllm`: a steerable vLLM 0.33 (V1) `/metrics` server, which can also misbehave on request
  (`serving`: the small HTTP server under it and the fake node exporters).
- `fake_k8s`: the nodes' cAdvisor, kube-state-metrics and dcgm-exporter.
- `webhook`: a webhook receiver that keeps Alertmanager's notifications.

Recorded history, as OpenMetrics files to backfill:
- `fleet`: a healthy fleet of any size (doctor and dashboard tests, fleet benchmarks).
- `rightsize_fleet`: fourteen days whose right sizes are known by construction (`obspack rightsize`).

Servers and clients:
- `processes`: child processes on free ports, started, waited for and always stopped.
- `prometheus`: the Prometheus client (the doctor's, plus alerts, rules and reload), a Prometheus over a
  backfilled TSDB, and the backfill itself.
- `clients`: the Alertmanager calls, and a watcher of every alert's states in both servers.

The demo:
- `stack`: renders the pack with `obspack render`, then starts and steers the live chain.
- `incident`, `memory_planes`, `lag`: the incidents and how late each alert fires.
- `narrate`: `obspack demo` (scripts/demo.sh) plays the incidents and narrates them.

Shipped in the wheel so that `obspack demo` works from an install; the e2e tests (tests/e2e) drive
the same pieces.
"""
