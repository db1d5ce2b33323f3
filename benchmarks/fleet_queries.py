"""What the fleet benchmark asks Prometheus: dashboard targets as Grafana sends them, and naive queries.

- `load_dashboards(grafana_dir)` reads the rendered dashboards (`obspack render`, `grafana/*.json`).
- `resolve_variables` fills each dashboard's variables the way Grafana does on first load: the
  `label_values(...)` query runs against the server, then All where the variable has it (its
  `allValue`), else the first value in the variable's sort order, regex-escaped.
- `fill` interpolates a target: variables, `$__rate_interval`, `$__interval`, `$__range`.
- `NAIVE` pairs a query a user would write without obspack (raw histograms across the fleet,
  unaggregated cAdvisor/kube-state-metrics/DCGM joins) with the obspack panel that shows the same thing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from obspack.pack.walk import panels_by_row

_LABEL_VALUES = re.compile(r"label_values\((.*),\s*(\w+)\)\s*", re.S)
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


@dataclass(frozen=True)
class Target:
    dashboard: str
    panel: str
    ref: str
    expr: str  # as in the dashboard JSON, Grafana variables unfilled
    instant: bool
    row: str = ""  # the variable its (collapsed) row repeats over: a feature row

    @property
    def key(self) -> str:
        return f"{self.dashboard} / {self.panel} [{self.ref}]"


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    selector: str  # the label_values() selector, variables unfilled
    include_all: bool
    all_value: str | None
    current: str | None
    sort: int


@dataclass(frozen=True)
class Dashboard:
    name: str
    variables: tuple[Variable, ...]
    targets: tuple[Target, ...]
    rows: tuple[tuple[str, str], ...] = ()  # (variable, its query_result expression) of each feature row


def load_dashboards(grafana_dir: Path) -> list[Dashboard]:
    """The rendered dashboards, their query variables and their targets, in file order."""
    out = []
    for path in sorted(grafana_dir.glob("*.json")):
        model = json.loads(path.read_text())
        variables = []
        for v in model.get("templating", {}).get("list", []):
            query = v.get("query")
            query = query.get("query") if isinstance(query, dict) else query
            match = _LABEL_VALUES.fullmatch(query or "") if v.get("type") == "query" else None
            if match is None:
                continue
            current = (v.get("current") or {}).get("value")
            variables.append(
                Variable(
                    name=v["name"],
                    label=match.group(2),
                    selector=match.group(1).strip(),
                    include_all=bool(v.get("includeAll")),
                    all_value=v.get("allValue"),
                    current=current[0] if isinstance(current, list) and current else current,
                    sort=int(v.get("sort") or 0),
                )
            )
        targets = [
            Target(path.stem, panel.get("title", ""), t.get("refId", "A"), t["expr"], bool(t.get("instant")), row)
            for panel, row in panels_by_row(model.get("panels", []))
            for t in panel.get("targets") or []
            if t.get("expr")
        ]
        rows = tuple(
            (v["name"], v["query"].removeprefix("query_result(").removesuffix(")"))
            for v in model.get("templating", {}).get("list", [])
            if isinstance(v.get("query"), str) and v["query"].startswith("query_result(")
        )
        out.append(Dashboard(path.stem, tuple(variables), tuple(targets), rows))
    return out


def escape(value: str) -> str:
    """Grafana's regex escaping of one variable value for Prometheus (`=~"$var"`)."""
    return re.sub(r"([$^*{}\[\]'+?.()|\\])", r"\\\\\1", value)


@dataclass(frozen=True)
class Window:
    """The time range and resolution Grafana asks for."""

    start: int
    end: int
    step: int  # $__interval, the range query step
    scrape_interval: int

    @property
    def rate_interval(self) -> str:
        # Grafana: max($__interval + scrape interval, 4 * scrape interval)
        return f"{max(self.step + self.scrape_interval, 4 * self.scrape_interval)}s"

    @property
    def range(self) -> str:
        return f"{self.end - self.start}s"


def fill(expr: str, values: dict[str, str], window: Window) -> str:
    """Interpolate a dashboard query the way Grafana would for these variable values."""
    for name, value in (
        ("$__rate_interval", window.rate_interval),
        ("${__range}", window.range),
        ("$__range", window.range),
        ("$__interval", f"{window.step}s"),
    ):
        expr = expr.replace(name, value)
    return _VARIABLE.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), expr)


LabelValues = Callable[[str, str], list[str]]  # (label, filled selector) -> values


def resolve_variables(dashboard: Dashboard, label_values: LabelValues) -> dict[str, str]:
    """Each variable's value on first load: All (its allValue) where it has All, else the first value."""
    values: dict[str, str] = {}
    for v in dashboard.variables:
        found = label_values(v.label, fill(v.selector, values, _NO_WINDOW))
        found = sorted(found, reverse=v.sort in (2, 4, 6))
        if v.include_all and (v.current in (None, "$__all") or v.current not in found):
            values[v.name] = v.all_value or "|".join(escape(x) for x in found)
        elif v.current in found:
            values[v.name] = escape(v.current)  # type: ignore[arg-type]
        else:
            values[v.name] = escape(found[0]) if found else ""
    return values


_NO_WINDOW = Window(0, 0, 60, 30)  # variable selectors use no time macros


# ---------------------------------------------------------------------------------------------------
# Naive queries: what a user writes without obspack, next to the obspack panel that answers the same
# question. Grafana macros are filled as for the dashboards ($__rate_interval).


