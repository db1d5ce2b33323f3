"""Fleets of different shapes for the doctor: obspack/demo/fleet.py's healthy fleet, reshaped line by line.

A shape leaves out sources, strips labels (no cluster label, cAdvisor without image or container), moves
dcgm-exporter to its old label names (`pod_name`, `pod_namespace`, `container_name`, `uuid`), stops a
source before the end (gone since), or leaves out one vLLM generation. Every shape also gets `up` for each
scrape target, as a real Prometheus has.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from obspack.demo.fleet import FleetSpec, FleetSummary, Pod, write_openmetrics
from obspack.demo.prometheus import Prometheus
from tests.support.prometheus import backfill_openmetrics, running_prometheus

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
EXPORTER_POD = {
    "pod": "nvidia-dcgm-exporter-old",
    "namespace": "gpu-operator",
    "container": "nvidia-dcgm-exporter",
}
OLD_NAMES = {"pod": "pod_name", "namespace": "pod_namespace", "container": "container_name"}
TARGET_JOBS = ("vllm", "obspack-exporter")  # jobs whose targets are pods: `up` carries namespace and pod
# What the doctor says of every fleet here at its last sample: the records are written live, after it, and
# the SLO page reads them over windows of up to 30 days.
YOUNG_RECORDS = ("note", "dashboard", "vllm-slos")
NO_PRICES = ("note", "cost", "prices")  # the cost page counts GPU-hours until cost.gpus sets prices


@dataclass(frozen=True)
class Shape:
    spec: FleetSpec
    drop: tuple[str, ...] = ()  # series whose name starts with one of these are left out
    strip: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # name prefix -> labels removed
    dcgm_old: bool = False
    stop: Mapping[str, int] = field(default_factory=dict)  # name prefix -> seconds before the end it stops
    generations: tuple[str, ...] = ("v0", "v1")  # vLLM pods of other generations are left out


def generation(pod: Pod) -> str:
    """The vLLM generation the doctor names for a pod of the synthetic fleet: 0.33 engines report the queue's
    reasons (0.20+), 0.11 engines are told by their KV usage gauge, V0 by its prefix-cache hit-rate gauge."""
    return {"0.33": "V1 >= 0.20", "0.11": "V1 >= 0.9.2"}.get(pod.release, "V0 <= 0.9.0")


def _parse(labels: str) -> dict[str, str]:
    return dict(_LABEL.findall(labels))


def _join(labels: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _dcgm_old(labels: dict[str, str]) -> dict[str, str]:
    if "exported_pod" in labels:
        for new, old in OLD_NAMES.items():
            labels[old] = labels.pop(f"exported_{new}")
    elif not labels.get("pod", "").startswith("nvidia-dcgm-exporter"):
        for new, old in OLD_NAMES.items():
            labels[old] = labels[new]
        labels.update(EXPORTER_POD)
    labels["uuid"] = labels.pop("UUID")
    return labels


@dataclass
class _Series:
    """What a series becomes, worked out at its first sample (a fleet file has hundreds of samples per series)."""

    head: str  # the reshaped `name{labels` (the sample's closing brace, value and timestamp follow)
    cuts: list[int]  # timestamps after which its samples are left out (a source stopped)
    labels: dict[str, str] | None  # its labels before reshaping, until its first kept sample names its target


class _Reshaper:
    def __init__(self, shape: Shape, summary: FleetSummary) -> None:
        self.shape = shape
        self.cut = {prefix: summary.end - seconds for prefix, seconds in shape.stop.items()}
        self.left_out = {p.name for p in summary.pods if p.generation not in shape.generations}
        self.targets: dict[tuple[tuple[str, str], ...], None] = {}
        self.cl = shape.spec.cluster_label
        self.series: dict[str, _Series | None] = {}

    def keep_family(self, name: str) -> bool:
        return not name.startswith(self.shape.drop)

    def sample(self, line: str) -> str | None:
        head, _, tail = line.rpartition("}")
        if head not in self.series:
            self.series[head] = self._series(head)
        series = self.series[head]
        if series is None or any(float(tail.split()[1]) > cut for cut in series.cuts):
            return None
        if series.labels is not None:
            self._target(series.labels)
            series.labels = None
        return f"{series.head}}}{tail}"

    def _series(self, head: str) -> _Series | None:
        name, _, labels_text = head.partition("{")
        if name.startswith(self.shape.drop):
            return None
        labels = _parse(labels_text)
        if self.left_out and self.left_out & {labels.get("pod"), labels.get("exported_pod"), self._endpoint(labels)}:
            return None  # a pod left out is no endpoint of its pool either
        cuts = [cut for prefix, cut in self.cut.items() if name.startswith(prefix)]
        original = dict(labels)
        for prefix, stripped in self.shape.strip.items():
            if name.startswith(prefix):
                for label in stripped:
                    labels.pop(label, None)
        if self.shape.dcgm_old and name.startswith("DCGM_"):
            labels = _dcgm_old(labels)
        return _Series(f"{name}{{{_join(labels)}", cuts, original)

    @staticmethod
    def _endpoint(labels: Mapping[str, str]) -> str | None:
        """The pod an endpoint picker's per-endpoint series is about (either era's label)."""
        return labels.get("model_server_endpoint") or labels.get("model_server_pod")

    def _target(self, labels: Mapping[str, str]) -> None:
        if "job" not in labels:
            return
        keep = [self.cl, "job", "instance"] + (["namespace", "pod"] if labels["job"] in TARGET_JOBS else [])
        key = tuple((k, labels[k]) for k in keep if k in labels and not self._stripped_everywhere(k))
        self.targets.setdefault(key)

    def _stripped_everywhere(self, label: str) -> bool:
        return label == self.cl and any(self.cl in labels for labels in self.shape.strip.values())

    def up_family(self, stamps: list[int]) -> Iterator[str]:
        yield "# HELP up Whether the scrape target is up.\n# TYPE up gauge\n"
        for key in self.targets:
            series = f"up{{{_join(dict(key))}}} "
            yield "".join(f"{series}1 {t}\n" for t in stamps)


def write_shape(shape: Shape, path: Path) -> FleetSummary:
    raw = path.with_suffix(".raw.om")
    summary = write_openmetrics(shape.spec, raw)
    reshaper = _Reshaper(shape, summary)
    stamps = list(range(summary.start, summary.end + 1, shape.spec.step_s))
    keep = True
    with raw.open(encoding="utf-8") as source, path.open("w", encoding="utf-8") as out:
        for line in source:
            if line.startswith("# HELP "):
                keep = reshaper.keep_family(line.split(" ", 3)[2])
            if line.startswith("# EOF"):
                out.writelines(reshaper.up_family(stamps))
                out.write(line)
            elif line.startswith("#"):
                if keep:
                    out.write(line)
            else:
                reshaped = reshaper.sample(line)
                if reshaped is not None:
                    out.write(reshaped)
    raw.unlink()
    pods = tuple(p for p in summary.pods if p.generation in shape.generations)
    workers = tuple(p for p in summary.workers if p.generation in shape.generations)
    return FleetSummary(spec=summary.spec, pods=pods, series=summary.series, samples=summary.samples, workers=workers)


@dataclass(frozen=True)
class Served:
    prom: Prometheus
    summary: FleetSummary
    rules: Path  # the loaded rule file: rewrite it and call prom.reload() to change what is loaded


def _records_present(prom: Prometheus, names: list[str]) -> int:
    rows = prom.query(f'count by (__name__) ({{__name__=~"{"|".join(names)}"}})', time.time())
    return len(rows)


def wait_for_records(prom: Prometheus, groups: list[dict[str, object]], timeout: float = 30.0) -> None:
    """Wait until the recording rules have had their rounds: records reading other groups' records fill in
    one evaluation after their inputs, so wait until some records have data and their number stops growing."""
    names = [str(r["record"]) for g in groups for r in g["rules"] if "record" in r]  # type: ignore[union-attr]
    if not names:
        return
    deadline = time.monotonic() + timeout
    seen, steady = -1, 0
    while time.monotonic() < deadline and steady < 3:
        time.sleep(1.0)
        present = _records_present(prom, names)
        steady = steady + 1 if present == seen and present else 0
        seen = present


EVALUATION_S = 2


@contextmanager
def serving(shape: Shape, root: Path, rule_groups: list[dict[str, object]]) -> Iterator[Served]:
    """A real Prometheus holding the shaped fleet, with `rule_groups` loaded and evaluated every 2 s (the
    doctor notes a group that takes half its interval: the GPU attribution group takes about 0.5 s here
    when the suite's two workers share the cores)."""
    root.mkdir(parents=True, exist_ok=True)
    summary = write_shape(shape, root / "fleet.om")
    backfill_openmetrics(root / "fleet.om", root / "data")
    (root / "fleet.om").unlink()
    rules = root / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups}, sort_keys=False))
    with running_prometheus(root / "data", rule_files=[rules], evaluation_interval=f"{EVALUATION_S}s") as prom:
        prom.wait_for_rule_evaluations()
        wait_for_records(prom, rule_groups)
        yield Served(prom, summary, rules)
