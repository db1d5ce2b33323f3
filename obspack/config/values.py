"""Value types of the config: each checks one kind of value and says what is allowed in its error
message. Values that end up inside PromQL (label names, regexes, selectors) are checked with a real
PromQL parser, so no config can produce a broken or injected expression.
"""

from __future__ import annotations

import json
import re
import typing
import unicodedata
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import promql_parser
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict
from pydantic.fields import FieldInfo

from obspack import durations
from obspack.config import regex
from obspack.promql import hide_strings, raw_strings_quoted

# The settings' descriptions repeat what each type allows, for `obspack init`. Lengths are capped where a
# longer value cannot be meant: a multi-megabyte string in a label or URL would otherwise be copied into
# every rule, test and dashboard of the pack.

_DURATION = durations.PATTERN
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_K8S_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_K8S_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_URL = re.compile(r"""^$|^[A-Za-z0-9./][^\s"'\\{}]*$""")
_GRAFANA_REFRESH = re.compile(r"^$|^[1-9][0-9]*[smhd]$")
# Characters a value may not hold, by Unicode category: control (Cc), format (Cf: bidi overrides, zero-width
# and byte-order marks), surrogates (Cs), unassigned and non-characters (Cn: U+FFFE, U+FFFF, ...), and the
# line and paragraph separators (Zl, Zp: U+2028, U+2029), which YAML reads as line breaks. Each of them
# either breaks a YAML or JSON reader downstream (PyYAML, helm) or hides text from the person reading it.
_UNSAFE = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a surrogate",
    "Cn": "a non-character or unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
_PROBE = "obspack_probe"
_MINUTE, _DAY = 60_000, 86_400_000

MAX_LABEL_NAME = 128
MAX_LABEL_VALUE = 1024
MAX_TEXT = 255
MAX_URL = 2048
MAX_PROMQL = 4096
MAX_ENTRIES = 32
# Labels obspack's rules group, join or alert by. The cluster label and static alert labels must be other
# labels: a static `pod` label would give every pod's alert the same label set, which Prometheus refuses.
# tests/test_config.py checks this set against the labels the rendered rules use.
RULE_LABELS = frozenset({
    "alertname", "severity", "namespace", "pod", "container", "model_name", "job", "instance", "le", "engine",
    "pid", "reason", "finished_reason", "gpu", "UUID", "Hostname", "modelName", "GPU_I_ID", "slo",
    "long", "short", "connector", "kind", "signal", "horizontalpodautoscaler", "scaledObject", "scaledResource",
    "exported_namespace", "GPU_I_PROFILE", "node", "node_pool", "state", "role", "tokens", "workload",
    "workload_type", "team_name", "owner_kind", "owner_name", "replicaset", "mig_g", "mig_slices", "hostname",
    "name", "inference_pool", "leader", "decision_type", "stage", "exported_pod", "pod_name", "pod_namespace",
    "uuid", "only_pool_in_namespace", "other_role",
})


def promql_string(value: str) -> str:
    """Quote a value as a PromQL string literal (JSON escaping is a subset of PromQL's)."""
    return json.dumps(value)


def _text(value: str, limit: int) -> str:
    """One line of text, at most `limit` characters."""
    if len(value) > limit:
        raise ValueError(f"{len(value)} characters is too long (allowed: at most {limit})")
    for ch in value:
        kind = _UNSAFE.get(unicodedata.category(ch))
        if kind:
            raise ValueError(f"contains U+{ord(ch):04X}, {kind} (allowed: one line of printable text)")
    return value


def _no_template(value: str) -> str:
    """Prometheus expands Go templates in alert labels and annotations: `{{` would be run, not printed."""
    if "{{" in value or "}}" in value:
        raise ValueError(f"{value[:60]!r} contains '{{{{' or '}}}}', which Prometheus would expand as a template (allowed: plain text)")
    return value


