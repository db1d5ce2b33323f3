"""The `obspack` command: thin commands that parse, call and report."""

from __future__ import annotations

import contextlib
import errno
import gc
import io
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand

if TYPE_CHECKING:  # the commands import what they need when they run: `obspack --help` stays quick
    from obspack.config import ObspackConfig
    from obspack.pack import Pack

from obspack import __version__
from obspack.config import annotated_defaults, load_config
from obspack.errors import ObspackError, RenderError
from obspack.exporter.command import exporter


class _PlainHelp(TyperCommand):
    """A command whose help shows a value placeholder only for options that take a value: flags and
    --help get none (typer would print `<bool>` next to them)."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if getattr(param, "is_flag", False):
                param.metavar = ""
            elif param.param_type_name == "argument" and param.metavar:
                # an argument shows its metavar as its name already: no `<path>` type beside it
                param.display_type_rich = lambda ctx=None: None  # type: ignore[method-assign]


app = typer.Typer(
    help="Observability pack for vLLM on Kubernetes: rules, dashboards, runbooks and an exporter.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: click wraps it to the terminal and never cuts an option's name, as rich's tables do at 80
    # columns (`--basic-auth-password-f…`).
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},  # as wide as the terminal, up to 120 columns
)

DEFAULT_CONFIG = Path("obspack.yaml")
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help="Config to read. Without it: ./obspack.yaml when there is one, else the built-in defaults.",
        show_default=False,
    ),
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


def _config_path(config: Path | None, *, say_defaults: bool = False) -> Path | None:
    """The config a command reads: --config, else ./obspack.yaml when it exists (said on stderr), else the
    built-in defaults (said on stderr by the commands that make the pack, render and validate)."""
    if config is None and DEFAULT_CONFIG.is_file():
        typer.echo(f"reading ./{DEFAULT_CONFIG} (pass --config to read another)", err=True)
        return DEFAULT_CONFIG
    if config is None and say_defaults:
        typer.echo(f"no ./{DEFAULT_CONFIG} here: using the built-in defaults (`obspack init` writes one)", err=True)
    return config


def _pack(config: Path | None, *, say_defaults: bool = False) -> tuple[ObspackConfig, Pack]:
    from obspack.pack import build

    cfg = load_config(_config_path(config, say_defaults=say_defaults))
    return cfg, build(cfg)


def command(*args: object) -> str:
    """An obspack command line to print as a hint, quoted for the shell."""
    return " ".join(["obspack", *(shlex.quote(str(a)) for a in args if a is not None)])


@app.command(cls=_PlainHelp, short_help="Write a commented obspack.yaml with every default.")
def init(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="Where to write the config.")] = Path("obspack.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented obspack.yaml with every setting at its default.

    Example: obspack init, edit obspack.yaml, then obspack render --out generated (it reads ./obspack.yaml)."""
    if path.exists() and not force:
        typer.secho(f"error: {path} exists; use --force to overwrite it", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=1)
    path.write_text(annotated_defaults(), encoding="utf-8")
    then = command("render", "--out", "generated") if path == DEFAULT_CONFIG else command("render", "--config", path)
    typer.echo(f"wrote {path}; edit it, then run: {then}")


