#!/usr/bin/env bash
# Regenerate the Helm chart's generated files (helm/obspack) from obspack's built-in defaults,
# or with --check only report whether they are stale (exit 1). Same as `obspack render --helm`,
# without writing the pack itself.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$@" <<'PY'
import sys
from pathlib import Path

from obspack.config import ObspackConfig
from obspack.errors import ObspackError
from obspack.pack.chart import build_chart
from obspack.render.helm import chart_files
from obspack.render.write import diff, write

chart = Path("helm/obspack")
try:
    files = chart_files(build_chart(ObspackConfig()))
    if sys.argv[1:] == ["--check"]:
        result = diff(chart, files)
        for kind in ("missing", "stale", "extra"):
            for rel in getattr(result, kind):
                print(f"{kind}: {chart / rel}")
        if not result.clean:
            sys.exit(f"{chart} is not up to date: run scripts/render-chart.sh")
        print(f"{chart} is up to date ({len(result.unchanged)} files)")
    elif sys.argv[1:]:
        sys.exit("usage: scripts/render-chart.sh [--check]")
    else:
        result = write(chart, files)
        print(f"wrote {chart}: {len(result.missing) + len(result.stale)} changed, {len(result.extra)} removed")
except ObspackError as e:
    sys.exit(f"error: {e}")
PY
