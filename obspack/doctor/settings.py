"""The doctor's command-line values, checked and turned into a `Connection` and `Options`.

Every bad value is a `DoctorError` (exit code 2) that names the option and what it accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import promql_parser

from obspack.doctor.api import Connection, DoctorError
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


def _time(value: str | None) -> float | None:
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
    try:
        seconds = int(promql_parser.parse_duration(value).total_seconds())
    except ValueError:
        seconds = 0
    if seconds <= 0:
        raise DoctorError(f"{option} {value!r}: give a Prometheus duration such as 6h, 1d or 7d")
    return seconds


def from_cli(
    *,
    url: str,
    bearer_token: str | None,
    bearer_token_file: Path | None,
    basic_auth: str | None,
    basic_auth_password_file: Path | None,
    headers: Sequence[str],
    tenant: str | None,
    ca_file: Path | None,
    insecure: bool,
    timeout_s: float,
    concurrency: int,
    lookback: str,
    at: str | None,
    backend: str,
) -> tuple[Connection, Options]:
    if bearer_token and bearer_token_file:
        raise DoctorError("give --bearer-token or --bearer-token-file, not both")
    if bearer_token_file is not None:
        bearer_token = _secret_file(bearer_token_file, "--bearer-token-file")
    if backend not in ("auto", *KINDS):
        raise DoctorError(f"--backend {backend!r}: one of auto, {', '.join(KINDS)}")
    if ca_file is not None and not ca_file.is_file():
        raise DoctorError(f"--ca-file {ca_file}: no such file")
    connection = Connection(
        url=url,
        headers=_headers(headers, tenant),
        bearer_token=bearer_token or None,
        basic_auth=_basic_auth(basic_auth, basic_auth_password_file),
        ca_file=ca_file,
        insecure=insecure,
        timeout_s=timeout_s,
        concurrency=concurrency,
    )
    return connection, Options(at=_time(at), lookback_s=_duration(lookback, "--lookback"), backend=backend)