@app.command(cls=_PlainHelp, short_help="Render the pack (and a Helm chart) into a folder.")
def render(
    config: ConfigOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", metavar="DIR", help="Output folder of the pack.")] = Path("generated"),
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the output folder is not up to date.")
    ] = False,
    helm: Annotated[
        Path | None,
        typer.Option(
            "--helm",
            metavar="DIR",
            help="Also write a complete Helm chart of this config into DIR (helm install NAME DIR).",
        ),
    ] = None,
) -> None:
    """Render rules, dashboards, runbooks and tests into OUT (or check that OUT is up to date).

    Examples:

    \b
    obspack render --out generated
    obspack render --config team.yaml --out monitoring/vllm --helm charts/obspack
    obspack render --out generated --check   (in CI: exit 1 when generated/ is stale)"""
    with _cycle_collector_paused():
        _render(config, out, check, helm)


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the pack is made, and as it was afterwards. A render builds many
    objects and almost no cycles: the collector ran about 145 times in one, for 0.1 s of CPU (7% of it), and
    found 3,500 objects in cycles, about 2 MB, which are now freed when the command ends. Every other
    object is still freed as soon as its last reference goes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _render(config: Path | None, out: Path, check: bool, helm: Path | None) -> None:
    from obspack.pack import build
    from obspack.render import write as output
    from obspack.render.files import pack_files

    try:
        config = _config_path(config, say_defaults=True)
        cfg = load_config(config)
        pack = build(cfg)
        _warn_missing_tests(pack)
        if helm is not None:
            _apart(out, helm)
        targets = [(out, pack_files(pack))]
        if helm is not None:
            from obspack.pack.chart import build_chart
            from obspack.render.helm import chart_files

            targets.append((helm, chart_files(build_chart(cfg))))
        if check:
            stale = [_report_check(folder, files) for folder, files in targets]
            if any(stale):
                again = command("render", *(["--config", config] if config else []), "--out", out,
                                *(["--helm", helm] if helm else []))  # fmt: skip
                typer.secho(f"not up to date: run `{again}`", fg=typer.colors.RED, err=True)
                raise typer.Exit(code=1)
            return
        results = output.write_all(targets)  # both folders, or neither
        for (folder, _), result in zip(targets, results):
            _warn_skipped(folder, result.skipped)
            typer.echo(f"wrote {folder}: {_counts(result)}")
    except ObspackError as e:
        raise _fail(e) from None


def _apart(out: Path, helm: Path) -> None:
    """--out and --helm must not overlap: the chart's manifest would replace the pack's, and one render
    would remove the other's files."""
    from obspack.render import write as output

    how = output.overlap(out, helm)
    if how:
        said = {"same": f"--out {out} and --helm {helm} are the same folder", "a in b": f"--out {out} is inside --helm {helm}",
                "b in a": f"--helm {helm} is inside --out {out}"}[how]  # fmt: skip
        raise RenderError(f"{said}: each would replace or remove the other's files; give each a folder of its own")


def _counts(result: Any) -> str:
    """What a write did, e.g. `45 new` or `3 changed, 1 removed, 41 unchanged` (the manifest included)."""
    counts = zip((len(result.missing), len(result.stale), len(result.extra), len(result.unchanged)),
                 ("new", "changed", "removed", "unchanged"))  # fmt: skip
    return ", ".join(f"{n} {what}" for n, what in counts if n) or "nothing to write"


def _warn_missing_tests(pack: Pack) -> None:
    for why in pack.missing_tests:
        typer.secho(f"warning: {why} (the pack's README lists this)", fg=typer.colors.YELLOW, err=True)


def _warn_skipped(folder: Path, skipped: list[str]) -> None:
    for reason in skipped[:20]:
        typer.secho(f"warning: {folder}: manifest entry skipped: {reason}", fg=typer.colors.YELLOW, err=True)
    if len(skipped) > 20:
        typer.secho(f"warning: {folder}: {len(skipped) - 20} more manifest entries skipped", fg=typer.colors.YELLOW, err=True)


def _report_check(folder: Path, files: dict[str, str]) -> bool:
    """Print what differs in one output folder; True when it is not up to date."""
    from obspack.render import write as output

    result = output.diff(folder, files)
    _warn_skipped(folder, result.skipped)
    if result.clean:
        typer.echo(f"{folder} is up to date ({len(result.unchanged)} files)")
        return False
    for kind in ("missing", "stale", "extra"):
        for rel in getattr(result, kind):
            typer.echo(f"{kind}: {folder / rel}")
    return True


@app.command(cls=_PlainHelp, short_help="Check the config and every PromQL expression.")
def validate(
    config: ConfigOption = None,
    tests: Annotated[
        bool,
        typer.Option("--tests", help="Also run the pack's shipped unit tests (promtool test rules; needs promtool)."),
    ] = False,
) -> None:
    """Check the config and parse every PromQL expression it renders (and run promtool when present).

    Examples:

    \b
    obspack validate --config obspack.yaml
    obspack validate --config obspack.yaml --tests   (the shipped tests too: 15 to 30 s)"""
    import time

    from obspack.pack.walk import expressions, parse_errors
    from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files
    from obspack.render.promtool import check_rules, run_unit_tests

    try:
        _, pack = _pack(config, say_defaults=True)
    except ObspackError as e:
        raise _fail(e) from None
    _warn_missing_tests(pack)
    problems = parse_errors(pack)
    count = sum(1 for _ in expressions(pack))
    promtool = shutil.which("promtool")
    if tests and not promtool:
        problems.append("--tests needs promtool on PATH (Debian: apt-get install prometheus)")
    files = pack_files(pack) if promtool and not problems else {}
    if files:
        problems += check_rules(promtool, {rel: files[rel] for rel in (RECORDING_FILE, ALERTS_FILE)})
    ran, started = 0, time.monotonic()
    if tests and files and not problems:
        ran, failed = run_unit_tests(promtool, files)
        problems += failed
    for problem in problems:
        typer.secho(f"error: {problem}", fg=typer.colors.RED, err=True)
    if problems:
        raise typer.Exit(code=1)
    checked = "parsed, promtool check rules --lint-fatal passed" if promtool else "parsed (promtool not found, skipped)"
    passed = f"; {ran} shipped test files passed (promtool test rules, {time.monotonic() - started:.0f}s)" if tests else ""
    typer.echo(f"config OK; {count} PromQL expressions {checked}{passed}")


