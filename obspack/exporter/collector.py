"""The client_python collector: every collect() scrapes the targets and builds fresh families.

Each target is scraped in a daemon thread of its own ("a flight"), all in parallel; with the built-in
fetch, the collect() that starts flights flies one of them itself, in its own thread (the HTTP request's),
and only the others get new threads (the hand-over to a new thread and back cost about 0.7 ms of a
scrape on two loaded cores, issue 33). Concurrent
collect() calls share one in-flight scrape per target ("single flight"): a second exporter scrape
that arrives while a target is being fetched waits for that fetch instead of starting another. So
vLLM sees at most one request per target at a time, and counter samples reach the window in the
order they were taken (two overlapping fetches could otherwise record a counter going backwards,
read as a reset). The threads are daemons so that a flight in progress never delays the exit of
the process; no flight outlives its deadline anyway (see ``scrape``).

collect() waits for a flight at most ``timeout_s`` plus a second of grace; a flight that overruns
it is counted as a ``timeout`` (a flight a collect flew itself, if it ended past that limit). Each flight's failure is counted once, whoever sees it first.

A target is bounded in what it can make the exporter hold or compute: at most ``max_engines``
engines are derived per target (the first in (model_name, engine) order), and at most
``SAMPLES_PER_ENGINE`` x ``max_engines`` lines of each needed family are read. Anything beyond is
dropped, the target stays up with what fits, and the scrape counts a ``too_many_series`` error.

State kept between scrapes: the bounded ``CounterWindow``, the error counters (targets x
reasons) and the open ``Episodes`` (a target's first failure and its recovery are logged at
WARNING, the failures in between at DEBUG). collect() never raises: a failing target is reported
with ``obspack_target_up 0``, and any unexpected error leaves only the build info in that answer.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry

from obspack import __version__
from obspack.exporter import derive
from obspack.exporter.derive import Derived
from obspack.exporter.episodes import Episodes
from obspack.exporter.parse import PayloadError, check_payload, parse_needed
from obspack.exporter.probe_files import DEFAULT_MAX_AGE_S, DeviceStats, read_probe_dir
from obspack.exporter.scrape import REASONS, Fetch, Reason, ScrapeError, fetch_metrics
from obspack.exporter.window import CounterWindow
from obspack.probe import pid_namespace

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_WINDOW_S = 300.0
DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MAX_ENGINES = 256
SAMPLES_PER_ENGINE = 8  # lines of one family per engine that fit the line cap (multiprocess `pid` copies)
_GRACE_S = 1.0  # how long past the timeout collect() waits for a fetch that should have given up
# The problems whose episodes are logged (see ``episodes``).
DOWN = "down"
OVER_CAP = "over the series cap"
MALFORMED = "sending malformed lines"

DERIVED_HELP: dict[str, str] = {
    derive.PREFIX_CACHE_HIT_RATIO: "Prefix cache hits / queries over the exporter's --window (counter deltas).",
    derive.PREFIX_CACHE_HIT_RATIO_LIFETIME: "Prefix cache hits / queries since the vLLM engine started.",
    derive.KV_CACHE_BLOCKS: "KV cache blocks by state (used, free): usage gauge x num_gpu_blocks.",
    derive.KV_CACHE_BLOCK_SIZE: "Tokens per KV cache block (cache_config_info block_size).",
    derive.KV_CACHE_FRAGMENTATION: (
        "Estimated internal fragmentation of used KV blocks: "
        "running x (block_size - 1) / 2 / (used_blocks x block_size)."
    ),
    derive.KV_CACHE_HEADROOM: "More requests of today's average KV size that fit: free / (used / running).",
}


@dataclass(slots=True)
class TargetReport:
    """The outcome of scraping one target once."""

    target: str
    up: bool
    duration_s: float
    samples: list[Derived] = field(default_factory=list)
    error: str | None = None


@dataclass(eq=False)
class _Flight:
    """One scrape of a target in progress. Its thread sets ``future``; ``counted`` once a failure is counted."""

    future: concurrent.futures.Future[TargetReport] = field(default_factory=concurrent.futures.Future)
    thread: threading.Thread | None = None
    counted: bool = False


class ExporterCollector:
    """Scrapes vLLM targets on every collect() and yields the derived obspack series."""

    def __init__(
        self,
        targets: Sequence[str],
        *,
        window_s: float = DEFAULT_WINDOW_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_engines: int = DEFAULT_MAX_ENGINES,
        probe_dir: Path | None = None,
        probe_max_age_s: float = DEFAULT_MAX_AGE_S,
        fetch: Fetch = fetch_metrics,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.targets = tuple(dict.fromkeys(targets))
        self.window_s = window_s
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_engines = max_engines
        self.probe_dir = probe_dir
        self.probe_max_age_s = probe_max_age_s
        self.fetch = fetch
        self.clock = clock
        self.wall_clock = wall_clock
        self.window = CounterWindow(window_s)
        self._own_pidns = pid_namespace()
        self._errors: dict[tuple[str, Reason], int] = {(t, r): 0 for t in self.targets for r in REASONS}
        self._lock = threading.RLock()
        self._inflight: dict[str, _Flight] = {}
        # fetch_metrics ends by its deadline at every step (see scrape), so a collect may fly one new flight
        # itself instead of handing it to a thread and waiting: two thread switches fewer per scrape. A
        # custom fetch may never return: its flights always get threads, which a collect can give up on.
        self._bounded = fetch is fetch_metrics
        self._episodes = Episodes()
        if registry is not None:
            registry.register(self)

    def collect(self) -> list[Metric]:
        """Scrape every target now and return fresh metric families. Never raises."""
        try:
            started = self.clock()
            flights: list[tuple[str, _Flight]] = []
            own: tuple[str, _Flight] | None = None
            try:
                for target in self.targets:
                    flight, new = self._flight(target, threaded=own is not None or not self._bounded)
                    if new and flight.thread is None:
                        own = (target, flight)
                    flights.append((target, flight))
                devices = self._read_probes()
            finally:  # a flight left for this thread is flown whatever happened: others may be waiting on it
                if own is not None:
                    self._fly(*own)
            reports = [self._wait(target, flight, started) for target, flight in flights]
            self.window.forget_older_than(self.clock() - self.window_s)
            with self._lock:
                errors = dict(self._errors)
            return build_families(reports, devices, errors)
        except Exception:  # never raises: log, and answer with the build info only
            logging.getLogger(__name__).exception("obspack exporter: collect failed")
            return [build_info()]

    def close(self, wait_s: float = 0.0) -> None:
        """Wait up to ``wait_s`` for the scrapes in flight to end. They are daemon threads that end
        at their deadline on their own, so nothing needs stopping: exiting without waiting is fine."""
        end = time.monotonic() + wait_s
        with self._lock:
            threads = [f.thread for f in self._inflight.values() if f.thread is not None]
        for thread in threads:
            thread.join(max(end - time.monotonic(), 0.0))

    def _flight(self, target: str, *, threaded: bool) -> tuple[_Flight, bool]:
        """The in-flight scrape of ``target``, and whether this call started it (there was none, or only a
        finished one). A new flight gets a thread of its own when ``threaded``; else the caller flies it."""
        with self._lock:
            flight = self._inflight.get(target)
            if flight is not None and not flight.future.done():
                return flight, False
            flight = _Flight()
            if threaded:
                flight.thread = threading.Thread(
                    target=self._fly, args=(target, flight), name="obspack-scrape", daemon=True
                )
                flight.thread.start()
            self._inflight[target] = flight
            return flight, True

    def _fly(self, target: str, flight: _Flight) -> None:
        try:
            report = self._scrape(target, flight)
        except BaseException as e:  # _scrape catches Exception; waiters must get an answer whatever happens
            report = TargetReport(target, up=False, duration_s=0.0, error=f"{type(e).__name__}: {e}")
        flight.future.set_result(report)

    def _wait(self, target: str, flight: _Flight, started: float) -> TargetReport:
        remaining = started + self.timeout_s + _GRACE_S - self.clock()
        try:
            report = flight.future.result(timeout=max(remaining, 0.0))
        except concurrent.futures.TimeoutError:
            return self._overran(target, flight, started)
        if flight.thread is None and report.duration_s > self.timeout_s + _GRACE_S:
            return self._overran(target, flight, started)  # flown by a collect, which could not give up on it
        return report

    def _overran(self, target: str, flight: _Flight, started: float) -> TargetReport:
        message = f"no answer within {self.timeout_s:g}s (and {_GRACE_S:g}s of grace)"
        self._count(target, "timeout", flight)
        self._episodes.seen(target, DOWN, f"timeout: {message}")
        return TargetReport(target, up=False, duration_s=self.clock() - started, error=message)

    def _scrape(self, target: str, flight: _Flight) -> TargetReport:
        """Fetch, parse and derive one target; record its counters in the window. Never raises."""
        started = self.clock()
        try:
            body = self.fetch(target, self.timeout_s, self.max_bytes)
            check_payload(body)
        except ScrapeError as e:
            return self._failed(target, flight, started, e.reason, str(e))
        except PayloadError as e:
            return self._failed(target, flight, started, "parse", str(e))
        except Exception as e:  # noqa: BLE001 (a custom fetch may raise anything; collect must not)
            return self._failed(target, flight, started, "connection", f"{type(e).__name__}: {e}")
        try:
            parsed = parse_needed(body, max_samples=self.max_engines * SAMPLES_PER_ENGINE)
            del body
            if parsed.skipped:
                self._count(target, "parse")
            samples, dropped = self._derive(target, parsed.families)
        except Exception as e:  # noqa: BLE001 (a bug in parse/derive must not break the answer)
            return self._failed(target, flight, started, "parse", f"{type(e).__name__}: {e}")
        self._episodes.cleared(target, DOWN)
        if parsed.skipped:
            self._episodes.seen(target, MALFORMED, f"{parsed.skipped} needed lines skipped, counted as parse")
        else:
            self._episodes.cleared(target, MALFORMED)
        if parsed.truncated or dropped:
            self._count(target, "too_many_series")
            self._episodes.seen(target, OVER_CAP, self._over_cap(parsed.truncated, dropped))
        else:
            self._episodes.cleared(target, OVER_CAP)
        return TargetReport(target, up=True, duration_s=self.clock() - started, samples=samples)

    def _over_cap(self, truncated: list[str], dropped: int) -> str:
        lines = self.max_engines * SAMPLES_PER_ENGINE
        engines = "engine" if dropped == 1 else "engines"
        parts = [f"{dropped} {engines} past the first {self.max_engines} left out"] if dropped else []
        parts += [f"{name} read up to {lines} lines" for name in truncated]
        return "; ".join(parts) + ", counted as too_many_series"

    def _derive(self, target: str, families: dict) -> tuple[list[Derived], int]:
        """The derived samples of the first ``max_engines`` engines, and how many engines were left out."""
        now = self.clock()
        samples: list[Derived] = []
        inputs = derive.engine_inputs(families)
        keys = sorted(inputs, key=lambda k: (k.model_name, k.engine or ""))
        for key in keys[: self.max_engines]:
            engine = inputs[key]
            ratio = None
            if engine.hits is not None and engine.queries is not None:
                ratio = self.window.record((target, key), now, engine.hits, engine.queries)
            samples.extend(derive.derive_engine(key, engine, ratio))
        return samples, max(len(keys) - self.max_engines, 0)

    def _failed(
        self, target: str, flight: _Flight, started: float, reason: Reason, message: str
    ) -> TargetReport:
        self._count(target, reason, flight)
        self._episodes.seen(target, DOWN, f"{reason}: {message}")
        return TargetReport(target, up=False, duration_s=self.clock() - started, error=message)

    def _count(self, target: str, reason: Reason, flight: _Flight | None = None) -> None:
        """Count one error; a flight's failure only once (an overrun and its late failure are one)."""
        with self._lock:
            if flight is not None:
                if flight.counted:
                    return
                flight.counted = True
            self._errors[(target, reason)] += 1

    def _read_probes(self) -> list[DeviceStats]:
        """The CUDA probe's readings; whatever goes wrong there costs only the probe's series, never the
        targets' (obspack_target_up must stay, or ObspackExporterTargetDown could not fire)."""
        if self.probe_dir is None:
            return []
        try:
            return read_probe_dir(
                self.probe_dir, now=self.wall_clock(), own_pidns=self._own_pidns, max_age_s=self.probe_max_age_s
            )
        except Exception:
            logging.getLogger(__name__).exception("obspack exporter: reading the probe files failed")
            return []


