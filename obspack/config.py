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
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import promql_parser
import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from obspack.catalogue import vllm_latency
from obspack.errors import ConfigError

# ---------------------------------------------------------------------------------------------------------
# Value types that end up inside PromQL or Kubernetes objects

_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PROBE = "obspack_probe"


def promql_string(value: str) -> str:
    """Quote a value as a PromQL string literal (JSON escaping is a subset of PromQL's)."""
    return json.dumps(value)


def _duration(value: str) -> str:
    if not _DURATION.match(value):
        raise ValueError(f"{value!r} is not a Prometheus duration (allowed: e.g. 30s, 5m, 1h30m)")
    return value


def _label_name(value: str) -> str:
    if not _LABEL_NAME.match(value):
        raise ValueError(f"{value!r} is not a valid label name (allowed: [a-zA-Z_][a-zA-Z0-9_]*)")
    return value


def _regex(value: str) -> str:
    try:
        re.compile(value)
        promql_parser.parse(f"{_PROBE}{{l=~{promql_string(value)}}}")
    except Exception as e:  # noqa: BLE001 - both parsers raise plain errors
        raise ValueError(f"{value!r} is not a valid regular expression ({e})") from None
    return value


def _matchers(value: str) -> str:
    """Label matchers without braces, e.g. `job="kubelet", metrics_path="/metrics/cadvisor"`."""
    text = value.strip().rstrip(",").strip()
    if not text:
        return ""
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip().rstrip(",")
    try:
        parsed = promql_parser.parse(f"{_PROBE}{{{text}}}")
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{value!r} is not a list of label matchers ({e})") from None
    ok = isinstance(parsed, promql_parser.VectorSelector) and parsed.name == _PROBE
    if not ok or parsed.matchers.or_matchers:
        raise ValueError(f"{value!r} must be label matchers only, e.g. job=\"kubelet\", ns=~\"a|b\"")
    for m in parsed.matchers.matchers:
        if m.name == "__name__":
            raise ValueError("selectors may not match __name__ (the metric name comes from obspack)")
    return text


def _k8s_name(value: str) -> str:
    if not _K8S_NAME.match(value) or len(value) > 63:
        raise ValueError(f"{value!r} is not a Kubernetes name (allowed: lower-case a-z, 0-9 and '-')")
    return value


def _label_map(value: dict[str, str]) -> dict[str, str]:
    for key in value:
        _label_name(key)
    reserved = {"alertname", "severity", "__name__"} & set(value)
    if reserved:
        raise ValueError(f"labels may not set {sorted(reserved)} (set severity with the 'severity' key)")
    return value


Duration = Annotated[str, AfterValidator(_duration)]
LabelName = Annotated[str, AfterValidator(_label_name)]
Regex = Annotated[str, AfterValidator(_regex)]
Matchers = Annotated[str, AfterValidator(_matchers)]
K8sName = Annotated[str, AfterValidator(_k8s_name)]
LabelMap = Annotated[dict[str, str], AfterValidator(_label_map)]
Ratio = Annotated[float, Field(gt=0, le=1)]


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_enum_values=False)


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
    for_: Duration = Field("5m", alias="for", description="how long the condition must hold before firing")
    severity: Severity = Field(Severity.WARNING, description="severity label (critical, warning or info)")
    labels: LabelMap = Field(default_factory=dict, description="extra static labels, e.g. team: ml-platform")


class HostMemoryNearLimit(AlertSettings):
    ratio: Ratio = Field(0.9, description="working set / memory limit above this fires")


class ContainerOOMKilled(AlertSettings):
    for_: Duration = Field("0m", alias="for", description="how long the condition must hold before firing")
    severity: Severity = Field(Severity.CRITICAL, description="severity label (critical, warning or info)")
    window: Duration = Field("15m", description="a restart within this window counts")


class ContainerRestarted(AlertSettings):
    for_: Duration = Field("0m", alias="for", description="how long the condition must hold before firing")
    window: Duration = Field("15m", description="a restart within this window counts")


class GPUMemoryNearFull(AlertSettings):
    ratio: Ratio = Field(0.97, description="framebuffer used / (used + free) above this fires")


class KVCacheUsageHigh(AlertSettings):
    ratio: Ratio = Field(0.9, description="KV cache usage (0-1) above this fires")


class KVCacheUsageCritical(AlertSettings):
    for_: Duration = Field("2m", alias="for", description="how long the condition must hold before firing")
    severity: Severity = Field(Severity.CRITICAL, description="severity label (critical, warning or info)")
    ratio: Ratio = Field(0.95, description="KV cache usage (0-1) above this fires")


class RequestQueueBacklog(AlertSettings):
    waiting_to_running: float = Field(3.0, gt=0, description="waiting requests above this multiple of running")
    min_waiting: float = Field(5.0, ge=1, description="and at least this many requests waiting")