# The options of the commands that ask a live server (doctor, rightsize): one declaration each.
PrometheusURL = Annotated[
    str,
    typer.Option(
        "--prometheus",
        "-p",
        envvar="OBSPACK_PROMETHEUS_URL",
        metavar="URL",
        help="The Prometheus-compatible API, with any path prefix (Mimir: https://host/prometheus); "
        "USER:PASSWORD@ in it is sent as basic auth and never shown.",
    ),
]
BearerToken = Annotated[
    str | None,
    typer.Option(envvar="OBSPACK_BEARER_TOKEN", metavar="TOKEN", help="Send Authorization: Bearer TOKEN."),
]
BearerTokenFile = Annotated[Path | None, typer.Option(metavar="FILE", help="Read the bearer token from this file.")]
BasicAuth = Annotated[
    str | None, typer.Option(envvar="OBSPACK_BASIC_AUTH", metavar="USER:PASSWORD", help="HTTP basic auth.")
]
BasicAuthPasswordFile = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Read the basic-auth password from this file (with --basic-auth USER)."),
]
Headers = Annotated[
    list[str] | None, typer.Option("--header", "-H", metavar="'NAME: VALUE'", help="Extra header, repeatable.")
]
Tenant = Annotated[str | None, typer.Option(metavar="ID", help="Mimir/Cortex tenant, sent as X-Scope-OrgID.")]
CAFile = Annotated[Path | None, typer.Option(metavar="FILE", help="CA certificate(s) to verify the server with.")]
Insecure = Annotated[
    bool, typer.Option("--insecure-skip-verify", help="Do not verify the server's certificate.")
]
Timeout = Annotated[
    str,
    typer.Option(
        metavar="DURATION",
        help="Deadline of one request (connecting, headers, body and retries): 30s, 500ms, or seconds.",
    ),
]
MaxTime = Annotated[
    str,
    typer.Option(metavar="DURATION", help="Deadline of the whole run; what is not asked by then is not checked."),
]
MaxBytes = Annotated[
    str, typer.Option(metavar="SIZE", help="Largest answer, on the wire and decompressed: bytes, or KiB, MiB, GiB.")
]
Concurrency = Annotated[int, typer.Option(min=1, max=64, metavar="N", help="Requests in flight at most.")]
Backend = Annotated[
    str, typer.Option(metavar="KIND", help="auto, prometheus, thanos, mimir or victoriametrics (auto: detected).")
]
At = Annotated[
    str | None,
    typer.Option(
        "--time", metavar="TIME", help="Look at the data as of this time (RFC 3339 or unix seconds); now by default."
    ),
]


