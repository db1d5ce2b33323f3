"""The client_python collector: every collect() scrapes the targets and builds fresh families.

Targets are scraped in parallel on a small thread pool. Concurrent collect() calls share one
in-flight scrape per target ("single flight"): a second exporter scrape that arrives while a
target is being fetched waits for that fetch instead of starting another. So vLLM sees at most
one request per target at a time, and counter samples reach the window in the order they were
taken (two overlapping fetches could otherwise record a counter going backwards, read as a reset).

State kept between scrapes: the bounded ``CounterWindow`` and the error counters (targets x
reasons). collect() never raises: a failing target is reported with ``obspack_target_up 0``, and
any unexpected error leaves only the build info in that answer.
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
from obspack.exporter.parse import PayloadError, check_payload, parse_needed
from obspack.exporter.probe_files import DEFAULT_MAX_AGE_S, DeviceStats, read_probe_dir
from obspack.exporter.scrape import REASONS, Fetch, Reason, ScrapeError, fetch_metrics
from obspack.exporter.window import CounterWindow
from obspack.probe import pid_namespace

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_WINDOW_S = 300.0
DEFAULT_TIMEOUT_S = 2.0
_GRACE_S = 1.0  # how long past the timeout collect() waits for a fetch that should have given up

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


class ExporterCollector:
    """Scrapes vLLM targets on every collect() and yields the derived obspack series."""

    def __init__(
        self,
        targets: Sequence[str],
        *,
        window_s: float = DEFAULT_WINDOW_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
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
        self.probe_dir = probe_dir
        self.probe_max_age_s = probe_max_age_s
        self.fetch = fetch
        self.clock = clock
        self.wall_clock = wall_clock
        self.window = CounterWindow(window_s)
        self._own_pidns = pid_namespace()
        self._errors: dict[tuple[str, Reason], int] = {(t, r): 0 for t in self.targets for r in REASONS}
        self._lock = threading.RLock()
        self._inflight: dict[str, concurrent.futures.Future[TargetReport]] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(len(self.targets), 32)), thread_name_prefix="obspack-scrape"
        )
        if registry is not None:
            registry.register(self)

    def collect(self) -> list[Metric]:
        """Scrape every target now and return fresh metric families. Never raises."""
        try:
            started = self.clock()
            flights = [(target, self._flight(target)) for target in self.targets]
            devices = self._read_probes()
            reports = [self._wait(target, flight, started) for target, flight in flights]
            self.window.forget_older_than(self.clock() - self.window_s)
            with self._lock:
                errors = dict(self._errors)
            return build_families(reports, devices, errors, label_target=len(self.targets) > 1)
        except Exception:  # never raises: log, and answer with the build info only
            logging.getLogger(__name__).exception("obspack exporter: collect failed")
            return [build_info()]

    def close(self) -> None:
        """Stop the scrape threads (after the in-flight scrapes end)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _flight(self, target: str) -> concurrent.futures.Future[TargetReport]:
        """The in-flight scrape of ``target``, started now if there is none.

        A finished flight whose done-callback has not run yet counts as none: reusing it would answer
        this scrape with the previous one's result."""
        with self._lock:
            flight = self._inflight.get(target)
            if flight is None or flight.done():
                flight = self._pool.submit(self._scrape, target)
                self._inflight[target] = flight
                flight.add_done_callback(lambda done, t=target: self._land(t, done))
            return flight

    def _land(self, target: str, flight: concurrent.futures.Future[TargetReport]) -> None:
        with self._lock:
            if self._inflight.get(target) is flight:
                del self._inflight[target]

    def _wait(
        self, target: str, flight: concurrent.futures.Future[TargetReport], started: float
    ) -> TargetReport:
        remaining = started + self.timeout_s + _GRACE_S - self.clock()
        try:
            return flight.result(timeout=max(remaining, 0.0))
        except concurrent.futures.TimeoutError:
            return TargetReport(target, up=False, duration_s=self.clock() - started, error="timeout")
        except Exception as e:  # noqa: BLE001 (_scrape catches everything; this is belt and braces)
            return TargetReport(target, up=False, duration_s=self.clock() - started, error=str(e))

    def _scrape(self, target: str) -> TargetReport:
        """Fetch, parse and derive one target; record its counters in the window. Never raises."""
        started = self.clock()
        try:
            body = self.fetch(target, self.timeout_s, self.max_bytes)
            check_payload(body)
        except ScrapeError as e:
            return self._failed(target, started, e.reason, str(e))
        except PayloadError as e:
            return self._failed(target, started, "parse", str(e))
        except Exception as e:  # noqa: BLE001 (a custom fetch may raise anything; collect must not)
            return self._failed(target, started, "connection", f"{type(e).__name__}: {e}")
        try:
            parsed = parse_needed(body)
            del body
            if parsed.skipped:
                self._count(target, "parse")
            samples = self._derive(target, parsed.families)
        except Exception as e:  # noqa: BLE001 (a bug in parse/derive must not break the answer)
            return self._failed(target, started, "parse", f"{type(e).__name__}: {e}")
        return TargetReport(target, up=True, duration_s=self.clock() - started, samples=samples)

    def _derive(self, target: str, families: dict) -> list[Derived]:
        now = self.clock()
        samples: list[Derived] = []
        inputs = derive.engine_inputs(families)
        for key in sorted(inputs, key=lambda k: (k.model_name, k.engine or "")):
            engine = inputs[key]
            ratio = None
            if engine.hits is not None and engine.queries is not None:
                ratio = self.window.record((target, key), now, engine.hits, engine.queries)
            samples.extend(derive.derive_engine(key, engine, ratio))
        return samples

    def _failed(self, target: str, started: float, reason: Reason, message: str) -> TargetReport:
        self._count(target, reason)
        logging.getLogger(__name__).debug("scrape of %s failed (%s): %s", target, reason, message)
        return TargetReport(target, up=False, duration_s=self.clock() - started, error=message)

    def _count(self, target: str, reason: Reason) -> None:
        with self._lock:
            self._errors[(target, reason)] += 1

    def _read_probes(self) -> list[DeviceStats]:
        if self.probe_dir is None:
            return []
        return read_probe_dir(
            self.probe_dir, now=self.wall_clock(), own_pidns=self._own_pidns, max_age_s=self.probe_max_age_s
        )


def build_families(
    reports: Iterable[TargetReport],
    devices: Iterable[DeviceStats],
    errors: dict[tuple[str, Reason], int],
    *,
    label_target: bool,
) -> list[Metric]:
    """Turn one collect's reports, probe readings and error counts into metric families."""
    reports = list(reports)
    derived = {name: GaugeMetricFamily(name, text) for name, text in DERIVED_HELP.items()}
    for report in reports:
        extra = {"target": report.target} if label_target else {}
        for sample in report.samples:
            derived[sample.name].add_sample(sample.name, {**dict(sample.labels), **extra}, sample.value)

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
        "obspack_cuda_allocator_fragmentation_ratio", "Inactive split bytes / reserved bytes.", labels=labels
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
        ratio = derive.allocator_fragmentation_ratio(d.inactive_split_bytes, d.reserved_bytes)
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