def _bounded(low_ms: int, high_ms: int, allowed: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        ms = durations.parse_ms(_text(value, 64))
        if not low_ms <= ms <= high_ms:
            raise ValueError(f"{value!r} is out of range (allowed: {allowed})")
        return value

    return check


def _label_name(value: str) -> str:
    _text(value, MAX_LABEL_NAME)
    if not _LABEL_NAME.match(value):
        raise ValueError(f"{value!r} is not a valid label name (allowed: [a-zA-Z_][a-zA-Z0-9_]*)")
    if value.startswith("__"):
        raise ValueError(f"{value!r} is reserved: label names starting with __ are Prometheus' own")
    return value


def _cluster_label(value: str) -> str:
    if value in RULE_LABELS:
        raise ValueError(f"{value!r} is a label obspack's rules use for something else (allowed: another label name)")
    return value


def _label_value(value: str) -> str:
    if not value:
        raise ValueError("is empty, and Prometheus drops a label whose value is empty (allowed: 1 to 1024 characters)")
    return _no_template(_text(value, MAX_LABEL_VALUE))


def _regex(value: str) -> str:
    _text(value, MAX_PROMQL)
    why = regex.problem(value)
    if why:
        raise ValueError(why)
    return value


def _regex_matchers(text: str) -> None:
    """Check the regex of every `=~` and `!~` matcher with RE2 before the PromQL parser sees them: its
    own regex engine would refuse a bad one with a message about quoting."""
    hidden, restore = hide_strings(text)
    for name, op, literal in _REGEX_MATCHER.findall(hidden):
        try:
            value = promql_parser.parse(f"{_PROBE}{{l={restore(literal)}}}").matchers.matchers[0].value
        except Exception:  # noqa: BLE001 - a broken string literal: the parser's own message below says so
            continue
        why = regex.problem(value)
        if why:
            raise ValueError(f"{name}{op}{restore(literal)}: {why}")


def _matchers(value: str) -> str:
    """Label matchers without braces, e.g. `job="kubelet", metrics_path="/metrics/cadvisor"`."""
    text = _text(value, MAX_PROMQL).strip().rstrip(",").strip()
    if not text:
        return ""
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip().rstrip(",")
    text = raw_strings_quoted(text)
    if re.search(r"(^|[{,\s])__name__\s*[=!]", text):
        raise ValueError("selectors may not match __name__ (the metric name comes from obspack)")
    _regex_matchers(text)
    try:
        parsed = promql_parser.parse(f"{_PROBE}{{{text}}}")
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{value!r} is not a list of label matchers ({_matcher_hint(text) or e})") from None
    ok = isinstance(parsed, promql_parser.VectorSelector) and parsed.name == _PROBE
    if not ok or parsed.matchers.or_matchers:
        raise ValueError(f"{value!r} must be label matchers only, e.g. job=\"kubelet\", ns=~\"a|b\"")
    for m in parsed.matchers.matchers:
        if m.name.startswith("__"):
            raise ValueError(f"{m.name!r} is reserved: label names starting with __ are Prometheus' own")
    return text


def _promql(value: str) -> str:
    """A whole PromQL expression (empty: none), checked by the parser."""
    text = _text(value, MAX_PROMQL).strip()
    if not text:
        return ""
    try:
        promql_parser.parse(text)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{value[:80]!r} is not a PromQL expression ({e})") from None
    return text


_REGEX_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~)\s*("[\ue000-\uf8ff]")')
_BARE = re.compile(r"""(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*([^"'`,\s~][^,]*?|)\s*(?=,|$)""")


def _matcher_hint(text: str) -> str:
    """What to change when a matcher's value is not quoted (the parser's own message talks about its
    grammar): `job=vllm` is `job="vllm"`, `job=` is `job=""`."""
    bare = _BARE.search(text)
    if not bare:
        return ""
    name, op, raw = bare.groups()
    return f"the value of {name} must be in quotes: {name}{op}{promql_string(raw.strip())}"


def _k8s_name(value: str) -> str:
    if not _K8S_NAME.match(value) or len(value) > 63:
        raise ValueError(f"{value[:80]!r} is not a Kubernetes name (allowed: lower-case a-z, 0-9 and '-', at most 63)")
    return value


def _k8s_key(value: str) -> str:
    prefix, _, name = value.rpartition("/")
    if not _K8S_QUALIFIED_NAME.match(value) or len(name) > 63 or len(prefix) > 253:
        raise ValueError(
            f"{value[:80]!r} is not a Kubernetes label or annotation key "
            "(allowed: an optional DNS prefix and '/', then up to 63 of A-Z, a-z, 0-9, '-', '_', '.')"
        )
    return value