class ZeroThroughput(AlertSettings):
    severity: Severity = Field(Severity.CRITICAL, description="severity label (critical, warning or info)")
    window: Duration = Field("5m", description="no generated token in this window, with requests in flight")


class TargetDown(AlertSettings):
    severity: Severity = Field(Severity.CRITICAL, description="severity label (critical, warning or info)")
    lookback: Duration = Field("1h", description="only targets that served vLLM metrics within this window")
    job_regex: Regex = Field(".*vllm.*", description="also targets of jobs matching this that were up in the window")


class RequestPreemptions(AlertSettings):
    for_: Duration = Field("15m", alias="for", description="how long the condition must hold before firing")
    rate: float = Field(0.0, ge=0, description="preemptions per second above this (0: any preemption)")


class PrefixCacheHitRateLow(AlertSettings):
    for_: Duration = Field("30m", alias="for", description="how long the condition must hold before firing")
    severity: Severity = Field(Severity.INFO, description="severity label (critical, warning or info)")
    ratio: Ratio = Field(0.3, description="hit rate (hits / queried tokens) below this fires")
    window: Duration = Field("30m", description="window of the hit-rate computation")
    min_query_tokens_per_second: float = Field(1.0, ge=0, description="ignore pods with less prefix-cache traffic")


class KVCacheFragmentationHigh(AlertSettings):
    for_: Duration = Field("15m", alias="for", description="how long the condition must hold before firing")
    ratio: Ratio = Field(0.3, description="estimated share of used KV slots left empty above this fires")


class CUDAAllocatorFragmentationHigh(AlertSettings):
    for_: Duration = Field("30m", alias="for", description="how long the condition must hold before firing")
    ratio: Ratio = Field(0.3, description="inactive split bytes / reserved bytes above this fires")


class ExporterTargetDown(AlertSettings):
    pass


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


# ---------------------------------------------------------------------------------------------------------
# SLOs: per-model objectives with multi-window, multi-burn-rate alerts (docs/slos.md explains the defaults)

Objective = Annotated[float, Field(gt=0, lt=1)]
_HISTOGRAMS = vllm_latency.SLO_HISTOGRAMS
TTFTThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["time_to_first_token"]))]
ITLThreshold = Annotated[float, AfterValidator(lambda v: vllm_latency.check_bound(v, _HISTOGRAMS["inter_token_latency"]))]
MinRequests = Annotated[float, Field(gt=0)]
SPEEDUPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)  # divisors of 60: every window stays whole seconds


def _speedup(value: int) -> int:
    if value not in SPEEDUPS:
        raise ValueError(f"{value} is not allowed (allowed: {', '.join(map(str, SPEEDUPS))})")
    return value


class TimeToFirstTokenSLO(_Model):
    """Share of requests whose time to first token is at most `threshold` (vllm:time_to_first_token_seconds)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description="share of requests that must be good, below 1")
    threshold: TTFTThreshold = Field(2.5, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class InterTokenLatencySLO(_Model):
    """Share of token gaps of at most `threshold` (vllm:inter_token_latency_seconds, or its older name)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.99, description="share of token gaps that must be good, below 1")
    threshold: ITLThreshold = Field(0.2, description="seconds; a bucket bound vLLM exports (docs/slos.md)")


class AvailabilitySLO(_Model):
    """Share of API requests not answered with a 5xx status (http_requests_total, vLLM 0.8.3 and later)."""

    enabled: bool = Field(True, description="render this SLO")
    objective: Objective = Field(0.999, description="share of requests that must not fail, below 1")
    handler_regex: Regex = Field("/v1/.*", description="API routes (the handler label) that count")


class TimeToFirstTokenOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.time_to_first_token")
    objective: Objective | None = Field(None, description="unset: as slos.time_to_first_token")
    threshold: TTFTThreshold | None = Field(None, description="unset: as slos.time_to_first_token")


class InterTokenLatencyOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.inter_token_latency")
    objective: Objective | None = Field(None, description="unset: as slos.inter_token_latency")
    threshold: ITLThreshold | None = Field(None, description="unset: as slos.inter_token_latency")


class AvailabilityOverride(_Model):
    enabled: bool | None = Field(None, description="unset: as slos.availability")
    objective: Objective | None = Field(None, description="unset: as slos.availability")


class ModelSLOs(_Model):
    """SLO settings for the models whose model_name matches `model_regex`; unset keys keep the defaults."""

    model_regex: Regex = Field(description="served model names this entry applies to (full match)")
    time_to_first_token: TimeToFirstTokenOverride = TimeToFirstTokenOverride()
    inter_token_latency: InterTokenLatencyOverride = InterTokenLatencyOverride()
    availability: AvailabilityOverride = AvailabilityOverride()
    min_requests: MinRequests | None = Field(None, description="unset: as slos.min_requests")


