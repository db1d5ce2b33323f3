"""``obspack exporter``: the command. It parses options, builds the collector, serves, and stops on SIGTERM."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from obspack import durations
from obspack.errors import ObspackError
from obspack.exporter import DEFAULT_PORT
from obspack.probe import ENV_DIR

_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_SIZE = re.compile(r"([0-9]+)\s*(|B|KiB|MiB|GiB|KB|MB|GB)", re.IGNORECASE)
_SIZE_FACTOR = {
    "": 1,
    "b": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
}


class OptionError(ObspackError):
    """An option value is invalid; the message names the option and the accepted form."""

    exit_code = 2


def exporter(
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            metavar="URL",
            help="vLLM metrics URL to scrape, e.g. http://127.0.0.1:8000/metrics. Repeat for several.",
            show_default=False,
        ),
    ] = None,
    listen: Annotated[
        str, typer.Option(metavar="HOST:PORT", help="Where to serve /metrics ([::]:PORT for IPv6).")
    ] = f"0.0.0.0:{DEFAULT_PORT}",
    window: Annotated[
        str,
        typer.Option(
            metavar="DURATION",
            help="Window of the prefix-cache hit ratio: a Prometheus duration (30s, 5m, 1h) or seconds.",
        ),
    ] = "5m",
    timeout: Annotated[
        str,
        typer.Option(
            metavar="DURATION",
            help="Deadline of each target scrape, connect to last byte: a Prometheus duration (2s) or seconds.",
        ),
    ] = "2s",
    probe_dir: Annotated[
        str | None,
        typer.Option(
            envvar=ENV_DIR,
            metavar="DIR",
            help="Directory where the obspack CUDA probe writes <pid>.json files (shared emptyDir).",
            show_default=False,
        ),
    ] = None,
    max_bytes: Annotated[
        str,
        typer.Option(metavar="SIZE", help="Largest target payload accepted, in bytes or with KiB/MiB/GiB."),
    ] = "32MiB",
) -> None:
    """Serve derived vLLM KV-cache, prefix-cache and CUDA allocator series for Prometheus.

    Each scrape of the exporter scrapes every --target in parallel and answers with fresh series.

    Example, as a sidecar next to vLLM:

    \b
        obspack exporter --target http://127.0.0.1:8000/metrics --listen 0.0.0.0:10025 --timeout 2s
    """
    try:
        settings = _settings(target, listen, window, timeout, probe_dir, max_bytes)
    except ObspackError as e:
        typer.secho(f"error: {e}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=e.exit_code) from None
    _run(**settings)


def _settings(
    targets: list[str] | None, listen: str, window: str, timeout: str, probe_dir: str | None, max_bytes: str
) -> dict:
    """Check every option and return the keyword arguments of ``_run``; raise OptionError on the first bad one."""
    if not targets:
        raise OptionError(
            "--target is required: give the vLLM metrics URL, e.g. --target http://127.0.0.1:8000/metrics"
        )
    try:
        from obspack.exporter.server import parse_listen

        host, port = parse_listen(listen)
    except ValueError as e:
        raise OptionError(str(e)) from None
    directory = Path(probe_dir) if probe_dir else None
    if directory is not None and not directory.is_dir():
        raise OptionError(f"--probe-dir {probe_dir}: no such directory (mount the probe's emptyDir there)")
    return {
        "targets": [check_target(t) for t in targets],
        "host": host,
        "port": port,
        "window_s": _positive_duration("--window", window),
        "timeout_s": _positive_duration("--timeout", timeout),
        "probe_dir": directory,
        "max_bytes": parse_size(max_bytes),
    }


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as ``90s``, ``5m`` or ``1h30m`` (units ms s m h d w y, largest first)."""
    try:
        return durations.parse_ms(text) / 1000
    except ValueError:
        raise ValueError(f"{text!r} is not a Prometheus duration (like 500ms, 30s, 5m, 1h30m)") from None


def parse_seconds(text: str) -> float:
    """Seconds in a Prometheus duration (``2s``, ``1m30s``), or in a bare number of seconds (``2``, ``0.5``).

    A duration is the form to write; a bare number is still read as seconds, as older options took it."""
    if _SECONDS.fullmatch(text.strip()):
        return float(text)
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a Prometheus duration (like 500ms, 30s, 5m, 1h30m) or a number of seconds"
        ) from None


def parse_size(text: str) -> int:
    """Bytes in ``33554432``, ``32MiB``, ``512KiB`` or ``1GB``; must be positive."""
    match = _SIZE.fullmatch(text.strip())
    size = int(match.group(1)) * _SIZE_FACTOR[match.group(2).lower()] if match else 0
    if size <= 0:
        raise OptionError(
            f"--max-bytes {text!r}: give a positive size in bytes, or with KiB/MiB/GiB (e.g. 32MiB)"
        )
    return size


def check_target(url: str) -> str:
    """Return ``url`` if it is an http(s) URL with a host; an empty path means /metrics."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        raise OptionError(f"--target {url!r}: the port is not a number from 0 to 65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError(
            f"--target {url!r}: give an http(s) URL with a host, like http://127.0.0.1:8000/metrics"
        )
    return url if parts.path else parts._replace(path="/metrics").geturl()


def _positive_duration(option: str, text: str) -> float:
    try:
        seconds = parse_seconds(text)
    except ValueError as e:
        raise OptionError(f"{option}: {e}") from None
    if seconds <= 0:
        raise OptionError(f"{option} {text!r}: must be longer than zero")
    return seconds


def _run(**settings: object) -> None:
    """Serve the checked settings: this process becomes the serving one (obspack.exporter.serve)."""
    from obspack.exporter.serve import replace_process

    replace_process(settings)
