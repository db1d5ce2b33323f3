"""The process kit the demo, the tests and the benchmarks share: servers on free ports of 127.0.0.1, waited
for, reported with their log when they fail, and always stopped."""

from __future__ import annotations

import contextlib
import socket
import sys
import urllib.request
from pathlib import Path

import pytest

from obspack.demo import processes
from obspack.demo.processes import StackError, start_server


def http_server(address: str) -> list[str]:
    host, port = address.split(":")
    return [sys.executable, "-m", "http.server", "--bind", host, port]


def test_a_server_is_started_waited_for_and_stopped(tmp_path: Path) -> None:
    (tmp_path / "hello").write_text("hi")
    with contextlib.ExitStack() as cleanup:
        server = start_server("files", lambda a: [*http_server(a), "--directory", str(tmp_path)], "/hello", tmp_path, cleanup)
        started = server.cpu_seconds()  # a Python interpreter has used some CPU to get this far
        with urllib.request.urlopen(f"{server.url}/hello", timeout=5) as answer:
            assert answer.read() == b"hi"
        assert 0 < started <= server.cpu_seconds()
    assert not server.alive()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{server.url}/hello", timeout=1)


def test_a_server_that_exits_is_reported_in_one_line_with_its_last_error(tmp_path: Path) -> None:
    code = "import sys; print('loading', flush=True); print('error: no config file', flush=True); sys.exit(3)"
    argv = [sys.executable, "-c", code]
    with contextlib.ExitStack() as cleanup, pytest.raises(StackError) as e:
        start_server("broken", lambda _: argv, "/", tmp_path, cleanup)
    assert str(e.value) == f"broken exited with 3: no config file (log: {tmp_path / 'broken.log'})"


def test_the_last_error_of_a_log_in_one_line() -> None:
    go = 'ts=1 caller=main.go:1 level=error msg="Error listening" err="listen tcp 127.0.0.1:9: bind: address already in use"'
    assert processes.last_error(f"level=info msg=start\n{go}\n") == "listen tcp 127.0.0.1:9: bind: address already in use"
    assert processes.last_error("starting\nerror: cannot listen on 127.0.0.1:9: Address already in use") == (
        "cannot listen on 127.0.0.1:9: Address already in use"
    )
    assert processes.last_error("Traceback (most recent call last):\n  File x\nValueError: boom\n") == "ValueError: boom"
    assert processes.last_error("just a line\n\n") == "just a line"
    assert processes.last_error("") == "no output"


def exporter(address: str) -> list[str]:
    """The obspack exporter, as the demo starts its sidecars (its target need not answer)."""
    return [sys.executable, "-m", "obspack", "exporter", "--target", "http://127.0.0.1:9/metrics", "--listen", address]


def test_an_exporter_whose_port_is_taken_in_between_is_started_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's exporter sidecars get the retry Prometheus and Alertmanager get: a port race costs a
    restart on another port, not the demo."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        ports = iter([taken.getsockname()[1], processes.free_port()])
        monkeypatch.setattr(processes, "free_port", lambda: next(ports))
        with contextlib.ExitStack() as cleanup:
            server = start_server("exporter-pod", exporter, "/healthz", tmp_path, cleanup)
            assert server.alive() and server.address != f"127.0.0.1:{taken.getsockname()[1]}"


def test_ports_taken_on_every_try_give_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        monkeypatch.setattr(processes, "free_port", lambda: taken.getsockname()[1])
        with contextlib.ExitStack() as cleanup, pytest.raises(StackError) as e:
            start_server("exporter-pod", exporter, "/healthz", tmp_path, cleanup)
    assert str(e.value) == (
        "exporter-pod found no port to listen on: 3 free ports of 127.0.0.1 were each taken before it could "
        f"listen (log: {tmp_path / 'exporter-pod.log'})"
    )
    assert "error:" not in str(e.value) and "\n" not in str(e.value)


def test_a_port_taken_between_the_probe_and_the_bind_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        ports = iter([taken.getsockname()[1], processes.free_port()])
        monkeypatch.setattr(processes, "free_port", lambda: next(ports))
        with contextlib.ExitStack() as cleanup:
            server = start_server("files", http_server, "/", tmp_path, cleanup)
            assert server.address != f"127.0.0.1:{taken.getsockname()[1]}" and server.alive()


def test_missing_binaries_are_named_with_their_debian_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StackError, match="^prometheus and prometheus-alertmanager not found: apt-get install prometheus prometheus-alertmanager"):
        processes.require("prometheus", "alertmanager")
    for name in ("prometheus", "prometheus-alertmanager"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert processes.require("prometheus", "alertmanager") == (str(tmp_path / "prometheus"), str(tmp_path / "prometheus-alertmanager"))