def _k8s_labels(value: dict[str, str]) -> dict[str, str]:
    _entries(value)
    for key, text in value.items():
        _k8s_key(key)
        if len(text) > 63 or not _K8S_LABEL_VALUE.match(text):
            raise ValueError(
                f"{key}: {text[:80]!r} is not a Kubernetes label value "
                "(allowed: up to 63 of A-Z, a-z, 0-9, '-', '_', '.', starting and ending alphanumeric)"
            )
    return value


def _entries(value: Any) -> Any:
    if len(value) > MAX_ENTRIES:
        raise ValueError(f"{len(value)} entries are too many (allowed: at most {MAX_ENTRIES})")
    return value


def _label_map(value: dict[str, str]) -> dict[str, str]:
    _entries(value)
    taken = sorted(RULE_LABELS & set(value))
    if taken:
        hint = " (set severity with the 'severity' key)" if "severity" in taken else ""
        raise ValueError(f"labels may not set {taken}: the alerts carry them from their rules{hint}")
    return value


def _url(value: str) -> str:
    _text(value, MAX_URL)
    if not _URL.match(value):
        raise ValueError(
            f"{value[:80]!r} is not a URL obspack can print as is "
            "(allowed: empty, or starting with a letter, digit, '.' or '/', without spaces, quotes, backslashes or braces)"
        )
    return value


def _refresh(value: str) -> str:
    if not _GRAFANA_REFRESH.match(_text(value, 16)):
        raise ValueError(f"{value!r} is not a Grafana refresh interval (allowed: empty for off, or e.g. 30s, 1m, 1h, 1d)")
    ms = durations.parse_ms(value) if value else 0
    if value and not 5000 <= ms <= _DAY:
        raise ValueError(f"{value!r} is out of range (allowed: 5s, Grafana's default minimum, to 1d)")
    return value


Duration = Annotated[str, AfterValidator(_bounded(0, _DAY, "0 to 1d, e.g. 0s, 30s, 5m, 1h"))]
Window = Annotated[str, AfterValidator(_bounded(1, _DAY, "above 0, at most 1d, and at least twice scrape_interval"))]
RuleInterval = Annotated[str, AfterValidator(_bounded(1000, 5 * _MINUTE, "1s to 5m"))]
ScrapeInterval = Annotated[str, AfterValidator(_bounded(1000, 150_000, "1s to 2m30s"))]
LabelName = Annotated[str, AfterValidator(_label_name)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
Regex = Annotated[str, AfterValidator(_regex)]
Matchers = Annotated[str, AfterValidator(_matchers)]
PromQL = Annotated[str, AfterValidator(_promql)]
K8sName = Annotated[str, AfterValidator(_k8s_name)]
K8sKey = Annotated[str, AfterValidator(_k8s_key)]
K8sLabels = Annotated[dict[str, str], AfterValidator(_k8s_labels)]
LabelMap = Annotated[dict[LabelName, LabelValue], AfterValidator(_label_map)]
Text = Annotated[str, AfterValidator(lambda v: _text(v, MAX_TEXT))]
Tag = Annotated[str, AfterValidator(lambda v: _text(v, 50))]
Tags = Annotated[list[Tag], AfterValidator(_entries)]
URL = Annotated[str, AfterValidator(_no_template), AfterValidator(_url)]
Refresh = Annotated[str, AfterValidator(_refresh)]
Ratio = Annotated[float, Field(ge=0.001, le=0.999, allow_inf_nan=False)]
HitRatio = Annotated[float, Field(ge=0.001, le=0.9, allow_inf_nan=False)]  # a good hit rate must fit above
Number = Annotated[float, Field(allow_inf_nan=False)]


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


SeverityName = Annotated[Severity, Strict(False)]  # the YAML gives text; strict mode would want the enum


class _Model(BaseModel):
    """Strict: a boolean is not a number and a number is not text (YAML `on` or `1` must be quoted)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_enum_values=False, strict=True, defer_build=True)


FOR = "how long the condition must hold before firing (0 to 1d)"
SEVERITY = "severity label (critical, warning or info)"
RATIO = "(0.001 to 0.999)"
WINDOW = "(2x scrape_interval to 1d)"
EVENT_WINDOW = "(2x scrape_interval and `for` + two rule evaluations, 2m by default, to 1d)"


def has_type(info: FieldInfo, alias: Any) -> bool:
    """Whether a field is declared with one of the Annotated types above (e.g. Window)."""
    base, *metadata = typing.get_args(alias)
    return info.annotation is base and list(info.metadata) == metadata
