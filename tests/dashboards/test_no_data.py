"""No "No data" on a healthy fleet: every panel query, with its variables filled in, returns data from a real
Prometheus holding a synthetic fleet (obspack/demo/fleet.py) and the backfilled recording rules.

The fleet has two clusters with the same pod names, vLLM V1 (0.33 and 0.11) and V0 pods, router copies,
duplicate kube-state-metrics, DCGM in both label modes, and pods running each vLLM feature (NIXL and
Mooncake, KV offload, speculative decoding, LoRA, admission rejections, one engine asleep); the triage
page is evaluated for one pod of each kind. Panels empty by design on a healthy fleet are listed in
EMPTY_BY_DESIGN, each with its reason. The fleet page's feature rows repeat over hidden variables that
count the engines using each feature: every feature is in use here, so each row and all its panels must
show data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from obspack.demo.fleet import FleetSpec, FleetSummary, Pod, fleet_pods, write_openmetrics
from obspack.demo.prometheus import Prometheus
from obspack.rules.recording import all_recording_groups
from tests.dashboards.lint import panels
from tests.support.prometheus import backfill_openmetrics, backfill_rules, running_prometheus
from tests.support.tools import require_tool

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

CFG = ObspackConfig()
SPEC = FleetSpec(pods=6, duration_s=3600, step_s=30)
STEP = 60  # query resolution, as a Grafana panel ~60 points wide over 1h would ask
RATE_INTERVAL = "2m"  # Grafana's $__rate_interval for a 30s scrape interval and a 60s step

# (dashboard, panel title, refId) -> why it is empty on a healthy fleet.
EMPTY_BY_DESIGN = {
    ("vllm-fleet", "Alerts firing now", "A"): "no alert fires on a healthy fleet",
    (c.COST_DASHBOARD, "Most expensive idle workloads over the range (top 20)", "A"): (
        "every engine of the healthy fleet serves; tests/rules/test_cost_accounting.py bills an idle MIG instance"
    ),
    (c.TRIAGE_DASHBOARD, "Firing obspack alerts on this pod", "A"): "no alert fires on a healthy fleet",
    (c.GATEWAY_DASHBOARD, "Errors per model and error code", "A"): "the healthy fleet's pools answer every request",
    (c.GATEWAY_DASHBOARD, "Flow control: rejections by outcome", "A"): (
        "the healthy fleet's pools reject nothing; the gateway promtool incident has rejections"
    ),
    (c.TRIAGE_DASHBOARD, "Firing obspack alerts on this pod", "B"): "no alert fires on a healthy fleet",
    **{
        (c.TRIAGE_DASHBOARD, "Last termination: reason, exit code, time", ref): (
            "kube-state-metrics reports a last termination only after a container terminated"
        )
        for ref in "ABC"
    },
}
# The second cluster's EPP is a GAIE v1.5 one (obspack/demo/fleet.py), without the router's series.
GAIE_ONLY = (
    ((c.GATEWAY_DASHBOARD, "Request processing in the EPP p99", "A"), "GAIE's EPP has no request-processing histogram"),
)
# The annotations (restarts, OOM kills, firing alerts, rollouts) mark events a healthy fleet does not have;
# tests/dashboards/test_annotations.py checks each against series where they happen.

DASHBOARDS = dict(all_dashboards(CFG))


@dataclass(frozen=True)
class Scenario:
    dashboard: str
    name: str
    values: dict[str, str]  # variable -> regex value as Grafana interpolates it
    pod: Pod | None = None
    empty: tuple[tuple[tuple[str, str, str], str], ...] = ()  # more targets empty by design here, and why


def _escape(value: str) -> str:
    """Grafana's regex escaping of a single variable value for Prometheus (=~"$var")."""
    return re.sub(r"([$^*{}\[\]'+?.()|\\])", r"\\\\\1", value)


def _pick(pods: tuple[Pod, ...], **attrs: Any) -> Pod:
    return next(
        p
        for p in pods
        if all(getattr(p, k) == v if not callable(v) else v(getattr(p, k)) for k, v in attrs.items())
    )


