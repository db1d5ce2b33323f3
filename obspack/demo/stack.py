"""The whole chain on 127.0.0.1: fake vLLM pods, their obspack exporter sidecars, the Kubernetes-side
exporters of their nodes (cAdvisor, kube-state-metrics, dcgm-exporter), real Prometheus and Alertmanager,
and a webhook receiver standing in for pager, chat and ticket integrations.

`Stack.start()` renders the pack with `obspack render` from a config with short `for` durations
(`e2e_config`), points Prometheus at the rendered rule files and Alertmanager at the rendered example
config (receivers plugged into the local webhook, grouping timers shortened), and waits until every
server answers. Prometheus scrapes and evaluates every `interval` seconds (5 by default, like a real
server's scrape and rule intervals, only shorter). `stop()` stops everything it started, also after a
failed start.

Kubernetes is simulated the way Prometheus sees it:
- vLLM and exporter targets come from file-based service discovery, with the `namespace`, `pod`,
  `container` and cluster labels Kubernetes discovery would add; `add_pod` writes a new pod's targets,
  and Prometheus picks them up as it would a new pod. A LeaderWorkerSet worker has neither: only its
  group's leader serves vLLM's /metrics.
- The nodes' cAdvisor, kube-state-metrics (two HA replicas) and dcgm-exporter are fake_k8s.FakeSources,
  scraped as kube-prometheus-stack does: cAdvisor and kube-state-metrics with `honor_labels: true`,
  dcgm-exporter on gpu-node-a with `honor_labels: true` (workload in `pod`) and on gpu-node-b with the
  chart's default `false` (workload in `exported_pod`), both with the exporter pod's own target labels.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from obspack.config import ObspackConfig
from obspack.conventions import MARKER
from obspack.demo.clients import GONE, Alertmanager, AlertTrack, Change, Watcher, wait_until
from obspack.demo.fake_epp import FakeEPP
from obspack.demo.fake_k8s import (
    LWS_GROUP_INDEX,
    LWS_NAME,
    LWS_WORKER_INDEX,
    PREALLOCATED,
    Cluster,
    FakeSources,
)
from obspack.demo.fake_vllm import DEFAULT_MODEL, FakeVLLM, Load
from obspack.demo.processes import (
    Server,
    StackError,
    alertmanager_argv,
    prometheus_argv,
    require,
    start_server,
)
from obspack.demo.prometheus import Prometheus
from obspack.demo.webhook import WebhookReceiver
from obspack.demo.workdir import claim, write_own

T = TypeVar("T")

CLUSTER = "e2e"
NAMESPACE = "llm-serving"
VLLM_JOB = "vllm"
EXPORTER_JOB = "obspack-exporter"
EPP_JOB = "llm-d-epp"  # the endpoint picker of the stack's InferencePool, when it has one (`Stack.epp_pool`)
RUNBOOK_BASE_URL = "https://runbooks.example.com/obspack"

INTERVAL_S = 5  # scrape and rule evaluation interval of the stack
# Nodes of the simulated cluster and how their dcgm-exporter is scraped (honor_labels).
NODES = {"gpu-node-a": True, "gpu-node-b": False}
KSM_REPLICAS = ("10.0.0.11:8080", "10.0.0.12:8080")
DCGM_JOB = {True: "nvidia-dcgm-exporter-honor", False: "nvidia-dcgm-exporter"}


def e2e_config(interval_s: int = INTERVAL_S) -> str:
    """The obspack config of the demo: every `for` cut to two evaluations (the exporter's alert to four:
    the exporter sees a dead engine before Prometheus' own scrape does, 7.4 s before at a 5 s interval in
    one loaded run, and its alert must not fire in that gap, before its rule sees vLLM down), rule groups
    and scrapes on the stack's interval, and the config-driven windows cut to fit a short run (the restart
    windows to 45s: at least `for` plus two rule evaluations; the prefix-cache hit rate's to six scrapes).
    The recording rules' fixed 5m windows need no change: a rate has its two samples after two scrapes."""
    two, four = f"{2 * interval_s}s", f"{4 * interval_s}s"
    return f"""\
# obspack config of the end-to-end demo: short `for` durations so alerts fire within seconds.
selectors:
  vllm: job="{VLLM_JOB}"
  exporter: job="{EXPORTER_JOB}"
  cadvisor: job="kubelet", metrics_path="/metrics/cadvisor"
  kube_state_metrics: job="kube-state-metrics"
  dcgm: job=~"{DCGM_JOB[False]}|{DCGM_JOB[True]}"
rule_interval: {interval_s}s
scrape_interval: {interval_s}s
runbook_base_url: {RUNBOOK_BASE_URL}
alerts:
  VLLMHostMemoryNearLimit: {{for: {two}}}
  VLLMContainerOOMKilled: {{window: 45s}}  # `for` plus two rule evaluations is the least; a margin for the run
  VLLMContainerRestarted: {{window: 45s}}
  VLLMGPUMemoryNearFull: {{for: {two}}}
  VLLMKVCacheUsageHigh: {{for: {two}}}
  VLLMKVCacheUsageCritical: {{for: {two}}}
  VLLMRequestQueueBacklog: {{for: {two}}}
  VLLMZeroThroughput: {{for: {two}, window: {4 * interval_s}s, labels: {{team: ml-platform}}}}
  VLLMTargetDown: {{for: {two}, lookback: 10m}}
  VLLMRequestPreemptions: {{for: {two}}}
  VLLMPrefixCacheHitRateLow: {{for: {two}, window: {6 * interval_s}s}}
  VLLMKVCacheFragmentationHigh: {{for: {two}}}
  VLLMCUDAAllocatorFragmentationHigh: {{for: {two}}}
  ObspackExporterTargetDown: {{for: {four}}}  # longer than the exporter sees vLLM down before Prometheus does
  InferenceGatewayPickerDown: {{for: {two}}}
  InferencePoolNoReadyEndpoints: {{for: {two}}}
slos: {{enabled: false}}  # the SLO burn has its own live test (tests/e2e/test_slo_burn.py)
"""