def build_families(
    reports: Iterable[TargetReport],
    devices: Iterable[DeviceStats],
    errors: dict[tuple[str, Reason], int],
) -> list[Metric]:
    """Turn one collect's reports, probe readings and error counts into metric families.

    Every derived series carries ``target``, however many targets there are: adding a second target
    must not change the labels of the first one's series (that would break their history)."""
    reports = list(reports)
    derived = {name: GaugeMetricFamily(name, text) for name, text in DERIVED_HELP.items()}
    for report in reports:
        for sample in report.samples:
            derived[sample.name].add_sample(sample.name, dict(sample.labels, target=report.target), sample.value)

    up = GaugeMetricFamily(
        "obspack_target_up", "1 if the last scrape of the target succeeded.", labels=["target"]
    )
    duration = GaugeMetricFamily(
        "obspack_target_scrape_duration_seconds",
        "Time to fetch, parse and derive the target during this scrape.",
        labels=["target"],
    )
    for report in reports:
        up.add_metric([report.target], 1.0 if report.up else 0.0)
        duration.add_metric([report.target], report.duration_s)
    failures = CounterMetricFamily(
        "obspack_target_scrape_errors_total",
        "Failed target scrapes by reason (parse also counts scrapes that skipped malformed lines).",
        labels=["target", "reason"],
    )
    for (target, reason), count in errors.items():
        failures.add_metric([target, reason], count)
    return [*derived.values(), up, duration, failures, *cuda_families(devices), build_info()]


