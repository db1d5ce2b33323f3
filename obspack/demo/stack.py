"""The whole chain on 127.0.0.1: fake vLLM pods, their obspack exporter sidecars, real Prometheus and
Alertmanager, and a webhook receiver standing in for pager, chat and ticket integrations.

`Stack.start()` renders the pack with `obspack render` from a config with short `for` durations
(`E2E_CONFIG`), points Prometheus at the rendered rule files and Alertmanager at the rendered example
config (receivers plugged into the local webhook, grouping timers shortened), and waits until every
server answers. `stop()` stops everything it started, also after a failed start.

Kubernetes is simulated with static target labels: each fake pod's targets carry `namespace`, `pod`,
`container` and the cluster label, as Prometheus' Kubernetes service discovery would add them.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from obspack.demo.clients import (
    GONE,
    Alertmanager,
    AlertTrack,
    Change,
    Prometheus,
    Watcher,
    is_ready,
    wait_until,
)
from obspack.demo.fake_vllm import FakeVLLM, Load
from obspack.demo.webhook import WebhookReceiver
from obspack.errors import ObspackError

CLUSTER = "e2e"
NAMESPACE = "llm-serving"
VLLM_JOB = "vllm"
EXPORTER_JOB = "obspack-exporter"
RUNBOOK_BASE_URL = "https://runbooks.example.com/obspack"

# The obspack config of the demo: every `for` shortened so that an incident fires within seconds, the
# rule groups evaluated every second, and the config-driven windows cut to fit a short run. The fixed
# 5m windows of the recording rules need no change: at a 1s scrape they have two samples after a second.
E2E_CONFIG = f"""\
# obspack config of the end-to-end demo: short `for` durations so alerts fire within seconds.
selectors:
  vllm: job="{VLLM_JOB}"
  exporter: job="{EXPORTER_JOB}"
rule_interval: 1s
scrape_interval: 1s
runbook_base_url: {RUNBOOK_BASE_URL}
alerts:
  VLLMHostMemoryNearLimit: {{for: 3s}}
  VLLMGPUMemoryNearFull: {{for: 3s}}
  VLLMKVCacheUsageHigh: {{for: 2s}}
  VLLMKVCacheUsageCritical: {{for: 2s}}
  VLLMRequestQueueBacklog: {{for: 2s}}
  VLLMZeroThroughput: {{for: 3s, window: 10s, labels: {{team: ml-platform}}}}
  VLLMTargetDown: {{for: 2s, lookback: 10m}}
  VLLMRequestPreemptions: {{for: 3s}}
  VLLMPrefixCacheHitRateLow: {{for: 3s, window: 1m}}
  VLLMKVCacheFragmentationHigh: {{for: 3s}}
  VLLMCUDAAllocatorFragmentationHigh: {{for: 3s}}
  ObspackExporterTargetDown: {{for: 4s}}  # longer than VLLMTargetDown, which inhibits it
"""


class StackError(ObspackError):
    """A server of the demo stack could not start; the message says which and shows its log."""


@dataclass(frozen=True)
class Tools:
    prometheus: str
    alertmanager: str

    @classmethod
    def find(cls) -> Tools:
        """The Debian (or upstream) binaries on PATH; StackError naming the package when one is missing."""
        prometheus = shutil.which("prometheus")
        alertmanager = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
        missing = [
            pkg
            for pkg, path in (("prometheus", prometheus), ("prometheus-alertmanager", alertmanager))
            if not path
        ]
        if missing:
            raise StackError(
                f"{' and '.join(missing)} not found: apt-get install {' '.join(missing)} (or run scripts/install-test-tools.sh)"
            )
        return cls(str(prometheus), str(alertmanager))


@dataclass(frozen=True)
class PodSpec:
    """One simulated vLLM pod: its name and the load its engine starts with."""

    name: str
    load: Load
    namespace: str = NAMESPACE


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGTERM when the parent dies, so a killed test run (say, a
    hard timeout) leaves no server behind. Elsewhere nothing happens."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A child process with its log file; `stop()` sends SIGTERM, then SIGKILL after 5 s."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    address: str  # 127.0.0.1:PORT

    @classmethod
    def start(
        cls, name: str, argv: list[str], log: Path, address: str, env: dict[str, str] | None = None
    ) -> Server:
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603 (argv built here)
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # Ctrl-C reaches the demo, which stops the servers in order
                preexec_fn=_die_with_parent,  # only calls prctl
            )
        return cls(name, process, log, address)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def wait_ready(server: Server, url: str, timeout: float = 15.0) -> None:
    """Wait until `url` answers; StackError with the log's end if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while not is_ready(url):
        if not server.alive():
            raise StackError(f"{server.name} exited with {server.process.returncode}:\n{server.tail()}")
        if time.monotonic() > deadline:
            raise StackError(f"{server.name} not ready at {url} after {timeout:g}s:\n{server.tail()}")
        time.sleep(0.05)


