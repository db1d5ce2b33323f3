"""An installed obspack (from the wheel, templates inside it) renders exactly what a checkout renders."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_wheel_ships_templates_and_renders_like_the_checkout(tmp_path: Path) -> None:
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True,
    )
    if build.returncode != 0:  # no hatchling in this environment: build in isolation (needs the index)
        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
            capture_output=True, text=True,
        )
    assert build.returncode == 0, build.stderr
    wheel = next(wheels.glob("obspack-*.whl"))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True, text=True,
    )
    assert install.returncode == 0, install.stderr
    assert (site / "obspack" / "templates" / "pack-README.md.j2").is_file()

    render = "import sys; from obspack.cli import main; sys.argv = ['obspack', 'render', '--out', sys.argv[1]]; main()"
    installed = subprocess.run(
        [sys.executable, "-c", render, str(tmp_path / "installed")],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert installed.returncode == 0, installed.stderr
    checkout = subprocess.run(
        [sys.executable, "-c", render, str(tmp_path / "checkout")],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert checkout.returncode == 0, checkout.stderr
    assert snapshot(tmp_path / "installed") == snapshot(tmp_path / "checkout")

    # the installed copy kept grafanalib's compiled attrs methods beside its bytecode, and renders the same from them
    assert [p.name for p in (site / "obspack" / "__pycache__").glob("attrs-methods.*.bin")] == [
        f"attrs-methods.{sys.implementation.cache_tag}.bin"
    ]
    again = subprocess.run(
        [sys.executable, "-c", render, str(tmp_path / "again")],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert again.returncode == 0, again.stderr
    assert snapshot(tmp_path / "again") == snapshot(tmp_path / "checkout")
