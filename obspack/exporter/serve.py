"""The exporter's serving process: ``python -c`` runs ``main`` with the settings ``obspack exporter`` checked.

``obspack exporter`` reads its options with the CLI's libraries: typer, which loads pydantic to convert them
(as typer 0.29 does). Served from that process, they stayed in memory for the sidecar's whole life, about
10 MiB of every vLLM pod's exporter. The command therefore checks the options and then replaces itself
(``exec``, the same process id, so a container's PID 1 and its signals stay as they were) with this module,
which imports only what serving needs: prometheus_client, the collector and the HTTP server.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

# The settings as ``obspack exporter`` passes them: each key, and the types its JSON value may have.
SETTINGS: dict[str, tuple[type, ...]] = {
    "targets": (list,),
    "host": (str,),
    "port": (int,),
    "window_s": (float, int),
    "timeout_s": (float, int),
    "probe_dir": (str, type(None)),
    "max_bytes": (int,),
}


def command(settings: dict[str, object]) -> list[str]:
    """The argv that serves ``settings`` (the keyword arguments ``obspack exporter`` checked) in a new
    interpreter that finds its modules where this one does (the same ``sys.path``)."""
    payload = {k: str(v) if isinstance(v, Path) else v for k, v in settings.items()}
    code = "import sys; sys.path[:] = sys.argv[1:-1]; from obspack.exporter.serve import main; main(sys.argv[-1])"
    return [sys.executable, "-c", code, *sys.path, json.dumps(payload, sort_keys=True)]


def replace_process(settings: dict[str, object]) -> None:
    """Become the serving process; never returns. Raises OSError when the interpreter cannot start."""
    sys.stdout.flush()
    sys.stderr.flush()
    if not sys.executable:  # an embedded interpreter: nothing to start, serve from here
        sys.exit(serve(**settings))  # type: ignore[arg-type]
    argv = command(settings)
    os.execv(argv[0], argv)


def main(text: str) -> None:
    """Serve the settings in ``text`` (JSON) until SIGTERM or SIGINT; exit 1 when the address is taken."""
    settings = json.loads(text)
    if set(settings) != set(SETTINGS) or not all(isinstance(settings[k], SETTINGS[k]) for k in SETTINGS):
        raise SystemExit(f"obspack exporter: the serving process got settings it cannot read: {text!r}")
    probe_dir = settings.pop("probe_dir")
    sys.exit(serve(**settings, probe_dir=Path(probe_dir) if probe_dir else None))


def serve(
    *,
    targets: list[str],
    host: str,
    port: int,
    window_s: float,
    timeout_s: float,
    probe_dir: Path | None,
    max_bytes: int,
) -> int:
    """Serve until SIGTERM or SIGINT, then shut down cleanly: 0, or 1 when ``host:port`` cannot be bound."""
    logging.basicConfig(
        level=os.environ.get("OBSPACK_LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(message)s"
    )
    # Imported here: the command's process imports this module only to replace itself.
    from prometheus_client import CollectorRegistry
    from prometheus_client.process_collector import ProcessCollector

    from obspack.exporter.collector import ExporterCollector
    from obspack.exporter.server import start_server

    registry = CollectorRegistry()
    collector = ExporterCollector(
        targets,
        window_s=window_s,
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        probe_dir=probe_dir,
        registry=registry,
    )
    ProcessCollector(registry=registry)
    try:
        server = start_server(host, port, registry)
    except OSError as e:
        message = f"error: cannot listen on {host}:{port}: {e.strerror or e}"
        print(f"\x1b[31m{message}\x1b[0m" if sys.stderr.isatty() else message, file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    logging.getLogger(__name__).info(
        "obspack exporter listening on http://%s:%d/metrics, targets: %s",
        server.host,
        server.port,
        " ".join(targets),
    )
    try:
        stop.wait()
    finally:
        server.shutdown()
        collector.close()
    return 0
