"""The user's config: every setting, its default and a one-line description, declared once.

`ObspackConfig()` is the built-in default pack. `load_config(path)` reads a YAML file and reports
every problem as `FILE:LINE: key.path: what is wrong (what is allowed)`. Values that end up inside
PromQL (label names, regexes, selectors) are checked with a real PromQL parser, so no config can
produce a broken or injected expression.
"""

from __future__ import annotations

import difflib
import json
import re
import typing
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import promql_parser
import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError
from pydantic.fields import FieldInfo

from obspack import durations, yamlsource
from obspack.catalogue import vllm_latency
from obspack.errors import ConfigError
from obspack.promql import raw_strings_quoted

# ---------------------------------------------------------------------------------------------------------
# Value types. Each says what is allowed in its error message; the settings' descriptions repeat it for
# `obspack init`. Lengths are capped where a longer value cannot be meant: a multi-megabyte string in a
# label or URL would otherwise be copied into every rule, test and dashboard of the pack.

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
    "long", "short", "connector", "kind",
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
    try:
        re.compile(value)
        promql_parser.parse(f"{_PROBE}{{l=~{promql_string(value)}}}")
    except Exception as e:  # noqa: BLE001 - both parsers raise plain errors
        raise ValueError(f"{value!r} is not a valid regular expression ({e})") from None
    _re2_only(value)
    return value


def _re2_only(value: str) -> None:
    """What Python and promql-parser accept but Go's regexp (Prometheus) refuses."""
    if re.search(r"(?<!\\)[*+?}][*+]", value):
        raise ValueError(f"{value!r} repeats a repetition (like a++ or a**), which Prometheus' Go regexp refuses")
    if any(int(n) > 1000 for n in re.findall(r"(?<!\\)\{([0-9]+)(?:,[0-9]*)?\}", value) + re.findall(r"(?<!\\)\{[0-9]*,([0-9]+)\}", value)):
        raise ValueError(f"{value!r} repeats more than 1000 times, which Prometheus' Go regexp refuses")
    if "(?<" in value.replace("(?<=", "").replace("(?<!", ""):
        raise ValueError(f"{value!r} uses (?<name>...); write (?P<name>...) for Prometheus' Go regexp")


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
        if str(m.op).endswith("Re"):
            _re2_only(m.value)
    return text


_BARE = re.compile(r"""(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*([^"'`,\s][^,]*?|)\s*(?=,|$)""")


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

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_enum_values=False, strict=True)


FOR = "how long the condition must hold before firing (0 to 1d)"
SEVERITY = "severity label (critical, warning or info)"
RATIO = "(0.001 to 0.999)"
WINDOW = "(2x scrape_interval to 1d)"
EVENT_WINDOW = "(2x scrape_interval and `for` + two rule evaluations, 2m by default, to 1d)"

# ---------------------------------------------------------------------------------------------------------
# Sources


class Selectors(_Model):
    """Extra label matchers per source, without braces. Empty means: the metric names are enough."""

    vllm: Matchers = Field("", description="matchers for vLLM engine series, e.g. job=\"vllm\"")
    cadvisor: Matchers = Field(
        "", description="matchers for cAdvisor series, e.g. job=\"kubelet\", metrics_path=\"/metrics/cadvisor\""
    )
    kube_state_metrics: Matchers = Field("", description="matchers for kube-state-metrics, e.g. job=\"kube-state-metrics\"")
    dcgm: Matchers = Field("", description="matchers for NVIDIA dcgm-exporter series")
    exporter: Matchers = Field("", description="matchers for the obspack exporter's series")


class VLLMContainers(_Model):
    """How a vLLM serving container is recognised in cAdvisor and kube-state-metrics series."""

    image_regex: Regex = Field(".*vllm.*", description="container image (cAdvisor or kube-state-metrics) matches this")
    name_regex: Regex = Field("", description="also count containers whose name matches this (empty: off)")


# ---------------------------------------------------------------------------------------------------------
# Alerts: one settings class per alert, defaults from the alert catalogue