class SLOs(_Model):
    """Per-model SLOs and the VLLMErrorBudgetBurn alert (docs/slos.md)."""

    enabled: bool = Field(True, description="render the SLO rules, the VLLMErrorBudgetBurn alert and the SLO page")
    period: Literal["30d", "28d"] = Field("30d", description="the error budget's period (30d or 28d)")
    time_to_first_token: TimeToFirstTokenSLO = TimeToFirstTokenSLO()
    inter_token_latency: InterTokenLatencySLO = InterTokenLatencySLO()
    availability: AvailabilitySLO = AvailabilitySLO()
    min_requests: MinRequests | None = Field(
        None, description="requests a long window needs before it may alert; unset: 1/(1-objective)"
    )
    models: list[ModelSLOs] = Field(
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
    labels: dict[str, str] = Field(
        default_factory=lambda: {"release": "kube-prometheus-stack"},
        description="labels the Prometheus Operator's ruleSelector matches",
    )


class GrafanaOutput(_Model):
    """Dashboards: the sidecar ConfigMaps, the datasource variable and links."""

    namespace: K8sName = Field("monitoring", description="namespace of the dashboard ConfigMaps")
    folder: str = Field("vLLM", min_length=1, description="Grafana folder the dashboards go to")
    folder_annotation: str = Field(
        "k8s-sidecar-target-directory",
        description="ConfigMap annotation the Grafana sidecar reads the folder from (its folderAnnotation)",
    )
    configmap_labels: dict[str, str] = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="labels the Grafana sidecar looks for (sidecar.dashboards.label)",
    )
    datasource: str = Field("prometheus", description="default Prometheus datasource of the datasource variable")
    url: str = Field("", description="Grafana base URL for links from alerts, e.g. https://grafana.example.com")
    tags: list[str] = Field(default_factory=lambda: ["obspack", "vllm"], description="tags on every dashboard")
    refresh: str = Field("30s", description="dashboard auto-refresh")
    multi_cluster: bool = Field(False, description="show the cluster picker (hidden for a single-cluster fleet)")


class ObspackConfig(_Model):
    """Everything `obspack render` needs. Every field has a default, so an empty file is valid."""

    cluster_label: LabelName = Field("cluster", description="label that tells clusters apart; kept by every by/on")
    selectors: Selectors = Selectors()
    vllm_containers: VLLMContainers = VLLMContainers()
    alerts: Alerts = Alerts()
    slos: SLOs = SLOs()
    common_labels: LabelMap = Field(default_factory=dict, description="static labels added to every alert")
    rule_interval: Duration | None = Field(None, description="evaluation interval of the rule groups (unset: global)")
    runbook_base_url: str = Field(
        "",
        description="prefix of runbook_url; unset gives runbooks/<alert>.md relative to the pack",
    )
    prometheus_rule: PrometheusRuleOutput = PrometheusRuleOutput()
    grafana: GrafanaOutput = GrafanaOutput()


# ---------------------------------------------------------------------------------------------------------
# Loading


def _positions(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int], dup: list[str]) -> None:
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = key.value
            if name in seen:
                dup.append(f"{key.start_mark.line + 1}: {'.'.join(map(str, path + (name,)))}: duplicate key")
            seen.add(name)
            out[path + (name,)] = key.start_mark.line + 1
            _positions(value, path + (name,), out, dup)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _positions(item, path + (i,), out, dup)


def _line_of(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return 1


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    model: Any = ObspackConfig
    for part in loc[:-1]:
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return []
        field = next((f for n, f in fields.items() if part in (n, f.alias)), None)
        if field is None:
            return []
        model = field.annotation
    fields = getattr(model, "model_fields", {})
    return sorted((f.alias or n) for n, f in fields.items())


def _describe(err: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        did_you_mean = f"did you mean {hint[0]!r}? " if hint else ""
        return f"unknown key ({did_you_mean}allowed: {', '.join(allowed)})"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def load_config(path: Path | None) -> ObspackConfig:
    """Read and validate a config file; `None` gives the built-in defaults."""
    if path is None:
        return ObspackConfig()
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"{name}: cannot read the config file ({e.strerror})"]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError([f"{name}:{line}: not valid YAML ({problem})"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"{name}:1: the config must be a mapping of settings (see `obspack init`)"])
    lines: dict[tuple[Any, ...], int] = {}
    duplicates: list[str] = []
    if node is not None:
        _positions(node, (), lines, duplicates)
    problems = [f"{name}:{d}" for d in duplicates]
    try:
        config = ObspackConfig.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            loc = tuple(err["loc"])
            dotted = ".".join(str(p) for p in loc) or "(top)"
            problems.append(f"{name}:{_line_of(loc, lines)}: {dotted}: {_describe(dict(err))}")
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    return config


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