def _single_pod(dashboard: str) -> bool:
    variable = next(v for v in DASHBOARDS[dashboard]["templating"]["list"] if v["name"] == "pod")
    return not variable["multi"]


def scenarios(pods: tuple[Pod, ...]) -> list[Scenario]:
    everything = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": ".*", "pool": ".*"}
    out = []
    for name in DASHBOARDS:
        if name == c.TRIAGE_DASHBOARD:
            continue
        for label, cluster in (("all", None), (f"cluster {SPEC.clusters[1]}", SPEC.clusters[1])):
            values = {**everything, "cluster": _escape(cluster) if cluster else ".*"}
            if _single_pod(name):  # first load: the first pod of the selection, as Grafana picks it
                values["pod"] = _escape(min(p.name for p in pods if cluster in (None, p.cluster)))
            gaie_only = name == c.GATEWAY_DASHBOARD and cluster == SPEC.clusters[1]
            out.append(Scenario(name, label, values, empty=GAIE_ONLY if gaie_only else ()))
    v0 = _pick(pods, generation="v0")
    out.append(
        Scenario(
            "vllm-kv-prefix-cache",
            "one vLLM V0 pod",
            {"cluster": _escape(v0.cluster), "namespace": _escape(v0.namespace), "model": ".*", "pod": _escape(v0.name)},
            v0,
            # (the token graph is per model, from its records: the pod filter does not narrow it, so the V1
            # pods of the selected models still draw there)
            empty=(
                (("vllm-kv-prefix-cache", "Prefix cache hit rate per pod", "A"), "the 5m record needs counters"),
                (("vllm-kv-prefix-cache", "Prefix cache hit rate", "A"), "the counters' ratio; B shows V0's gauge"),
            ),
        )
    )
    kinds = {
        "v1, DCGM pod= mode": {"generation": "v1", "dcgm_mode": "pod"},
        "v1, DCGM exported_pod= mode": {"generation": "v1", "dcgm_mode": "exported"},
        "v0, DCGM pod= mode": {"generation": "v0", "dcgm_mode": "pod"},
        "v0, DCGM exported_pod= mode": {"generation": "v0", "dcgm_mode": "exported"},
        "v1, two data-parallel engines": {"engines": lambda e: len(e) == 2},
        "v1, tensor parallel over two GPUs": {"tp": 2, "engines": lambda e: len(e) == 1},
    }
    for kind, attrs in kinds.items():
        pod = _pick(pods, **attrs)
        values = {
            "cluster": _escape(pod.cluster),
            "namespace": _escape(pod.namespace),
            "model": ".*",
            "pod": _escape(pod.name),
        }
        out.append(Scenario(c.TRIAGE_DASHBOARD, kind, values, pod))
    return out


def with_hidden(fleet: Fleet, dashboard: str, values: dict[str, str]) -> dict[str, str]:
    """Add the hidden chained variables: the selected pod's GPU exporters (All without an allValue is
    the regex alternation of every value found, as Grafana interpolates it), and the feature counts the
    fleet page's rows repeat over (their first value; empty when none)."""
    out = dict(values)
    for v in DASHBOARDS[dashboard]["templating"]["list"]:
        if v["type"] == "query" and v["hide"] == 2 and v["name"] not in out:
            if v["query"].startswith("query_result("):
                found = query_result_values(fleet, v, out)
                out[v["name"]] = _escape(found[0]) if found else ""
                continue
            selector, label = re.fullmatch(r"label_values\((.*), (\w+)\)", v["query"]).groups()
            found = fleet.prom.label_values(label, fill(selector, out), fleet.summary.start, fleet.summary.end)
            out[v["name"]] = "|".join(_escape(x) for x in sorted(found))
    return out


