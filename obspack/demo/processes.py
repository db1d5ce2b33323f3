"""Servers as child processes on 127.0.0.1, for the demo, the tests and the benchmarks.

    server = start_server("prometheus", prometheus_argv(binary, config, data), "/-/ready", logdir, cleanup)

`start_server` picks a free port, starts the process with its output in a log file, waits until it
answers, and registers its stop on an `ExitStack` first, so it is stopped even when it never gets
ready. A port taken between the probe and the bind is tried again with another. `Server.stop()` sends
SIGTERM, then SIGKILL after 5 s. On Linux a child also gets SIGTERM when its parent dies, so a run
killed from outside (a test's hard timeout) leaves no server behind.

Every failure is a `StackError` of one line: the server, what went wrong (the last error its log
shows, without the log's own `error:` prefix) and where its log is; never the whole log.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from obspack.errors import ObspackError

READY_TIMEOUT_S = 20.0
# Debian installs Alertmanager as prometheus-alertmanager; the upstream tarball as alertmanager.
_NAMES = {"alertmanager": ("prometheus-alertmanager", "alertmanager")}
_PACKAGES = {"alertmanager": "prometheus-alertmanager"}


class StackError(ObspackError):
    """A server could not be found or started; the message says which and shows its log."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_tool(name: str) -> str | None:
    """The path of a server binary on PATH (Debian's name first), or None."""
    return next((found for n in _NAMES.get(name, (name,)) if (found := shutil.which(n))), None)


def require(*names: str) -> tuple[str, ...]:
    """The paths of server binaries; StackError naming the Debian packages of the missing ones."""
    found = {name: find_tool(name) for name in names}
    missing = [_PACKAGES.get(name, name) for name, path in found.items() if path is None]
    if missing:
        raise StackError(
            f"{' and '.join(missing)} not found: apt-get install {' '.join(missing)} "
            "(or run scripts/install-test-tools.sh)"
        )
    return tuple(str(path) for path in found.values())


def is_ready(url: str) -> bool:
    """Whether `url` answers a GET with a success status within a second."""
    try:
        with urllib.request.urlopen(url, timeout=1.0):  # noqa: S310 (http on 127.0.0.1 only)
            return True
    except (urllib.error.URLError, OSError):
        return False


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGTERM when the parent dies. Elsewhere nothing happens."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


@dataclass
class Server:
    """A child process with its log file; `stop()` sends SIGTERM, then SIGKILL after 5 s."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    address: str  # 127.0.0.1:PORT

    @classmethod
    def start(
        cls, name: str, argv: Sequence[str], log: Path, address: str, env: dict[str, str] | None = None
    ) -> Server:
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603 (argv built by the caller)
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # Ctrl-C reaches the demo, which stops the servers in order
                preexec_fn=_die_with_parent,  # only calls prctl
            )
        return cls(name, process, log, address)

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_seconds(self) -> float:
        """User plus system CPU seconds the process has used so far (Linux /proc; the benchmarks' measure)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def reason(self) -> str:
        """What went wrong, in one line, from the end of the log: its last error, or its last line."""
        return last_error(self.tail(50))

    def port_taken(self) -> bool:
        return "address already in use" in self.tail(50).lower()


_GO_FIELD = r'\b{}="((?:[^"\\]|\\.)*)"'  # a logfmt field of a Go server's log line
_ERROR_PREFIX = re.compile(r"^(?:error|ERROR|Error)\s*:\s*")


def last_error(log: str) -> str:
    """The last error a log shows, as one line: a Go server's `level=error ... err="..."` (or its msg), our
    own tools' `error: ...` (without the prefix, which the caller's message adds), a Python exception's
    last line; else the log's last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "level=error" in line:
            found = re.search(_GO_FIELD.format("err"), line) or re.search(_GO_FIELD.format("msg"), line)
            if found:
                return found.group(1).replace('\\"', '"')
        if _ERROR_PREFIX.match(line) or re.match(r"^[A-Za-z_.]*(?:Error|Exception)\b", line):
            return _ERROR_PREFIX.sub("", line)
    return lines[-1] if lines else "no output"


def wait_ready(server: Server, url: str, timeout: float = READY_TIMEOUT_S) -> None:
    """Wait until `url` answers; a one-line StackError (the log's last error, and where the log is) if the
    process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while not is_ready(url):
        if not server.alive():
            raise StackError(
                f"{server.name} exited with {server.process.returncode}: {server.reason()} (log: {server.log})"
            )
        if time.monotonic() > deadline:
            raise StackError(
                f"{server.name} not ready at {url} after {timeout:g}s; its log ends: {server.reason()} "
                f"(log: {server.log})"
            )
        time.sleep(0.05)


def start_server(
    name: str,
    argv: Callable[[str], Sequence[str]],
    ready_path: str,
    logdir: Path,
    cleanup: contextlib.ExitStack,
    env: dict[str, str] | None = None,
) -> Server:
    """Start `argv(address)` on a free port of 127.0.0.1 and wait until `ready_path` answers. The stop is
    registered on `cleanup` first. Another port is tried when the process exits because the port was
    taken in between (another program got it after `free_port` found it free), up to PORT_TRIES times."""
    for _ in range(PORT_TRIES):
        address = f"127.0.0.1:{free_port()}"
        server = Server.start(name, argv(address), logdir / f"{name}.log", address, env)
        cleanup.callback(server.stop)
        try:
            wait_ready(server, f"{server.url}{ready_path}")
        except StackError:
            if server.alive() or not server.port_taken():
                raise
            continue
        return server
    raise StackError(
        f"{name} found no port to listen on: {PORT_TRIES} free ports of 127.0.0.1 were each taken before it "
        f"could listen (log: {logdir / f'{name}.log'})"
    )


PORT_TRIES = 3


def prometheus_argv(binary: str, config: Path, storage: Path, *extra: str) -> Callable[[str], list[str]]:
    """Prometheus on one address, with /-/reload on (`--web.enable-lifecycle`)."""
    return lambda address: [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={storage}",
        f"--web.listen-address={address}",
        "--web.enable-lifecycle",
        *extra,
    ]


def alertmanager_argv(binary: str, config: Path, storage: Path) -> Callable[[str], list[str]]:
    """Alertmanager on one address, gossip off (`--cluster.listen-address=` empty)."""
    return lambda address: [
        binary,
        f"--config.file={config}",
        f"--storage.path={storage}",
        f"--web.listen-address={address}",
        "--cluster.listen-address=",
    ]