@dataclass(frozen=True)
class Naive:
    question: str
    expr: str
    instant: bool
    obspack: tuple[str, str, str]  # (dashboard, panel title, refId) answering the same question
    # Variables ($cluster, ...) are filled as on that dashboard's first load.


_RATE = "$__rate_interval"

NAIVE: tuple[Naive, ...] = (
    Naive(
        "TTFT p99 per model (fleet)",
        "histogram_quantile(0.99, sum by (cluster, namespace, model_name, le) ("
        f"rate(vllm:time_to_first_token_seconds_bucket[{_RATE}])))",
        False,
        ("vllm-fleet", "Time to first token (p50 / p90 / p99)", "C"),
    ),
    Naive(
        "Inter-token latency p99 per model (fleet)",
        "histogram_quantile(0.99, sum by (cluster, namespace, model_name, le) ("
        f"rate(vllm:inter_token_latency_seconds_bucket[{_RATE}]) "
        f"or rate(vllm:time_per_output_token_seconds_bucket[{_RATE}])))",
        False,
        ("vllm-fleet", "Inter-token latency (p50 / p90 / p99)", "C"),
    ),
    Naive(
        "End-to-end latency p99 per model (fleet)",
        "histogram_quantile(0.99, sum by (cluster, namespace, model_name, le) ("
        f"rate(vllm:e2e_request_latency_seconds_bucket[{_RATE}])))",
        False,
        ("vllm-fleet", "End-to-end latency (p50 / p90 / p99)", "C"),
    ),
    Naive(
        "Requests running per model",
        "sum by (cluster, namespace, model_name) (vllm:num_requests_running)",
        False,
        ("vllm-fleet", "Requests running and waiting", "A"),
    ),
    Naive(
        "Generation tokens/s per model",
        f"sum by (cluster, namespace, model_name) (rate(vllm:generation_tokens_total[{_RATE}]))",
        False,
        ("vllm-fleet", "Tokens per second", "B"),
    ),
    Naive(
        "Finished requests/s by reason",
        f"sum by (cluster, model_name, finished_reason) (rate(vllm:request_success_total[{_RATE}]))",
        False,
        ("vllm-fleet", "Finished requests by reason", "A"),
    ),
    Naive(
        "KV cache usage per pod",
        "max by (cluster, namespace, pod, model_name) "
        "(vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)",
        False,
        ("vllm-kv-prefix-cache", "KV cache usage per pod", "A"),
    ),
    Naive(
        "Prefix cache hit rate per pod",
        "sum by (cluster, namespace, pod, model_name) (rate(vllm:prefix_cache_hits_total[5m]))"
        " / sum by (cluster, namespace, pod, model_name) (rate(vllm:prefix_cache_queries_total[5m]))",
        False,
        ("vllm-kv-prefix-cache", "Prefix cache hit rate per pod", "A"),
    ),
    Naive(
        "vLLM container working set / limit (table, now)",
        # Unaggregated cAdvisor / kube-state-metrics join; the image filter picks vLLM containers.
        "max by (cluster, namespace, pod, container) ("
        'container_memory_working_set_bytes{container!="", container!="POD"}'
        " / on (cluster, namespace, pod, container) group_left ()"
        ' max by (cluster, namespace, pod, container) (kube_pod_container_resource_limits{resource="memory"})'
        " * on (cluster, namespace, pod, container) group_left ()"
        ' max by (cluster, namespace, pod, container) (kube_pod_container_info{image=~".*vllm.*"}))',
        True,
        ("vllm-fleet", "Pods: load, KV cache and memory planes", "F"),
    ),
    Naive(
        "vLLM container working set / limit over time (one pod, as the triage page)",
        "max by (cluster, namespace, pod, container) ("
        'container_memory_working_set_bytes{cluster=~"$cluster", namespace=~"$namespace", pod=~"$pod",'
        ' container!="", container!="POD"}'
        " / on (cluster, namespace, pod, container) group_left ()"
        ' max by (cluster, namespace, pod, container) (kube_pod_container_resource_limits{cluster=~"$cluster",'
        ' namespace=~"$namespace", pod=~"$pod", resource="memory"})'
        " * on (cluster, namespace, pod, container) group_left ()"
        ' max by (cluster, namespace, pod, container) (kube_pod_container_info{cluster=~"$cluster",'
        ' namespace=~"$namespace", pod=~"$pod", image=~".*vllm.*"}))',
        False,
        ("vllm-pod-memory-planes", "Container memory: working set / limit", "A"),
    ),
    Naive(
        "Fullest GPU framebuffer per pod, 20 fullest pods, with the pod's model",
        # Raw DCGM with both label modes (pod labels on the series, or exported_* with the exporter's
        # own pod), joined to the model straight from the engine gauge; the panel draws the top 20.
        "topk(20, max by (cluster, namespace, pod) (label_replace(label_replace("
        "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE),"
        ' "pod", "$1", "exported_pod", "(.+)"), "namespace", "$1", "exported_namespace", "(.+)"))'
        " * on (cluster, namespace, pod) group_left (model_name)"
        ' group by (cluster, namespace, pod, model_name) (vllm:num_requests_running{model_name!=""}))',
        False,
        ("gpu-by-workload", "Fullest GPU framebuffer per pod", "A"),
    ),
)