E2E_CONFIG = e2e_config()


@dataclass(frozen=True)
class Tools:
    prometheus: str
    alertmanager: str

    @classmethod
    def find(cls) -> Tools:
        """The Debian (or upstream) binaries on PATH; StackError naming the package when one is missing."""
        return cls(*require("prometheus", "alertmanager"))


@dataclass(frozen=True)
class PodSpec:
    """One simulated vLLM pod: its name, the load its engine starts with, its node and GPUs, and its place in
    the service: one side of a disaggregated prefill/decode pair, or a pod of a LeaderWorkerSet group."""

    name: str
    load: Load  # of every engine; a LeaderWorkerSet worker serves none (its load is not read)
    namespace: str = NAMESPACE
    node: str = "gpu-node-a"
    gpus: int = 1
    vram: float = PREALLOCATED  # framebuffer used / total on its GPUs at start
    engines: int = 1  # data-parallel engines behind its API server
    model: str = DEFAULT_MODEL
    role: str = ""  # "prefill" or "decode" on a disaggregated pair: llm-d's role label on the pod
    kv_connector: str = ""  # the connector the pair's KV goes over ("nixl"), with `role`
    lws: tuple[str, int] | None = None  # (LeaderWorkerSet, worker index) in group 0: 0 leads, others work

    @property
    def worker(self) -> bool:
        """A LeaderWorkerSet worker: GPUs and host RAM, no vLLM /metrics and no exporter sidecar."""
        return self.lws is not None and self.lws[1] > 0

    @property
    def owner(self) -> tuple[str, str]:
        """Its owner as kube-state-metrics shows it: LWS runs its leaders in a StatefulSet named after it, and
        each group's workers in one named after their leader pod; ("", ""): a Deployment's ReplicaSet."""
        if self.lws is None:
            return ("", "")
        name, index = self.lws
        return ("StatefulSet", f"{name}-0" if index else name)

    def labels(self, role_label: str) -> dict[str, str]:
        """Its Kubernetes labels that kube-state-metrics is allowed to show (`role_label`: llm-d's)."""
        labels = {role_label: self.role} if self.role and role_label else {}
        if self.lws is not None:
            labels |= {LWS_NAME: self.lws[0], LWS_GROUP_INDEX: "0", LWS_WORKER_INDEX: str(self.lws[1])}
        return labels


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
    rule_files: list[Path], alertmanager: str, sources: str, targets: Path, cluster: tuple[str, str], interval_s: int,
    epp: str = "",
) -> dict[str, Any]:
    """Scrape every target and evaluate rules every `interval_s`; vLLM and exporter targets from files, and
    the endpoint picker at `epp` (HOST:PORT) if there is one, as the router chart's ServiceMonitor does."""

    def static(job: str, honor: bool, entries: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "job_name": job,
            "honor_labels": honor,
            "static_configs": [{"targets": [sources], "labels": {cluster[0]: cluster[1], **e}} for e in entries],
        }

    def discovered(job: str) -> dict[str, Any]:
        return {"job_name": job, "file_sd_configs": [{"files": [str(targets / f"{job}.yml")], "refresh_interval": "5s"}]}

    exporter_pod = {"namespace": "gpu-operator", "container": "nvidia-dcgm-exporter"}
    interval = f"{interval_s}s"
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": f"{interval_s * 800}ms", "evaluation_interval": interval},
        "rule_files": [str(p) for p in rule_files],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [
            discovered(VLLM_JOB),
            discovered(EXPORTER_JOB),
            static("kubelet", True, [
                {"__metrics_path__": f"/nodes/{node}/metrics/cadvisor", "metrics_path": "/metrics/cadvisor",
                 "node": node, "instance": f"{node}:10250"}
                for node in NODES
            ]),
            static("kube-state-metrics", True, [
                {"__metrics_path__": "/kube-state-metrics/metrics", "instance": replica} for replica in KSM_REPLICAS
            ]),
            *(
                static(DCGM_JOB[honor], honor, [{
                    "__metrics_path__": f"/nodes/{node}/dcgm", "instance": f"{node}:9400",
                    "pod": f"nvidia-dcgm-exporter-{node}", **exporter_pod,
                }])
                for node, honor in NODES.items()
            ),
            *([{
                "job_name": EPP_JOB,
                "static_configs": [{"targets": [epp], "labels": {
                    cluster[0]: cluster[1], "namespace": NAMESPACE, "pod": f"{EPP_JOB}-0", "container": "epp"}}],
            }] if epp else []),
        ],
    }  # fmt: skip