@app.command(cls=_PlainHelp, short_help="Check the pack against a live Prometheus.")
def doctor(
    prometheus: PrometheusURL,
    config: ConfigOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report, or the error, as JSON on stdout.")] = False,
    bearer_token: BearerToken = None,
    bearer_token_file: BearerTokenFile = None,
    basic_auth: BasicAuth = None,
    basic_auth_password_file: BasicAuthPasswordFile = None,
    header: Headers = None,
    tenant: Tenant = None,
    ca_file: CAFile = None,
    insecure_skip_verify: Insecure = False,
    timeout: Timeout = "30s",
    max_time: MaxTime = "5m",
    max_bytes: MaxBytes = "64MiB",
    concurrency: Concurrency = 8,
    lookback: Annotated[
        str,
        typer.Option(metavar="DURATION", help="How far back to look for series that are gone: 1d, 6h, or seconds."),
    ] = "1d",
    at: At = None,
    backend: Backend = "auto",
) -> None:
    """Check the pack against a live Prometheus: sources, fit of every rule and panel, deployed rules.

    Examples:

    \b
    obspack doctor -p http://prometheus.monitoring:9090
    obspack doctor -p https://mimir.example.com/prometheus --tenant team-a --bearer-token-file token --json
    obspack doctor -p http://vmselect:8481/select/0/prometheus --config obspack.yaml --timeout 1m --max-time 10m

    Exit code 0: nothing breaks the pack and every check was asked; 1: problems found, or checks that could
    not be asked; 2: the server could not be asked (or stopped answering), or a bad option."""
    import json

    from obspack.doctor.report import as_json, text
    from obspack.doctor.run import diagnose
    from obspack.doctor.settings import CONNECTION_OPTIONS, connection, options

    given = locals()
    try:
        _, pack = _pack(config)
        server = connection(**{name: given[name] for name in CONNECTION_OPTIONS})
        settings = options(lookback=lookback, at=at, backend=backend)
        report = diagnose(pack, server, settings)
    except ObspackError as e:
        if json_output:
            typer.echo(json.dumps({"error": str(e), "exit_code": e.exit_code}, indent=2))
            raise typer.Exit(code=e.exit_code) from None
        raise _fail(e) from None
    typer.echo(json.dumps(as_json(report), indent=2) if json_output else text(report, typer.style))
    raise typer.Exit(code=report.exit_code)


@app.command(cls=_PlainHelp, short_help="Size vLLM pods and vLLM's knobs from their history.")
def rightsize(
    prometheus: PrometheusURL,
    config: ConfigOption = None,
    window: Annotated[str, typer.Option(metavar="DURATION", help="How much history to size from.")] = "14d",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the report, or the error, as JSON (schema obspack.rightsize/v1).")
    ] = False,
    patches: Annotated[
        Path | None, typer.Option("--patches", metavar="DIR", help="Also write one strategic-merge patch file per owner here.")
    ] = None,
    load_window: Annotated[
        str, typer.Option(metavar="DURATION", help="How long after a container start counts as model load.")
    ] = "10m",
    min_history: Annotated[
        str, typer.Option(metavar="DURATION", help="Less history than this: not enough data, no recommendation.")
    ] = "7d",
    release_rise: Annotated[
        float, typer.Option(metavar="SHARE", help="Flag an image whose memory peak rose by more than this share.")
    ] = 0.15,
    include_low: Annotated[
        bool, typer.Option("--include-low", help="Also write the patches of low-confidence workloads (each file says its confidence).")
    ] = False,
    what_if: Annotated[
        str | None,
        typer.Option(
            "--what-if",
            metavar="SETTING=VALUE",
            help="Backtest a value of your own for one workload: limit=40Gi, request=20Gi or gpu-memory-utilization=0.85.",
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(metavar="[CLUSTER/]NAMESPACE/NAME[:CONTAINER]", help="The workload of --what-if (needed when there are several)."),
    ] = None,
    autoscaling: Annotated[
        bool,
        typer.Option(
            "--autoscaling",
            help="Also derive autoscaling targets from the TTFT SLO's history, and print the autoscaling: block to paste into obspack.yaml.",
        ),
    ] = False,
    at: At = None,
    bearer_token: BearerToken = None,
    bearer_token_file: BearerTokenFile = None,
    basic_auth: BasicAuth = None,
    basic_auth_password_file: BasicAuthPasswordFile = None,
    header: Headers = None,
    tenant: Tenant = None,
    ca_file: CAFile = None,
    insecure_skip_verify: Insecure = False,
    timeout: Timeout = "2m",
    max_time: MaxTime = "15m",
    max_bytes: MaxBytes = "64MiB",
    concurrency: Concurrency = 2,
    backend: Backend = "auto",
) -> None:
    """Size vLLM pods (host RAM requests and limits) and vLLM's knobs from what the fleet did. Read-only.

    Examples:

    \b
    obspack rightsize -p http://prometheus.monitoring:9090
    obspack rightsize -p http://prometheus:9090 --window 28d --json --patches patches/

    obspack rightsize -p http://prometheus:9090 --what-if limit=40Gi --workload llm/vllm-chat

    obspack rightsize -p http://prometheus:9090 --autoscaling

    Exit code 0: nothing to change; 1: recommendations or risks, or no vLLM workload found (with --what-if: the value fails its backtest); 2: the server, or a question, failed."""
    import json

    from obspack.doctor.settings import CONNECTION_OPTIONS, connection
    from obspack.rightsize.report import as_json, autoscaling_block, text
    from obspack.rightsize.run import rightsize as run_rightsize
    from obspack.rightsize.settings import options
    from obspack.rightsize.write import write_patches

    given = locals()
    try:
        cfg = load_config(_config_path(config))
        server = connection(**{name: given[name] for name in CONNECTION_OPTIONS})
        settings = options(
            at=at,
            backend=backend,
            window=window,
            load_window=load_window,
            min_history=min_history,
            release_rise=release_rise,
            include_low=include_low,
            what_if_text=what_if,
            workload=workload,
            autoscaling=autoscaling,
        )
        report = run_rightsize(cfg, server, settings)
    except ObspackError as e:
        if json_output:
            typer.echo(json.dumps({"error": str(e), "exit_code": e.exit_code}, indent=2))
            raise typer.Exit(code=e.exit_code) from None
        raise _fail(e) from None
    typer.echo(json.dumps(as_json(report), indent=2) if json_output else text(report, typer.style))
    if autoscaling and not json_output and report.scaling:
        typer.echo("\n# paste into obspack.yaml:\n" + autoscaling_block(report.scaling), nl=False)
    if patches is not None:  # after the report: a folder that cannot be written loses no answer
        try:
            written = write_patches(patches, report.workloads, include_low)
        except ObspackError as e:
            raise _fail(e) from None
        typer.echo(f"wrote {len(written)} patch file{'s' if len(written) != 1 else ''} to {patches}", err=True)
    raise typer.Exit(code=report.exit_code)