def query_result_values(fleet: Fleet, variable: dict[str, Any], values: dict[str, str]) -> list[str]:
    """A query_result() variable as Grafana lists it: the instant query at the end of the range, each
    series written `name{labels} value timestamp`, through the variable's regex (its first group)."""
    expr = fill(variable["query"].removeprefix("query_result(").removesuffix(")"), values)
    pattern = re.fullmatch(r"/(.*)/", variable["regex"])
    assert pattern, variable["regex"]
    found: list[str] = []
    for series in fleet.prom.query(expr, fleet.summary.end):
        labels = dict(series["metric"])
        text = labels.pop("__name__", "") + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
        match = re.search(pattern.group(1), f"{text} {series['value'][1]} {int(series['value'][0] * 1000)}")
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found


def repeated_rows(dashboard: str) -> dict[str, str]:
    """Panel title -> the variable its (collapsed) row repeats over."""
    return {
        panel["title"]: row["repeat"]
        for row in DASHBOARDS[dashboard]["panels"]
        if row["type"] == "row" and row.get("repeat")
        for panel in row.get("panels") or []
    }


def fill(expr: str, values: dict[str, str]) -> str:
    """Interpolate Grafana's variables the way Grafana would for these values."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$__range", f"{SPEC.duration_s}s")
    expr = expr.replace("$__interval", f"{STEP}s")
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), m.group(0)), expr)


@dataclass
class Fleet:
    prom: Prometheus
    summary: FleetSummary
    timings: list[tuple[float, str]]

    def evaluate(self, expr: str, instant: bool) -> list[dict[str, Any]]:
        started = time.perf_counter()
        if instant:
            result = self.prom.query(expr, self.summary.end)
        else:
            result = self.prom.query_range(expr, self.summary.start, self.summary.end, STEP)
        self.timings.append((time.perf_counter() - started, expr))
        return result


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    require_tool("promtool")
    require_tool("prometheus")
    root = tmp_path_factory.mktemp("fleet")
    summary = write_openmetrics(SPEC, root / "fleet.om")
    backfill_openmetrics(root / "fleet.om", root / "data")
    (root / "fleet.om").unlink()
    groups = [g.to_dict() for g in all_recording_groups(CFG)]
    backfill_rules(root / "data", groups, start=summary.start, end=summary.end)
    with running_prometheus(root / "data") as prom:
        fleet = Fleet(prom, summary, [])
        yield fleet
    slowest = sorted(fleet.timings, reverse=True)[:3]
    total = sum(t for t, _ in fleet.timings)
    print(
        f"\n{len(fleet.timings)} dashboard queries in {total:.2f}s; slowest: "
        + "; ".join(f"{t * 1000:.0f} ms {e[:60]!r}" for t, e in slowest)
    )


def _targets(dashboard: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for panel in panels(DASHBOARDS[dashboard]):
        for target in panel.get("targets") or []:
            yield panel, target


ALL_SCENARIOS = scenarios(tuple(fleet_pods(SPEC)))


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=lambda s: f"{s.dashboard}: {s.name}")
def test_every_panel_query_returns_data(fleet: Fleet, scenario: Scenario) -> None:
    empty = []
    values = with_hidden(fleet, scenario.dashboard, scenario.values)
    by_design = EMPTY_BY_DESIGN | dict(scenario.empty)
    unused = {v for v in repeated_rows(scenario.dashboard).values() if not values.get(v)}
    assert not unused, f"feature rows this fleet uses show no engine: {sorted(unused)}"
    for panel, target in _targets(scenario.dashboard):
        key = (scenario.dashboard, panel["title"], target["refId"])
        result = fleet.evaluate(fill(target["expr"], values), bool(target.get("instant")))
        has_data = any(series.get("values") or series.get("value") for series in result)
        if key in by_design:
            assert not has_data, f"{key} is listed as empty by design but returned data"
        elif not has_data:
            empty.append(f"{panel['title']} [{target['refId']}]: {target['expr']}")
    assert not empty, "No data:\n" + "\n".join(empty)


def test_feature_rows_count_the_engines_that_use_each_feature(fleet: Fleet) -> None:
    """The hidden variables of the fleet page's feature rows count what the fleet runs: each feature's
    engines (pods for LoRA and admission control), and the engines asleep within the range."""
    everything = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": ".*"}
    variables = {v["name"]: v for v in DASHBOARDS["vllm-fleet"]["templating"]["list"]}
    pods = fleet.summary.pods
    engines = {
        "disaggregation": [p for p in pods if p.uses("nixl-decode", "nixl-prefill", "mooncake-decode")],
        "kv_offload": [p for p in pods if p.uses("offload-cpu", "offload-tiering")],
        "simple_offload": [p for p in pods if p.uses("offload-simple")],
        "spec_decode": [p for p in pods if p.uses("spec_decode")],
        "sleep": [p for p in pods if p.uses("asleep")],
    }
    for key, using in engines.items():
        expected = str(sum(len(p.engines) for p in using))
        assert query_result_values(fleet, variables[key], everything) == [expected], key
    for key, feature in (("lora", "lora"), ("admission", "admission")):
        expected = str(sum(1 for p in pods if p.uses(feature)))
        assert query_result_values(fleet, variables[key], everything) == [expected], key
    one_model = {**everything, "model": _escape(next(p.model for p in pods if p.generation == "v0"))}
    assert query_result_values(fleet, variables["sleep"], one_model) == [], "no pod of this model sleeps"


def test_empty_by_design_list_names_real_targets() -> None:
    real = {(d, p["title"], t["refId"]) for d in DASHBOARDS for p, t in _targets(d)}
    assert set(EMPTY_BY_DESIGN) <= real


def _panel_target(dashboard: str, title: str, ref: str = "A") -> dict[str, Any]:
    return next(t for p, t in _targets(dashboard) if p["title"] == title and t["refId"] == ref)


def _series(
    fleet: Fleet, dashboard: str, title: str, values: dict[str, str], ref: str = "A"
) -> list[dict[str, Any]]:
    target = _panel_target(dashboard, title, ref)
    return fleet.evaluate(fill(target["expr"], with_hidden(fleet, dashboard, values)), bool(target.get("instant")))


TRIAGE = [s for s in ALL_SCENARIOS if s.dashboard == c.TRIAGE_DASHBOARD]


@pytest.mark.parametrize("scenario", TRIAGE, ids=lambda s: s.name)
def test_triage_page_shows_the_gpus_and_the_container_of_its_pod(fleet: Fleet, scenario: Scenario) -> None:
    pod = scenario.pod
    assert pod is not None
    gpus = _series(fleet, c.TRIAGE_DASHBOARD, "GPU framebuffer used / total", scenario.values)
    assert sorted(int(s["metric"]["gpu"]) for s in gpus) == list(pod.gpus)
    memory = _series(
        fleet, c.TRIAGE_DASHBOARD, "Container memory: working set, request, limit", scenario.values
    )
    assert [s["metric"]["container"] for s in memory] == ["vllm"], (
        "pod cgroup, pause and sidecar must not show"
    )


def test_fleet_pod_table_has_one_row_per_vllm_pod(fleet: Fleet) -> None:
    everything = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": ".*"}
    for ref in "ABCDEFG":
        rows = _series(fleet, "vllm-fleet", "Pods: load, KV cache and memory planes", everything, ref)
        keys = sorted(
            (r["metric"][CFG.cluster_label], r["metric"]["namespace"], r["metric"]["pod"]) for r in rows
        )
        # LeaderWorkerSet workers serve no engine series; they hold GPUs, under their leader's model
        pods = fleet.summary.all_pods if ref == "G" else fleet.summary.pods
        expected = sorted((p.cluster, p.namespace, p.name) for p in pods)
        assert keys == expected, f"column {ref}: router copies, HA duplicates or missing pods"


def test_gpu_page_attributes_every_held_gpu_to_its_pod_and_model(fleet: Fleet) -> None:
    everything = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": ".*"}
    rows = _series(fleet, "gpu-by-workload", "vLLM pods and their GPUs", everything)
    got = sorted(
        (r["metric"][CFG.cluster_label], r["metric"]["pod"], r["metric"]["model_name"], r["value"][1]) for r in rows
    )
    pods = fleet.summary.all_pods  # a LeaderWorkerSet worker's GPUs are its leader's model's
    expected = sorted((p.cluster, p.name, p.model, str(len(p.gpus))) for p in pods)
    assert got == expected, "one row per vLLM pod with its GPU count: idle GPUs and the exporter's pod left out"
    for pod in pods:
        one = {"cluster": _escape(pod.cluster), "namespace": ".*", "model": ".*", "pod": _escape(pod.name)}
        gpus = _series(fleet, "gpu-by-workload", "Temperature", one)
        assert sorted(int(s["metric"]["gpu"]) for s in gpus) == list(pod.gpus), pod.name


def test_variables_list_values_and_narrow_each_other(fleet: Fleet) -> None:
    variables = {v["name"]: v for v in DASHBOARDS["vllm-fleet"]["templating"]["list"]}
    start, end = fleet.summary.start, fleet.summary.end
    pods = fleet.summary.pods

    def values(name: str, chosen: dict[str, str]) -> set[str]:
        selector, label = re.fullmatch(r"label_values\((.*), (\w+)\)", variables[name]["query"]).groups()
        return set(fleet.prom.label_values(label, fill(selector, chosen), start, end))

    assert values("cluster", {}) == set(SPEC.clusters)
    cluster = SPEC.clusters[0]
    chosen = {"cluster": cluster}
    assert values("namespace", chosen) == {p.namespace for p in pods if p.cluster == cluster}
    chosen["namespace"] = ".*"
    assert values("model", chosen) == {p.model for p in pods if p.cluster == cluster}
    model = pods[0].model
    chosen["model"] = _escape(model)
    narrowed = values("pod", chosen)
    assert narrowed == {p.name for p in pods if p.cluster == cluster and p.model == model}
    assert len(narrowed) < len({p.name for p in pods if p.cluster == cluster})


def _by_model(rows: list[dict[str, Any]], *extra: str) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for r in rows:
        key = (r["metric"][CFG.cluster_label], r["metric"]["namespace"], r["metric"]["model_name"])
        key += tuple(r["metric"].get(label, "") for label in extra)
        out[key] = out.get(key, 0.0) + float(r["value"][1])
    return out


def test_feature_panels_count_each_engine_once(fleet: Fleet) -> None:
    """Engines that serve both KV offload counter generations count once; every waiting request is under
    exactly one reason (older engines' under their own); the engines asleep are the fleet's."""
    everything = {"cluster": ".*", "namespace": ".*", "model": ".*", "pod": ".*"}

    def instant(title: str, ref: str = "A") -> list[dict[str, Any]]:
        target = _panel_target("vllm-fleet", title, ref)
        return fleet.prom.query(fill(target["expr"], with_hidden(fleet, "vllm-fleet", everything)), fleet.summary.end)

    stored = _by_model(instant("KV offload traffic per model"))
    newer = _by_model(fleet.prom.query(f"sum by ({CFG.cluster_label}, namespace, model_name) "
                                       f"(rate(vllm:kv_offload_store_bytes_total[{RATE_INTERVAL}]))", fleet.summary.end))
    assert stored and stored == pytest.approx(newer), "the older total_bytes{transfer_type} must not add up"
    reasons = _by_model(instant("Requests waiting by reason"), "reason")
    totals: dict[tuple[str, ...], float] = {}
    for (cluster, namespace, model, _), value in reasons.items():
        totals[(cluster, namespace, model)] = totals.get((cluster, namespace, model), 0.0) + value
    waiting = _by_model(fleet.prom.query(c.WAITING, fleet.summary.end))
    assert totals == pytest.approx(waiting)
    assert {key[3] for key in reasons} == {"capacity", "deferred", "not reported (vLLM before 0.20)"}
    asleep = sum(float(r["value"][1]) for r in instant("Engines asleep per model"))
    assert asleep == sum(len(p.engines) for p in fleet.summary.pods if p.uses("asleep")) > 0
