"""The doctor's command-line values, checked and turned into a `Connection` and `Options`.

Every bad value is a `DoctorError` (exit code 2) that names the option and what it accepts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from obspack import durations
from obspack.doctor.api import DEFAULT_MAX_BYTES, Connection, DoctorError
from obspack.doctor.backends import KINDS
from obspack.doctor.run import Options


def _secret_file(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as e:
        raise DoctorError(f"{option}: cannot read {path} ({e.strerror})") from None


def _headers(raw: Sequence[str], tenant: str | None) -> tuple[tuple[str, str], ...]:
    out = []
    for item in raw:
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
            raise DoctorError(f"--header {item!r}: write it as 'Name: value', e.g. 'X-Scope-OrgID: team-a'")
        out.append((name.strip(), value.strip()))
    if tenant:
        out.append(("X-Scope-OrgID", tenant))
    return tuple(out)


def _basic_auth(value: str | None, password_file: Path | None) -> tuple[str, str] | None:
    if value is None:
        return None
    user, sep, password = value.partition(":")
    if password_file is not None:
        password, sep = _secret_file(password_file, "--basic-auth-password-file"), ":"
    if not sep or not user:
        raise DoctorError(
            "--basic-auth: write it as USER:PASSWORD (or give USER and --basic-auth-password-file)"
        )
    return user, password


def parse_time(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise DoctorError(
            f"--time {value!r}: give unix seconds or an RFC 3339 time (2026-11-22T17:00:00Z)"
        ) from None


def _duration(value: str, option: str) -> int:
    """Whole seconds, at least one, of a Prometheus duration or a number of seconds."""
    n = int(seconds(value, option))
    if n < 1:
        raise DoctorError(f"{option} {value!r}: give a Prometheus duration such as 6h, 1d or 7d (or seconds)")
    return n


DEFAULT_TIMEOUT = "30s"
DEFAULT_MAX_TIME = "5m"
_SIZE = re.compile(r"([0-9]+)\s*(b|kib|mib|gib|kb|mb|gb)?", re.IGNORECASE)
_FACTOR = {None: 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 10**3, "mb": 10**6, "gb": 10**9}


def seconds(value: str | float, option: str) -> float:
    """Seconds in a Prometheus duration (`30s`, `500ms`, `1m30s`) or a bare number of seconds (`30`, `0.5`)."""
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(value.strip())
        except ValueError:
            try:
                number = durations.parse_ms(value.strip()) / 1000
            except ValueError:
                number = 0.0
    if not math.isfinite(number) or number <= 0:
        examples = "6h, 1d or 7d" if option == "--lookback" else "30s, 500ms or 2m"
        raise DoctorError(f"{option} {value!r}: give a Prometheus duration such as {examples} (or seconds)")
    return number


def size(value: str | int, option: str = "--max-bytes") -> int:
    """Bytes in `67108864`, `64MiB`, `512KiB` or `1GB`."""
    match = _SIZE.fullmatch(str(value).strip())
    n = int(match.group(1)) * _FACTOR[(match.group(2) or "").lower() or None] if match else 0
    if n <= 0:
        raise DoctorError(
            f"{option} {value!r}: give a positive size in bytes, or with KiB, MiB or GiB (e.g. 64MiB)"
        )
    return n


# The command-line options of a connection, as both commands that ask a server (doctor, rightsize) name
# them: the CLI passes exactly these to `connection`.
CONNECTION_OPTIONS = (
    "prometheus", "bearer_token", "bearer_token_file", "basic_auth", "basic_auth_password_file", "header",
    "tenant", "ca_file", "insecure_skip_verify", "timeout", "max_time", "max_bytes", "concurrency",
)  # fmt: skip


def connection(
    *,
    prometheus: str,
    bearer_token: str | None = None,
    bearer_token_file: Path | None = None,
    basic_auth: str | None = None,
    basic_auth_password_file: Path | None = None,
    header: Sequence[str] | None = None,
    tenant: str | None = None,
    ca_file: Path | None = None,
    insecure_skip_verify: bool = False,
    timeout: float | str = DEFAULT_TIMEOUT,
    max_time: str | float | None = DEFAULT_MAX_TIME,
    max_bytes: str | int = DEFAULT_MAX_BYTES,
    concurrency: int = 8,
) -> Connection:
    """The connection the options describe. `timeout` and `max_time`: a Prometheus duration or seconds;
    `max_time` None: the run is unbounded."""
    if bearer_token and bearer_token_file:
        raise DoctorError("give --bearer-token or --bearer-token-file, not both")
    if bearer_token_file is not None:
        bearer_token = _secret_file(bearer_token_file, "--bearer-token-file")
    if ca_file is not None and not ca_file.is_file():
        raise DoctorError(f"--ca-file {ca_file}: no such file")
    return Connection(
        url=prometheus,
        headers=_headers(header or [], tenant),
        bearer_token=bearer_token or None,
        basic_auth=_basic_auth(basic_auth, basic_auth_password_file),
        ca_file=ca_file,
        insecure=insecure_skip_verify,
        timeout_s=seconds(timeout, "--timeout"),
        concurrency=concurrency,
        max_bytes=size(max_bytes),
        max_time_s=seconds(max_time, "--max-time") if max_time is not None else None,
    )


def backend_kind(backend: str) -> str:
    if backend not in ("auto", *KINDS):
        raise DoctorError(f"--backend {backend!r}: one of auto, {', '.join(KINDS)}")
    return backend


def options(*, lookback: str = "1d", at: str | None = None, backend: str = "auto") -> Options:
    """The doctor's own options: when to look, how far back, which backend."""
    return Options(at=parse_time(at), lookback_s=_duration(lookback, "--lookback"), backend=backend_kind(backend))
