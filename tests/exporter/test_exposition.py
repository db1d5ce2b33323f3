"""The exporter's own writer gives the very bytes and headers prometheus_client's WSGI app gives, for every
format Prometheus or a person may ask for, and leaves to the library what it does not handle."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from wsgiref.util import setup_testing_defaults

import pytest
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.process_collector import ProcessCollector

from obspack.exporter import exposition
from obspack.exporter.collector import ExporterCollector
from obspack.exporter.server import metrics_app

from .conftest import payload

PROMETHEUS = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
ACCEPTS = ["", PROMETHEUS, "application/openmetrics-text", "text/plain", "text/plain;version=0.0.4", "*/*"]


class Static:
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics


def families() -> list[Metric]:
    gauge = GaugeMetricFamily("obspack_vllm_kv_cache_blocks", 'KV blocks: "used" \\ free\nper engine', labels=["state", "model_name", "target"])
    gauge.add_metric(["used", 'acme/"quoted" \\ model\nwith newline', "http://t/metrics"], 12.0)
    gauge.add_metric(["free", "a", "http://t/metrics"], float("inf"))
    gauge.add_metric(["z", "b", "http://t/metrics"], float("nan"))
    counter = CounterMetricFamily("obspack_target_scrape_errors_total", "Failed scrapes.", labels=["target", "reason"])
    counter.add_metric(["http://t/metrics", "parse"], 3)
    unlabelled = GaugeMetricFamily("obspack_plain", "No labels.", value=1e-7)
    unknown = UnknownMetricFamily("obspack_untyped", "Untyped.", value=2)
    info = InfoMetricFamily("obspack_exporter_build", "Build.", value={"version": "0.1.0"})
    with_unit = GaugeMetricFamily("obspack_seconds", "With a unit.", value=0.5, unit="seconds")
    return [gauge, counter, unlabelled, unknown, info, with_unit]


def call(app, accept: str, encoding: str = "") -> tuple[str, list[tuple[str, str]], bytes]:
    environ: dict = {"PATH_INFO": "/metrics", "HTTP_ACCEPT": accept, "HTTP_ACCEPT_ENCODING": encoding}
    setup_testing_defaults(environ)
    seen: dict = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen.update(status=status, headers=headers)

    body = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], body


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("encoding", ["", "gzip"])
def test_the_same_bytes_and_headers_as_prometheus_client(accept: str, encoding: str) -> None:
    registry = CollectorRegistry()
    registry.register(Static(families()))
    ProcessCollector(registry=registry, proc="/nonexistent")  # no samples: the empty family is kept too
    ours, theirs = call(metrics_app(registry), accept, encoding), call(make_wsgi_app(registry), accept, encoding)
    assert ours[:2] == theirs[:2]
    if encoding:
        assert gzip.decompress(ours[2]) == gzip.decompress(theirs[2])
    else:
        assert ours[2] == theirs[2]


def test_the_exporters_own_families_come_out_the_same(tmp_path) -> None:
    registry = CollectorRegistry()
    collector = ExporterCollector(["http://t/metrics"], fetch=lambda *a: payload("escaped_labels.prom"), registry=None)
    process = ProcessCollector(registry=None)
    registry.register(Static([*collector.collect(), *process.collect()]))  # one snapshot: RSS moves
    for accept in (PROMETHEUS, ""):
        assert call(metrics_app(registry), accept) == call(make_wsgi_app(registry), accept)
    collector.close()


def test_what_it_does_not_write_goes_to_the_library() -> None:
    stamped = GaugeMetricFamily("obspack_stamped", "A timestamp.", labels=["a"])
    stamped.add_metric(["x"], 1.0, timestamp=1700000000.5)
    colon = GaugeMetricFamily("vllm:gauge", "A colon.", value=1)
    for metric in (stamped, colon):
        with pytest.raises(exposition.NotPlain):
            exposition.text([metric])
        with pytest.raises(exposition.NotPlain):
            exposition.openmetrics([metric])
        registry = CollectorRegistry()
        registry.register(Static([metric]))
        for accept in (PROMETHEUS, ""):
            assert call(metrics_app(registry), accept) == call(make_wsgi_app(registry), accept)


def test_each_scrape_collects_once() -> None:
    calls = []

    class Counting(Static):
        def collect(self) -> Iterable[Metric]:
            calls.append(1)
            return [GaugeMetricFamily("vllm:gauge", "Falls back to the library.", value=1)]

    registry = CollectorRegistry()
    registry.register(Counting([]))
    calls.clear()
    call(metrics_app(registry), PROMETHEUS)
    assert len(calls) == 1


NUMBERS = [0.0, -0.0, 1.0, 0.5, 1e-7, 123456.0, 999999.5, 1234567.0, 12345678.9, -12345678.9, 1e16, 1.5e22, 5e-324,
           float("inf"), float("-inf"), float("nan"), 3, 0, -7, True]  # fmt: skip


@pytest.mark.parametrize("accept", ["", PROMETHEUS])
def test_every_kind_of_number_is_written_as_the_library_writes_it(accept: str) -> None:
    gauge = GaugeMetricFamily("obspack_numbers", "Numbers.", labels=["i"])
    for index, number in enumerate(NUMBERS):
        gauge.add_metric([str(index)], number)
    registry = CollectorRegistry()
    registry.register(Static([gauge]))
    assert call(metrics_app(registry), accept) == call(make_wsgi_app(registry), accept)


def test_series_written_before_are_written_the_same_and_kept_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = CollectorRegistry()
    registry.register(Static(families()))
    first = call(metrics_app(registry), "")
    assert call(metrics_app(registry), "") == first == call(make_wsgi_app(registry), "")
    # The same series with its labels given in another order is one series, written once sorted.
    gauge = GaugeMetricFamily("obspack_order", "Order.")
    gauge.add_sample("obspack_order", {"b": "2", "a": "1"}, 1.0)
    gauge.add_sample("obspack_order", {"a": "1", "b": "2"}, 2.0)
    assert exposition.text([gauge]).splitlines()[2:] == [b'obspack_order{a="1",b="2"} 1.0', b'obspack_order{a="1",b="2"} 2.0']
    # A label name that needs escaping is refused however often it comes, never kept.
    odd = GaugeMetricFamily("obspack_odd", "Odd.")
    odd.add_sample("obspack_odd", {"a-b": "1"}, 1.0)
    for _ in range(2):
        with pytest.raises(exposition.NotPlain):
            exposition.text([odd])
    exposition._series.cache_clear()
    many = GaugeMetricFamily("obspack_many", "Many.", labels=["n"])
    for n in range(exposition.SERIES_KEPT + 100):
        many.add_metric([str(n)], 1.0)
    text = exposition.text([many])
    assert text.count(b"\n") == exposition.SERIES_KEPT + 100 + 2
    assert exposition._series.cache_info().currsize == exposition.SERIES_KEPT
