"""A real VictoriaMetrics on 127.0.0.1 for the tests, fed with promtool's test series, and vmalert's replay.

promtool's unit tests start at Unix time 0 and write series in its expanding notation (`0+3000x20`,
`1x9 0x5`, `_x9 1x30`). `expand` turns one such string into samples; `VictoriaMetrics.load` imports
series at any base time through the JSON-lines import API. `replay` evaluates rule files over past
data with vmalert, which writes records and `ALERTS` back through remote write.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import promql_parser
import yaml

from obspack.demo.processes import Server, free_port, start_server, wait_ready
from obspack.demo.prometheus import Prometheus
from obspack.doctor import answers

_NUMBER = r"[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN)"
_ITEM = re.compile(rf"^(?P<value>_|{_NUMBER})(?:(?P<step>[-+][0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)?x(?P<times>[0-9]+))?$")


def expand(values: str) -> list[float | None]:
    """promtool's expanding notation, one entry per interval; None where a sample is left out (`_`).

    `a` is one sample, `axN` is N+1 samples of a, `a+bxN` is a, a+b, ... a+N*b, `_xN` leaves out N."""
    out: list[float | None] = []
    for item in values.split():
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"not promtool's expanding notation: {item!r} in {values!r}")
        times = m.group("times")
        if m.group("value") == "_":
            out.extend([None] * (int(times) if times else 1))
            continue
        start, step = float(m.group("value")), float(m.group("step") or 0)
        out.extend(start + i * step for i in range(int(times) + 1 if times else 1))
    return out


def labels_of(series: str) -> dict[str, str]:
    """`name{a="1", b="2"}` as a label map with `__name__`."""
    selector = promql_parser.parse(series)
    if not isinstance(selector, promql_parser.VectorSelector):
        raise ValueError(f"not a series: {series!r}")
    labels = {m.name: m.value for m in selector.matchers.matchers}
    return {"__name__": selector.name, **labels} if selector.name else labels


def rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Sample:
    labels: dict[str, str]
    timestamp: float  # seconds
    value: float


class VictoriaMetrics:
    """victoria-metrics (single node) with its own storage folder; stop() ends the process it started."""

    def __init__(self, binary: str, folder: Path, extra_args: Sequence[str] = ()) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._cleanup = contextlib.ExitStack()
        server = start_server(
            "victoria-metrics",
            lambda address: [binary, f"-httpListenAddr={address}", f"-storageDataPath={folder / 'data'}",
                             "-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=WARN", *extra_args],
            "/health", folder, self._cleanup,
        )  # fmt: skip
        self.url, self.log = server.url, server.log
        self.api = self._cleanup.enter_context(Prometheus(self.url))

    def stop(self) -> None:
        self._cleanup.close()

    def load(self, series: list[tuple[str, str]], start: float, interval: float) -> None:
        """Import promtool `input_series` ((series, values) pairs) with the first sample at `start`."""
        lines = []
        for spec, values in series:
            points = [(start + i * interval, v) for i, v in enumerate(expand(values)) if v is not None]
            if points:
                lines.append(json.dumps({
                    "metric": labels_of(spec),
                    "values": [v for _, v in points],
                    "timestamps": [int(t * 1000) for t, _ in points],
                }))
        request = urllib.request.Request(f"{self.url}/api/v1/import", data="\n".join(lines).encode())
        urllib.request.urlopen(request, timeout=30).read()
        self.flush()

    def import_text(self, source: Path) -> None:
        """Import a Prometheus text or OpenMetrics file (timestamps in seconds) and flush it."""
        request = urllib.request.Request(f"{self.url}/api/v1/import/prometheus", data=source.read_bytes())
        urllib.request.urlopen(request, timeout=120).read()
        self.flush()

    def flush(self) -> None:
        urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=30).read()

    def export(self, match: str, start: float, end: float) -> Iterator[Sample]:
        """Every raw sample of the series matching `match` between start and end (seconds)."""
        query = urllib.parse.urlencode({"match[]": match, "start": int(start), "end": int(end)})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{query}", timeout=30) as answer:
            for line in answer.read().decode().splitlines():
                row = json.loads(line)
                for ts, value in zip(row["timestamps"], row["values"]):
                    yield Sample(row["metric"], ts / 1000, float(value))

    def query(self, expr: str, at: float, step: str = "1m") -> list[tuple[dict[str, str], float]]:
        """An instant query with VictoriaMetrics' own `step` (how far back it looks for a raw sample)."""
        data = self.api.post("query", {"query": expr, "time": at, "step": step, "nocache": 1}, shape="query")
        return [(r["metric"], float(r["value"][1])) for r in answers.check("vector", data["result"])]


@contextlib.contextmanager
def running_vmalert(vmalert: str, rules: Path, vm: VictoriaMetrics, port: int, folder: Path) -> Iterator[str]:
    """vmalert evaluating `rules` every second against `vm` and writing records back to it, listening on
    `port` (give VictoriaMetrics `-vmalert.proxyURL` to it to serve its rules API); its URL."""
    argv = [vmalert, f"-rule={rules}", f"-datasource.url={vm.url}", f"-remoteWrite.url={vm.url}",
            "-remoteWrite.flushInterval=1s", f"-notifier.url=http://127.0.0.1:{free_port()}",  # nobody listens
            f"-httpListenAddr=127.0.0.1:{port}", "-evaluationInterval=1s", "-loggerLevel=WARN"]  # fmt: skip
    with contextlib.ExitStack() as cleanup:
        server = Server.start("vmalert", argv, folder / "vmalert.log", f"127.0.0.1:{port}")
        cleanup.callback(server.stop)
        wait_ready(server, f"{server.url}/health")
        yield server.url


def replay(vmalert: str, rule_files: list[Path], vm: VictoriaMetrics, start: float, end: float, interval: str,
           folder: Path) -> None:
    """vmalert's replay of the rule files over [start, end], reading from and writing to `vm`.

    Rules run one by one, in file order, each its own vmalert replay of one group holding that rule
    alone, and VictoriaMetrics flushes after each: then a rule sees every record made before it, as in
    Prometheus' evaluation order. (Within one vmalert run, a record becomes searchable about a second
    after remote write delivers it, so `-replay.rulesDelay` would need over a second per rule.)
    vmalert 1.79 also needs the query step equal to the group interval (else points come 5m apart and
    `for` never completes) and one query per rule for the whole range (`for` state is lost between
    query chunks)."""
    folder.mkdir(parents=True, exist_ok=True)
    common = [
        f"-datasource.url={vm.url}", f"-remoteWrite.url={vm.url}", f"-replay.timeFrom={rfc3339(start)}",
        f"-replay.timeTo={rfc3339(end)}", f"-evaluationInterval={interval}", f"-datasource.queryStep={interval}",
        "-remoteWrite.flushInterval=100ms", "-replay.rulesDelay=0", "-replay.maxDatapointsPerQuery=100000",
        "-replay.disableProgressBar", "-loggerLevel=WARN",
    ]
    n = 0
    for rule_file in rule_files:
        for group in yaml.safe_load(rule_file.read_text())["groups"]:
            for rule in group["rules"]:
                n += 1
                single = folder / f"{n:03d}.yaml"
                single.write_text(yaml.safe_dump({"groups": [{**group, "rules": [rule]}]}, sort_keys=False))
                done = subprocess.run([vmalert, f"-rule={single}", *common], capture_output=True, text=True, timeout=120)
                if done.returncode != 0 or "error" in done.stderr.lower():
                    raise RuntimeError(f"vmalert replay of {single} ({rule_file.name}): {done.stderr[-2000:]}")
                vm.flush()