app.command("exporter", cls=_PlainHelp, short_help="Serve derived KV-cache, prefix-cache and allocator series.")(exporter)


@app.command(cls=_PlainHelp, short_help="Play vLLM incidents through the pack on a local Prometheus.")
def demo(
    workdir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Where to keep the pack, configs, data and logs. Default: a new temporary folder."),
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Leave everything running at the end, until Ctrl-C.")] = False,
) -> None:
    """Play vLLM incidents through the pack on a real Prometheus and Alertmanager, all on 127.0.0.1.

    Fake vLLM pods and node exporters, obspack exporter sidecars and the pack from `obspack render`; every alert state change and notification is printed, then how late each alert fired. Takes about 3.5 minutes, most of it waiting for alerts to fire and resolve.

    Needs prometheus and alertmanager on PATH (Debian: apt-get install prometheus prometheus-alertmanager). See docs/e2e.md.

    Examples:

    \b
    obspack demo
    obspack demo --keep --workdir /tmp/obspack-demo"""
    from obspack.demo.narrate import play

    try:
        play(workdir, keep)
    except ObspackError as e:
        raise _fail(e) from None


class _ClosedStdout(io.TextIOBase):
    """Standard output when the process was started with it closed (`obspack ... >&-`; Python then sets
    sys.stdout to None): a write fails as a write to a closed descriptor does, so a command that prints
    ends with one error line; a command that prints nothing is not disturbed."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def fileno(self) -> int:
        return 1

    def writable(self) -> bool:
        return True


def main() -> None:
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        _flush_stdout()
        raise
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF):
            raise
        _stdout_failed(e)
    finally:
        _no_collection_at_exit()


def _no_collection_at_exit() -> None:
    """The command is done and the process ends. Python's cycle collections at exit would walk every
    object still alive (after a render, 0.15 s: a sixth of the command) to free memory the operating system
    takes back anyway: move them all out of the collector's reach. Objects are still released as their
    last references go and atexit handlers run as before; what is garbage in a cycle by then is left to
    the operating system, finalizers unrun (every file obspack writes is closed when its command ends).
    Only for a process that ends with the command: nothing but `python -m obspack` and the console script
    call main()."""
    gc.freeze()


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except OSError as e:
        _stdout_failed(e)


def _stdout_failed(e: OSError) -> NoReturn:
    """Standard output is full, closed or gone (`> /dev/full`, `| head`): one line on stderr, exit 1,
    and stdout pointed at /dev/null so that Python's own flush at exit stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    if not isinstance(e, BrokenPipeError):
        print(f"error: cannot write to standard output: {e.strerror or e}", file=sys.stderr)
    os._exit(1)
