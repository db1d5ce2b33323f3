#!/usr/bin/env bash
# Play a vLLM incident through obspack's rules on a real Prometheus and Alertmanager, all on 127.0.0.1:
# fake vLLM pods and their obspack exporter sidecars, the pack rendered by `obspack render`, alerts
# going pending, firing, routed, inhibited and resolved. Takes about 4.5 minutes (most of it waiting for
# alerts to fire and to resolve; a line every 15 s says what it waits for). See docs/e2e.md.
#
#   scripts/demo.sh              # play it, print every alert state change and notification, stop
#   scripts/demo.sh --keep       # ... then leave everything running to explore, until Ctrl-C
#   scripts/demo.sh --workdir D  # keep the pack, configs and logs in D (default: a temp dir)
#
# The same as `obspack demo`. Needs obspack installed (pip install -e .) and Debian's prometheus and
# prometheus-alertmanager (scripts/install-test-tools.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m obspack demo "$@"
