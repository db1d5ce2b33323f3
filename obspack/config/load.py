"""Loading a config file: every problem as `FILE:LINE: key.path: what is wrong (what is allowed)`."""

from __future__ import annotations

import difflib
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from obspack import durations, yamlsource
from obspack.catalogue import vllm_latency
from obspack.config.conflicts import conflicts
from obspack.config.model import ObspackConfig, defaults
from obspack.config.values import Duration, Refresh, RuleInterval, ScrapeInterval, Window, has_type
from obspack.errors import ConfigError

MAX_PROBLEMS = 50  # a file of 100000 bad keys gets the first ones and a count, not 100000 lines
# Settings that moved, and where they live now: the old key gets an error naming the new one.
MOVED = {("cost", "role_label"): "disaggregation.role_label"}


def _field(loc: tuple[Any, ...]) -> FieldInfo | None:
    """The model field at a key path, or None (inside a map or list)."""
    model: Any = ObspackConfig
    info = None
    for part in loc:
        if isinstance(part, int):  # an item of a list of settings (slos.models)
            model = next(iter(typing.get_args(model)), None)
            continue
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return None
        info = next((f for n, f in fields.items() if part in (n, f.alias)), None)
        if info is None:
            return None
        model = info.annotation
    return info


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    model = _field(loc[:-1]).annotation if loc[:-1] else ObspackConfig  # type: ignore[union-attr]
    fields = getattr(model, "model_fields", {})
    return sorted((f.alias or n) for n, f in fields.items())


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value:g}" if isinstance(value, float) else f"the number {value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if value is None:
        return "nothing (null)"
    return {dict: "a mapping", list: "a list"}.get(type(value), type(value).__name__)


_EXPECTED = {
    "string_type": "expected text, got {kind} (quote it if you mean the text)",
    "float_type": "expected a number, got {kind}",
    "bool_type": "expected true or false, got {kind}",
    "dict_type": "expected a mapping, got {kind}",
    "model_type": "expected a mapping of settings, got {kind}",
    "list_type": "expected a list, got {kind}",
    "finite_number": "{input} is not a finite number",
    "greater_than": "{input:g} is out of range",
    "greater_than_equal": "{input:g} is out of range",
    "less_than": "{input:g} is out of range",
    "less_than_equal": "{input:g} is out of range",
    "enum": "{input!r} is not {expected}",
    "literal_error": "{input!r} is not {expected}",
}
_NUMERIC = {"float_type", "finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _describe(err: dict[str, Any]) -> str:
    """One error as `what is wrong (what is allowed)`; a number's range comes from its description."""
    loc, kind = tuple(err["loc"]), err["type"]
    if kind == "extra_forbidden" and loc in MOVED:
        return f"moved to {MOVED[loc]}: set it there (same values), it is shared by the alerts, dashboards and cost records"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc)
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        did_you_mean = f"did you mean {hint[0]!r}? " if hint else ""
        return f"unknown key ({did_you_mean}allowed: {', '.join(allowed)})"
    template = _EXPECTED.get(kind)
    value = err.get("input")
    expected = err.get("ctx", {}).get("expected")
    msg = template.format(kind=_kind(value), input=value, expected=expected) if template else str(err["msg"]).removeprefix("Value error, ")
    if kind in ("int_type", "float_type", "string_type") and _is_duration(loc) and isinstance(value, int | float):
        return f"expected a duration with a unit, got the number {value:g} (write '{value:g}s' for seconds; units: ms, s, m, h, d)"
    info = _field(loc) if kind in _NUMERIC else None
    if info is not None and loc[-1] == "threshold" and loc[0] == "slos":  # latency thresholds, in seconds
        return _threshold(str(loc[-2]), value, msg)
    limit = err.get("ctx", {}).get("le", err.get("ctx", {}).get("lt"))
    if isinstance(limit, int | float) and limit <= 1 and isinstance(value, int | float) and 1 < value <= 100:
        msg += f": a share is a fraction, not a percentage (did you mean {value / 100:g}?)"
    allowed = re.search(r"\(([^()]*)\)$", info.description or "") if info else None
    return f"{msg} (allowed: {allowed.group(1).removeprefix('allowed: ')})" if allowed else msg


def _threshold(sli: str, value: Any, msg: str) -> str:
    """A latency threshold that is not a number: a duration gets the number of seconds to write."""
    if isinstance(value, str) and re.fullmatch(durations.PATTERN, value.strip()) and value.strip():
        seconds = durations.parse_ms(value.strip()) / 1000
        msg = f"expected a number of seconds, got the duration {value!r} (write {seconds:g})"
    bounds = ", ".join(f"{b:g}" for b in vllm_latency.boundaries(vllm_latency.SLO_HISTOGRAMS[sli]))
    return f"{msg[:-1] + '; ' if msg.endswith(')') else msg + ' ('}allowed: seconds, a bucket bound vLLM exports: {bounds})"


_DURATIONS = (Duration, Window, RuleInterval, ScrapeInterval, Refresh)


def _is_duration(loc: tuple[Any, ...]) -> bool:
    info = _field(loc)
    if info is None:
        return False
    if any(has_type(info, kind) for kind in _DURATIONS):
        return True
    # optional durations (rule_interval) are `Kind | None`
    return any(typing.get_args(info.annotation) == (kind, type(None)) for kind in _DURATIONS)


def _dotted(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "[key]"]
    return ".".join(parts) or "(top)"


def load_config(path: Path | None) -> ObspackConfig:
    """Read and validate a config file; `None` gives the built-in defaults."""
    if path is None:
        return defaults()
    name = str(path)
    source = yamlsource.load(path)
    data = {} if source.data is None else source.data
    if not isinstance(data, dict):
        raise ConfigError([f"{name}:1: the config must be a mapping of settings (see `obspack init`)"])
    problems = list(source.problems)
    try:
        config = ObspackConfig.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            loc = tuple(err["loc"])
            problems.append(f"{name}:{source.line(loc)}: {_dotted(loc)}: {_describe(dict(err))}")
        raise ConfigError(_capped(_by_line(problems))) from None
    for c in conflicts(config):
        other = f"{name}:{source.line(c.other)}" if c.other and _given(data, c.other) else "the default"
        problems.append(f"{name}:{source.line(c.loc)}: {'.'.join(c.loc)}: {c.message.replace('{other}', other)}")
    if problems:
        raise ConfigError(_capped(_by_line(problems)))
    return config


def _by_line(problems: list[str]) -> list[str]:
    """Problems in the order of the file's lines (stable within a line)."""

    def line(problem: str) -> int:
        found = re.match(r".*?:(\d+): ", problem)
        return int(found.group(1)) if found else 0

    return sorted(problems, key=line)


def _given(data: Any, loc: tuple[str, ...]) -> bool:
    """Whether the file sets this key (directly, through an alias or a merge key), not its default."""
    for part in loc:
        if isinstance(data, list) and str(part).isdigit() and int(part) < len(data):
            data = data[int(part)]
            continue
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more problems"]
