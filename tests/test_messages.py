"""Messages users read, by their exact text: a doctor pointed at the API's own path, a config FIFO nobody
writes, a body that trickles past --timeout (the config errors are in test_config_errors.py, the help in
test_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from tests.support.prometheus import running_prometheus

runner = CliRunner()


@pytest.mark.tool
@pytest.mark.parametrize("suffix", ["/api/v1", "/api/v1/", "/api/v1/query"])
def test_doctor_on_the_apis_own_path_says_to_drop_it(tmp_path: Path, suffix: str) -> None:
    with running_prometheus(tmp_path / "data") as prom:
        result = runner.invoke(app, ["doctor", "-p", prom.url + suffix])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {prom.url}{suffix} did not answer a query: query: HTTP 404 404 page not found; give --prometheus "
        f"without {suffix.rstrip('/')}, which obspack adds itself: {prom.url}"
    )


@pytest.mark.tool
def test_doctor_on_a_wrong_path_prefix_names_the_prefixes(tmp_path: Path) -> None:
    with running_prometheus(tmp_path / "data") as prom:
        result = runner.invoke(app, ["doctor", "-p", prom.url + "/prometheus"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith(
        "HTTP 404 404 page not found; check the URL's path prefix (none for Prometheus and Thanos, /prometheus "
        "for Mimir, /select/<tenant>/prometheus for VictoriaMetrics cluster)"
    )
