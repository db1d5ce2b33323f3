#!/usr/bin/env bash
# Install the test tools (obspack, promtool, prometheus, alertmanager, victoria-metrics, vmalert, helm) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-tools.sh
export PATH="$PWD/.tools/bin:$PATH"
python3 -m pytest -n 2 --dist loadfile -q "$@"
