"""The report leads with causes: an empty Prometheus (a real one) has a few causes, each with the alerts and
panels it breaks, not a problem per alert and panel; the command's options, help and errors (JSON under
--json)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.processes import free_port
from obspack.demo.prometheus import Prometheus
from obspack.doctor.api import DoctorError
from obspack.doctor.settings import connection as server
from obspack.doctor.settings import options
from tests.doctor.fakes import Answer, Request, empty_prometheus, serve, vector
from tests.support import packs
from tests.support.prometheus import running_prometheus

runner = CliRunner()
SOURCES = ("vLLM", "kube-state-metrics", "cAdvisor", "dcgm-exporter", "obspack exporter", "Prometheus")


@pytest.fixture(autouse=True)
def rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command renders the default pack once for all these tests (rendering is not what they check)."""
    monkeypatch.setattr(
        "obspack.cli._pack", lambda config: (packs.config_of("defaults"), packs.pack("defaults"))
    )


def doctor(url: str, *args: str):
    return runner.invoke(app, ["doctor", "--prometheus", url, *args])


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    with running_prometheus(tmp_path_factory.mktemp("empty") / "data") as prom:
        yield prom


def section(output: str, heading: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start + 1 : end]


def test_an_empty_prometheus_leads_with_its_causes(empty: Prometheus) -> None:
    result = doctor(empty.url)
    assert result.exit_code == 1, result.output
    problems = section(result.output, "Problems (7)")
    causes = [line for line in problems if line.startswith("  problem ")]
    assert [c.split(":")[0].removeprefix("  problem ") for c in causes] == [*SOURCES, "rules rule groups"]
    assert not any(line.startswith(("  problem alert", "  problem panel")) for line in problems)
    # An alert that cannot fire without kube-state-metrics is under that cause (and under vLLM's, which it
    # also reads), not a problem of its own.
    ksm = problems[problems.index(causes[1]) : problems.index(causes[2])]
    assert any("cannot fire:" in line and "VLLMContainerOOMKilled" in line for line in ksm)
    assert "      fix: install kube-state-metrics and scrape it" in ksm
    defaults = packs.pack("defaults")
    groups = len(defaults.recording_groups) + len(defaults.alert_groups)
    assert section(result.output, "Deployed rules") == [f"  none of the pack's {groups} groups is loaded"]
    assert result.output.strip().splitlines()[-1].startswith("7 problems, 0 not checked, 5 notes (exit 1)")
    assert len(result.output.splitlines()) < 90  # 137 lines and "91 problems" before


def test_the_json_report_counts_causes_and_lists_what_they_break(empty: Prometheus) -> None:
    report = json.loads(doctor(empty.url, "--json").output)
    assert report["counts"] == {"problems": 7, "not_checked": 0, "notes": 5}
    causes = {c["cause"].split(":")[0]: c for c in report["causes"]}
    assert list(causes) == list(SOURCES)
    assert "VLLMContainerOOMKilled" in causes["kube-state-metrics"]["alerts"]
    assert causes["vLLM"]["panels"]["vllm-fleet"] > 0 and causes["vLLM"]["kind"] == "source"
    assert sum(1 for f in report["findings"] if f["level"] == "problem") > 7  # every finding is still there


def test_an_exporter_without_its_cuda_probe_is_said_so() -> None:
    """The exporter is here, its CUDA probe is not: the probe is the cause, and the advice says it is off."""

    def answer(request: Request) -> Answer:
        query = (request.form.get("query") or [""])[0]
        if request.path == "/api/v1/query" and "obspack_target_up" in query and "== 0" not in query:
            return Answer(body=vector(({"job": "obspack-exporter"}, 1)))
        return empty_prometheus(request)

    with serve(answer) as fake:
        result = doctor(fake.url)
    problems = section(result.output, "Problems")
    probe = next(i for i, line in enumerate(problems) if "CUDA allocator probe is off" in line)
    assert "VLLMCUDAAllocatorFragmentationHigh" in problems[probe + 1]
    assert "# it reads the CUDA allocator probe of the obspack exporter, which is off" in result.output
    assert "obspack exporter, which is not here" not in result.output
    assert not any(line.startswith("  problem obspack exporter: not found") for line in problems)


def test_errors_are_json_objects_on_stdout_under_json() -> None:
    unreachable = doctor(f"http://127.0.0.1:{free_port()}", "--json")
    assert unreachable.exit_code == 2
    error = json.loads(unreachable.stdout)
    assert error["exit_code"] == 2 and error["error"].startswith("cannot connect to http://127.0.0.1:")
    bad = json.loads(doctor("http://127.0.0.1:1", "--json", "--timeout", "soon").stdout)
    assert bad == {
        "error": "--timeout 'soon': give a Prometheus duration such as 30s, 500ms or 2m (or seconds)",
        "exit_code": 2,
    }
    plain = doctor(f"http://127.0.0.1:{free_port()}")
    assert plain.exit_code == 2 and plain.output.startswith("error: cannot connect to")


def _settings(**changes: object):
    """(connection, options) from the command-line values, with `changes` over the defaults."""
    given = {"prometheus": "http://127.0.0.1:9090", "lookback": "1d", **changes}
    lookback = str(given.pop("lookback"))
    return server(**given), options(lookback=lookback)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "seconds"),
    [
        ("timeout", "30s", 30.0),
        ("timeout", "500ms", 0.5),
        ("timeout", "1m30s", 90.0),
        ("timeout", "2", 2.0),  # a bare number is seconds, as before
        ("timeout", 1.5, 1.5),
        ("max_time", "5m", 300.0),
        ("max_time", "90", 90.0),
        ("lookback", "1d", 86400),
        ("lookback", "3600", 3600),
    ],
)
def test_time_options_take_a_prometheus_duration_or_seconds(
    option: str, value: object, seconds: float
) -> None:
    connection, options = _settings(**{option: value})
    got = {
        "timeout": connection.timeout_s,
        "max_time": connection.max_time_s,
        "lookback": options.lookback_s,
    }
    assert got[option] == seconds


@pytest.mark.parametrize(
    ("option", "value", "flag"),
    [("timeout", "soon", "--timeout"), ("timeout", "0s", "--timeout"), ("max_time", "-1", "--max-time"),
     ("lookback", "a while", "--lookback"), ("max_bytes", "lots", "--max-bytes"), ("max_bytes", "0MiB", "--max-bytes")],
)  # fmt: skip
def test_a_bad_time_or_size_names_its_option(option: str, value: str, flag: str) -> None:
    with pytest.raises(DoctorError, match=f"^{flag} "):
        _settings(**{option: value})


def test_max_bytes_takes_units() -> None:
    assert _settings(max_bytes="64MiB")[0].max_bytes == 64 * 1024 * 1024
    assert _settings(max_bytes="1000")[0].max_bytes == 1000


def test_the_help_has_examples_and_no_type_placeholders() -> None:
    result = runner.invoke(app, ["doctor", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0
    for placeholder in ("<bool>", "<str>", "<path>", "<int", "<list", "--no-insecure-skip-verify"):
        assert placeholder not in result.output
    assert (
        "Examples" in result.output and "obspack doctor -p http://prometheus.monitoring:9090" in result.output
    )
    for metavar in ("URL", "DURATION", "SIZE", "FILE"):
        assert metavar in result.output


def test_a_bare_number_still_works_as_the_timeout_on_the_command_line(tmp_path: Path) -> None:
    with serve(lambda r: Answer(body=vector(), delay_s=2)) as fake:
        result = doctor(fake.url, "--timeout", "0.5")
    assert result.exit_code == 2 and "no whole answer within 500ms (--timeout)" in result.output
