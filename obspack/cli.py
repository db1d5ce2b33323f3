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


@app.command()
def doctor(
    prometheus: Annotated[
        str,
        typer.Option(
            "--prometheus",
            "-p",
            envvar="OBSPACK_PROMETHEUS_URL",
            help="URL of the Prometheus-compatible API, with any path prefix (Mimir: https://host/prometheus).",
        ),
    ],
    config: ConfigOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    bearer_token: Annotated[
        str | None, typer.Option(envvar="OBSPACK_BEARER_TOKEN", help="Send Authorization: Bearer TOKEN.")
    ] = None,
    bearer_token_file: Annotated[Path | None, typer.Option(help="Read the bearer token from this file.")] = None,
    basic_auth: Annotated[
        str | None, typer.Option(envvar="OBSPACK_BASIC_AUTH", help="USER:PASSWORD for HTTP basic auth.")
    ] = None,
    basic_auth_password_file: Annotated[
        Path | None, typer.Option(help="Read the basic-auth password from this file (--basic-auth USER).")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="Extra header 'Name: value' (repeatable).")
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="Mimir/Cortex tenant, sent as X-Scope-OrgID.")] = None,
    ca_file: Annotated[Path | None, typer.Option(help="CA certificate(s) to verify the server with.")] = None,
    insecure_skip_verify: Annotated[bool, typer.Option(help="Do not verify the server's certificate.")] = False,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds one request may take.")] = 30.0,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Requests in flight at most.")] = 8,
    lookback: Annotated[str, typer.Option(help="How far back to look for series that are gone.")] = "1d",
    at: Annotated[str | None, typer.Option("--time", help="Check at this time (RFC 3339 or unix seconds).")] = None,
    backend: Annotated[
        str, typer.Option(help="auto, prometheus, thanos, mimir or victoriametrics (auto: detected).")
    ] = "auto",
) -> None:
    """Check the pack against a live Prometheus: sources, fit of every rule and panel, deployed rules.

    Exit code 0: nothing breaks the pack; 1: problems found; 2: the server could not be asked."""
    import json

    from obspack.doctor.report import as_json, text
    from obspack.doctor.run import diagnose
    from obspack.doctor.settings import from_cli

    try:
        cfg, pack = _pack(config)
        connection, options = from_cli(
            url=prometheus,
            bearer_token=bearer_token,
            bearer_token_file=bearer_token_file,
            basic_auth=basic_auth,
            basic_auth_password_file=basic_auth_password_file,
            headers=header or [],
            tenant=tenant,
            ca_file=ca_file,
            insecure=insecure_skip_verify,
            timeout_s=timeout,
            concurrency=concurrency,
            lookback=lookback,
            at=at,
            backend=backend,
        )
        report = diagnose(cfg, pack, connection, options)
    except ObspackError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(as_json(report), indent=2) if json_output else text(report, typer.style))
    raise typer.Exit(code=report.exit_code)


# The connection options of commands that read a live server (rightsize; doctor declares the same inline).
PrometheusURL = Annotated[
    str,
    typer.Option(
        "--prometheus",
        "-p",
        envvar="OBSPACK_PROMETHEUS_URL",
        help="URL of the Prometheus-compatible API, with any path prefix (Mimir: https://host/prometheus).",
    ),
]
BearerToken = Annotated[
    str | None, typer.Option(envvar="OBSPACK_BEARER_TOKEN", help="Send Authorization: Bearer TOKEN.")
]
BearerTokenFile = Annotated[Path | None, typer.Option(help="Read the bearer token from this file.")]
BasicAuth = Annotated[str | None, typer.Option(envvar="OBSPACK_BASIC_AUTH", help="USER:PASSWORD for HTTP basic auth.")]
BasicAuthPasswordFile = Annotated[
    Path | None, typer.Option(help="Read the basic-auth password from this file (--basic-auth USER).")
]
Headers = Annotated[list[str] | None, typer.Option("--header", "-H", help="Extra header 'Name: value' (repeatable).")]
Tenant = Annotated[str | None, typer.Option(help="Mimir/Cortex tenant, sent as X-Scope-OrgID.")]
CAFile = Annotated[Path | None, typer.Option(help="CA certificate(s) to verify the server with.")]
Insecure = Annotated[bool, typer.Option(help="Do not verify the server's certificate.")]
Timeout = Annotated[float, typer.Option(min=1, help="Seconds one request may take.")]
Concurrency = Annotated[int, typer.Option(min=1, max=64, help="Requests in flight at most.")]
Backend = Annotated[str, typer.Option(help="auto, prometheus, thanos, mimir or victoriametrics (auto: detected).")]


@app.command()
def rightsize(
    prometheus: PrometheusURL,
    config: ConfigOption = None,
    window: Annotated[str, typer.Option(help="How much history to size from.")] = "14d",
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON (schema obspack.rightsize/v1).")] = False,
    patches: Annotated[
        Path | None, typer.Option("--patches", help="Also write one strategic-merge patch file per owner here.")
    ] = None,
    load_window: Annotated[str, typer.Option(help="How long after a container start counts as model load.")] = "10m",
    min_history: Annotated[str, typer.Option(help="Less history than this: not enough data, no recommendation.")] = "7d",
    release_rise: Annotated[float, typer.Option(help="Flag an image whose memory peak rose by more than this share.")] = 0.15,
    at: Annotated[str | None, typer.Option("--time", help="End of the window (RFC 3339 or unix seconds).")] = None,
    bearer_token: BearerToken = None,
    bearer_token_file: BearerTokenFile = None,
    basic_auth: BasicAuth = None,
    basic_auth_password_file: BasicAuthPasswordFile = None,
    header: Headers = None,
    tenant: Tenant = None,
    ca_file: CAFile = None,
    insecure_skip_verify: Insecure = False,
    timeout: Timeout = 120.0,
    concurrency: Concurrency = 2,
    backend: Backend = "auto",
) -> None:
    """Size vLLM pods (host RAM requests and limits) and vLLM's knobs from what the fleet did. Read-only.

    Exit code 0: nothing to change; 1: recommendations or risks; 2: the server, or a question, failed."""
    import json

    from obspack.rightsize.report import as_json, text
    from obspack.rightsize.run import rightsize as run_rightsize
    from obspack.rightsize.settings import from_cli
    from obspack.rightsize.write import write_patches

    try:
        cfg = load_config(config)
        connection, options = from_cli(
            url=prometheus,
            bearer_token=bearer_token,
            bearer_token_file=bearer_token_file,
            basic_auth=basic_auth,
            basic_auth_password_file=basic_auth_password_file,
            headers=header or [],
            tenant=tenant,
            ca_file=ca_file,
            insecure=insecure_skip_verify,
            timeout_s=timeout,
            concurrency=concurrency,
            at=at,
            backend=backend,
            window=window,
            load_window=load_window,
            min_history=min_history,
            release_rise=release_rise,
        )
        report = run_rightsize(cfg, connection, options)
        written = write_patches(patches, report.workloads) if patches is not None else None
    except ObspackError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(as_json(report), indent=2) if json_output else text(report, typer.style))
    if written is not None:
        typer.echo(f"wrote {len(written)} patch files to {patches}", err=True)
    raise typer.Exit(code=report.exit_code)


app.command("exporter")(exporter)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