@dataclass
class Stack:
    """Everything of one run. Use `with Stack(...) as stack:` or call start() and stop()."""

    workdir: Path
    pods: list[PodSpec]
    tools: Tools
    interval_s: int = INTERVAL_S
    config: str = ""  # the obspack config; empty: e2e_config(interval_s)
    epp_pool: str = ""  # an InferencePool of that name routes to every pod, through a fake endpoint picker
    epp: FakeEPP | None = None
    cluster: Cluster = field(default_factory=Cluster)
    fakes: dict[str, FakeVLLM] = field(default_factory=dict)
    exporters: dict[str, Server] = field(default_factory=dict)
    servers: list[Server] = field(default_factory=list)
    sources: FakeSources | None = None
    webhook: WebhookReceiver | None = None
    watcher: Watcher | None = None
    prometheus: Prometheus | None = None
    alertmanager: Alertmanager | None = None
    pack: Path | None = None
    warm_at: float | None = None  # watcher time at which every pod had two samples (see wait_for_data)
    waiting: tuple[str, float] | None = None  # what the stack waits for now, since when (time.monotonic())
    _cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __post_init__(self) -> None:
        self.config = self.config or e2e_config(self.interval_s)

    # --- lifecycle ----------------------------------------------------------------------------------

    @functools.cached_property
    def settings(self) -> ObspackConfig:
        """The obspack config the stack renders, parsed once."""
        return ObspackConfig.model_validate(yaml.safe_load(self.config) or {})

    @property
    def cluster_label(self) -> str:
        return self.settings.cluster_label

    @property
    def role_label(self) -> str:
        return self.settings.disaggregation.role_label

    @property
    def targets(self) -> Path:
        return self.workdir / "targets"

    def start(self, *, watch: bool = True, on_change: Callable[[Change], None] | None = None) -> Stack:
        try:
            claim(self.workdir)
            self.targets.mkdir(exist_ok=True)
            self.pack = self.render()
            self.webhook = WebhookReceiver()
            self._cleanup.callback(self.webhook.stop)
            self.sources = FakeSources(self.cluster)
            self._cleanup.callback(self.sources.stop)
            self.alertmanager = Alertmanager(f"http://{self._start_alertmanager().address}")
            for pod in self.pods:
                self._start_pod(pod)
            self._write_targets()
            if self.epp_pool:
                self.epp = FakeEPP(self.epp_pool, DEFAULT_MODEL, lambda: list(self.fakes.items()))
                self._cleanup.callback(self.take_down_epp)
            self.prometheus = Prometheus(self._start_prometheus().url)
            self._cleanup.callback(self.prometheus.close)
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
        write_own(config, f"# {MARKER} demo: the config it renders the pack from.\n{self.config}")
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

    def add_pod(self, pod: PodSpec) -> float:
        """A new pod appears: its engine, its exporter sidecar, its series on its node's exporters, and its
        targets for discovery. Returns the wall-clock time (time.time()) at which its series appeared."""
        self._start_pod(pod)
        self.pods.append(pod)
        self._write_targets()
        return time.time()

    def _start_pod(self, pod: PodSpec) -> None:
        if not pod.worker:
            fake = FakeVLLM(
                pod.load, engines=pod.engines, model_name=pod.model, role=pod.role, kv_connector=pod.kv_connector
            )
            self._cleanup.callback(fake.stop)
            self.fakes[pod.name] = fake
            self.exporters[pod.name] = self._start_exporter(pod)
        self.cluster.add(
            pod.name, pod.namespace, pod.node, pod.gpus, pod.vram,
            labels=pod.labels(self.role_label), owner=pod.owner, sidecar=not pod.worker,
        )  # fmt: skip

    def _write_targets(self) -> None:
        """The file-based discovery files of the vLLM and exporter jobs, replaced atomically."""
        pods = [p for p in self.pods if p.name in self.fakes]
        for job, address, container in (
            (VLLM_JOB, lambda p: self.fakes[p.name].address, "vllm"),
            (EXPORTER_JOB, lambda p: self.exporters[p.name].address, "obspack-exporter"),
        ):
            groups = [{"targets": [address(p)], "labels": self.labels(p, container)} for p in pods]
            tmp = self.targets / f".{job}.yml"
            write_own(tmp, f"# {MARKER} demo\n{json.dumps(groups, indent=1)}\n")  # JSON is YAML
            tmp.replace(self.targets / f"{job}.yml")

    def _start_alertmanager(self) -> Server:
        assert self.pack is not None and self.webhook is not None
        example = yaml.safe_load(
            (self.pack / "alertmanager" / "alertmanager.yaml").read_text(encoding="utf-8")
        )
        path = self.workdir / "alertmanager.yml"
        config = yaml.safe_dump(local_alertmanager_config(example, self.webhook), sort_keys=False)
        write_own(path, f"# {MARKER} demo\n{config}")
        argv = alertmanager_argv(self.tools.alertmanager, path, self.workdir / "alertmanager-data")
        return self._track(start_server("alertmanager", argv, "/-/ready", self.workdir, self._cleanup))

    def _start_exporter(self, pod: PodSpec) -> Server:
        """The pod's obspack exporter sidecar, started and waited for like Prometheus and Alertmanager: on a
        free port, tried again on another when that port is taken before the exporter listens."""

        def argv(address: str) -> list[str]:
            return [
                sys.executable, "-m", "obspack", "exporter",
                "--target", self.fakes[pod.name].url, "--listen", address, "--timeout", "500ms",
            ]  # fmt: skip

        env = {**os.environ, "OBSPACK_LOG_LEVEL": "WARNING"}
        server = start_server(f"exporter-{pod.name}", argv, "/healthz", self.workdir, self._cleanup, env)
        return self._track(server)

    def _start_prometheus(self) -> Server:
        assert self.pack is not None and self.alertmanager is not None and self.sources is not None
        rules = [self.pack / "prometheus" / "recording-rules.yaml", self.pack / "prometheus" / "alerts.yaml"]
        am_address = self.alertmanager.url.removeprefix("http://")
        config = prometheus_config(
            rules, am_address, self.sources.address, self.targets, (self.cluster_label, CLUSTER), self.interval_s,
            self.epp.address if self.epp else "",
        )
        path = self.workdir / "prometheus.yml"
        write_own(path, f"# {MARKER} demo\n{yaml.safe_dump(config, sort_keys=False)}")
        argv = prometheus_argv(self.tools.prometheus, path, self.workdir / "prometheus-data")
        return self._track(start_server("prometheus", argv, "/-/ready", self.workdir, self._cleanup))

    def _track(self, server: Server) -> Server:
        self.servers.append(server)
        return server

    # --- steering: each returns the wall-clock time of the change, for lag measurements ----------------

    def set_load(self, pod: str, load: Load, engine: int | None = None) -> float:
        """Give a pod's engines (or the one of that rank) a new load (and bring it back up if it was down)."""
        self.fakes[pod].set(load, engine)
        self.fakes[pod].down = False
        return time.time()

    def take_down(self, pod: str) -> float:
        """The pod's vLLM answers 503 from now on, to Prometheus and to its exporter alike."""
        self.fakes[pod].down = True
        return time.time()

    def take_down_epp(self) -> float:
        """The endpoint picker stops: its target refuses connections from now on."""
        if self.epp is not None:
            self.epp.stop()
            self.epp = None
        return time.time()

    def set_host_memory(self, pod: str, ratio: float) -> float:
        """The vLLM container's host-RAM working set, as a share of its memory limit (cAdvisor)."""
        self.cluster.set_host_memory(pod, ratio)
        return time.time()

    def set_vram(self, pod: str, ratio: float) -> float:
        """Framebuffer used / total on each GPU the pod holds (dcgm-exporter)."""
        self.cluster.set_vram(pod, ratio)
        return time.time()

    def terminate(self, pod: str, reason: str, exit_code: int) -> float:
        """The vLLM container ended and restarted (kube-state-metrics: restarts, last terminated reason)."""
        self.cluster.terminate(pod, reason, exit_code)
        return time.time()

    # --- waiting ------------------------------------------------------------------------------------

    @property
    def wait_s(self) -> float:
        """How long a wait for a state of the stack lasts unless told: a dozen intervals, at least 30 s."""
        return max(30, 12 * self.interval_s)

    def wait_until(self, check: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
        """clients.wait_until, with `what` shown in `waiting` meanwhile (the demo prints it when quiet)."""
        self.waiting = (what, time.monotonic())
        try:
            return wait_until(check, timeout, what, interval)
        finally:
            self.waiting = None

    def sleep_scrape(self) -> None:
        """Wait one scrape interval, so that the next change lands in another scrape."""
        time.sleep(self.interval_s)

    def wait_for_data(self, timeout: float | None = None) -> float:
        """Wait until every pod that serves vLLM has rates (two scrapes) from vLLM and from its exporter,
        and every pod (LeaderWorkerSet workers too) its GPU attribution, then until the rules have run twice
        on them; return the seconds waited."""
        assert self.prometheus is not None
        prometheus = self.prometheus
        pods = {p.name for p in self.pods}
        serving = {p.name for p in self.pods if not p.worker}
        started = time.monotonic()

        def ready() -> bool:
            found = [
                (prometheus.query("namespace_pod_model:vllm_generation_tokens:rate5m"), serving),
                (prometheus.query(f'obspack_target_up{{job="{EXPORTER_JOB}"}} == 1'), serving),
                (prometheus.query("namespace_pod_model:vllm_gpu:count"), pods),
            ]
            return all({r["metric"]["pod"] for r in rows} >= want for rows, want in found)

        self.wait_until(ready, timeout or self.wait_s, "the first scrapes of every pod")
        time.sleep(2.5 * self.interval_s)  # two rule evaluations on two samples: one-sample verdicts cleared
        if self.watcher is not None:
            self.warm_at = time.monotonic() - self.watcher.started
        return time.monotonic() - started

    def wait_alert(
        self, source: str, alertname: str, pod: str, state: str, timeout: float | None = None
    ) -> AlertTrack:
        """Wait until the watcher sees the pod's alert in `state` in `source`; its track then."""
        watcher = self.watcher
        assert watcher is not None, "start the stack with watch=True"
        what = f"{alertname} on {pod} to be {state} in {source}"
        self.wait_until(lambda: watcher.state(source, alertname, pod=pod) == state, timeout or self.wait_s, what)
        track = watcher.track(source, alertname, pod=pod)
        if track is None:  # only possible for the 'gone' states, which need no details
            assert state == GONE[source]
            return AlertTrack(source, {"alertname": alertname, "pod": pod})
        return track

    def first_firing(self, alertname: str, pod: str, since: float) -> float | None:
        """The evaluation time (Unix seconds) at which the pod's alert first fired after `since`, read from
        Prometheus' own ALERTS series; None if it has not fired."""
        assert self.prometheus is not None
        series = f'ALERTS{{alertname="{alertname}", pod="{pod}", alertstate="firing"}}'
        window = max(1, int(time.time() - since) + 2)
        rows = self.prometheus.query(f"min(min_over_time((timestamp({series}) >= {since:.3f})[{window}s:1s]))")
        return float(rows[0]["value"][1]) if rows else None

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
