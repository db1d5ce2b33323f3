"""Tests of ``obspack exporter``: option checking through the real CLI app, and the installed command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.fake_vllm import FakeVLLM
from obspack.demo.processes import Server, free_port, wait_ready
from obspack.exporter import command
from obspack.exporter.command import OptionError, parse_duration, parse_size

from .conftest import exporter_command
from .hostile_target import HostileTarget, trickles

runner = CliRunner()


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Replace the serving loop; the dict receives the settings it was called with."""
    seen: dict = {}
    monkeypatch.setattr(command, "_run", lambda **settings: seen.update(settings))
    monkeypatch.delenv("OBSPACK_PROBE_DIR", raising=False)
    return seen


DEFAULTS = {
    "targets": ["http://127.0.0.1:8000/metrics"],
    "host": "0.0.0.0",
    "port": 10025,
    "window_s": 300.0,
    "timeout_s": 2.0,
    "probe_dir": None,
    "max_bytes": 32 * 1024 * 1024,
}


def test_defaults(captured: dict) -> None:
    result = runner.invoke(app, ["exporter", "--target", "http://127.0.0.1:8000/metrics"])
    assert result.exit_code == 0, result.output
    assert captured == DEFAULTS


def test_every_option(captured: dict, tmp_path: Path) -> None:
    args = [
        "exporter",
        "--target", "http://10.0.0.1:8000/metrics",
        "--target", "https://vllm.example:8443",
        "--listen", "127.0.0.1:19400",
        "--window", "1h30m",
        "--timeout", "500ms",
        "--probe-dir", str(tmp_path),
        "--max-bytes", "8MiB",
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert captured == {
        "targets": ["http://10.0.0.1:8000/metrics", "https://vllm.example:8443/metrics"],
        "host": "127.0.0.1",
        "port": 19400,
        "window_s": 5400.0,
        "timeout_s": 0.5,
        "probe_dir": tmp_path,
        "max_bytes": 8 * 1024 * 1024,
    }


def test_probe_dir_defaults_to_the_env(captured: dict, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["exporter", "--target", "http://t:1/metrics"], env={"OBSPACK_PROBE_DIR": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert captured["probe_dir"] == tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "error: --target is required: give the vLLM metrics URL, e.g. --target http://127.0.0.1:8000/metrics",
        ),
        (
            ["--target", "127.0.0.1:8000/metrics"],
            "error: --target '127.0.0.1:8000/metrics': give an http(s) URL",
        ),
        (
            ["--target", "http://h:99999/metrics"],
            "error: --target 'http://h:99999/metrics': the port is not a number",
        ),
        (["--target", "http://t/m", "--listen", "10025"], "error: --listen must be HOST:PORT"),
        (
            ["--target", "http://t/m", "--window", "5 minutes"],
            "error: --window: '5 minutes' is not a Prometheus duration",
        ),
        (["--target", "http://t/m", "--timeout", "0s"], "error: --timeout '0s': must be longer than zero"),
        (
            ["--target", "http://t/m", "--max-bytes", "lots"],
            "error: --max-bytes 'lots': give a positive size",
        ),
        (
            ["--target", "http://t/m", "--probe-dir", "/no/such/dir"],
            "error: --probe-dir /no/such/dir: no such directory",
        ),
    ],
    ids=["no-target", "no-scheme", "bad-port", "listen", "window", "zero-timeout", "max-bytes", "probe-dir"],
)
def test_bad_values_give_one_red_line_and_exit_2(captured: dict, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["exporter", *args], color=True)
    assert result.exit_code == 2, result.output
    assert captured == {}
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("\x1b[31m" + message)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("window", "timeout", "window_s", "timeout_s"),
    [
        ("5m", "2s", 300.0, 2.0),
        ("300", "2", 300.0, 2.0),
        ("90", "0.5", 90.0, 0.5),
        ("1m30s", "500ms", 90.0, 0.5),
    ],
)
def test_durations_take_prometheus_syntax_or_bare_seconds(
    captured: dict, window: str, timeout: str, window_s: float, timeout_s: float
) -> None:
    result = runner.invoke(
        app, ["exporter", "--target", "http://t/m", "--window", window, "--timeout", timeout]
    )
    assert result.exit_code == 0, result.output
    assert (captured["window_s"], captured["timeout_s"]) == (window_s, timeout_s)


@pytest.mark.parametrize("timeout", ["0", "0.0", "-2", "nan", "inf", "2 s", "1e3", ".5", "2.", "two"])
def test_timeouts_that_are_not_positive_seconds_are_refused(captured: dict, timeout: str) -> None:
    result = runner.invoke(app, ["exporter", "--target", "http://t/m", "--timeout", timeout])
    assert result.exit_code == 2, result.output
    assert captured == {}
    assert result.stderr.startswith(f"error: --timeout {timeout!r}") or result.stderr.startswith(
        f"error: --timeout: {timeout!r} is not a Prometheus duration"
    )


