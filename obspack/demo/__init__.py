"""The end-to-end demo: a fake vLLM, the obspack exporter, real Prometheus and Alertmanager on 127.0.0.1.

- `fake_vllm`: a small HTTP server with a steerable vLLM 0.33 (V1) `/metrics` endpoint.
- `stack`: renders the pack with `obspack render`, then starts and stops the real servers.
- `clients`: the few Prometheus and Alertmanager API calls the demo and the tests make, and a watcher
  that records every alert state change.
- `webhook`: a local webhook receiver that captures Alertmanager's notifications.
- `__main__`: `python -m obspack.demo` (or `scripts/demo.sh`) plays an incident and narrates it.

The e2e tests (tests/e2e) drive the same pieces.
"""