def start_server(
    name: str, argv: Callable[[str], list[str]], ready_path: str, logdir: Path, cleanup: contextlib.ExitStack
) -> Server:
    """Start `argv(address)` on a free port of 127.0.0.1 and wait until `ready_path` answers. The stop is
    registered on `cleanup` first, so the process is stopped even when it never gets ready. Another port
    is tried when the process dies at once (the port was taken in between)."""
    for attempt in range(3):
        address = f"127.0.0.1:{free_port()}"
        server = Server.start(name, argv(address), logdir / f"{name}.log", address)
        cleanup.callback(server.stop)
        try:
            wait_ready(server, f"http://{address}{ready_path}")
        except StackError:
            if attempt == 2 or server.alive():
                raise
            continue
        return server
    raise AssertionError("unreachable")


def alertmanager_argv(binary: str, config: Path, storage: Path) -> Callable[[str], list[str]]:
    """Alertmanager on one address, gossip off (`--cluster.listen-address=` empty)."""
    return lambda address: [
        binary,
        f"--config.file={config}",
        f"--storage.path={storage}",
        f"--web.listen-address={address}",
        "--cluster.listen-address=",
    ]


def prometheus_argv(binary: str, config: Path, storage: Path) -> Callable[[str], list[str]]:
    return lambda address: [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={storage}",
        f"--web.listen-address={address}",
        "--web.enable-lifecycle",
    ]


def local_alertmanager_config(example: dict[str, Any], webhook: WebhookReceiver) -> dict[str, Any]:
    """The rendered example with every receiver plugged into the webhook and grouping timers shortened.

    This is what a user does with the example: add integrations to the placeholder receivers. Routes and
    inhibitions stay as rendered.
    """
    config = copy.deepcopy(example)
    config["route"].update({"group_wait": "1s", "group_interval": "1s"})
    for receiver in config["receivers"]:
        receiver["webhook_configs"] = [{"url": webhook.url_for(receiver["name"]), "send_resolved": True}]
    return config


def prometheus_config(
    rule_files: list[Path],
    alertmanager: str,
    vllm: list[tuple[str, dict[str, str]]],
    exporters: list[tuple[str, dict[str, str]]],
) -> dict[str, Any]:
    """Scrape every target each second with its pod's labels; evaluate rules each second."""

    def job(name: str, targets: list[tuple[str, dict[str, str]]]) -> dict[str, Any]:
        return {
            "job_name": name,
            "static_configs": [{"targets": [addr], "labels": labels} for addr, labels in targets],
        }

    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [job(VLLM_JOB, vllm), job(EXPORTER_JOB, exporters)],
    }


