#!/usr/bin/env bash
# Install the test tools (obspack, promtool, prometheus, alertmanager, victoria-metrics, vmalert, helm) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-tools.sh
export PATH="$PWD/.tools/bin:$PATH"
# one worker per core (at most four), and one for the live stacks: tests/conftest.py groups the files
workers=$(( $(nproc) < 4 ? $(nproc) : 4 ))
python3 -m pytest -n "$((workers + 1))" --dist loadfile -q "$@"