def cuda_families(devices: Iterable[DeviceStats]) -> list[Metric]:
    """The CUDA allocator families from the probe readings."""
    labels = ["pid", "device"]
    reserved = GaugeMetricFamily(
        "obspack_cuda_allocator_reserved_bytes",
        "Bytes reserved by the CUDA caching allocator.",
        labels=labels,
    )
    allocated = GaugeMetricFamily(
        "obspack_cuda_allocator_allocated_bytes", "Bytes allocated to live tensors.", labels=labels
    )
    split = GaugeMetricFamily(
        "obspack_cuda_allocator_inactive_split_bytes",
        "Reserved bytes sitting in inactive, split (fragmented) blocks.",
        labels=labels,
    )
    fragmentation = GaugeMetricFamily(
        "obspack_cuda_allocator_fragmentation_ratio",
        "Inactive split bytes / (reserved - allocated bytes): the share of the unused cache in split blocks.",
        labels=labels,
    )
    retries = CounterMetricFamily(
        "obspack_cuda_alloc_retries_total",
        "cudaMalloc retries after the allocator flushed its cache (num_alloc_retries).",
        labels=labels,
    )
    ooms = CounterMetricFamily(
        "obspack_cuda_ooms_total", "CUDA out-of-memory errors seen by the allocator.", labels=labels
    )
    for d in devices:
        key = [d.pid, d.device]
        reserved.add_metric(key, d.reserved_bytes)
        allocated.add_metric(key, d.allocated_bytes)
        split.add_metric(key, d.inactive_split_bytes)
        ratio = derive.allocator_fragmentation_ratio(d.inactive_split_bytes, d.reserved_bytes, d.allocated_bytes)
        if ratio is not None:
            fragmentation.add_metric(key, ratio)
        retries.add_metric(key, d.num_alloc_retries)
        ooms.add_metric(key, d.num_ooms)
    return [reserved, allocated, split, fragmentation, retries, ooms]


def build_info() -> Metric:
    """obspack_exporter_build_info{version} 1."""
    info = GaugeMetricFamily("obspack_exporter_build_info", "obspack exporter version.", labels=["version"])
    info.add_metric([__version__], 1.0)
    return info
