"""`obspack doctor` against VictoriaMetrics: on its own (no rules API: the doctor says so and checks the
records instead) and with vmalert behind its rules proxy (deployed rules checked as on Prometheus).

The fit of the pack is MetricsQL-evaluated here, so the panels are held against what VictoriaMetrics
really returns for them once vmalert has written the records."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.fleet import FleetSpec, FleetSummary
from obspack.demo.processes import free_port
from obspack.demo.prometheus import Prometheus
from obspack.pack import build
from tests.doctor import oracle
from tests.doctor.shapes import NO_PRICES, YOUNG_RECORDS, Shape, wait_for_records, write_shape
from tests.support.tools import require_tool
from tests.support.victoria import VictoriaMetrics, running_vmalert

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

PACK = build(ObspackConfig())
GROUPS = [g.to_dict() for g in PACK.recording_groups + PACK.alert_groups]
SHAPE = Shape(FleetSpec(pods=4, duration_s=1800, step_s=30))
# records vmalert wrote a moment ago are searched too; the cost records written out are longer than the
# default 16 KiB a query may have (under it, the doctor judges them by their inputs: test_fit.py)
FRESH = ("-search.latencyOffset=0s", "-search.maxQueryLen=1048576")


@contextmanager
def victoria_metrics(folder: Path, *extra: str) -> Iterator[VictoriaMetrics]:
    folder.mkdir(parents=True)
    vm = VictoriaMetrics(require_tool("victoria-metrics"), folder, (*FRESH, *extra))
    try:
        yield vm
    finally:
        vm.stop()


def wait_until_found_by_name(vm: Prometheus, groups: list[dict], timeout: float = 90.0) -> None:
    """VictoriaMetrics 1.79 finds a new series by its metric name alone only some seconds after it was
    written (a pattern like `.*name` finds it at once), and vmalert reads the records other rules wrote that
    way, so a chain of records fills in slowly. On this healthy fleet every record has data: wait for all."""
    names = [r["record"] for g in groups for r in g["rules"] if "record" in r]
    deadline = time.monotonic() + timeout
    missing = names
    while time.monotonic() < deadline:
        missing = [n for n in missing if not vm.query(f"count({n})", time.time())]
        if not missing:
            return
        time.sleep(2)
    raise AssertionError(f"not every record is found by its name after {timeout:g}s: {missing}")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FleetSummary]:
    root = tmp_path_factory.mktemp("vm-fleet")
    return root, write_shape(SHAPE, root / "fleet.om")


@pytest.fixture(scope="module")
def with_vmalert(fleet: tuple[Path, FleetSummary]) -> tuple[dict, dict]:
    """The doctor's report with vmalert behind VictoriaMetrics, and what the oracle expects of its panels;
    both servers stop before the tests (vmalert evaluates the whole pack every second)."""
    root, summary = fleet
    rules = root / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": GROUPS}, sort_keys=False))
    port = free_port()
    with victoria_metrics(root / "with-vmalert", f"-vmalert.proxyURL=http://127.0.0.1:{port}") as vm:
        vm.import_text(root / "fleet.om")
        with running_vmalert(require_tool("vmalert"), rules, vm, port, root):
            api = Prometheus(vm.url)
            wait_for_records(api, GROUPS)
            wait_until_found_by_name(api, GROUPS)
            code, report = oracle.doctor(vm.url, "--time", str(summary.end))
            expected = oracle.panels(api, PACK, report)
    return {"code": code, "expected": expected}, report


def test_with_vmalert_the_pack_fits_and_its_rules_are_checked(with_vmalert) -> None:
    result, report = with_vmalert
    panel = {(level, subject) for level, topic, subject in oracle.findings(report, "panel")}
    assert panel == result["expected"] and all(level == "note" for level, _ in panel)
    assert {f for f in oracle.findings(report) if f[1] != "panel"} == {YOUNG_RECORDS, NO_PRICES}
    assert result["code"] == 0
    backend = report["backend"]
    assert backend["kind"] == "victoriametrics"
    assert {name: c["available"] for name, c in backend["capabilities"].items()} == {
        "rules": True,
        "targets": False,
        "tsdb": True,
    }
    assert "-promscrape" in backend["capabilities"]["targets"]["detail"]
    assert all(g["loaded"] and not g["differences"] and not g["errors"] for g in report["rule_groups"])


def test_without_vmalert_the_rules_cannot_be_listed_and_their_records_are_missing(
    fleet: tuple[Path, FleetSummary], with_vmalert
) -> None:
    root, summary = fleet
    with victoria_metrics(root / "alone") as vm:
        vm.import_text(root / "fleet.om")
        code, report = oracle.doctor(vm.url, "--time", str(summary.end))
    assert code == 1
    assert {f for f in oracle.findings(report) if f[1] != "panel"} == {
        ("note", "backend", "VictoriaMetrics"),
        ("problem", "rules", "recording rules"),
        YOUNG_RECORDS,
        NO_PRICES,
    }
    assert "-vmalert.proxyURL" in oracle.message(report, "VictoriaMetrics")
    # The fit is judged from the raw series, whether or not the rules run.
    _, with_rules = with_vmalert
    assert oracle.findings(report, "panel") == oracle.findings(with_rules, "panel")
    assert report["sources"] == with_rules["sources"]
