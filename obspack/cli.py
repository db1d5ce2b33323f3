"""The `obspack` command: thin commands that parse, call and report."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from obspack import __version__
from obspack.config import ObspackConfig, annotated_defaults, load_config
from obspack.errors import ObspackError
from obspack.exporter.command import exporter
from obspack.render import write as output
from obspack.render.bundle import Pack, build
from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files

app = typer.Typer(
    help="Observability pack for vLLM on Kubernetes: rules, dashboards, runbooks and an exporter.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="obspack.yaml to read; without it the built-in defaults are used."),
]


def _fail(error: ObspackError) -> typer.Exit:
    for line in str(error).splitlines() or ["unknown error"]:
        typer.secho(f"error: {line}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=error.exit_code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"obspack {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Observability pack for vLLM on Kubernetes: rules, dashboards, runbooks and an exporter."""


def _pack(config: Path | None) -> tuple[ObspackConfig, Pack]:
    cfg = load_config(config)
    return cfg, build(cfg, source=config.name if config else "built-in defaults")


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the config.")] = Path("obspack.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented obspack.yaml with every setting at its default."""
    if path.exists() and not force:
        typer.secho(f"error: {path} exists; use --force to overwrite it", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=1)
    path.write_text(annotated_defaults(), encoding="utf-8")
    typer.echo(f"wrote {path}; edit it, then run: obspack render --config {path}")


@app.command()
def render(
    config: ConfigOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder of the pack.")] = Path("generated"),
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the output folder is not up to date.")
    ] = False,
    helm: Annotated[
        Path | None, typer.Option("--helm", help="Also write the chart's generated files into this chart folder.")
    ] = None,
) -> None:
    """Render rules, dashboards, runbooks and tests into OUT (or check that OUT is up to date)."""
    try:
        cfg, pack = _pack(config)
        targets = [(out, pack_files(pack))]
        if helm is not None:
            from obspack.render.helm import chart_files

            targets.append((helm, chart_files(cfg)))
        if check:
            stale = [_report_check(folder, files) for folder, files in targets]
            if any(stale):
                raise typer.Exit(code=1)
            return
        for folder, files in targets:
            result = output.write(folder, files)
            changed = len(result.missing) + len(result.stale)
            typer.echo(
                f"wrote {folder}: {changed} changed, {len(result.extra)} removed, {len(result.unchanged)} unchanged"
            )
    except ObspackError as e:
        raise _fail(e) from None


def _report_check(folder: Path, files: dict[str, str]) -> bool:
    """Print what differs in one output folder; True when it is not up to date."""
    result = output.diff(folder, files)
    if result.clean:
        typer.echo(f"{folder} is up to date ({len(result.unchanged)} files)")
        return False
    for kind in ("missing", "stale", "extra"):
        for rel in getattr(result, kind):
            typer.echo(f"{kind}: {folder / rel}")
    typer.secho(f"{folder} is not up to date: run `obspack render`", fg=typer.colors.RED, err=True)
    return True


@app.command()
def validate(config: ConfigOption = None) -> None:
    """Check the config and parse every PromQL expression it renders (and run promtool when present)."""
    from obspack.promql import expressions, parse_errors

    try:
        _, pack = _pack(config)
    except ObspackError as e:
        raise _fail(e) from None
    problems = parse_errors(pack)
    count = sum(1 for _ in expressions(pack))
    promtool = shutil.which("promtool")
    if promtool and not problems:
        files = pack_files(pack)
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for rel in (RECORDING_FILE, ALERTS_FILE):
                p = Path(tmp) / Path(rel).name
                p.write_text(files[rel], encoding="utf-8")
                paths.append(str(p))
            run = subprocess.run([promtool, "check", "rules", *paths], capture_output=True, text=True)
            if run.returncode != 0:
                problems.append(f"promtool check rules: {(run.stderr or run.stdout).strip()}")
    for problem in problems:
        typer.secho(f"error: {problem}", fg=typer.colors.RED, err=True)
    if problems:
        raise typer.Exit(code=1)
    checked = "parsed, promtool check rules passed" if promtool else "parsed (promtool not found, skipped)"
    typer.echo(f"config OK; {count} PromQL expressions {checked}")


app.command("exporter")(exporter)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
