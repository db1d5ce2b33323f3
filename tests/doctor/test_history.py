"""How much history the SLO page's records have, asked of a real Prometheus holding 31 days of the base
records: a note while the windows reach back further than the records do, none once they have it all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.config import ObspackConfig
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.history import _message, history_findings, windows
from obspack.doctor.needs import read_pack
from obspack.pack import build
from tests.support.prometheus import backfill_openmetrics, running_prometheus

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

NEEDS = read_pack(build(ObspackConfig()))
DAY, HOUR, MINUTE = 86400, 3600, 60
END = 1_790_000_000 // (4 * MINUTE) * (4 * MINUTE)
START = END - 31 * DAY  # the rules were loaded then
STEP = 4 * MINUTE  # within Prometheus's 5m lookback: the records are there at every instant
BASE = ("namespace_model_slo:vllm_slo_errors:rate5m", "namespace_model_slo:vllm_slo_events:rate5m")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusAPI]:
    root = tmp_path_factory.mktemp("history")
    labels = 'cluster="east",namespace="llm",model_name="m",slo="availability"'
    with (root / "records.om").open("w") as out:
        for name in BASE:
            out.write(f"# TYPE {name} gauge\n")
            out.writelines(f"{name}{{{labels}}} 1 {t}\n" for t in range(START, END + 1, STEP))
        out.write("# EOF\n")
    backfill_openmetrics(root / "records.om", root / "data", max_block="768h")
    with running_prometheus(root / "data") as prom, PrometheusAPI(Connection(prom.url)) as client:
        yield client


@pytest.mark.parametrize(
    ("at", "held"),
    [
        (START - 10 * MINUTE, "no data yet"),
        (START + 30 * MINUTE, "data for less than 1h"),
        (START + 2 * HOUR, "data for more than 1h but less than 6h"),
        (START + 4 * DAY, "data for more than 3d but less than 30d"),
    ],
)
def test_a_page_averaging_records_over_more_than_their_history_gets_a_note(
    api: PrometheusAPI, at: int, held: str
) -> None:
    (finding,) = history_findings(api, NEEDS, at)
    assert finding.key == ("note", "dashboard", "vllm-slos")
    assert finding.message.startswith(f"needs 30d of history: it reads {' and '.join(BASE)} over windows")
    assert f", and here they have {held}:" in finding.message


def test_no_note_once_the_records_have_the_whole_period(api: PrometheusAPI) -> None:
    assert history_findings(api, NEEDS, END) == []


def test_records_of_different_histories_are_named_each_with_its_own() -> None:
    read = {"x:a:rate5m": (HOUR,), "x:b:rate5m": (DAY,)}
    message = _message(read, {"no data yet": ["x:a:rate5m"], "data for less than 1d": ["x:b:rate5m"]})
    assert message.startswith(
        "needs 1d of history: it reads x:a:rate5m and x:b:rate5m over windows of up to 1d"
    )
    assert "and here x:a:rate5m has no data yet; x:b:rate5m has data for less than 1d:" in message


def test_sums_over_the_dashboards_own_range_need_no_history() -> None:
    """The cost page sums its records over the range the reader picks: what the range holds is the answer,
    so it gets no note, while the SLO page's fixed windows do."""
    assert windows(NEEDS, "vllm-cost") == {}
    assert windows(NEEDS, "vllm-slos")[BASE[0]][-1] == 30 * DAY
