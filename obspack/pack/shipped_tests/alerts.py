"""promtool unit tests of every alert, built from the config's own thresholds and label names.

They are rendered into `OUT/tests/` so users run `promtool test rules tests/*.yaml` in their own CI, and
obspack's test suite runs them for the default and a changed config. Each alert gets an incident that
must fire and quiet neighbours that must not: below the threshold, an idle model, a sticky termination
reason without a restart, the other cluster with the same pod name, production-stack's router copy,
both vLLM metric generations, both DCGM label modes.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from obspack import conventions as c
from obspack import durations
from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig
from obspack.pack.shipped_tests import sampling, satisfy
from obspack.rules import roles
from obspack.rules.alerts import alert_groups, all_alerts, enabled
from obspack.rules.model import AlertRule
from obspack.rules.recording import all_recording_groups

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
OTHER_MODEL = "Qwen/Qwen2.5-7B-Instruct"  # a quiet neighbour of an alert about models
IMAGE = "docker.io/vllm/vllm-openai:v0.33.0"
GPU_MODEL = "NVIDIA H100 80GB HBM3"
GIB = 1024**3
MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------------------
# Durations and the expected annotations (a small subset of Prometheus' Go templates)


def minutes(duration: str) -> float:
    return durations.parse_ms(duration) / 60_000


def _go_float(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def humanize(v: float) -> str:
    if v == 0 or math.isnan(v) or math.isinf(v):
        return f"{v:.4g}"
    if abs(v) >= 1:
        prefixes = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
        i = 0
        while abs(v) >= 1000 and i < len(prefixes) - 1:
            v, i = v / 1000, i + 1
        return f"{v:.4g}{prefixes[i]}"
    prefixes = ["", "m", "u", "n", "p", "f", "a", "z", "y"]
    i = 0
    while abs(v) < 1 and i < len(prefixes) - 1:
        v, i = v * 1000, i + 1
    return f"{v:.4g}{prefixes[i]}"


def expand(template: str, labels: dict[str, str], value: float) -> str:
    """Expand the template constructs obspack's annotations use; anything else is an error."""
    out = re.sub(
        r"\{\{ with \$labels\.(\w+) \}\}(.*?)\{\{ \. \}\}(.*?)\{\{ end \}\}",
        lambda m: f"{m.group(2)}{labels[m.group(1)]}{m.group(3)}" if labels.get(m.group(1)) else "",
        template,
    )
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), out)
    out = out.replace("{{ $value | humanizePercentage }}", f"{value * 100:.4g}%")
    out = out.replace("{{ $value | humanize }}", humanize(value))
    out = out.replace("{{ $value }}", _go_float(value))
    if "{{" in out:
        raise ValueError(f"template construct not supported by the test builder: {template!r}")
    return out


# ---------------------------------------------------------------------------------------------------------
# Building blocks


# A label value named inside a test's PromQL expression, resolved once the test case's values are mapped
# into what the selectors accept (satisfy.py): written by Incident.ref, read by _resolve.
_REF = re.compile("\x00([^\x01]*)\x01([^\x00]*)\x00")


@dataclass
class Incident:
    """Input series plus, per alert name, the evaluation time and the alerts expected then. Labels stay
    as written until the test case is built, where they are moved into what the selectors accept."""

    name: str
    # source, metric, labels, values, and whether labels the selector requires are added (satisfy.fill)
    series: list[tuple[str, str, dict[str, str], str, bool]] = field(default_factory=list)
    checks: list[tuple[str, str, list[tuple[dict[str, str], float]]]] = field(default_factory=list)
    samples: list[tuple[str, str, list[tuple[str, dict[str, str], float]]]] = field(default_factory=list)

    def add(self, metric: str, labels: dict[str, str], values: str, source: str = "vllm", fill: bool = True) -> None:
        """A series; `fill=False` for one whose exporter lacks a label the selector may require (the
        router's copy has no model_name): with such a selector, it stays outside, as it would live."""
        self.series.append((source, metric, dict(labels), values, fill))

    def expect(self, alert: str, at: float, firing: list[tuple[dict[str, str], float]]) -> None:
        self.checks.append((alert, f"{int(round(at))}m", firing))

    def expect_samples(self, expr: str, at: float, samples: list[tuple[str, dict[str, str], float]]) -> None:
        """What a query returns at `at`: (metric name, labels, value) per series. A label value in `expr`
        must come from `ref`, so that it follows the value's mapping."""
        self.samples.append((expr, f"{int(round(at))}m", samples))

    @staticmethod
    def ref(label: str, value: str) -> str:
        """A PromQL string literal of a label value, for `expect_samples` expressions."""
        return f"\x00{label}\x01{value}\x00"

    def in_one_cluster(self, label: str) -> Incident | None:
        """The incident without its series in other clusters than its first, for selectors that leave one
        cluster: those series only show that a twin in another cluster stays quiet, which such a config's
        rules never read. None where an alert or a sample is expected in another cluster: without it, the
        test would check something else."""
        clusters = list(dict.fromkeys(labels[label] for labels in self.labelsets() if labels.get(label)))
        if len(clusters) < 2:
            return None

        def here(labels: dict[str, str]) -> bool:
            return (labels.get(label) or clusters[0]) == clusters[0]

        expected = [labels for _, _, firing in self.checks for labels, _ in firing]
        expected += [labels for _, _, samples in self.samples for _, labels, _ in samples]
        refs = [m.group(2) for expr, _, _ in self.samples for m in _REF.finditer(expr) if m.group(1) == label]
        if not all(map(here, expected)) or any(ref != clusters[0] for ref in refs):
            return None
        kept = [item for item in self.series if here(item[2])]
        return Incident(f"{self.name} (one cluster: the selectors leave no other)", kept, self.checks, self.samples)

    def labelsets(self) -> list[dict[str, str]]:
        return [
            *(item[2] for item in self.series),
            *(labels for _, _, firing in self.checks for labels, _ in firing),
            *(labels for _, _, samples in self.samples for _, labels, _ in samples),
            *({m.group(1): m.group(2)} for expr, _, _ in self.samples for m in _REF.finditer(expr)),
        ]


def resolve(expr: str, mapping: satisfy.Mapping) -> str:
    """An expression with each `Incident.ref` replaced by the literal of its mapped value."""
    return _REF.sub(lambda m: satisfy.literal(mapping.value(m.group(1), m.group(2))), expr)


def series_text(metric: str, labels: dict[str, str]) -> str:
    """promtool's series notation, labels in the order given: `name{a="1", b="2"}`."""
    inner = ", ".join(f"{k}={_quoted(v)}" for k, v in labels.items())
    return f"{metric}{{{inner}}}"


@functools.lru_cache(maxsize=4096)
def _quoted(value: str) -> str:
    """A label value as a double-quoted string (the suite's series repeat a few hundred values thousands of times)."""
    return json.dumps(value, ensure_ascii=False)


SOURCES = ("vllm", "cadvisor", "ksm", "dcgm", "exporter", "keda", "epp")
# What a real exporter sets on its series, kept when the selectors accept it.
_EXPORTER_LABELS = {
    "ksm": {"job": "kube-state-metrics"},
    "cadvisor": {"job": "kubelet", "metrics_path": "/metrics/cadvisor"},
    "dcgm": {"job": "nvidia-dcgm-exporter"},
    "epp": {"job": "llm-d-router-epp"},
}


class Builder:
    """Series in the shape real exporters give them, with the config's cluster label and selectors."""

    def __init__(self, cfg: ObspackConfig) -> None:
        self.cfg = cfg
        s = cfg.selectors
        self.constraints = satisfy.Constraints.of(
            cfg.cluster_label,
            {"vllm": s.vllm, "cadvisor": s.cadvisor, "ksm": s.kube_state_metrics, "dcgm": s.dcgm, "exporter": s.exporter,
             "keda": s.keda, "epp": s.epp},
        )
        self.problem = ""  # why no test can be built for these selectors, if none can
        self.sel: dict[str, dict[str, str]] = {}
        for source in SOURCES:
            try:
                self.sel[source] = self.constraints.source_labels(source, _EXPORTER_LABELS.get(source, {}))
            except satisfy.Unsatisfiable as e:
                self.problem, self.sel[source] = str(e), {}
        self.image_ok = self.takes("", IMAGE)

    @property
    def usable(self) -> bool:
        return not self.problem

    def takes(self, container: str, image: str) -> bool:
        """Whether `vllm_containers` marks a container of this name (where kube-state-metrics names it) and
        this image as vLLM, as the rules read it (obspack/rules/recording/kubernetes.py); an empty name or
        image is one the series do not carry, which no regex takes."""
        v = self.cfg.vllm_containers
        by_image = bool(v.image_regex and image) and re.fullmatch(v.image_regex, image) is not None
        return by_image or bool(container and v.name_regex and re.fullmatch(v.name_regex, container))

    def fitted(self, inc: Incident) -> tuple[Incident, satisfy.Mapping]:
        """The incident and its value mapping, or where the selectors leave a single cluster, the same incident
        in one cluster (`Incident.in_one_cluster`) and its mapping; Unsatisfiable when neither fits, naming
        what the one-cluster incident still lacks where there is one."""
        try:
            return inc, self.constraints.mapping(inc.labelsets())
        except satisfy.Unsatisfiable:
            one = inc.in_one_cluster(self.cfg.cluster_label) if self.one_cluster else None
            if one is None:
                raise
        return one, self.constraints.mapping(one.labelsets())  # in one cluster, what else is missing (an engine, ...)

    @functools.cached_property
    def one_cluster(self) -> bool:
        """Whether the selectors leave a single value of the cluster label (only then is a quiet twin in a
        second cluster dropped: elsewhere the rules read other clusters, and the twin tests that)."""
        label = self.cfg.cluster_label
        try:
            self.constraints.mapping([{label: "prod-a"}, {label: "prod-b"}])
        except satisfy.Unsatisfiable:
            return True
        return False

    def finish(self, inc: Incident) -> tuple[Incident, satisfy.Mapping, list[tuple[str, str]]]:
        """The incident as it is built (`fitted`), its value mapping and its input series in promtool's
        notation; Unsatisfiable when the selectors leave too few values."""
        inc, mapping = self.fitted(inc)
        series = [
            (series_text(metric, self.filled(source, mapping.labels(labels), fill)), values)
            for source, metric, labels, values, fill in inc.series
        ]
        return inc, mapping, series

    def filled(self, source: str, labels: dict[str, str], fill: bool) -> dict[str, str]:
        return self.constraints.fill(source, labels) if fill else labels

    def where(self, cluster: str, namespace: str, pod: str, **more: str) -> dict[str, str]:
        return {self.cfg.cluster_label: cluster, "namespace": namespace, "pod": pod, **more}

    def vllm(self, inc: Incident, metric: str, where: dict[str, str], values: str, **extra: str) -> None:
        labels = {**self.sel["vllm"], **where, "model_name": MODEL, **extra}
        inc.add(metric, labels, values)

    def sleep_state(self, inc: Incident, where: dict[str, str], *spans: tuple[bool, int], **extra: str) -> None:
        """vLLM's sleep state (0.11.1+), span by span (awake or not, promtool's `xN`): `awake` reads 1, or 0
        while the engine sleeps, when the level it sleeps at (here 1, weights_offloaded) reads 1."""
        for state, when in (("awake", True), ("weights_offloaded", False), ("discard_all", None)):
            values = " ".join(f"{int(awake == when)}x{k}" for awake, k in spans)
            self.vllm(inc, f.SLEEP_STATE, where, values, sleep_state=state, **extra)

    def lws_group(self, inc: Incident, cluster: str, namespace: str, leader: str, duration: int, workers: int = 1) -> list[
            dict[str, str]]:
        """A LeaderWorkerSet group as kube-state-metrics (two HA replicas) shows it: the leader owned by the
        set's StatefulSet, each worker by the StatefulSet named after the leader. The leader's vLLM series
        are the caller's; returns where each worker is."""
        group = leader.rsplit("-", 1)[0]
        owners = [(leader, group), *((f"{leader}-{i}", leader) for i in range(1, workers + 1))]
        for pod, owner in owners:
            for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):
                self.ksm(inc, "kube_pod_owner", {**self.where(cluster, namespace, pod), "instance": replica,
                         "owner_kind": "StatefulSet", "owner_name": owner, "owner_is_controller": "true",
                         "uid": f"uid-{pod}"}, f"1x{duration}")
        return [self.where(cluster, namespace, pod) for pod, _ in owners[1:]]

    def vllm_container(self, inc: Incident, where: dict[str, str], container: str, duration: int) -> None:
        """Mark a container as vLLM: by its image when the config's regex takes it, else by its metrics."""
        if self.image_ok:
            labels = {**self.sel["ksm"], **where, "container": container, "image": IMAGE}
            inc.add("kube_pod_container_info", labels, f"1x{duration}", source="ksm")
        else:
            self.vllm(inc, "vllm:num_requests_running", {**where, "container": container}, f"1x{duration}")

    def ksm(self, inc: Incident, metric: str, labels: dict[str, str], values: str) -> None:
        inc.add(metric, {"job": "kube-state-metrics", **self.sel["ksm"], **labels}, values, source="ksm")

    def cadvisor(self, inc: Incident, metric: str, labels: dict[str, str], values: str) -> None:
        inc.add(metric, {"metrics_path": "/metrics/cadvisor", **self.sel["cadvisor"], **labels}, values, source="cadvisor")

    def dcgm(self, inc: Incident, metric: str, labels: dict[str, str], values: str) -> None:
        gpu = {"device": "nvidia0", "modelName": GPU_MODEL, "pci_bus_id": "00000000:18:00.0"}
        node = labels.get("Hostname") or labels.get("hostname", "")
        where = {"instance": f"{node}:9400", "job": "nvidia-dcgm-exporter"}
        inc.add(metric, {**where, **self.sel["dcgm"], **gpu, **labels}, values, source="dcgm")

    def exporter(self, inc: Incident, metric: str, labels: dict[str, str], values: str) -> None:
        inc.add(metric, {**self.sel["exporter"], "container": "obspack-exporter", **labels}, values, source="exporter")

    def keda(self, inc: Incident, metric: str, labels: dict[str, str], values: str) -> None:
        inc.add(metric, {"job": "keda-operator", **self.sel["keda"], **labels}, values, source="keda")

    def hpa(self, inc: Incident, metric: str, cluster: str, namespace: str, name: str, values: str,
            replicas: int = 2, **extra: str) -> None:
        """A kube-state-metrics HPA series (KEDA's HPA is one too), from both HA replicas (or the first)."""
        for replica in ("10.96.0.20:8080", "10.96.0.21:8080")[:replicas]:
            labels = {self.cfg.cluster_label: cluster, "namespace": namespace, "horizontalpodautoscaler": name,
                      "instance": replica, **extra}
            self.ksm(inc, metric, labels, values)

    def role_label(self, inc: Incident, where: dict[str, str], value: str, n: int) -> None:
        """llm-d's role label on a pod, as kube-state-metrics exports it (from both HA replicas); nothing
        when the config reads no role label."""
        if not self.cfg.disaggregation.role_label:
            return
        for replica in ("10.96.0.20:8080", "10.96.0.21:8080"):
            labels = {**where, "uid": f"uid-{where['pod']}", "instance": replica,
                      roles.ksm_label(self.cfg.disaggregation.role_label): value}
            self.ksm(inc, "kube_pod_labels", labels, f"1x{n}")

    def role(self, pod: str, label: str = "", named: bool = True) -> str:
        """The role obspack's rules give a pod (obspack/rules/roles.py): its role label's where the config
        reads one and the pod has it, else its name's where its vLLM gauges name it (`named`), else none."""
        d = self.cfg.disaggregation
        # a name the selectors do not accept is replaced in the test case: its role can no longer be told
        named = named and satisfy.accepts(pod, self.constraints.families.get("pod", ()))
        if d.role_label and label:
            return next((role for role, values in roles.VALUES.items() if label in values), "")
        hits = {role: bool(rx) and named and re.fullmatch(rx, pod) is not None
                for role, rx in (("prefill", d.prefill_pod_regex), ("decode", d.decode_pod_regex))}
        return next((role for role, hit in hits.items() if hit and sum(hits.values()) == 1), "")

    def with_role(self, labels: dict[str, str], role: str) -> dict[str, str]:
        """An expected alert's labels with the `role` the role-aware alerts add (none for a pod doing both)."""
        return {**labels, "role": role} if role else labels