@dataclass
class Stack:
    """Everything of one run. Use `with Stack(...) as stack:` or call start() and stop()."""

    workdir: Path
    pods: list[PodSpec]
    tools: Tools
    config: str = E2E_CONFIG
    fakes: dict[str, FakeVLLM] = field(default_factory=dict)
    exporters: dict[str, Server] = field(default_factory=dict)
    servers: list[Server] = field(default_factory=list)
    webhook: WebhookReceiver | None = None
    watcher: Watcher | None = None
    prometheus: Prometheus | None = None
    alertmanager: Alertmanager | None = None
    pack: Path | None = None
    warm_at: float | None = None  # watcher time at which every pod had two samples (see wait_for_data)
    _cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    # --- lifecycle ----------------------------------------------------------------------------------

    @property
    def cluster_label(self) -> str:
        return str((yaml.safe_load(self.config) or {}).get("cluster_label", "cluster"))

    def start(self, *, watch: bool = True, on_change: Callable[[Change], None] | None = None) -> Stack:
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.pack = self.render()
            self.webhook = WebhookReceiver()
            self._cleanup.callback(self.webhook.stop)
            for pod in self.pods:
                fake = FakeVLLM(pod.load)
                self._cleanup.callback(fake.stop)
                self.fakes[pod.name] = fake
            self.alertmanager = Alertmanager(f"http://{self._start_alertmanager().address}")
            for pod in self.pods:
                self.exporters[pod.name] = self._start_exporter(pod)
            for exporter in self.exporters.values():
                wait_ready(exporter, f"http://{exporter.address}/healthz")
            self.prometheus = Prometheus(f"http://{self._start_prometheus().address}")
            if watch:
                self.watcher = Watcher(self.prometheus, self.alertmanager, on_change=on_change)
                self._cleanup.callback(self.watcher.stop)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every server and thread started, newest first. Safe to call twice."""
        self._cleanup.close()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- steps --------------------------------------------------------------------------------------

    def render(self) -> Path:
        """Write the config and run `obspack render` on it, as a user would."""
        config = self.workdir / "obspack.yaml"
        config.write_text(self.config, encoding="utf-8")
        out = self.workdir / "pack"
        run = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "obspack", "render", "--config", str(config), "--out", str(out)],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            raise StackError(f"obspack render failed:\n{run.stderr or run.stdout}")
        return out

    def labels(self, pod: PodSpec, container: str) -> dict[str, str]:
        return {
            self.cluster_label: CLUSTER,
            "namespace": pod.namespace,
            "pod": pod.name,
            "container": container,
        }

    def _start_alertmanager(self) -> Server:
        assert self.pack is not None and self.webhook is not None
        example = yaml.safe_load(
            (self.pack / "alertmanager" / "alertmanager.yaml").read_text(encoding="utf-8")
        )
        path = self.workdir / "alertmanager.yml"
        path.write_text(yaml.safe_dump(local_alertmanager_config(example, self.webhook), sort_keys=False))
        argv = alertmanager_argv(self.tools.alertmanager, path, self.workdir / "alertmanager-data")
        return self._track(start_server("alertmanager", argv, "/-/ready", self.workdir, self._cleanup))

    def _start_exporter(self, pod: PodSpec) -> Server:
        address = f"127.0.0.1:{free_port()}"
        argv = [
            sys.executable, "-m", "obspack", "exporter",
            "--target", self.fakes[pod.name].url, "--listen", address, "--timeout", "500ms",
        ]  # fmt: skip
        env = {**os.environ, "OBSPACK_LOG_LEVEL": "WARNING"}
        server = Server.start(
            f"exporter-{pod.name}", argv, self.workdir / f"exporter-{pod.name}.log", address, env
        )
        self._cleanup.callback(server.stop)
        return self._track(server)

    def _start_prometheus(self) -> Server:
        assert self.pack is not None and self.alertmanager is not None
        rules = [self.pack / "prometheus" / "recording-rules.yaml", self.pack / "prometheus" / "alerts.yaml"]
        vllm = [(self.fakes[p.name].address, self.labels(p, "vllm")) for p in self.pods]
        exporters = [(self.exporters[p.name].address, self.labels(p, "obspack-exporter")) for p in self.pods]
        am_address = self.alertmanager.url.removeprefix("http://")
        path = self.workdir / "prometheus.yml"
        path.write_text(
            yaml.safe_dump(prometheus_config(rules, am_address, vllm, exporters), sort_keys=False)
        )
        argv = prometheus_argv(self.tools.prometheus, path, self.workdir / "prometheus-data")
        return self._track(start_server("prometheus", argv, "/-/ready", self.workdir, self._cleanup))

    def _track(self, server: Server) -> Server:
        self.servers.append(server)
        return server

    # --- steering -----------------------------------------------------------------------------------

    def set_load(self, pod: str, load: Load) -> None:
        """Give a pod's engine a new load (and bring it back up if it was down)."""
        self.fakes[pod].set(load)
        self.fakes[pod].down = False

    def take_down(self, pod: str) -> None:
        """The pod's vLLM answers 503 from now on, to Prometheus and to its exporter alike."""
        self.fakes[pod].down = True

    # --- waiting ------------------------------------------------------------------------------------

    def wait_for_data(self, timeout: float = 30.0) -> float:
        """Wait until every pod has rates (two scrapes) from vLLM and from its exporter, then until the rules
        have run twice on them; return the seconds waited."""
        assert self.prometheus is not None
        prometheus = self.prometheus
        pods = {p.name for p in self.pods}
        started = time.monotonic()

        def ready() -> bool:
            rates = prometheus.query("namespace_pod_model:vllm_generation_tokens:rate5m")
            exporter = prometheus.query(f'obspack_target_up{{job="{EXPORTER_JOB}"}} == 1')
            return {r["metric"]["pod"] for r in rates} >= pods and {
                r["metric"]["pod"] for r in exporter
            } >= pods

        wait_until(ready, timeout, "the first scrapes of every pod")
        time.sleep(2.5)  # two rule evaluations on two samples: verdicts made on one sample have cleared
        if self.watcher is not None:
            self.warm_at = time.monotonic() - self.watcher.started
        return time.monotonic() - started

    def wait_alert(
        self, source: str, alertname: str, pod: str, state: str, timeout: float = 30.0
    ) -> AlertTrack:
        """Wait until the watcher sees the pod's alert in `state` in `source`; its track then."""
        watcher = self.watcher
        assert watcher is not None, "start the stack with watch=True"
        what = f"{alertname} on {pod} to be {state} in {source}"
        wait_until(lambda: watcher.state(source, alertname, pod=pod) == state, timeout, what)
        track = watcher.track(source, alertname, pod=pod)
        if track is None:  # only possible for the 'gone' states, which need no details
            assert state == GONE[source]
            return AlertTrack(source, {"alertname": alertname, "pod": pod})
        return track

    def report(self) -> str:
        """The alert timeline and the end of every log, for failure messages."""
        timeline = self.watcher.timeline() if self.watcher else "(no watcher)"
        sent = self.webhook.deliveries() if self.webhook else []
        notifications = "\n".join(
            f"  {r} {s} {labels.get('alertname')} {labels.get('pod')}" for r, s, labels in sent
        )
        return f"alert timeline:\n{timeline}\n\nnotifications:\n{notifications}\n\nlogs:\n{self.logs()}"

    def logs(self) -> str:
        """The end of every server's log, for failure messages."""
        return "\n".join(f"--- {s.name} ({s.log})\n{s.tail()}" for s in self.servers)
