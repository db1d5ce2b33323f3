"""The shipped unit tests with the rule groups evaluated in reverse order, as a live Prometheus may run them
(each group on its own timer): an alert one group hop from raw series still fires on time, and a hidden
second hop fails. Apart from test_promtool.py so that the two files run on both cores of the suite. Each file
runs with the groups its checks need (tests/support/needed.py), in the same reversed order among them."""

from pathlib import Path

import pytest
import yaml

from obspack.render.files import RECORDING_FILE
from tests.rules.test_promtool import promtool, render_named
from tests.support.needed import needed_only


# The defaults, and the demo's config (`for` of seconds, where an extra hop shows most); the custom config
# changes thresholds and windows, which test_promtool.py runs in file order.
@pytest.fixture(params=["defaults", "e2e"])
def rendered(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return render_named(request.param, tmp_path)


def _reverse_group_order(tests: Path) -> None:
    for path in tests.glob("*_test.yaml"):
        doc = yaml.safe_load(path.read_text())
        doc["group_eval_order"] = doc["group_eval_order"][::-1]
        path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_rendered_unit_tests_pass_with_the_group_order_reversed(rendered: Path) -> None:
    """Alerts evaluated before the records they read, as a live Prometheus may: one evaluation late at
    most, which the tests' firing times allow (`unit_tests.on_time`). A second hop would not fit. The SLO
    file, half of the time here, is run in both orders by tests/rules/test_slo.py (whose
    test_one_group_boundary_from_raw_series_to_the_alert holds every config to one hop)."""
    _reverse_group_order(rendered / "tests")
    files = sorted(f.name for f in (rendered / "tests").glob("*_test.yaml") if f.name != "slo_test.yaml")
    done = promtool("test", "rules", *files, cwd=needed_only(rendered / "tests", files, rendered / "needed"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_hidden_group_hop_fails_the_reversed_order_tests(rendered: Path) -> None:
    """Move the host-memory ratio record into a group of its own, after the records it reads: its alert is
    now two hops from raw series, and with the group order reversed the tests catch the extra delay."""
    path = rendered / RECORDING_FILE
    doc = yaml.safe_load(path.read_text())
    kubernetes = next(g for g in doc["groups"] if g["name"] == "obspack-kubernetes.rules")
    ratio = next(r for r in kubernetes["rules"] if r["record"].endswith(":ratio_limit"))
    kubernetes["rules"].remove(ratio)
    doc["groups"].append({"name": "obspack-hidden-hop.rules", "rules": [ratio]})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    for test in (rendered / "tests").glob("*_test.yaml"):
        spec = yaml.safe_load(test.read_text())
        spec["group_eval_order"].insert(len(doc["groups"]) - 1, "obspack-hidden-hop.rules")
        test.write_text(yaml.safe_dump(spec, sort_keys=False))
    memory = ["memory-planes_test.yaml"]
    in_file_order = promtool("test", "rules", *memory, cwd=needed_only(rendered / "tests", memory, rendered / "in-order"))
    assert in_file_order.returncode == 0, in_file_order.stdout + in_file_order.stderr
    _reverse_group_order(rendered / "tests")
    reversed_order = promtool("test", "rules", *memory, cwd=needed_only(rendered / "tests", memory, rendered / "reversed"))
    assert reversed_order.returncode != 0
    assert "VLLMHostMemoryNearLimit" in reversed_order.stdout + reversed_order.stderr