def test_help_shows_value_names_and_an_example_but_no_python_types() -> None:
    result = runner.invoke(app, ["exporter", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0
    for option, metavar in (
        ("--target", "URL"),
        ("--listen", "HOST:PORT"),
        ("--window", "DURATION"),
        ("--timeout", "DURATION"),
        ("--probe-dir", "DIR"),
        ("--max-bytes", "SIZE"),
    ):
        (line,) = [line for line in result.output.splitlines() if line.startswith(f"  {option} ")]
        assert line.split()[0:2] == [option, metavar]
    assert not re.search(r"<(bool|str|int|float|path|list\[str\])>", result.output)
    assert "--help" in result.output
    example = "obspack exporter --target http://127.0.0.1:8000/metrics --listen 0.0.0.0:10025 --timeout 2s"
    assert example in result.output
    assert "[default: 0.0.0.0:10025]" in " ".join(result.output.split())  # help wraps to the terminal


def test_help_lists_every_option() -> None:
    result = runner.invoke(app, ["exporter", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0
    for option in (
        "--target",
        "--listen",
        "--window",
        "--timeout",
        "--probe-dir",
        "--max-bytes",
        "OBSPACK_PROBE_DIR",
    ):
        assert option in result.output
    assert "Serve derived vLLM KV-cache, prefix-cache and CUDA allocator series" in result.output


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300), ("2s", 2), ("500ms", 0.5), ("1h30m", 5400), ("1d", 86400), ("1w2d", 777600)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "m", "1s5m", "1m1m", "5M", "-5s", "5 m", "1.5m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [("33554432", 1 << 25), ("32MiB", 1 << 25), ("512KiB", 1 << 19), ("1GB", 10**9), ("2 mib", 2 << 20)],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1", "1.5MiB", "MiB", "1TiB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(OptionError):
        parse_size(text)


# ---------------------------------------------------------------------------------------------------
# The installed command, as a process


def test_installed_command_serves_and_stops_on_sigterm(fake_vllm: FakeVLLM, tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    argv = [*exporter_command(), "--target", fake_vllm.url, "--listen", address, "--timeout", "1s"]
    server = Server.start("exporter", argv, tmp_path / "exporter.log", address)
    try:
        wait_ready(server, f"{server.url}/healthz")
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
            body = response.read().decode()
        assert (
            'obspack_vllm_kv_cache_admission_headroom_requests{engine="0",model_name="acme/llm-7b",'
            f'target="{fake_vllm.url}"}} 30.0' in body
        )
        assert f'obspack_target_up{{target="{fake_vllm.url}"}} 1.0' in body
        assert "process_resident_memory_bytes" in body
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=10) == 0
        assert f"listening on {server.url}/metrics" in server.log.read_text()
    finally:
        server.stop()


def test_installed_command_rejects_a_bad_option() -> None:
    result = subprocess.run(
        [*exporter_command(), "--target", "http://t/metrics", "--window", "soon"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --window: 'soon' is not a Prometheus duration (like 500ms, 30s, 5m, 1h30m) or a number of seconds"
    ]


def test_busy_port_is_one_line_and_exit_1(fake_vllm: FakeVLLM) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*exporter_command(), "--target", fake_vllm.url, "--listen", f"127.0.0.1:{port}"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"error: cannot listen on 127.0.0.1:{port}:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_sigterm_stops_the_exporter_promptly_while_a_scrape_hangs(tmp_path: Path) -> None:
    # The target trickles its headers: with --timeout 30s the scrape would hold for 30 s. The command
    # runs as `python -m obspack.exporter`, the same function without the rest of the CLI (faster to start).
    with HostileTarget(trickles(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000)) as target:
        address = f"127.0.0.1:{free_port()}"
        argv = [sys.executable, "-m", "obspack.exporter", "--target", target.url, "--listen", address,
                "--timeout", "30s"]  # fmt: skip
        server = Server.start("exporter", argv, tmp_path / "exporter.log", address)
        try:
            wait_ready(server, f"{server.url}/healthz")
            scrape = threading.Thread(target=_scrape_quietly, args=(f"{server.url}/metrics",), daemon=True)
            scrape.start()
            assert target.accepted.wait(5), "the exporter never reached the target"
            server.process.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            assert server.process.wait(timeout=10) == 0
            assert time.monotonic() - stopped < 3.0
        finally:
            server.stop()


def _scrape_quietly(url: str) -> None:
    try:
        urllib.request.urlopen(url, timeout=10).close()
    except OSError:
        pass  # the exporter went away mid-scrape, as the test intends


def test_the_serving_process_is_the_command_without_the_cli_libraries(fake_vllm: FakeVLLM, tmp_path: Path) -> None:
    # The command checks its options with typer (which loads pydantic), then becomes a process that loads
    # neither: same process id (a container's PID 1 keeps its signals), about 10 MiB less memory.
    maps = Path(f"/proc/{os.getpid()}/maps")
    if not maps.exists():
        pytest.skip("needs /proc/PID/maps (Linux) to see which libraries a process loaded")
    assert "pydantic_core" in maps.read_text(), "the test process itself loads pydantic: the check below would mean nothing"
    address = f"127.0.0.1:{free_port()}"
    argv = [*exporter_command(), "--target", fake_vllm.url, "--listen", address]
    server = Server.start("exporter", argv, tmp_path / "exporter.log", address)
    try:
        wait_ready(server, f"{server.url}/healthz")
        loaded = Path(f"/proc/{server.process.pid}/maps").read_text()
        assert "_pydantic_core" not in loaded
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
            assert f'obspack_target_up{{target="{fake_vllm.url}"}} 1.0' in response.read().decode()
        cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"obspack.exporter.serve" in cmdline[2]
    finally:
        server.stop()


def test_the_serving_process_gets_the_checked_settings_and_refuses_others() -> None:
    from obspack.exporter import serve

    good = json.loads(serve.command({**DEFAULTS, "probe_dir": Path("/var/run/obspack")})[-1])
    assert good == {**DEFAULTS, "probe_dir": "/var/run/obspack"}
    for bad in ({**good, "port": "10025"}, {k: v for k, v in good.items() if k != "targets"}, {**good, "extra": 1}):
        with pytest.raises(SystemExit, match="the serving process got settings it cannot read"):
            serve.main(json.dumps(bad))