# One evaluation interval (the tests' 1m): the one rule-group boundary allowed between raw series and an alert.
HOP = 1
# promtool's unit-test engine stops a query that holds more samples than this at once (Prometheus' own
# default is 50 million): an incident read over a long window must keep its series under it
PROMTOOL_QUERY_SAMPLES = 10_000


def on_time(onset: float, for_: str) -> float:
    """When an alert must be firing: `onset` is the first evaluation (minutes) at which its condition holds
    on the raw series, then `for`, then one evaluation for the group boundary. The tests pass with the
    rule groups evaluated in either order; a hidden second hop would make them fail."""
    return onset + math.ceil(minutes(for_)) + HOP


def _climbing(per_second: float, window: str, times: float, least: int) -> int:
    """A counter's increase per minute for which a rate over `window` reads `times` the `per_second` floor
    from minute 1 (at least `least`): the rate of a counter that starts inside the window climbs for the
    whole window, and at minute 1 reads one minute's increase spread over all of it."""
    return max(least, math.ceil(per_second * times * minutes(window) * 60))


def _above(threshold: float) -> float:
    """A value clearly above a 0-1 threshold, still below 1."""
    return round(threshold + (1 - threshold) / 2, 4)


# ---------------------------------------------------------------------------------------------------------
# Incidents, one per alert


def host_memory(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMHostMemoryNearLimit
    inc = Incident("VLLMHostMemoryNearLimit: working set near the limit, vLLM containers (LWS workers too) only")
    n = int(minutes(t.for_)) + 15
    limit = 64 * GIB
    hot, cool = _above(t.ratio), round(t.ratio * 0.8, 4)
    for cluster, pod, ratio in (("prod-a", "llama-0", hot), ("prod-b", "llama-0", cool), ("prod-a", "llama-1", cool)):
        where = b.where(cluster, "inference", pod)
        b.vllm_container(inc, where, "server", n)
        for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):  # kube-state-metrics in HA: two identical series
            b.ksm(inc, "kube_pod_container_resource_limits", {**where, "instance": replica, "container": "server",
                  "resource": "memory", "unit": "byte", "node": "gpu-node-1", "uid": "u1"}, f"{limit}x{n}")
        b.cadvisor(inc, "container_memory_working_set_bytes", {**where, "container": "server", "image": IMAGE,
                   "id": f"/kubepods/{pod}/server"}, f"{int(limit * ratio)}x{n}")
        # the pod-level cgroup (container="", image="") is bigger than the container: it must not count
        b.cadvisor(inc, "container_memory_working_set_bytes", {**where, "container": "", "image": "",
                   "id": f"/kubepods/{pod}"}, f"{int(limit * 1.01)}x{n}")
    # LeaderWorkerSet: the workers serve no vLLM metrics and run an image the regex does not know; they are
    # vLLM by their leader. llama-lws-0's worker nears its limit, llama-lws-1's stays below it, and cache-0-1
    # (a StatefulSet named after a pod that serves no vLLM) is not ours
    worker_image = "registry.example.com/ml/multinode-runtime:v3"
    for leader, ratio in (("llama-lws-0", hot), ("llama-lws-1", cool), ("cache-0", hot)):
        if leader != "cache-0":
            b.vllm(inc, "vllm:num_requests_running", b.where("prod-a", "inference", leader), f"1x{n}", engine="0")
        for where in b.lws_group(inc, "prod-a", "inference", leader, n):
            b.ksm(inc, "kube_pod_container_info", {**where, "container": "worker", "image": worker_image}, f"1x{n}")
            b.ksm(inc, "kube_pod_container_resource_limits", {**where, "container": "worker", "resource": "memory",
                  "unit": "byte"}, f"{limit}x{n}")
            b.cadvisor(inc, "container_memory_working_set_bytes", {**where, "container": "worker", "image": worker_image},
                       f"{int(limit * ratio)}x{n}")
    # a non-vLLM container at its limit is kubernetes-mixin's business, not ours
    other, envoy = b.where("prod-a", "inference", "proxy-0"), "envoyproxy/envoy:v1.30"
    b.ksm(inc, "kube_pod_container_resource_limits", {**other, "container": "envoy", "resource": "memory",
          "unit": "byte"}, f"{GIB}x{n}")
    b.cadvisor(inc, "container_memory_working_set_bytes", {**other, "container": "envoy", "image": envoy},
               f"{int(GIB * 0.99)}x{n}")
    firing = [
        (b.where("prod-a", "inference", "llama-0", container="server"), hot),
        (b.where("prod-a", "inference", "llama-lws-0-1", container="worker"), hot),
    ]
    # unless the config's vllm_containers takes them too (an image regex of `.*`, a name regex of `worker`)
    if b.takes("worker", worker_image):
        firing.append((b.where("prod-a", "inference", "cache-0-1", container="worker"), hot))
    if b.takes("", envoy) and int(GIB * 0.99) / GIB > t.ratio:  # no kube-state-metrics info: by image only
        firing.append((other | {"container": "envoy"}, int(GIB * 0.99) / GIB))
    inc.expect("VLLMHostMemoryNearLimit", on_time(0, t.for_), firing)
    return inc


def _restart_incident(b: Builder, name: str) -> Incident:
    """llama-0 is OOM-killed at 10m; llama-1 dies with Error (CUDA OOM) at 10m; llama-2 carries a sticky
    OOMKilled reason from a restart long ago; llama-3 is the same pod name in another cluster."""
    a = b.cfg.alerts
    longest = max(minutes(t.window) + minutes(t.for_) for t in (a.VLLMContainerOOMKilled, a.VLLMContainerRestarted))
    n = int(10 + longest + 20)
    inc = Incident(name)
    cases = (("prod-a", "llama-0", "OOMKilled", True), ("prod-a", "llama-1", "Error", True),
             ("prod-a", "llama-2", "OOMKilled", False), ("prod-b", "llama-0", "OOMKilled", False))
    for cluster, pod, reason, fresh in cases:
        where = b.where(cluster, "inference", pod, container="server")
        b.vllm_container(inc, b.where(cluster, "inference", pod), "server", n)
        restarts = f"0x9 1x{n - 10}" if fresh else f"3x{n}"
        b.ksm(inc, "kube_pod_container_status_restarts_total", where, restarts)
        b.ksm(inc, "kube_pod_container_status_last_terminated_reason", {**where, "reason": reason},
              f"_x9 1x{n - 10}" if fresh else f"1x{n}")
    return inc


