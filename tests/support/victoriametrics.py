"""A real VictoriaMetrics (and vmalert) for tests, on 127.0.0.1 (Debian's `victoria-metrics` package).

    with running_victoria_metrics(tmp / "vm") as vm:          # a Prometheus-compatible API at vm.url
        import_openmetrics(vm.url, fleet_file)                 # timestamps in seconds; flushed after
        with running_vmalert(rules_file, vm.url, port) as url: # rules evaluated, records written to VM
            ...

The binaries come from `require_tool`, so a missing one skips the test on a laptop and fails it in CI.
Searches see samples up to now (`-search.latencyOffset=0s`) and are not cached, so records written a
moment ago are visible.
"""

from __future__ import annotations

import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.prometheus import Prometheus, PrometheusError, free_port, stop, wait_ready
from tests.support.tools import require_tool


@contextmanager
def _process(args: list[str], url: str) -> Iterator[None]:
    with tempfile.TemporaryDirectory(prefix="obspack-vm-") as tmp:
        log = Path(tmp) / "log"
        with log.open("wb") as sink:
            process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
        try:
            wait_ready(url, process, log, "/health")
            yield
        finally:
            stop(process)


@contextmanager
def running_victoria_metrics(data_dir: Path, *, vmalert_url: str | None = None) -> Iterator[Prometheus]:
    """Single-node VictoriaMetrics; with `vmalert_url`, its rules API is proxied there."""
    binary = require_tool("victoria-metrics")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [
        binary,
        f"-storageDataPath={data_dir}",
        f"-httpListenAddr=127.0.0.1:{port}",
        "-retentionPeriod=100y",  # backfilled samples are older than the default month allows for
        "-search.latencyOffset=0s",
        "-search.disableCache",
        "-loggerLevel=ERROR",
    ]
    if vmalert_url:
        args.append(f"-vmalert.proxyURL={vmalert_url}")
    with _process(args, url):
        yield Prometheus(url)


def import_openmetrics(url: str, source: Path) -> None:
    """Load an OpenMetrics file (timestamps in seconds) and flush it to searchable storage."""
    request = urllib.request.Request(
        f"{url}/api/v1/import/prometheus", data=source.read_bytes(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        if response.status not in (200, 204):
            raise PrometheusError(f"import failed: HTTP {response.status}")
    flush(url)


def flush(url: str) -> None:
    """Make what was just written searchable (samples and the index of new series)."""
    with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=30):
        pass


@contextmanager
def running_vmalert(rules: Path, datasource: str, port: int) -> Iterator[str]:
    """vmalert evaluating `rules` every second against `datasource`, writing records back to it."""
    binary = require_tool("vmalert")
    url = f"http://127.0.0.1:{port}"
    args = [
        binary,
        f"-rule={rules}",
        f"-datasource.url={datasource}",
        f"-remoteWrite.url={datasource}",
        "-remoteWrite.flushInterval=1s",
        f"-notifier.url=http://127.0.0.1:{free_port()}",  # nobody listens: alerts are not the point here
        f"-httpListenAddr=127.0.0.1:{port}",
        "-evaluationInterval=1s",
        "-loggerLevel=ERROR",
    ]
    with _process(args, url):
        yield url