class AlertSettings(_Model):
    enabled: bool = Field(True, description="render this alert")
    for_: Duration = Field("5m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.WARNING, description=SEVERITY)
    labels: LabelMap = Field(
        default_factory=dict,
        description="extra static labels, e.g. team: ml-platform (values: no {{ }})",
    )


class HostMemoryNearLimit(AlertSettings):
    ratio: Ratio = Field(0.9, description=f"working set / memory limit above this fires {RATIO}")


class ContainerOOMKilled(AlertSettings):
    for_: Duration = Field("0m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    window: Window = Field("15m", description=f"a restart within this window counts {EVENT_WINDOW}")


class ContainerRestarted(AlertSettings):
    for_: Duration = Field("0m", alias="for", description=FOR)
    window: Window = Field("15m", description=f"a restart within this window counts {EVENT_WINDOW}")


class GPUMemoryNearFull(AlertSettings):
    ratio: Ratio = Field(0.97, description=f"framebuffer used / (used + free) above this fires {RATIO}")


class KVCacheUsageHigh(AlertSettings):
    ratio: Ratio = Field(0.9, description="KV cache usage above this fires (0.001 to 0.999, below the critical one)")


class KVCacheUsageCritical(AlertSettings):
    for_: Duration = Field("2m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    ratio: Ratio = Field(0.95, description="KV cache usage above this fires (0.001 to 0.999, above the high one)")


class RequestQueueBacklog(AlertSettings):
    waiting_to_running: Number = Field(
        3.0, gt=0, le=1000, description="waiting requests above this multiple of running (above 0, at most 1000)"
    )
    min_waiting: Number = Field(5.0, ge=1, le=100_000, description="and at least this many requests waiting (1 to 100000)")


class ZeroThroughput(AlertSettings):
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    window: Window = Field("5m", description=f"no generated token in this window, with requests in flight {WINDOW}")


class TargetDown(AlertSettings):
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    lookback: Window = Field("1h", description=f"only targets that served vLLM metrics within this window {EVENT_WINDOW}")
    job_regex: Regex = Field(".*vllm.*", description="also targets of jobs matching this that were up in the window")


class RequestPreemptions(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    rate: Number = Field(
        0.0, ge=0, le=1_000_000, description="preemptions per second above this (0: any preemption; at most 1000000)"
    )


class PrefixCacheHitRateLow(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    ratio: HitRatio = Field(0.3, description="hit rate (hits / queried tokens) below this fires (0.001 to 0.9)")
    window: Window = Field("30m", description=f"window of the hit-rate computation {WINDOW}")
    min_query_tokens_per_second: Number = Field(
        1.0, ge=0, le=1_000_000, description="ignore pods with less prefix-cache traffic (0 to 1000000)"
    )


class KVCacheFragmentationHigh(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    ratio: Ratio = Field(0.3, description=f"estimated share of used KV slots left empty above this fires {RATIO}")


class CUDAAllocatorFragmentationHigh(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    ratio: Ratio = Field(0.3, description=f"inactive split bytes / reserved bytes above this fires {RATIO}")


class ExporterTargetDown(AlertSettings):
    pass


class KVTransferFailures(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)
    window: Window = Field("5m", description=f"window of the failure rate {WINDOW}")
    rate: Number = Field(
        0.0,
        ge=0,
        le=1_000_000,
        description="failed or expired KV transfers per second above this (0: any, in every window of `for`; at most 1000000)",
    )


class AdmissionRejections(AlertSettings):
    ratio: Ratio = Field(0.01, description=f"refused requests / (refused + finished) above this fires {RATIO}")
    window: Window = Field("5m", description=f"window of the refused share {WINDOW}")


class KVOffloadAllocationFailures(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    window: Window = Field("5m", description=f"window of the failure rate {WINDOW}")
    rate: Number = Field(
        0.0, ge=0, le=1_000_000, description="allocation failures per second above this (0: any; at most 1000000)"
    )


class SpecDecodeAcceptanceLow(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    ratio: Ratio = Field(0.25, description=f"accepted / drafted tokens below this fires {RATIO}")
    window: Window = Field("30m", description=f"window of the acceptance rate {WINDOW}")
    min_draft_tokens_per_second: Number = Field(
        1.0, ge=0, le=1_000_000, description="ignore pods that draft fewer tokens per second (0 to 1000000)"
    )


class Alerts(_Model):
    """Per-alert settings. Keys are alert names."""

    VLLMHostMemoryNearLimit: HostMemoryNearLimit = HostMemoryNearLimit()
    VLLMContainerOOMKilled: ContainerOOMKilled = ContainerOOMKilled()
    VLLMContainerRestarted: ContainerRestarted = ContainerRestarted()
    VLLMGPUMemoryNearFull: GPUMemoryNearFull = GPUMemoryNearFull()
    VLLMKVCacheUsageHigh: KVCacheUsageHigh = KVCacheUsageHigh()
    VLLMKVCacheUsageCritical: KVCacheUsageCritical = KVCacheUsageCritical()
    VLLMRequestQueueBacklog: RequestQueueBacklog = RequestQueueBacklog()
    VLLMZeroThroughput: ZeroThroughput = ZeroThroughput()
    VLLMTargetDown: TargetDown = TargetDown()
    VLLMRequestPreemptions: RequestPreemptions = RequestPreemptions()
    VLLMPrefixCacheHitRateLow: PrefixCacheHitRateLow = PrefixCacheHitRateLow()
    VLLMKVCacheFragmentationHigh: KVCacheFragmentationHigh = KVCacheFragmentationHigh()
    VLLMCUDAAllocatorFragmentationHigh: CUDAAllocatorFragmentationHigh = CUDAAllocatorFragmentationHigh()
    ObspackExporterTargetDown: ExporterTargetDown = ExporterTargetDown()
    VLLMKVTransferFailures: KVTransferFailures = KVTransferFailures()
    VLLMAdmissionRejections: AdmissionRejections = AdmissionRejections()
    VLLMKVOffloadAllocationFailures: KVOffloadAllocationFailures = KVOffloadAllocationFailures()
    VLLMSpecDecodeAcceptanceLow: SpecDecodeAcceptanceLow = SpecDecodeAcceptanceLow()


# ---------------------------------------------------------------------------------------------------------
# SLOs: per-model objectives with multi-window, multi-burn-rate alerts (docs/slos.md explains the defaults)

Objective = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
_HISTOGRAMS = vllm_latency.SLO_HISTOGRAMS
TTFTThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["time_to_first_token"]))]
ITLThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["inter_token_latency"]))]
MinRequests = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
_OBJECTIVE = "(allowed: greater than 0 and less than 1, e.g. 0.99)"
_MIN_REQUESTS = "(allowed: greater than 0, at most 1e9)"
SPEEDUPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)  # divisors of 60: every window stays whole seconds


def _speedup(value: int) -> int:
    if value not in SPEEDUPS:
        raise ValueError(f"{value} is not allowed (allowed: {', '.join(map(str, SPEEDUPS))})")
    return value


class TimeToFirstTokenSLO(_Model):
    """Share of requests whose time to first token is at most `threshold` (vllm:time_to_first_token_seconds)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description=f"share of requests that must be good {_OBJECTIVE}")
    threshold: TTFTThreshold = Field(2.5, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class InterTokenLatencySLO(_Model):
    """Share of token gaps of at most `threshold` (vllm:inter_token_latency_seconds, or its older name)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description=f"share of token gaps that must be good {_OBJECTIVE}")
    threshold: ITLThreshold = Field(0.2, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class AvailabilitySLO(_Model):
    """Share of API requests not answered with a 5xx status (http_requests_total, vLLM 0.8.3 and later)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.999, description=f"share of requests that must not fail {_OBJECTIVE}")
    handler_regex: Regex = Field("/v1/.*", description="API routes (the handler label) that count")


class TimeToFirstTokenOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.time_to_first_token")
    objective: Objective | None = Field(None, description=f"unset: as slos.time_to_first_token {_OBJECTIVE}")
    threshold: TTFTThreshold | None = Field(None, description="unset: as slos.time_to_first_token")


class InterTokenLatencyOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.inter_token_latency")
    objective: Objective | None = Field(None, description=f"unset: as slos.inter_token_latency {_OBJECTIVE}")
    threshold: ITLThreshold | None = Field(None, description="unset: as slos.inter_token_latency")


class AvailabilityOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.availability")
    objective: Objective | None = Field(None, description=f"unset: as slos.availability {_OBJECTIVE}")


class ModelSLOs(_Model):
    """SLO settings for the models whose model_name matches `model_regex`; unset keys keep the defaults."""

    model_regex: Regex = Field(description="served model names this entry applies to (full match)")
    time_to_first_token: TimeToFirstTokenOverride = TimeToFirstTokenOverride()
    inter_token_latency: InterTokenLatencyOverride = InterTokenLatencyOverride()
    availability: AvailabilityOverride = AvailabilityOverride()
    min_requests: MinRequests | None = Field(None, description=f"unset: as slos.min_requests {_MIN_REQUESTS}")


class SLOs(_Model):
    """Per-model SLOs and the VLLMErrorBudgetBurn alert (docs/slos.md)."""

    enabled: bool = Field(True, description="render the SLO rules, the VLLMErrorBudgetBurn alert and the SLO page")
    period: Literal["30d", "28d"] = Field("30d", description="the error budget's period (30d or 28d)")
    time_to_first_token: TimeToFirstTokenSLO = TimeToFirstTokenSLO()
    inter_token_latency: InterTokenLatencySLO = InterTokenLatencySLO()
    availability: AvailabilitySLO = AvailabilitySLO()
    min_requests: MinRequests | None = Field(
        None,
        description=f"requests a long window needs before it may alert; unset: one over one minus the objective {_MIN_REQUESTS}",
    )
    models: Annotated[list[ModelSLOs], AfterValidator(_entries)] = Field(
        default_factory=list,
        description="per-model settings, first match wins, e.g. [{model_regex: 'Qwen/.*', "
        "time_to_first_token: {threshold: 5.0}}]",
    )
    labels: LabelMap = Field(default_factory=dict, description="extra static labels on VLLMErrorBudgetBurn")
    speedup: Annotated[int, AfterValidator(_speedup)] = Field(
        1, description="divide the period, windows and `for` by this; 1 in production (60 for demos and live tests)"
    )


# ---------------------------------------------------------------------------------------------------------
# Outputs


class PrometheusRuleOutput(_Model):
    """The PrometheusRule manifest (kubernetes/prometheusrule.yaml)."""

    name: K8sName = Field("obspack", description="metadata.name of the PrometheusRule")
    namespace: K8sName = Field("monitoring", description="metadata.namespace of the PrometheusRule")
    labels: K8sLabels = Field(
        default_factory=lambda: {"release": "kube-prometheus-stack"},
        description="labels the Prometheus Operator's ruleSelector matches (Kubernetes labels, at most 32)",
    )


class GrafanaOutput(_Model):
    """Dashboards: the sidecar ConfigMaps, the datasource variable and links."""

    namespace: K8sName = Field("monitoring", description="namespace of the dashboard ConfigMaps")
    folder: Text = Field("vLLM", min_length=1, description="Grafana folder the dashboards go to (1 to 255 characters)")
    folder_annotation: K8sKey = Field(
        "k8s-sidecar-target-directory",
        description="ConfigMap annotation the Grafana sidecar reads the folder from (its folderAnnotation)",
    )
    configmap_labels: K8sLabels = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="labels the Grafana sidecar looks for (sidecar.dashboards.label; Kubernetes labels, at most 32)",
    )
    datasource: Text = Field(
        "prometheus", description="default Prometheus datasource of the datasource variable (at most 255 characters)"
    )
    url: URL = Field("", description="Grafana base URL for links from alerts, e.g. https://grafana.example.com")
    tags: Tags = Field(
        default_factory=lambda: ["obspack", "vllm"], description="tags on every dashboard (at most 32, 50 characters each)"
    )
    refresh: Refresh = Field("30s", description="dashboard auto-refresh (empty: off; 5s to 1d)")
    multi_cluster: bool = Field(False, description="show the cluster picker (hidden for a single-cluster fleet)")


class ObspackConfig(_Model):
    """Everything `obspack render` needs. Every field has a default, so an empty file is valid."""

    cluster_label: Annotated[LabelName, AfterValidator(_cluster_label)] = Field(
        "cluster", description="label that tells clusters apart; kept by every by/on (not starting with __)"
    )
    scrape_interval: ScrapeInterval = Field(
        "30s",
        description="slowest scrape interval of the sources; every window must span two scrapes (1s to 2m30s)",
    )
    selectors: Selectors = Selectors()
    vllm_containers: VLLMContainers = VLLMContainers()
    alerts: Alerts = Alerts()
    slos: SLOs = SLOs()
    common_labels: LabelMap = Field(default_factory=dict, description="static labels added to every alert (as alerts.*.labels)")
    rule_interval: RuleInterval | None = Field(
        None, description="evaluation interval of the rule groups (unset: Prometheus' global one; 1s to 5m)"
    )
    runbook_base_url: URL = Field(
        "",
        description="prefix of runbook_url; unset gives runbooks/<alert>.md relative to the pack",
    )
    prometheus_rule: PrometheusRuleOutput = PrometheusRuleOutput()
    grafana: GrafanaOutput = GrafanaOutput()


# ---------------------------------------------------------------------------------------------------------
# Loading: FILE:LINE: key.path: what is wrong (what is allowed)

MAX_PROBLEMS = 50  # a file of 100000 bad keys gets the first ones and a count, not 100000 lines


@dataclass(frozen=True)
class Conflict:
    """Settings that are valid alone but not together; `other` names the setting it conflicts with."""

    loc: tuple[str, ...]
    message: str  # "{other}" in it is replaced by where the other setting is: FILE:LINE, or "the default"
    other: tuple[str, ...] | None = None


def windows(cfg: ObspackConfig) -> list[tuple[tuple[str, ...], str]]:
    """Every configured range window of rate/increase/*_over_time, with its key path."""
    out = []
    for alert in Alerts.model_fields:
        settings = getattr(cfg.alerts, alert)
        for name, info in type(settings).model_fields.items():
            if has_type(info, Window):
                out.append((("alerts", alert, name), getattr(settings, name)))
    return out


def has_type(info: FieldInfo, alias: Any) -> bool:
    """Whether a field is declared with one of the Annotated types above (e.g. Window)."""
    base, *metadata = typing.get_args(alias)
    return info.annotation is base and list(info.metadata) == metadata


def _event_windows(cfg: ObspackConfig) -> list[tuple[tuple[str, ...], str]]:
    """Windows of alerts that hold only while a past event (a restart, the last sample of a target that
    went down) is inside the window: the alert must get through `for` before the event leaves it."""
    return [
        (("alerts", "VLLMContainerOOMKilled", "window"), cfg.alerts.VLLMContainerOOMKilled.window),
        (("alerts", "VLLMContainerRestarted", "window"), cfg.alerts.VLLMContainerRestarted.window),
        (("alerts", "VLLMTargetDown", "lookback"), cfg.alerts.VLLMTargetDown.lookback),
    ]


def conflicts(cfg: ObspackConfig) -> list[Conflict]:
    """Relations between settings: windows against the scrape interval, thresholds against each other."""
    found = []
    scrape = durations.parse_ms(cfg.scrape_interval)
    for loc, window in windows(cfg):
        if durations.parse_ms(window) < 2 * scrape:
            found.append(Conflict(
                loc,
                f"{window!r} is shorter than two scrapes (scrape_interval {cfg.scrape_interval}, {{other}}), so it can hold a "
                f"single sample and the rate is empty (allowed: at least {durations.format_ms(2 * scrape)})",
                ("scrape_interval",),
            ))
    # Two evaluations of the rule groups: every rule_interval when it is set, else Prometheus' default minute.
    evaluation = durations.parse_ms(cfg.rule_interval) if cfg.rule_interval else _MINUTE
    evaluations = f"rule_interval {cfg.rule_interval}" if cfg.rule_interval else "a minute"
    for loc, window in _event_windows(cfg):
        need = durations.parse_ms(getattr(cfg.alerts, loc[1]).for_) + 2 * evaluation
        if durations.parse_ms(window) < need:
            found.append(Conflict(
                loc,
                f"{window!r} is shorter than `for` ({getattr(cfg.alerts, loc[1]).for_}, {{other}}) plus two "
                f"evaluations of {evaluations}: the event leaves the window before the alert can fire "
                f"(allowed: at least {durations.format_ms(need)})",
                (*loc[:2], "for"),
            ))
    static = [(("common_labels",), cfg.common_labels)]
    static += [(("alerts", alert, "labels"), getattr(cfg.alerts, alert).labels) for alert in Alerts.model_fields]
    static.append((("slos", "labels"), cfg.slos.labels))  # VLLMErrorBudgetBurn's
    for loc, labels in static:
        if cfg.cluster_label in labels:
            found.append(Conflict(
                (*loc, cfg.cluster_label),
                f"sets the cluster label ({cfg.cluster_label}, {{other}}), which each alert takes from its rule "
                "(allowed: other label names)",
                ("cluster_label",),
            ))
    high, critical = cfg.alerts.VLLMKVCacheUsageHigh, cfg.alerts.VLLMKVCacheUsageCritical
    if high.enabled and critical.enabled and high.ratio >= critical.ratio:
        found.append(Conflict(
            ("alerts", "VLLMKVCacheUsageHigh", "ratio"),
            f"{high.ratio:g} is not below alerts.VLLMKVCacheUsageCritical.ratio ({critical.ratio:g}, {{other}}) "
            "(allowed: the warning threshold below the critical one)",
            ("alerts", "VLLMKVCacheUsageCritical", "ratio"),
        ))
    if not any(getattr(cfg.alerts, alert).enabled for alert in Alerts.model_fields):
        found.append(Conflict(("alerts",), "every alert is disabled (allowed: at least one enabled)"))
    return found


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
    allowed = re.search(r"\(([^()]*)\)$", info.description or "") if info else None
    return f"{msg} (allowed: {allowed.group(1).removeprefix('allowed: ')})" if allowed else msg


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
        return ObspackConfig()
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
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more problems"]


# ---------------------------------------------------------------------------------------------------------
# The commented starter file (`obspack init`), made from the model so it never drifts from the defaults


def _scalar(value: Any) -> str:
    if isinstance(value, Enum):
        value = value.value
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _commented(model: BaseModel, indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        value = getattr(model, name)
        doc = info.description or (type(value).__doc__ or "").strip().splitlines()[0:1]
        doc = doc if isinstance(doc, str) else " ".join(doc)
        if isinstance(value, BaseModel):
            if indent == 0:
                lines.append("")
            if doc:
                lines.append(f"{pad}# {doc}")
            lines.append(f"{pad}{key}:")
            lines.extend(_commented(value, indent + 1))
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}" + (f"  # {doc}" if doc else ""))
    return lines


def annotated_defaults() -> str:
    """Every setting with its default and a one-line explanation, as YAML that loads to the defaults."""
    head = [
        "# obspack config: every setting with its default. Delete what you do not change.",
        "# Render with: obspack render --config obspack.yaml --out generated",
    ]
    return "\n".join(head + _commented(ObspackConfig(), 0)) + "\n"