def oom_killed(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMContainerOOMKilled
    inc = _restart_incident(b, "VLLMContainerOOMKilled: a fresh OOM kill fires, CUDA OOM and sticky reasons do not")
    # read raw series (and the steady container record): the first evaluation past `for` fires, in either
    # group order; a short window lets the restart leave it soon after
    inc.expect("VLLMContainerOOMKilled", 10 + math.ceil(minutes(t.for_)), [(b.where("prod-a", "inference", "llama-0", container="server"), 1)])
    inc.expect("VLLMContainerOOMKilled", 10 + minutes(t.window) + minutes(t.for_) + 2, [])
    return inc


def restarted(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMContainerRestarted
    inc = _restart_incident(b, "VLLMContainerRestarted: a restart with reason Error carries the reason")
    inc.expect("VLLMContainerRestarted", 10 + math.ceil(minutes(t.for_)),
               [(b.where("prod-a", "inference", "llama-1", container="server", reason="Error"), 1)])
    return inc


def gpu_memory(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMGPUMemoryNearFull
    inc = Incident("VLLMGPUMemoryNearFull: every DCGM label mode; vLLM's 90% preallocation stays quiet")
    n = int(minutes(t.for_)) + 15
    total = 81559  # MiB on an H100 80GB
    hot, normal = _above(t.ratio), (0.92 if t.ratio > 0.92 else round(t.ratio * 0.8, 4))  # vLLM preallocates 90%
    for pod in ("llama-0", "llama-1", "llama-2", "llama-3", "llama-4", "llama-5"):
        b.vllm_container(inc, b.where("prod-a", "inference", pod), "server", n)
        b.vllm(inc, "vllm:num_requests_running", b.where("prod-a", "inference", pod), f"1x{n}")

    def gpu(labels: dict[str, str], ratio: float) -> None:
        used = round(total * ratio)
        b.dcgm(inc, "DCGM_FI_DEV_FB_USED", labels, f"{used}x{n}")
        b.dcgm(inc, "DCGM_FI_DEV_FB_FREE", labels, f"{total - used}x{n}")

    cl = b.cfg.cluster_label
    # honorLabels: true: the workload is in pod/namespace
    gpu({cl: "prod-a", "gpu": "0", "UUID": "GPU-0a", "Hostname": "gpu-node-1", "namespace": "inference",
         "pod": "llama-0", "container": "server"}, hot)
    # honorLabels: false: the workload is in exported_*, pod/namespace name the dcgm-exporter pod
    gpu({cl: "prod-a", "gpu": "1", "UUID": "GPU-1b", "Hostname": "gpu-node-2", "namespace": "gpu-operator",
         "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter", "exported_namespace": "inference",
         "exported_pod": "llama-1", "exported_container": "server"}, hot)
    # dcgm-exporter --use-old-namespace: pod_name/pod_namespace/container_name and uuid
    gpu({cl: "prod-a", "gpu": "5", "uuid": "GPU-5f", "Hostname": "gpu-node-5", "namespace": "gpu-operator",
         "pod": "nvidia-dcgm-exporter-x7k2p", "pod_namespace": "inference", "pod_name": "llama-3",
         "container_name": "server"}, hot)
    # vLLM's own preallocation (--gpu-memory-utilization 0.9) must not fire
    gpu({cl: "prod-a", "gpu": "2", "UUID": "GPU-2c", "Hostname": "gpu-node-3", "namespace": "inference",
         "pod": "llama-2", "container": "server"}, normal)
    # an unallocated GPU and a non-vLLM workload, both full
    gpu({cl: "prod-a", "gpu": "3", "UUID": "GPU-3d", "Hostname": "gpu-node-3", "namespace": "gpu-operator",
         "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter"}, hot)
    gpu({cl: "prod-a", "gpu": "4", "UUID": "GPU-4e", "Hostname": "gpu-node-4", "namespace": "training",
         "pod": "trainer-0", "container": "torch"}, hot)
    # a LeaderWorkerSet worker's GPU: the worker serves no vLLM metrics and runs an image the regex does not
    # know; it is attributed with its leader's model, and fires
    worker = b.lws_group(inc, "prod-a", "inference", "llama-lws-0", n)[0]
    b.vllm(inc, "vllm:num_requests_running", b.where("prod-a", "inference", "llama-lws-0"), f"1x{n}", engine="0")
    gpu({cl: "prod-a", "gpu": "0", "UUID": "GPU-7a", "Hostname": "gpu-node-7", **worker, "container": "worker"}, hot)
    # one GPU time-sliced between two vLLM pods: attributed to one of them, and the rules do not break
    for pod in ("llama-4", "llama-5"):
        gpu({cl: "prod-a", "gpu": "0", "UUID": "GPU-6a", "Hostname": "gpu-node-6", "namespace": "inference",
             "pod": pod, "container": "server"}, normal)
    at = minutes(t.for_) + 3
    firing = [
        ("llama-0", "0", "GPU-0a", "gpu-node-1"),
        ("llama-1", "1", "GPU-1b", "gpu-node-2"),
        ("llama-3", "5", "GPU-5f", "gpu-node-5"),
        ("llama-lws-0-1", "0", "GPU-7a", "gpu-node-7"),
    ]
    def as_ruled(ratio: float) -> float:
        """The framebuffer ratio as the rules compute it, 1 / (1 + free / used), to the last bit."""
        used = round(total * ratio)
        return 1 / (1 + (total - used) / used)

    hot_ratio = as_ruled(hot)
    inc.expect("VLLMGPUMemoryNearFull", on_time(0, t.for_), [
        ({cl: "prod-a", "namespace": "inference", "pod": pod, "gpu": gpu_, "UUID": uuid, "Hostname": node}, hot_ratio)
        for pod, gpu_, uuid, node in firing
    ])
    # The attribution: every vLLM GPU, whatever the label mode, with its pod's model, keyed by the exporter
    # series; the time-sliced GPU once. The GPU page's per-pod summary reads it.
    rows = [*firing, ("llama-2", "2", "GPU-2c", "gpu-node-3")]
    shared = inc.ref("UUID", "GPU-6a")
    inc.expect_samples(f"{c.GPU_INFO}{{UUID!={shared}}}", at, [
        (c.GPU_INFO,
         {cl: "prod-a", "instance": f"{node}:9400", "namespace": "inference", "pod": pod, "model_name": MODEL,
          "gpu": gpu_, "UUID": uuid, "Hostname": node, "modelName": GPU_MODEL}, 1)
        for pod, gpu_, uuid, node in rows
    ])
    inc.expect_samples(f"count({c.GPU_INFO}{{UUID={shared}}})", at, [("", {}, 1)])
    sliced = ", ".join(f"pod!={inc.ref('pod', pod)}" for pod in ("llama-4", "llama-5"))
    inc.expect_samples(f"{c.POD_GPU_FB_RATIO_MAX}{{{sliced}}}", at, [
        (c.POD_GPU_FB_RATIO_MAX, {cl: "prod-a", "namespace": "inference", "pod": pod, "model_name": MODEL},
         hot_ratio if pod != "llama-2" else as_ruled(normal))
        for pod, *_ in rows
    ])
    return inc


def _kv(b: Builder, alert: str, ratio: float, for_: str) -> Incident:
    inc = Incident(f"{alert}: both metric names, data-parallel engines (one full engine is named, a pod full on "
                   "every engine pages once), asleep engines quiet, prefill and decode pods named")
    n = int(minutes(for_)) + 15
    hot, hotter, cool = _above(ratio), _above(_above(ratio)), round(ratio * 0.8, 4)
    # vLLM 0.33, two data-parallel engines: llama-0's engine 0 alone is full (an alert naming it), llama-7's
    # both are (one alert for the pod, at its fullest engine), prod-b's llama-7 neither
    b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", "llama-0"), f"{hot}x{n}", engine="0")
    b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", "llama-0"), f"{cool}x{n}", engine="1")
    for cluster, usage in (("prod-a", (hot, hotter)), ("prod-b", (cool, cool))):
        for engine, value in enumerate(usage):
            b.vllm(inc, "vllm:kv_cache_usage_perc", b.where(cluster, "inference", "llama-7"), f"{value}x{n}",
                   engine=str(engine))
    # vLLM 0.10: both names with equal values; vLLM 0.6 (V0): only the old name, no engine label
    b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", "llama-1"), f"{hot}x{n}", engine="0")
    b.vllm(inc, "vllm:gpu_cache_usage_perc", b.where("prod-a", "inference", "llama-1"), f"{hot}x{n}", engine="0")
    b.vllm(inc, "vllm:gpu_cache_usage_perc", b.where("prod-a", "inference", "llama-2"), f"{hot}x{n}")
    # multiprocess mode (0.9.2-0.11.0): one series per API-server pid
    for pid in ("101", "102"):
        b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", "llama-3"), f"{cool}x{n}", engine="0", pid=pid)
    # the same pod name in another cluster, below the threshold
    b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-b", "inference", "llama-0"), f"{cool}x{n}", engine="0")
    # sleep mode (0.11.1+): an engine put to sleep keeps its last usage and stays quiet; the awake one fires
    for pod, awake in (("llama-5", False), ("llama-6", True)):
        b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", pod), f"{hot}x{n}", engine="0")
        b.sleep_state(inc, b.where("prod-a", "inference", pod), (awake, n), engine="0")
    # a spike shorter than `for` (`vxk` is k+1 samples a minute apart)
    if minutes(for_) >= 1:
        spike = int(minutes(for_)) - 1
        b.vllm(inc, "vllm:kv_cache_usage_perc", b.where("prod-a", "inference", "llama-4"),
               f"{cool}x2 {hot}x{spike} {cool}x{n}", engine="0")
    # prefill/decode: the alert names the role of a pod that only decodes (by llm-d's role label: ds-1a2b)
    # or only prefills (by its name: llama-prefill-0), so the reader gets the runbook's section for it
    disagg = (("ds-1a2b", "decode", False), ("llama-prefill-0", "", True))
    b.role_label(inc, b.where("prod-b", "inference", "llama-0"), "decode", n)  # another cluster's llama-0
    for pod, label, named in disagg:
        where = b.where("prod-a", "inference", pod)
        b.vllm(inc, "vllm:kv_cache_usage_perc", where, f"{hot}x{n}", engine="0")
        if named:
            b.vllm(inc, "vllm:num_requests_running", where, f"3x{n}", engine="0")
        if label:
            b.role_label(inc, where, label, n)
    model = {"model_name": MODEL}
    inc.expect(alert, on_time(0, for_), [
        ({**b.where("prod-a", "inference", "llama-0"), **model, "engine": "0"}, hot),
        *(({**b.where("prod-a", "inference", pod), **model}, hot) for pod in ("llama-1", "llama-2", "llama-6")),
        ({**b.where("prod-a", "inference", "llama-7"), **model}, hotter),
        *((b.with_role({**b.where("prod-a", "inference", pod), **model}, b.role(pod, label, named)), hot)
          for pod, label, named in disagg),
    ])
    return inc


def kv_high(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMKVCacheUsageHigh
    return _kv(b, "VLLMKVCacheUsageHigh", t.ratio, t.for_)


def kv_critical(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMKVCacheUsageCritical
    return _kv(b, "VLLMKVCacheUsageCritical", t.ratio, t.for_)


def queue_backlog(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMRequestQueueBacklog
    inc = Incident("VLLMRequestQueueBacklog: backlog fires (once for a pod backed up on every engine, per engine "
                   "where one engine is); router copies, small queues, busy, asleep engines and deferred requests do not")
    n = int(minutes(t.for_)) + 15
    waiting = math.ceil(max(t.min_waiting, t.waiting_to_running * 4 + 1))
    backed_up = (4 if waiting > t.waiting_to_running * 4 else 1, waiting)
    keeping_up = (8, int(t.waiting_to_running * 8))  # busy, not a backlog
    # each pod runs two data-parallel engines, and each engine has its own queue: llama-0 is backed up on
    # both (one alert for the pod, the queues added up), llama-7 on engine 1 only (an alert naming it)
    cases = (
        ("llama-0", (backed_up, backed_up)),
        ("llama-1", ((0, max(0, math.ceil(t.min_waiting) - 1)),) * 2),  # a small queue on each engine
        ("llama-2", (keeping_up, keeping_up)),
        ("llama-7", (keeping_up, backed_up)),
    )
    for pod, engines in cases:
        for engine, (running, wait) in enumerate(engines):
            where = b.where("prod-a", "inference", pod)
            b.vllm(inc, "vllm:num_requests_running", where, f"{running}x{n}", engine=str(engine))
            b.vllm(inc, "vllm:num_requests_waiting", where, f"{wait}x{n}", engine=str(engine))
    # production-stack's router re-exports the gauges with a `server` label and no model_name
    router = {**b.sel["vllm"], b.cfg.cluster_label: "prod-a", "namespace": "inference",
              "pod": "vllm-router-5f9c", "server": "http://10.1.2.3:8000"}
    inc.add("vllm:num_requests_waiting", router, f"{waiting * 5}x{n}", fill=False)
    inc.add("vllm:num_requests_running", router, f"0x{n}", fill=False)
    # vLLM 0.20+ tells why requests wait: llama-3's queue waits for capacity (fires, counting only those),
    # llama-4's is deferred (on KV from a prefill pod: more replicas would not help), llama-5 sleeps
    queues = (("llama-3", waiting + 2, 2, True), ("llama-4", 1, waiting * 3, True), ("llama-5", waiting, 0, False))
    for pod, capacity, deferred, awake in queues:
        where = b.where("prod-a", "inference", pod)
        b.vllm(inc, "vllm:num_requests_running", where, f"1x{n}", engine="0")
        b.vllm(inc, "vllm:num_requests_waiting", where, f"{capacity + deferred}x{n}", engine="0")
        b.vllm(inc, f.WAITING_BY_REASON, where, f"{capacity}x{n}", engine="0", reason="capacity")
        b.vllm(inc, f.WAITING_BY_REASON, where, f"{deferred}x{n}", engine="0", reason="deferred")
        b.sleep_state(inc, where, (awake, n), engine="0")
    # llama-6 reports only its deferred requests (no capacity series): nothing waits for capacity, so its
    # whole queue must not count as it would on an engine that reports no reason at all
    where = b.where("prod-a", "inference", "llama-6")
    b.vllm(inc, "vllm:num_requests_running", where, f"1x{n}", engine="0")
    b.vllm(inc, "vllm:num_requests_waiting", where, f"{waiting * 3}x{n}", engine="0")
    b.vllm(inc, f.WAITING_BY_REASON, where, f"{waiting * 3}x{n}", engine="0", reason="deferred")
    # prefill/decode: a backlog on a prefill-only pod (its role label says so; its name says decode, and the
    # label wins) is named as such: the prefill side is short of capacity, or the P:D ratio is wrong
    prefill = b.where("prod-a", "inference", "llama-decode-7")
    b.vllm(inc, "vllm:num_requests_running", prefill, f"1x{n}", engine="0")
    b.vllm(inc, "vllm:num_requests_waiting", prefill, f"{waiting}x{n}", engine="0")
    b.role_label(inc, prefill, "prefill", n)
    inc.expect("VLLMRequestQueueBacklog", on_time(0, t.for_), [
        ({**b.where("prod-a", "inference", "llama-0"), "model_name": MODEL}, 2 * waiting),
        ({**b.where("prod-a", "inference", "llama-3"), "model_name": MODEL}, waiting + 2),
        (b.with_role({**prefill, "model_name": MODEL}, b.role("llama-decode-7", "prefill")), waiting),
        ({**b.where("prod-a", "inference", "llama-7"), "model_name": MODEL, "engine": "1"}, waiting),
    ])
    return inc


def zero_throughput(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMZeroThroughput
    inc = Incident("VLLMZeroThroughput: a stuck engine fires (named when its pod's other engine serves, once for "
                   "the pod when all are stuck); idle, busy and asleep engines do not")
    stall = 20
    n = int(stall + minutes(t.window) + minutes(t.for_) + 15)
    # llama-0 generates until minute 20, then stalls with 6 requests running and 3 waiting
    stuck = b.where("prod-a", "inference", "llama-0")
    b.vllm(inc, "vllm:num_requests_running", stuck, f"6x{n}", engine="0")
    b.vllm(inc, "vllm:num_requests_waiting", stuck, f"3x{n}", engine="0")
    b.vllm(inc, "vllm:generation_tokens_total", stuck, f"0+3000x{stall} {3000 * stall}x{n - stall}", engine="0")
    # llama-1 is idle overnight: nothing in flight, counter flat
    idle = b.where("prod-a", "inference", "llama-1")
    b.vllm(inc, "vllm:num_requests_running", idle, f"0x{n}", engine="0")
    b.vllm(inc, "vllm:num_requests_waiting", idle, f"0x{n}", engine="0")
    b.vllm(inc, "vllm:generation_tokens_total", idle, f"5000x{n}", engine="0")
    # llama-2 is busy and generating, and restarts at minute 30 (counter reset)
    busy = b.where("prod-a", "inference", "llama-2")
    b.vllm(inc, "vllm:num_requests_running", busy, f"8x{n}", engine="0")
    b.vllm(inc, "vllm:num_requests_waiting", busy, f"0x{n}", engine="0")
    b.vllm(inc, "vllm:generation_tokens_total", busy, f"0+2000x30 0+2000x{n - 31}", engine="0")
    # llama-3 and llama-4 stall the same way; llama-3 was put to sleep (its gauges froze), llama-4 is awake
    for pod, awake in (("llama-3", False), ("llama-4", True)):
        where = b.where("prod-a", "inference", pod)
        b.vllm(inc, "vllm:num_requests_running", where, f"6x{n}", engine="0")
        b.vllm(inc, "vllm:num_requests_waiting", where, f"3x{n}", engine="0")
        b.vllm(inc, "vllm:generation_tokens_total", where, f"0+3000x{stall} {3000 * stall}x{n - stall}", engine="0")
        b.sleep_state(inc, where, (True, stall), (awake, n - stall - 1), engine="0")
    # Data-parallel pods (two engines each). llama-5: engine 1 hangs at minute 20 with 14 requests (10 running
    # in two API-server processes' copies, 4 waiting) while engine 0 keeps serving: one alert naming engine 1.
    # llama-6 (and prod-b's llama-5): both engines serve, or one serves and one idles. llama-7: both engines
    # stall together, as a dense model's engines that step together do: one alert for the pod.
    def engine(where: dict[str, str], name: str, running: int, waiting: int, tokens: str) -> None:
        b.vllm(inc, "vllm:num_requests_running", where, f"{running}x{n}", engine=name)
        b.vllm(inc, "vllm:num_requests_waiting", where, f"{waiting}x{n}", engine=name)
        b.vllm(inc, "vllm:generation_tokens_total", where, tokens, engine=name)

    serving, stalled = f"0+2000x{n}", f"0+3000x{stall} {3000 * stall}x{n - stall}"
    hung = b.where("prod-a", "inference", "llama-5")
    engine(hung, "0", 8, 0, serving)
    for pid in ("7", "8"):  # multiprocess mode: each API-server process serves a copy of the gauges
        b.vllm(inc, "vllm:num_requests_running", hung, f"10x{n}", engine="1", pid=pid)
        b.vllm(inc, "vllm:num_requests_waiting", hung, f"4x{n}", engine="1", pid=pid)
    b.vllm(inc, "vllm:generation_tokens_total", hung, stalled, engine="1")
    engine(b.where("prod-b", "inference", "llama-5"), "0", 8, 0, serving)
    engine(b.where("prod-b", "inference", "llama-5"), "1", 8, 2, serving)
    engine(b.where("prod-a", "inference", "llama-6"), "0", 8, 0, serving)
    engine(b.where("prod-a", "inference", "llama-6"), "1", 0, 0, f"7000x{n}")
    both = b.where("prod-a", "inference", "llama-7")
    engine(both, "0", 6, 3, stalled)
    engine(both, "1", 6, 3, stalled)
    # llama-8 runs vLLM before 0.8.3: no engine label, judged per pod
    v0 = b.where("prod-a", "inference", "llama-8")
    b.vllm(inc, "vllm:num_requests_running", v0, f"6x{n}")
    b.vllm(inc, "vllm:num_requests_waiting", v0, f"3x{n}")
    b.vllm(inc, "vllm:generation_tokens_total", v0, stalled)
    # the counter's last step is at minute 20: from stall + window on, the window holds no increase
    awake = b.where("prod-a", "inference", "llama-4")
    inc.expect("VLLMZeroThroughput", on_time(stall + minutes(t.window), t.for_), [
        *(({**where, "model_name": MODEL}, 9) for where in (stuck, awake, v0)),
        ({**hung, "model_name": MODEL, "engine": "1"}, 14),
        ({**both, "model_name": MODEL}, 18),
    ])
    inc.expect("VLLMZeroThroughput", stall - 2, [])
    return inc


def target_down(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMTargetDown
    inc = Incident("VLLMTargetDown: a vLLM endpoint that served metrics goes down; other targets and LWS workers do "
                   "not count")
    down = 20
    n = int(down + minutes(t.for_) + 10)
    vllm_target = {**b.where("prod-a", "inference", "llama-0"), "job": "inference/vllm", "instance": "10.4.0.7:8000",
                   "container": "server", **b.sel["vllm"]}
    inc.add("up", {**b.sel["vllm"], **vllm_target}, f"1x{down - 1} 0x{n - down}")
    b.vllm(inc, "vllm:num_requests_running", vllm_target, f"2x{down - 1}", engine="0")
    # a healthy vLLM pod, and a non-vLLM target that is down
    healthy = {**b.where("prod-a", "inference", "llama-1"), "job": "inference/vllm", "instance": "10.4.0.8:8000",
               **b.sel["vllm"]}
    inc.add("up", {**b.sel["vllm"], **healthy}, f"1x{n}")
    b.vllm(inc, "vllm:num_requests_running", healthy, f"2x{n}", engine="0")
    inc.add("up", {**b.sel["vllm"], **b.where("prod-a", "web", "shop-0"), "job": "web/shop",
                   "instance": "10.4.0.9:8080"}, f"0x{n}")
    # a LeaderWorkerSet worker scraped in the vLLM job (a pod monitor over the whole group) serves no engine
    # metrics; its scrape fails after it was up (a restart): its leader is the vLLM target, not it
    leader = {**b.where("prod-a", "inference", "llama-lws-0"), "job": "inference/vllm", "instance": "10.4.0.10:8000",
              **b.sel["vllm"]}
    inc.add("up", leader, f"1x{n}")
    b.vllm(inc, "vllm:num_requests_running", leader, f"2x{n}", engine="0")
    for where in b.lws_group(inc, "prod-a", "inference", "llama-lws-0", n):
        inc.add("up", {**b.sel["vllm"], **where, "job": "inference/vllm", "instance": "10.4.0.11:8000"},
                f"1x{down - 1} 0x{n - down}")
    # an inference pool's endpoint picker whose job matches the vLLM job regex: not vLLM, it goes down quietly
    epp = {**b.where("prod-a", "inference", "llama-epp-0"), "job": "inference/vllm-llama-epp", "instance": "10.4.0.10:9090",
           **b.sel["vllm"], **b.sel["epp"]}
    inc.add("up", epp, f"1x{down - 1} 0x{n - down}")
    inc.add("llm_d_epp_info", {**epp, "build_ref": "v0.10.0", "commit": "71f4f099"}, f"1x{down - 1}", source="epp")
    inc.expect("VLLMTargetDown", down + math.ceil(minutes(t.for_)), [(b.where("prod-a", "inference", "llama-0"), 0)])  # raw series only
    inc.expect("VLLMTargetDown", down - 2, [])
    return inc


def preemptions(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMRequestPreemptions
    inc = Incident("VLLMRequestPreemptions: continuous preemption fires, a single burst does not")
    n = int(minutes(t.for_)) + 30
    # rate5m climbs for five minutes after the counter starts: at minute 1 it reads per_minute / 300 per
    # second. Twice the threshold there keeps the condition's onset at minute 1 whatever the threshold.
    per_minute = max(6, math.ceil(t.rate * 600))
    steady = b.where("prod-a", "inference", "llama-0")
    b.vllm(inc, "vllm:num_preemptions_total", steady, f"0+{per_minute}x{n}", engine="0")
    burst = b.where("prod-a", "inference", "llama-1")
    b.vllm(inc, "vllm:num_preemptions_total", burst, f"0x5 40x{n - 5}", engine="0")
    # Not before minute 13: the burst (its counter steps between minutes 5 and 6) has left the 5m window
    # even in a record one evaluation old, and the steady pod's rate is the same whether the alert reads
    # this evaluation's record or the last one (so the test holds in either group order).
    at = max(on_time(1, t.for_), 13)
    inc.expect("VLLMRequestPreemptions", at, [({**steady, "model_name": MODEL}, per_minute / 60)])
    return inc


def prefix_cache(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMPrefixCacheHitRateLow
    inc = Incident("VLLMPrefixCacheHitRateLow: low hit rate with traffic fires; high, idle, disabled, recently "
                   "asleep, decode-only (by label or name) and connector-fed pods do not")
    n = int(minutes(t.window) + minutes(t.for_)) + 20
    queries = _climbing(t.min_query_tokens_per_second, t.window, 2, least=6000)  # the pods that must fire do
    low, good = round(t.ratio / 3, 4), min(0.95, round(t.ratio * 2, 4))
    cases = (("llama-0", low, "prefix_cache"), ("llama-1", good, "prefix_cache"), ("llama-2", low, "gpu_prefix_cache"))
    for pod, hit, name in cases:
        where = b.where("prod-a", "inference", pod)
        b.vllm(inc, f"vllm:{name}_queries_total", where, f"0+{queries}x{n}", engine="0")
        b.vllm(inc, f"vllm:{name}_hits_total", where, f"0+{int(queries * hit)}x{n}", engine="0")
    # caching switched off (the config says so), and an idle model whose counters do not move
    off = b.where("prod-a", "inference", "llama-3")
    b.vllm(inc, "vllm:prefix_cache_queries_total", off, f"0+{queries}x{n}", engine="0")
    b.vllm(inc, "vllm:prefix_cache_hits_total", off, f"0+{int(queries * low)}x{n}", engine="0")
    inc.add("vllm:cache_config_info", {**b.sel["vllm"], **off, "engine": "0", "block_size": "16",
                                       "enable_prefix_caching": "False", "num_gpu_blocks": "9149"}, f"1x{n}")
    idle = b.where("prod-a", "inference", "llama-4")
    b.vllm(inc, "vllm:prefix_cache_queries_total", idle, f"80000x{n}", engine="0")
    b.vllm(inc, "vllm:prefix_cache_hits_total", idle, f"1000x{n}", engine="0")
    # vLLM V0: no counters, a lifetime hit-rate gauge; it counts while the pod takes prompts, and -1 is off
    for pod, gauge in (("llama-5", low), ("llama-6", -1)):
        v0 = b.where("prod-a", "inference", pod)
        b.vllm(inc, "vllm:gpu_prefix_cache_hit_rate", v0, f"{gauge}x{n}")
        b.vllm(inc, "vllm:prompt_tokens_total", v0, f"0+{queries}x{n}")
    # sleep mode: llama-7 slept two minutes before the check (it woke with an empty cache, then hits well),
    # llama-8 stayed awake. Not before minute 4, so that the sleep comes after the first samples even with
    # `for: 0` (the fuzz test found the span of minus one minute it gave then).
    at = max(on_time(1, t.for_), 4)
    slept = int(at) - 2
    hits, good_hits = int(queries * low), int(queries * good)
    where = b.where("prod-a", "inference", "llama-7")
    b.vllm(inc, "vllm:prefix_cache_queries_total", where, f"0+{queries}x{n}", engine="0")
    b.vllm(inc, "vllm:prefix_cache_hits_total", where,
           f"0+{hits}x{slept + 1} {hits * (slept + 1) + good_hits}+{good_hits}x{n - slept - 2}", engine="0")
    b.sleep_state(inc, where, (True, slept - 1), (False, 1), (True, n - slept - 2), engine="0")
    awake = b.where("prod-a", "inference", "llama-8")
    b.vllm(inc, "vllm:prefix_cache_queries_total", awake, f"0+{queries}x{n}", engine="0")
    b.vllm(inc, "vllm:prefix_cache_hits_total", awake, f"0+{hits}x{n}", engine="0")
    b.sleep_state(inc, awake, (True, n), engine="0")
    # prefill/decode: a decode-only pod gets its prompts' KV from a prefill pod, so its local hit rate is
    # near zero by design: quiet, whether llm-d's role label says decode (ds-7c9f: a name no pattern takes)
    # or, without the label, its name does (llama-decode-0). llama-decode-1's label says it does both
    # (prefill-decode): the label wins over the name, it fires. llama-nixl-0 (no role anywhere) gets most prompt tokens from a
    # connector (external prefix-cache hits): quiet.
    near_zero = int(queries * min(0.01, low))  # 1%, or under a threshold below 3% (the pods that fire must)
    disagg = (("ds-7c9f", "decode", False), ("llama-decode-0", "", True), ("llama-decode-1", "prefill-decode", True))
    for pod, label, named in disagg:
        where = b.where("prod-a", "inference", pod)
        b.vllm(inc, "vllm:prefix_cache_queries_total", where, f"0+{queries}x{n}", engine="0")
        b.vllm(inc, "vllm:prefix_cache_hits_total", where, f"0+{near_zero}x{n}", engine="0")
        if named:  # the name is read from the engine's running gauge
            b.vllm(inc, "vllm:num_requests_running", where, f"4x{n}", engine="0")
        if label:
            b.role_label(inc, where, label, n)
    nixl = b.where("prod-a", "inference", "llama-nixl-0")
    b.vllm(inc, "vllm:prefix_cache_queries_total", nixl, f"0+{queries}x{n}", engine="0")
    b.vllm(inc, "vllm:prefix_cache_hits_total", nixl, f"0+{near_zero}x{n}", engine="0")
    b.vllm(inc, f.EXTERNAL_PREFIX_HITS, nixl, f"0+{int(queries * 0.95)}x{n}", engine="0")
    b.vllm(inc, f.EXTERNAL_PREFIX_QUERIES, nixl, f"0+{queries - near_zero}x{n}", engine="0")
    firing = [("llama-0", int(queries * low) / queries), ("llama-2", int(queries * low) / queries),
              ("llama-5", low), ("llama-8", int(queries * low) / queries)]
    firing += [(pod, near_zero / queries) for pod, label, named in disagg if b.role(pod, label, named) != "decode"]
    # rates need two samples: the condition holds from the first minute
    inc.expect("VLLMPrefixCacheHitRateLow", at, [
        ({**b.where("prod-a", "inference", pod), "model_name": MODEL}, value) for pod, value in firing
    ])
    return inc


def kv_fragmentation(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMKVCacheFragmentationHigh
    inc = Incident("VLLMKVCacheFragmentationHigh: sustained fragmentation fires, normal levels do not")
    n = int(minutes(t.for_)) + 15
    hot, cool = _above(t.ratio), round(t.ratio / 4, 4)
    for pod, value in (("llama-0", hot), ("llama-1", cool)):
        b.exporter(inc, "obspack_vllm_kv_cache_fragmentation_ratio",  # derived series always carry `target`
                   {**b.where("prod-a", "inference", pod), "model_name": MODEL, "engine": "0",
                    "target": "http://127.0.0.1:8000/metrics"}, f"{value}x{n}")
    inc.expect("VLLMKVCacheFragmentationHigh", on_time(0, t.for_),
               [({**b.where("prod-a", "inference", "llama-0"), "model_name": MODEL}, hot)])
    return inc


def cuda_fragmentation(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMCUDAAllocatorFragmentationHigh
    floor = t.min_split_gib * GIB  # bytes, as Prometheus multiplies them out
    quiet = ("a cache just emptied (ratio 1 on a few MiB) and a pod whose devices each miss one side stay quiet"
             if floor else "min_split_gib is 0: a low ratio stays quiet")
    inc = Incident(f"VLLMCUDAAllocatorFragmentationHigh: a device whose unused memory is mostly split; {quiet}")
    n = int(minutes(t.for_)) + 15
    hot, cool = _above(t.ratio), round(t.ratio / 4, 4)
    big, small = math.ceil(floor) + GIB, int(floor // 8)
    devices = {  # pod: ((ratio, inactive split bytes) of device 0, of device 1)
        "llama-0": ((hot, big), (cool, big)),
        "llama-1": ((cool, big), (cool, big)),
        "llama-2": ((1.0, small), (cool, small)),
        "llama-3": ((hot, small), (cool, big)),
    }
    fired = []
    for pod, readings in devices.items():
        where = b.where("prod-a", "inference", pod)
        for device, (ratio, split) in zip(("0", "1"), readings):
            labels = {**where, "pid": "4242", "device": device}
            b.exporter(inc, "obspack_cuda_allocator_fragmentation_ratio", labels, f"{ratio}x{n}")
            b.exporter(inc, "obspack_cuda_allocator_inactive_split_bytes", labels, f"{split}x{n}")
        worst = [ratio for ratio, split in readings if ratio > t.ratio and split >= floor]
        if worst:  # llama-0 only, unless min_split_gib is 0
            fired.append((where, max(worst)))
    inc.expect("VLLMCUDAAllocatorFragmentationHigh", on_time(0, t.for_), fired)
    return inc


def exporter_down(b: Builder) -> Incident:
    t = b.cfg.alerts.ObspackExporterTargetDown
    inc = Incident("ObspackExporterTargetDown: the sidecar cannot reach vLLM while Prometheus can; a vLLM that is "
                   "down, and its recovery a scrape before the sidecar's, stay quiet")
    down = math.ceil(minutes(t.for_)) + HOP + 1  # llama-2's vLLM is down past the time llama-0 fires
    n = down + 15
    target = {"target": "http://127.0.0.1:8000/metrics"}

    def vllm_up(pod: str, values: str) -> None:
        inc.add("up", {**b.where("prod-a", "inference", pod), "job": "inference/vllm", "instance": f"10.4.0.{pod[-1]}:8000",
                       **b.sel["vllm"]}, values)

    # llama-0: the sidecar's scrapes fail from minute 3 while Prometheus scrapes vLLM fine
    b.exporter(inc, "obspack_target_up", {**b.where("prod-a", "inference", "llama-0"), **target}, f"1x2 0x{n}")
    vllm_up("llama-0", f"1x{n + 2}")
    # llama-1: healthy
    b.exporter(inc, "obspack_target_up", {**b.where("prod-a", "inference", "llama-1"), **target}, f"1x{n}")
    vllm_up("llama-1", f"1x{n}")
    # llama-2: vLLM is down from minute 3; it is back at `back`, and its sidecar a scrape later
    back = 4 + down
    b.exporter(inc, "obspack_target_up", {**b.where("prod-a", "inference", "llama-2"), **target},
               f"1x2 0x{down + 1} 1x{n - down}")
    vllm_up("llama-2", f"1x2 0x{down} 1x{n - down}")
    fired = [(b.where("prod-a", "inference", "llama-0"), 0)]
    inc.expect("ObspackExporterTargetDown", on_time(3, t.for_), fired)
    inc.expect("ObspackExporterTargetDown", back, fired)
    return inc


def kv_transfer_failures(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMKVTransferFailures
    inc = Incident("VLLMKVTransferFailures: failing NIXL and Mooncake transfers and a prefill pod whose blocks expire "
                   "fire; a burst, a trickle of expired blocks, healthy transfers and the other cluster do not")
    at = max(on_time(1, t.for_), 5 + minutes(t.window) + 2)  # llama-2's burst (minute 5) has left the window
    n = math.ceil(at) + 5  # the series end soon after the check: every step evaluates every rule
    # four times the threshold from minute 1 (llama-1 gets half of it), whatever the threshold and window
    per_minute = _climbing(t.rate, t.window, 4, least=6)
    finished = 1000  # requests a prefill pod finishes per minute
    counters = dict(f.KV_TRANSFER_FAILURES)
    nixl, mooncake = counters["nixl"], counters["mooncake"]
    pods = ("llama-0", "llama-1", "llama-2", "llama-3", "llama-4", "llama-5")
    where = {pod: b.where("prod-a", "inference", pod) for pod in pods}

    def counter(metric: str, pod: str, per_min: float, **extra: str) -> None:
        b.vllm(inc, metric, where[pod], f"0+{per_min:g}x{n}", engine="0", **extra)

    # llama-0: a NIXL decode pod whose reads keep failing. llama-1: a Mooncake pod whose receives fail, and
    # whose blocks expire as often, against many finished requests (failed fires, expired does not).
    counter(nixl[0][0], "llama-0", per_minute)
    for metric, _ in nixl[1:]:
        counter(metric, "llama-0", 0)
    for metric, kind in mooncake:
        counter(metric, "llama-1", 0 if kind == "failed_transfer" else per_minute / 2)
    # its expired share stays at half the threshold however many transfers fail
    counter(f.REQUEST_SUCCESS, "llama-1", max(finished, math.ceil(per_minute / t.expired_ratio)), finished_reason="stop")
    # llama-2 had one burst; llama-3 transfers fine; the other cluster's llama-0 too
    for metric, _ in nixl:
        b.vllm(inc, metric, where["llama-2"], f"0x4 {per_minute * 3}x{n - 4}", engine="0")
        counter(metric, "llama-3", 0)
        b.vllm(inc, metric, b.where("prod-b", "inference", "llama-0"), f"0x{n}", engine="0")
    b.vllm(inc, f.NIXL_XFER_TIME + "_count", where["llama-3"], f"0+40x{n}", engine="0")
    # NIXL prefill pods: llama-4's blocks expire for a share of its requests above the threshold;
    # llama-5's expire now and then (requests aborted before their decode pod read them): quiet
    expiring = round(finished * _above(t.expired_ratio))
    for pod, expired in (("llama-4", expiring), ("llama-5", math.floor(finished * t.expired_ratio / 2))):
        for metric, kind in nixl:
            counter(metric, pod, expired if kind == f.EXPIRED else 0)
        counter(f.REQUEST_SUCCESS, pod, finished, finished_reason="length")
    model = {"model_name": MODEL}
    inc.expect("VLLMKVTransferFailures", at, [
        ({**where["llama-0"], **model, "connector": "nixl", "kind": "failed"}, per_minute / 60),
        ({**where["llama-1"], **model, "connector": "mooncake", "kind": "failed"}, per_minute / 2 / 60),
        ({**where["llama-4"], **model, "connector": "nixl", "kind": f.EXPIRED}, expiring / finished),
    ])
    return inc


def admission_rejections(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMAdmissionRejections
    inc = Incident("VLLMAdmissionRejections: a pod that refuses a share of its requests fires; a few refusals do not")
    at = on_time(1, t.for_)
    n = math.ceil(at) + 5
    per_minute = 1000  # requests reaching each engine per minute, refused or finished
    hot = _above(t.ratio)
    cases = (("llama-0", round(per_minute * hot)), ("llama-1", math.floor(per_minute * t.ratio / 2)), ("llama-2", 0))
    for pod, refused in cases:
        where = b.where("prod-a", "inference", pod)
        # refusals carry the cap that was reached and no engine label (vLLM 0.32+)
        b.vllm(inc, f.ADMISSION_REJECTIONS, where, f"0+{refused}x{n}", reason="max_num_queued_reqs")
        b.vllm(inc, f.ADMISSION_REJECTIONS, where, f"0x{n}", reason="max_num_queued_tokens")
        finished = per_minute - refused
        b.vllm(inc, f.REQUEST_SUCCESS, where, f"0+{finished - finished // 10}x{n}", engine="0", finished_reason="stop")
        b.vllm(inc, f.REQUEST_SUCCESS, where, f"0+{finished // 10}x{n}", engine="0", finished_reason="length")
    inc.expect("VLLMAdmissionRejections", at,
               [({**b.where("prod-a", "inference", "llama-0"), "model_name": MODEL}, round(per_minute * hot) / per_minute)])
    return inc


def kv_offload_failures(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMKVOffloadAllocationFailures
    inc = Incident("VLLMKVOffloadAllocationFailures: steady failures of the CPU and tiering specs fire; a burst does not")
    at = max(on_time(1, t.for_), 5 + minutes(t.window) + 2)  # llama-2's burst (minute 5) has left the window
    n = math.ceil(at) + 5
    per_minute = _climbing(t.rate, t.window, 2, least=4)
    allocation, promotion = f.KV_OFFLOAD_ALLOCATION_FAILURES
    cpu, tiering, burst = (b.where("prod-a", "inference", pod) for pod in ("llama-0", "llama-1", "llama-2"))
    b.vllm(inc, allocation, cpu, f"0+{per_minute}x{n}", engine="0")
    # the tiering spec counts its failed promotions apart: both counters add up
    b.vllm(inc, allocation, tiering, f"0+{per_minute / 2:g}x{n}", engine="0")
    b.vllm(inc, promotion, tiering, f"0+{per_minute / 2:g}x{n}", engine="0")
    b.vllm(inc, allocation, burst, f"0x4 {per_minute * 5}x{n - 4}", engine="0")
    b.vllm(inc, f.KV_OFFLOAD_STORE_BYTES, burst, f"0+1000000x{n}", engine="0")
    inc.expect("VLLMKVOffloadAllocationFailures", at, [
        ({**cpu, "model_name": MODEL}, per_minute / 60),
        ({**tiering, "model_name": MODEL}, per_minute / 60),
    ])
    return inc


def spec_decode(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMSpecDecodeAcceptanceLow
    inc = Incident("VLLMSpecDecodeAcceptanceLow: collapsed acceptance fires (V1 and V0); a good drafter and a pod "
                   "that hardly drafts do not")
    at = on_time(1, t.for_)
    n = math.ceil(at) + 5
    drafted = _climbing(t.min_draft_tokens_per_second, t.window, 2, least=6000)
    low, good = round(t.ratio / 2.5, 4), min(0.95, round(t.ratio * 2, 4))
    idle = math.floor(t.min_draft_tokens_per_second * 60 / 2)
    cases = (("llama-0", drafted, low, "0"), ("llama-1", drafted, good, "0"), ("llama-2", idle, low, "0"),
             ("llama-3", drafted, low, None))  # llama-3 is vLLM V0: the same counters, no engine label
    for pod, tokens, accepted, engine in cases:
        where = b.where("prod-a", "inference", pod)
        extra = {"engine": engine} if engine is not None else {}
        b.vllm(inc, f.SPEC_DRAFT_TOKENS, where, f"0+{tokens}x{n}", **extra)
        b.vllm(inc, f.SPEC_ACCEPTED_TOKENS, where, f"0+{int(tokens * accepted)}x{n}", **extra)
        b.vllm(inc, f.SPEC_DRAFTS, where, f"0+{tokens // 4}x{n}", **extra)
    inc.expect("VLLMSpecDecodeAcceptanceLow", at, [
        ({**b.where("prod-a", "inference", pod), "model_name": MODEL}, int(drafted * low) / drafted)
        for pod in ("llama-0", "llama-3")
    ])
    return inc


# ---------------------------------------------------------------------------------------------------------
# Autoscaling


def prefill_decode_imbalance(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMPrefillDecodeImbalance
    inc = Incident("VLLMPrefillDecodeImbalance: a saturated prefill side with idle decoders, and the reverse, fire; "
                   "both sides busy, one role alone and deferred requests do not")
    n = int(minutes(t.for_)) + 15
    queue = math.ceil(t.waiting_per_pod) + 3  # requests waiting for capacity per pod of a saturated side
    hot, roomy = _above(t.kv_ratio), round(min(t.room_kv_ratio, t.kv_ratio) / 2, 4)
    firing: list[tuple[dict[str, str], float]] = []

    def side(cluster: str, namespace: str, role: str, pods: int, waiting: int, kv: float, deferred: int = 0,
             label: bool = True, model: str = MODEL) -> list[str]:
        """`pods` pods of one role (named for it; llm-d's role label from two KSM replicas when `label`),
        each with `waiting` requests waiting for capacity (vLLM 0.20+ reasons when some are `deferred`)."""
        names = [f"llama-{role}-{i}" for i in range(pods)]
        for pod in names:
            where, engine = b.where(cluster, namespace, pod), {"engine": "0", "model_name": model}
            b.vllm(inc, "vllm:num_requests_running", where, f"4x{n}", **engine)
            b.vllm(inc, "vllm:kv_cache_usage_perc", where, f"{kv}x{n}", **engine)
            b.vllm(inc, "vllm:num_requests_waiting", where, f"{waiting + deferred}x{n}", **engine)
            if deferred:  # waiting on KV from a prefill pod: more decode capacity would not admit them
                b.vllm(inc, f.WAITING_BY_REASON, where, f"{waiting}x{n}", **engine, reason="capacity")
                b.vllm(inc, f.WAITING_BY_REASON, where, f"{deferred}x{n}", **engine, reason="deferred")
            if label:
                b.role_label(inc, where, role, n)
        return [b.role(pod, role if label else "") for pod in names]

    def expect(cluster: str, namespace: str, short: str, value: float, *found: list[str]) -> None:
        # fires where the config tells every pod's role (the defaults: the label, else the name)
        wanted = [short, "decode" if short == "prefill" else "prefill"]
        if all(set(roles_) == {role} for roles_, role in zip(found, wanted, strict=True)):
            firing.append(({b.cfg.cluster_label: cluster, "namespace": namespace, "model_name": MODEL, "short": short},
                           value))

    # prefill short: 2 prefill pods (by label) with a queue, 3 decode pods (by name only) with room, whose
    # queues wait on KV transfers (deferred), not on capacity
    expect("prod-a", "pd-a", "prefill", queue,
           side("prod-a", "pd-a", "prefill", 2, queue, roomy), side("prod-a", "pd-a", "decode", 3, 0, roomy, 20, label=False))
    # decode short: decode KV cache nearly full with a few requests waiting, prefill idle
    expect("prod-a", "pd-b", "decode", 1,
           side("prod-a", "pd-b", "decode", 2, 1, hot), side("prod-a", "pd-b", "prefill", 1, 0, roomy))
    # balanced twin: both sides saturated (add capacity to both, not a ratio problem); the same namespace in
    # another cluster with the prefill side alone, saturated (not disaggregated: nothing to compare)
    side("prod-a", "pd-c", "prefill", 2, queue, roomy, model=OTHER_MODEL)
    side("prod-a", "pd-c", "decode", 2, queue, roomy, model=OTHER_MODEL)
    side("prod-b", "pd-a", "prefill", 2, queue, roomy)
    inc.expect("VLLMPrefillDecodeImbalance", on_time(0, t.for_), firing)
    return inc


def _saturation_targets(cfg: ObspackConfig, model: str) -> tuple[float, float]:
    """(queue, KV) targets of a model: the first autoscaling.models entry it matches, else the defaults."""
    a = cfg.autoscaling
    for entry in a.models:
        if re.fullmatch(entry.model_regex, model):
            return (entry.queue or a.targets.queue, entry.kv_cache or a.targets.kv_cache)
    return a.targets.queue, a.targets.kv_cache


def _serving(b: Builder, inc: Incident, where: dict[str, str], n: int, *, engines: int, waiting: float,
             kv: float, awake: bool = True) -> None:
    """A vLLM pod whose engines each run a request, wait for capacity and use the KV cache as given (0.33).
    Its series name their container, as scraped ones do: that alone marks the pod as vLLM where the image
    regex does not take the test's image (no extra marker series, which would count as another engine)."""
    if b.image_ok:
        b.vllm_container(inc, where, "vllm", n)
    where = {**where, "container": "vllm"}
    for engine in map(str, range(engines)):
        b.vllm(inc, "vllm:num_requests_running", where, f"1x{n}", engine=engine)
        b.vllm(inc, "vllm:num_requests_waiting", where, f"{waiting:g}x{n}", engine=engine)
        b.vllm(inc, f.WAITING_BY_REASON, where, f"{waiting:g}x{n}", engine=engine, reason="capacity")
        b.vllm(inc, f.WAITING_BY_REASON, where, f"0x{n}", engine=engine, reason="deferred")
        b.vllm(inc, "vllm:kv_cache_usage_perc", where, f"{kv:g}x{n}", engine=engine)
        b.sleep_state(inc, where, (awake, n), engine=engine)


def autoscaler_maxed_out(b: Builder) -> Incident:
    """The HPA at its maximum with its model past the targets fires; one with room to grow, and one at its
    maximum beside an idle model, do not. The signal itself is checked too: queue per engine over the queue
    target, the larger of it and the KV cache over the KV target, engines asleep and the router left out."""
    t = b.cfg.alerts.VLLMAutoscalerMaxedOut
    queue, kv_target = _saturation_targets(b.cfg, MODEL)
    inc = Incident("VLLMAutoscalerMaxedOut: at max replicas while saturated fires; room to grow or an idle model "
                   "does not; the saturation signal counts awake engines only")
    n = int(minutes(t.for_)) + 15
    # inference: two pods of two engines each; every engine waits for 2.5 x the queue target x the threshold
    per_engine = round(queue * t.saturation * 2.5, 3)
    for pod in ("llama-0", "llama-1"):
        _serving(b, inc, b.where("prod-a", "inference", pod), n, engines=2, waiting=per_engine, kv=0.5)
    # a pod put to sleep keeps a huge stale queue: left out of the signal
    _serving(b, inc, b.where("prod-a", "inference", "llama-2"), n, engines=1, waiting=per_engine * 40, kv=1.0, awake=False)
    # production-stack's router copy: no model_name, never counted
    router = {**b.sel["vllm"], b.cfg.cluster_label: "prod-a", "namespace": "inference",
              "pod": "vllm-router-5f9c", "server": "http://10.1.2.3:8000"}
    inc.add("vllm:num_requests_waiting", router, f"{per_engine * 100:g}x{n}", fill=False)
    b.hpa(inc, "kube_horizontalpodautoscaler_status_current_replicas", "prod-a", "inference", "keda-hpa-chat", f"4x{n}")
    b.hpa(inc, "kube_horizontalpodautoscaler_spec_max_replicas", "prod-a", "inference", "keda-hpa-chat", f"4x{n}")
    b.hpa(inc, "kube_horizontalpodautoscaler_status_current_replicas", "prod-a", "inference", "batch", f"2x{n}")
    b.hpa(inc, "kube_horizontalpodautoscaler_spec_max_replicas", "prod-a", "inference", "batch", f"6x{n}")
    # another namespace at its maximum, its model idle: no queue, the KV cache at a tenth of the target, or of
    # the threshold where that is under 1 (4 decimals: a tiny one rounds to an empty cache, still idle)
    idle_kv = round(kv_target * min(t.saturation, 1) / 10, 4)
    _serving(b, inc, b.where("prod-a", "research", "mistral-0"), n, engines=1, waiting=0, kv=idle_kv)
    b.hpa(inc, "kube_horizontalpodautoscaler_status_current_replicas", "prod-a", "research", "mistral", f"3x{n}")
    b.hpa(inc, "kube_horizontalpodautoscaler_spec_max_replicas", "prod-a", "research", "mistral", f"3x{n}")
    at = on_time(0, t.for_)
    inc.expect("VLLMAutoscalerMaxedOut", at, [
        ({b.cfg.cluster_label: "prod-a", "namespace": "inference", "horizontalpodautoscaler": "keda-hpa-chat"}, 4),
    ])
    cl = b.cfg.cluster_label
    ns = f"namespace={inc.ref('namespace', 'inference')}"
    signal = max(per_engine / queue, 0.5 / kv_target)  # the same float operations as the record's
    inc.expect_samples(f"{c.SATURATION}{{{ns}}}", at, [
        (c.SATURATION, {cl: "prod-a", "namespace": "inference", "model_name": MODEL}, signal),
    ])
    inc.expect_samples(f"{c.SATURATION_PART}{{{ns}}}", at, [
        (c.SATURATION_PART, {cl: "prod-a", "namespace": "inference", "model_name": MODEL, "signal": "queue"},
         per_engine / queue),
        (c.SATURATION_PART, {cl: "prod-a", "namespace": "inference", "model_name": MODEL, "signal": "kv_cache"},
         0.5 / kv_target),
    ])
    return inc


def autoscaler_thrashing(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMAutoscalerThrashing
    inc = Incident("VLLMAutoscalerThrashing: replicas up and down repeatedly fire; a steady climb, or flapping "
                   "outside vLLM's namespaces, do not")
    k = math.ceil(t.reversals)
    flips = 2 * k  # up, down, up, down, ...
    window = int(minutes(t.window))
    period = max(1, min(5, window // flips))  # every flip inside the window (the config allows k up to window / 2)
    onset = flips * period  # the k-th fall lands there
    at = on_time(onset, t.for_)
    # the first rise leaves the window at period + window: where `for` outlasts that, the replicas keep
    # flapping until the alert is checked (any `window` minutes of it hold k rises and k falls), and the
    # check moves off a minute whose window starts on a rise (Prometheus 2 counts a window's first minute,
    # Prometheus 3 leaves it out)
    total = flips
    if at >= period + window:
        if (at - window) % (2 * period) == period:
            at += 1
        total = max(flips, 2 * math.ceil(at / (2 * period)))
    rises = sum(1 for i in range(1, total, 2) if at - window < i * period <= at)
    n = period * total + window + 10
    flapping = " ".join(f"{2 + (i % 2)}x{period - 1}" for i in range(total + 1)) + f" 2x{n}"
    climbing = " ".join(f"{2 + i}x{period - 1}" for i in range(flips + 1)) + f" {2 + flips}x{n}"
    hpas = (("inference", "keda-hpa-chat", flapping), ("inference", "steady", climbing), ("web", "shop", flapping))
    # the rule reads each HPA series at every minute of the window twice (now and a minute before), and
    # promtool's test engine holds at most PROMTOOL_QUERY_SAMPLES per query: past about 13 hours of window,
    # one kube-state-metrics replica only (the collapse of the two is checked at shorter windows)
    replicas = 2 if len(hpas) * 2 * 2 * (window + 1) <= PROMTOOL_QUERY_SAMPLES else 1
    b.vllm_container(inc, b.where("prod-a", "inference", "llama-0"), "vllm", n + total * period)
    for namespace, name, values in hpas:
        b.hpa(inc, "kube_horizontalpodautoscaler_status_desired_replicas", "prod-a", namespace, name, values,
              replicas=replicas)
    inc.expect("VLLMAutoscalerThrashing", at, [
        ({b.cfg.cluster_label: "prod-a", "namespace": "inference", "horizontalpodautoscaler": "keda-hpa-chat"}, rises),
    ])
    inc.expect("VLLMAutoscalerThrashing", onset - 1, [])
    return inc


def autoscaler_scale_up_blocked(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMAutoscalerScaleUpBlocked
    inc = Incident("VLLMAutoscalerScaleUpBlocked: a vLLM pod that needs GPUs and cannot be scheduled fires; a "
                   "CPU-only pod, a GPU pod outside vLLM's namespaces, and a short wait do not")
    n = int(minutes(t.for_)) + 15
    # the namespace runs vLLM (a serving pod). A pending pod has no container status, so kube-state-metrics
    # gives it no kube_pod_container_info: only its requests (no node label yet), its owner and its namespace.
    b.vllm_container(inc, b.where("prod-a", "inference", "llama-0"), "vllm", n)
    pods = [("inference", "llama-5", "2", f"1x{n}"), ("inference", "llama-6", "0", f"1x{n}"),
            ("web", "embedder-0", "1", f"1x{n}"), ("inference", "llama-7", "1", f"1x2 0x{n}")]
    fire = [(b.where("prod-a", "inference", "llama-5"), 2)]
    for namespace, pod, gpus, pending in pods:
        where = b.where("prod-a", namespace, pod)
        owner = f"{pod.split('-')[0]}-5c7b9d8f4"
        b.ksm(inc, "kube_pod_owner",
              {**where, "owner_kind": "ReplicaSet", "owner_name": owner, "owner_is_controller": "true"}, f"1x{n}")
        b.ksm(inc, "kube_pod_status_unschedulable", where, pending)
        container = "embedder" if namespace == "web" else "vllm"
        if gpus != "0":
            b.ksm(inc, "kube_pod_container_resource_requests",
                  {**where, "container": container, "resource": "nvidia_com_gpu", "unit": "integer"}, f"{gpus}x{n}")
        b.ksm(inc, "kube_pod_container_resource_requests",
              {**where, "container": container, "resource": "memory", "unit": "byte"}, f"{64 * GIB}x{n}")
    if b.takes("embedder", ""):  # a config that takes any container name for vLLM (a pending pod has no image)
        fire.append((b.where("prod-a", "web", "embedder-0"), 1))
    # llama-7 waits three minutes: with a `for` under two it pages too, so the check comes after its wait ended
    inc.expect("VLLMAutoscalerScaleUpBlocked", max(on_time(0, t.for_), 3), fire)
    return inc


def autoscaler_signal_missing(b: Builder) -> Incident:
    t = b.cfg.alerts.VLLMAutoscalerSignalMissing
    inc = Incident("VLLMAutoscalerSignalMissing: an HPA that cannot read its metric, KEDA scaler errors and empty "
                   "answers fire (KEDA scraped with or without honor_labels); healthy ones do not")
    n = int(minutes(t.for_) + minutes(t.window)) + 15
    b.vllm_container(inc, b.where("prod-a", "inference", "llama-0"), "vllm", n)
    for hpa, active in (("keda-hpa-chat", False), ("batch", True)):
        for status in ("true", "false", "unknown"):
            value = int(status == ("true" if active else "false"))
            b.hpa(inc, "kube_horizontalpodautoscaler_status_condition", "prod-a", "inference", hpa, f"{value}x{n}",
                  condition="ScalingActive", status=status)
    cl = b.cfg.cluster_label
    # the operator's series carry the ScaledObject's namespace; scraped without honor_labels it moves to
    # exported_namespace and the target's namespace (keda) takes its place
    for scaled, errors, labels in (
        ("summarizer", "0+2x", {"namespace": "inference"}),
        ("translator", "0+2x", {"namespace": "keda", "exported_namespace": "inference"}),
        ("chat", "5x", {"namespace": "inference"}),
    ):
        b.keda(inc, "keda_scaler_detail_errors_total",
               {cl: "prod-a", **labels, "scaledObject": scaled, "scaler": "prometheusScaler", "triggerIndex": "0",
                "metric": "s0-prometheus", "type": "scaledobject"}, f"{errors}{n}")
    b.keda(inc, "keda_scaler_empty_upstream_responses_total",
           {cl: "prod-a", "namespace": "inference", "scaledResource": "writer", "triggerName": "vllm-saturation",
            "metricName": "s0-prometheus", "resourceType": "scaledobject", "ignoreNullValues": "false"}, f"0+1x{n}")
    at = on_time(1, t.for_)
    inc.expect("VLLMAutoscalerSignalMissing", at, [
        ({cl: "prod-a", "namespace": "inference", "horizontalpodautoscaler": "keda-hpa-chat"}, 1),
        ({cl: "prod-a", "namespace": "inference", "scaledObject": "summarizer"}, 2 * minutes(t.window)),
        ({cl: "prod-a", "namespace": "inference", "scaledObject": "translator"}, 2 * minutes(t.window)),
        ({cl: "prod-a", "namespace": "inference", "scaledResource": "writer"}, minutes(t.window)),
    ])
    return inc


# ---------------------------------------------------------------------------------------------------------
# Cost: the alerts read windows of a day and a week, so their files are evaluated every few minutes or hours
# (a quarter or less of the idle window; six hours for the weekly comparison, whose test spans two weeks and
# would otherwise take a minute of promtool), not every minute.

WEEK = 7 * 24 * 60
_EVALUATIONS = (60, 30, 20, 15, 12, 10, 6, 5, 4, 3, 2, 1)  # minutes that divide an hour


def cost_evaluation(cfg: ObspackConfig, topic: str) -> int:
    """Minutes between evaluations in a cost test file: six hours for the weekly comparison; for the idle
    share, the longest that divides an hour and fits four times in its window."""
    if topic == "cost-weekly":
        return 360
    window = minutes(cfg.alerts.VLLMGPUsMostlyIdle.window)
    return next((e for e in _EVALUATIONS if 4 * e <= window), 1)


def _on_evaluation(at: float, every: int) -> int:
    return int(math.ceil(at / every) * every)


def _gpu_pod(b: Builder, inc: Incident, where: dict[str, str], model: str, n: int, *, gpus: int, node: str,
             running: str, generated: str, prompt: str = "", asleep: bool = False) -> None:
    """A vLLM pod (0.33) with `gpus` H100s mapped to it by dcgm-exporter, its running requests and token
    counters as given (promtool notation over `n` minutes). Its engine series name their container, which
    marks the pod as vLLM where the image regex does not take the test's image."""
    if b.image_ok:
        b.vllm_container(inc, where, "vllm", n)
    where = {**where, "container": "vllm"}
    b.vllm(inc, "vllm:num_requests_running", where, running, engine="0", model_name=model)
    b.vllm(inc, "vllm:generation_tokens_total", where, generated, engine="0", model_name=model)
    b.vllm(inc, "vllm:prompt_tokens_total", where, prompt or generated, engine="0", model_name=model)
    if asleep:
        b.sleep_state(inc, where, (False, n), engine="0", model_name=model)
    for g in range(gpus):
        b.dcgm(inc, "DCGM_FI_DEV_FB_USED", {**where, "gpu": str(g), "UUID": f"GPU-{node}-{g}",
               "Hostname": node}, f"70000x{n}")


def gpus_mostly_idle(b: Builder) -> Incident:
    """llama holds a GPU and serves nothing all along: it fires. A serving model, one asleep, and one as idle
    that arrived within the window do not."""
    t = b.cfg.alerts.VLLMGPUsMostlyIdle
    every = cost_evaluation(b.cfg, "cost")
    window = minutes(t.window)
    at = _on_evaluation(window + math.ceil(minutes(t.for_)) + 2 * every, every)
    n = int(at + 2 * every + 10)
    inc = Incident("VLLMGPUsMostlyIdle: GPUs held all day by an idle model fire; a serving model, an engine asleep "
                   "and an idle model that arrived within the window do not")
    flat = f"5000x{n}"
    _gpu_pod(b, inc, b.where("prod-a", "inference", "llama-0"), MODEL, n, gpus=1, node="gpu-node-1",
             running=f"0x{n}", generated=flat)
    _gpu_pod(b, inc, b.where("prod-a", "inference", "qwen-0"), "Qwen/Qwen3-8B", n, gpus=1, node="gpu-node-2",
             running=f"2x{n}", generated=f"0+3000x{n}")
    _gpu_pod(b, inc, b.where("prod-a", "research", "mistral-0"), "mistralai/Mistral-7B-Instruct-v0.3", n, gpus=1,
             node="gpu-node-3", running=f"0x{n}", generated=flat, asleep=True)
    # phi arrives one evaluation after the window's start: not held "all day" yet
    late = int(at - window + every)
    where = b.where("prod-a", "research", "phi-0")
    b.vllm(inc, "vllm:num_requests_running", where, f"_x{late} 0x{n - late}", engine="0", model_name="microsoft/phi-4")
    b.vllm(inc, "vllm:generation_tokens_total", where, f"_x{late} 5x{n - late}", engine="0", model_name="microsoft/phi-4")
    b.dcgm(inc, "DCGM_FI_DEV_FB_USED", {**where, "container": "vllm", "gpu": "0", "UUID": "GPU-gpu-node-4-0",
           "Hostname": "gpu-node-4"}, f"_x{late} 70000x{n - late}")
    cl = b.cfg.cluster_label
    inc.expect("VLLMGPUsMostlyIdle", at, [({cl: "prod-a", "namespace": "inference", "model_name": MODEL}, 1)])
    if window > every:
        inc.expect("VLLMGPUsMostlyIdle", _on_evaluation(window, every) - every, [])
    return inc


def cost_per_million_tokens_rising(b: Builder) -> Incident:
    """llama serves half the tokens per GPU-hour in its second week (and more than `increase` fewer): it
    fires. A model as busy both weeks, and one with the same drop but too little traffic to judge, do not."""
    t = b.cfg.alerts.VLLMCostPerMillionTokensRising
    every = cost_evaluation(b.cfg, "cost-weekly")
    at = _on_evaluation(2 * WEEK + math.ceil(minutes(t.for_)) + 2 * every, every)
    n = at + 130
    slow = max(100.0, 4 * t.min_tokens_per_second)  # tokens per second in the second week
    fast = slow * (1 + t.increase) * 2  # in the first: the GPU time per token at least doubles past the threshold
    inc = Incident("VLLMCostPerMillionTokensRising: a model whose GPUs serve half the tokens week over week fires; "
                   "a steady model and one with too little traffic do not")

    def tokens(first: float, second: float) -> str:
        at_week = first * 60 * WEEK
        return f"0+{first * 60:g}x{WEEK} {at_week + second * 60:g}+{second * 60:g}x{n - WEEK - 1}"

    _gpu_pod(b, inc, b.where("prod-a", "inference", "llama-0"), MODEL, n, gpus=2, node="gpu-node-1",
             running=f"4x{n}", generated=tokens(fast, slow), prompt=tokens(fast, slow))
    _gpu_pod(b, inc, b.where("prod-a", "inference", "qwen-0"), "Qwen/Qwen3-8B", n, gpus=1, node="gpu-node-2",
             running=f"4x{n}", generated=tokens(slow, slow), prompt=tokens(slow, slow))
    trickle = t.min_tokens_per_second / 8
    _gpu_pod(b, inc, b.where("prod-a", "research", "mistral-0"), "mistralai/Mistral-7B-Instruct-v0.3", n, gpus=1,
             node="gpu-node-3", running=f"1x{n}", generated=tokens(trickle * 4, trickle),
             prompt=tokens(trickle * 4, trickle))
    # the rule's own arithmetic: the token rate (input and output) at each evaluation of each closed window
    def rate(minute: int) -> float:
        return 2 * (fast if minute <= WEEK else slow)

    this = [rate(m) for m in range(at - WEEK, at + 1, every)]
    last = [rate(m) for m in range(at - 2 * WEEK, at - WEEK, every)]  # two weeks less the last (closed) one
    value = (2 * len(this) / sum(this)) / (2 * len(last) / sum(last)) - 1
    cl = b.cfg.cluster_label
    inc.expect("VLLMCostPerMillionTokensRising", at, [({cl: "prod-a", "namespace": "inference", "model_name": MODEL}, value)])
    return inc


INCIDENTS: dict[str, Callable[[Builder], Incident]] = {
    "VLLMGPUsMostlyIdle": gpus_mostly_idle,
    "VLLMCostPerMillionTokensRising": cost_per_million_tokens_rising,
    "VLLMAutoscalerMaxedOut": autoscaler_maxed_out,
    "VLLMAutoscalerThrashing": autoscaler_thrashing,
    "VLLMAutoscalerScaleUpBlocked": autoscaler_scale_up_blocked,
    "VLLMAutoscalerSignalMissing": autoscaler_signal_missing,
    "VLLMHostMemoryNearLimit": host_memory,
    "VLLMContainerOOMKilled": oom_killed,
    "VLLMContainerRestarted": restarted,
    "VLLMGPUMemoryNearFull": gpu_memory,
    "VLLMKVCacheUsageHigh": kv_high,
    "VLLMKVCacheUsageCritical": kv_critical,
    "VLLMRequestQueueBacklog": queue_backlog,
    "VLLMZeroThroughput": zero_throughput,
    "VLLMTargetDown": target_down,
    "VLLMRequestPreemptions": preemptions,
    "VLLMPrefixCacheHitRateLow": prefix_cache,
    "VLLMKVCacheFragmentationHigh": kv_fragmentation,
    "VLLMCUDAAllocatorFragmentationHigh": cuda_fragmentation,
    "ObspackExporterTargetDown": exporter_down,
    "VLLMKVTransferFailures": kv_transfer_failures,
    "VLLMAdmissionRejections": admission_rejections,
    "VLLMKVOffloadAllocationFailures": kv_offload_failures,
    "VLLMSpecDecodeAcceptanceLow": spec_decode,
    "VLLMPrefillDecodeImbalance": prefill_decode_imbalance,
}

TOPIC_FILES = {
    "memory-planes": ("VLLMHostMemoryNearLimit", "VLLMContainerOOMKilled", "VLLMContainerRestarted",
                      "VLLMGPUMemoryNearFull"),
    "vllm-engine": ("VLLMKVCacheUsageHigh", "VLLMKVCacheUsageCritical", "VLLMRequestQueueBacklog",
                    "VLLMZeroThroughput", "VLLMTargetDown", "VLLMRequestPreemptions", "VLLMPrefixCacheHitRateLow"),
    "exporter": ("VLLMKVCacheFragmentationHigh", "VLLMCUDAAllocatorFragmentationHigh", "ObspackExporterTargetDown"),
    "vllm-features": ("VLLMKVTransferFailures", "VLLMAdmissionRejections", "VLLMKVOffloadAllocationFailures",
                      "VLLMSpecDecodeAcceptanceLow"),
    "autoscaling": ("VLLMAutoscalerThrashing", "VLLMAutoscalerMaxedOut", "VLLMAutoscalerScaleUpBlocked",
                    "VLLMAutoscalerSignalMissing"),
    "disaggregation": ("VLLMPrefillDecodeImbalance",),
    "cost": ("VLLMGPUsMostlyIdle",),
    "cost-weekly": ("VLLMCostPerMillionTokensRising",),
    "gateway": ("InferenceGatewayPickerDown", "InferencePoolNoReadyEndpoints", "InferencePoolSaturated",
                "InferenceGatewayFlowControlRejections", "InferenceGatewaySchedulingLatencyHigh"),
}


def incidents() -> dict[str, Callable[[Builder], Incident]]:
    """Every alert's incident: this module's and the inference pool's. gateway.py builds on this module's
    blocks, so it is imported here, once this module is complete, not at its top."""
    from obspack.pack.shipped_tests import gateway

    return {**INCIDENTS, **gateway.INCIDENTS}


def expected_alert(rule: AlertRule, labels: dict[str, str], value: float) -> dict[str, object]:
    full = {**labels, **dict(rule.labels), "severity": rule.severity.value}
    annotations = rule.to_dict()["annotations"]
    return {
        "exp_labels": dict(sorted(full.items())),
        "exp_annotations": {k: expand(str(v), full, value) for k, v in annotations.items()},  # type: ignore[union-attr]
    }


def _test_case(b: Builder, inc: Incident, rules: dict[str, AlertRule], step: int = 60) -> dict[str, object]:
    inc, mapping, series = b.finish(inc)
    checks = []
    for alert, at, firing in inc.checks:
        case: dict[str, object] = {"eval_time": at, "alertname": alert}
        if firing:
            case["exp_alerts"] = [expected_alert(rules[alert], mapping.labels(labels), value) for labels, value in firing]
        checks.append(case)
    case = {
        "name": inc.name,
        "interval": sampling.interval(step),
        "input_series": [{"series": s, "values": sampling.per_step(v, step)} for s, v in series],
        "alert_rule_test": checks,
    }
    if inc.samples:
        case["promql_expr_test"] = [
            {
                "expr": resolve(expr, mapping),
                "eval_time": at,
                "exp_samples": [expected_sample(name, mapping.labels(labels), value) for name, labels, value in samples],
            }
            for expr, at, samples in inc.samples
        ]
    return case


def expected_sample(name: str, labels: dict[str, str], value: float) -> dict[str, object]:
    return {"labels": series_text(name, dict(sorted(labels.items()))), "value": value}


def rule_tests(cfg: ObspackConfig) -> tuple[dict[str, dict[str, object]], list[str]]:
    """One promtool test file per alert topic (alerts that are disabled have no test), and why an enabled
    alert has none: selectors that leave too few label values for its incident."""
    builder = Builder(cfg)
    rules = {r.alert: r for r in all_alerts(cfg)}
    kept = [name for name in rules if enabled(cfg, name)]
    if not builder.usable:
        return {}, [f"no alert tests: {builder.problem}"]
    order = [g.name for g in (*all_recording_groups(cfg), *alert_groups(cfg))]
    files: dict[str, dict[str, object]] = {}
    missing: list[str] = []
    builders = incidents()
    for topic, names in TOPIC_FILES.items():
        tests = []
        for name in names:
            if name not in kept:
                continue
            try:
                tests.append(_test_case(builder, builders[name](builder), rules, sampling.step_seconds(cfg, name)))
            except satisfy.Unsatisfiable as e:
                missing.append(f"no test of {name}: {e}")
        if tests:
            files[f"{topic}_test.yaml"] = {
                "rule_files": ["../prometheus/recording-rules.yaml", "../prometheus/alerts.yaml"],
                "evaluation_interval": f"{cost_evaluation(cfg, topic)}m" if topic.startswith("cost") else "1m",
                # records feed records in other groups: evaluate them in the order the files list them
                "group_eval_order": order,
                "tests": tests,
            }
    return files, missing
