"""The release: GitHub workflows that actionlint accepts, a release workflow that publishes nothing unless one
version holds everywhere, and a chart whose default exporter image is the one that workflow publishes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from obspack import __version__
from obspack.pack.chart.layout import EXPORTER_IMAGE
from tests.support.tools import ROOT, find_tool, require_tool

WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yaml"
CHECK = ROOT / ".github" / "scripts" / "release_check.py"
CHART = ROOT / "helm" / "obspack"
LOCAL_TOOLS = ROOT / ".tools" / "bin"  # where scripts/install-test-tools.sh puts actionlint


def actionlint() -> str:
    local = LOCAL_TOOLS / "actionlint"
    return find_tool("actionlint") or (str(local) if local.exists() else require_tool("actionlint"))


def lint(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint(), "-no-color", *map(str, files)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def release_check(*args: str) -> subprocess.CompletedProcess[str]:
    """The check as the workflow runs it: a separate Python, before obspack is installed."""
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=30)


def release_check_here(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The same check in this process (fast): exit code, stdout, stderr."""
    spec = importlib.util.spec_from_file_location("release_check", CHECK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = module.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------------------------------------
# actionlint


def test_every_workflow_passes_actionlint() -> None:
    files = sorted([*WORKFLOWS.glob("*.yaml"), *WORKFLOWS.glob("*.yml")])
    assert {f.name for f in files} >= {"release.yaml", "ci.yaml"}
    result = lint(*files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_release_workflow(tmp_path: Path) -> None:
    """The other side: the same check fails on the release workflow with a typo in a job output and an
    untrusted value pasted into a shell step."""
    broken = RELEASE.read_text(encoding="utf-8")
    broken = broken.replace("outputs.charts }}\n        run:", "outputs.chart }}\n        run:", 1)
    untrusted = 'echo "${{ github.event.head_commit.message }}"; '
    broken = broken.replace("run: obspack render --check", f"run: {untrusted}obspack render --check", 1)
    assert broken != RELEASE.read_text(encoding="utf-8")
    (tmp_path / "release.yaml").write_text(broken, encoding="utf-8")
    result = lint(tmp_path / "release.yaml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'property "chart" is not defined' in result.stdout, result.stdout
    assert "potentially untrusted" in result.stdout, result.stdout


# ---------------------------------------------------------------------------------------------------------
# One version everywhere


def test_package_chart_and_default_image_share_one_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["hatch"]["version"]["path"] == "obspack/__init__.py", "the single source"
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert (meta["version"], meta["appVersion"]) == (__version__, __version__)
    image = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))["exporter"]["image"]
    assert (image["repository"], image["tag"]) == (EXPORTER_IMAGE, ""), "empty tag: the chart's appVersion"
    patch = yaml.safe_load((CHART / "examples" / "sidecar-patch.yaml").read_text(encoding="utf-8"))
    images = [c.get("image") for c in patch["spec"]["template"]["spec"]["containers"]]
    assert f"{EXPORTER_IMAGE}:{__version__}" in images


def test_the_chart_pulls_the_image_the_release_pushes() -> None:
    rendered = subprocess.run(
        [require_tool("helm"), "template", "obspack", str(CHART), "--set", "exporter.enabled=true",
         "--set", "exporter.targets={http://vllm-0.vllm.llm.svc:8000/metrics}", "--show-only",
         "templates/exporter-deployment.yaml"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    deployment = yaml.safe_load(rendered.stdout)
    said = release_check("--tag", f"v{__version__}", "--owner", "obspack").stdout
    pushed = dict(line.split("=", 1) for line in said.split())
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"{pushed['image']}:{pushed['version']}"


def test_release_check_passes_the_tag_of_this_version() -> None:
    result = release_check("--tag", f"v{__version__}", "--owner", "obspack")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"version={__version__}",
        "image=ghcr.io/obspack/obspack-exporter",
        "charts=oci://ghcr.io/obspack/charts",
    ]


@pytest.mark.parametrize(
    ("tag", "owner", "expected"),
    [
        ("v9.9.9", "obspack", f"tag 'v9.9.9' is not v{__version__}"),
        (__version__, "obspack", f"is not v{__version__}"),
        (f"v{__version__}", "a-fork", "but this workflow pushes ghcr.io/a-fork/obspack-exporter: set EXPORTER_IMAGE"),
        (f"v{__version__}", "-x; rm -rf /", "is not a GitHub account name"),
    ],
    ids=["other version", "no v", "fork", "hostile owner"],
)
def test_release_check_stops_a_release_whose_versions_differ(
    capsys: pytest.CaptureFixture[str], tag: str, owner: str, expected: str
) -> None:
    code, out, err = release_check_here(capsys, "--tag", tag, "--owner", owner)
    assert code == 1
    assert out == "", "nothing for $GITHUB_OUTPUT"
    assert expected in err, err


def test_release_publishes_only_after_the_check_and_the_chart_only_after_its_image() -> None:
    workflow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as true
    jobs = workflow["jobs"]
    for name, job in jobs.items():
        if name != "check":
            assert "check" in ([job["needs"]] if isinstance(job["needs"], str) else job["needs"]), name
    assert "image" in jobs["chart"]["needs"] and set(jobs["publish"]["needs"]) >= {"python", "image", "chart"}
    build = next(s for s in jobs["image"]["steps"] if s.get("uses", "").startswith("docker/build-push-action"))
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["file"] == "Dockerfile.exporter"
    steps = "\n".join(s.get("run", "") for j in jobs.values() for s in j["steps"])
    for needed in ("python -m build", "twine check --strict", "helm package", "helm push", "release_check.py"):
        assert needed in steps, needed
