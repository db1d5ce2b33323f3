"""Which sources feed this server, and in which shape: vLLM generations per pod, cAdvisor's labels,
kube-state-metrics replicas, dcgm-exporter's label mode and fields, the obspack exporter and its CUDA
probe, and the label that tells clusters apart. The queries here are the doctor's own (knowledge.py);
each is scoped by the config's `selectors.<source>`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from obspack import conventions as c
from obspack.catalogue import vllm_features as vf
from obspack.doctor import knowledge as k
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.checks import Check, State, Window
from obspack.doctor.findings import Finding, Fix, Topic, counted, note, problem, unchecked
from obspack.doctor.fit import PodKind
from obspack.doctor.needs import Leaf, PackNeeds, alternatives, matches
from obspack.durations import format_s
from obspack.pack import Pack


@dataclass(frozen=True)
class SourceReport:
    title: str
    found: bool
    summary: str
    details: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Survey:
    reports: tuple[SourceReport, ...]
    pods: tuple[PodKind, ...]  # one pod per kind, for per-pod dashboards
    findings: tuple[Finding, ...]
    jobs: Mapping[str, list[str]] = field(default_factory=dict)  # source key -> scrape jobs feeding it


Rows = list[dict[str, str]]


class _Asker:
    """Runs named queries concurrently; a failed one reads as no rows, and the subject it was about is
    remembered with its first failure (reported as not checked)."""

    def __init__(self, api: PrometheusAPI, window: Window) -> None:
        self.api = api
        self.window = window
        self.failed: dict[str, str] = {}  # subject -> the first failure
        self._queries: dict[str, str] = {}  # query name -> its failure

    def rows(self, queries: Mapping[str, str], subject: str) -> dict[str, Rows]:
        names = list(queries)
        results = self.api.map(lambda n: self.api.query(queries[n], self.window.at), names)
        out: dict[str, Rows] = {}
        for name, result in zip(names, results):
            if isinstance(result, QueryFailed):
                self.failed.setdefault(subject, str(result))
                self._queries[name] = str(result)
                result = []
            out[name] = [dict(r["metric"], __value__=r["value"][1]) for r in result]
        return out

    def failed_query(self, name: str) -> str | None:
        return self._queries.get(name)

    def values(self, label: str, match: str, subject: str) -> list[str]:
        try:
            return self.api.label_values(label, match, self.window.start, self.window.at)
        except QueryFailed as e:
            self.failed.setdefault(subject, str(e))
            return []

    def names(self, matches: Sequence[str], subject: str) -> list[str]:
        try:
            return self.api.label_names(matches, self.window.start, self.window.at)
        except QueryFailed as e:
            self.failed.setdefault(subject, str(e))
            return []


def _count(rows: Rows) -> int:
    """The value of a count() query: 0 for none, or for a value that is not a finite number."""
    value = float(rows[0]["__value__"]) if rows else 0.0
    return int(value) if math.isfinite(value) else 0


def _missing(ask: _Asker, source: k.Source, scope: str) -> tuple[SourceReport, Finding]:
    """A source without series now: gone (seen within the lookback) or never there."""
    names = "|".join(source.inventory)
    where = f" with selectors.{source.key} ({scope})" if scope else ""
    w = ask.window
    try:
        seen = ask.api.label_values("__name__", c.selector(scope, f'__name__=~"{names}"'), w.start, w.at)
    except QueryFailed as e:
        return _unasked(source, str(e))
    if seen:
        summary = f"gone: no series now, some within the last {format_s(ask.window.lookback_s, coarse=True)}{where}"
        action = f"{source.title}: its series stopped; check its pods and their scrape targets"
    else:
        summary = f"not found: no {' or '.join(source.inventory)} series{where}"
        action = f"{source.title}: {source.install}"
    return SourceReport(source.title, False, summary), note(
        Topic.SOURCE, source.title, summary, action=action
    )


def _unasked(source: k.Source, error: str) -> tuple[SourceReport, Finding]:
    report = SourceReport(source.title, False, f"could not be asked: {error}")
    return report, unchecked(Topic.SOURCE, source.title, f"whether it is here could not be asked: {error}")


def survey(
    api: PrometheusAPI, pack: Pack, window: Window, needs: PackNeeds, checks: Mapping[Leaf, Check]
) -> Survey:
    ask = _Asker(api, window)
    cl = pack.cluster_label
    scope = {s.key: pack.sources.selectors.get(s.key, "") if s.key else "" for s in k.SOURCES}
    inventory = ask.rows(
        {
            f"{s.key}|{m}": f"count by (job) ({m}{c.selector(scope[s.key])})"
            for s in k.SOURCES
            for m in s.inventory
        },
        "sources",
    )
    present = {s.key: next((m for m in s.inventory if inventory[f"{s.key}|{m}"]), None) for s in k.SOURCES}
    jobs = {key: sorted(r.get("job", "") for r in inventory[f"{key}|{m}"]) for key, m in present.items() if m}
    found = {key: metric for key, metric in present.items() if metric}
    findings: list[Finding] = []
    by_key: dict[str, SourceReport | None] = {}
    for source in k.SOURCES:
        if source.key in found:
            continue
        unasked = next((e for m in source.inventory if (e := ask.failed_query(f"{source.key}|{m}"))), None)
        if unasked is not None:  # not found, but not every question about it was answered
            by_key[source.key], finding = _unasked(source, unasked)
        else:
            by_key[source.key], finding = _missing(ask, source, scope[source.key])
        findings.append(finding)
    vllm_pods, vllm_report = _vllm(ask, pack, scope["vllm"], found)
    features = _features(ask, pack, scope["vllm"], found)
    dcgm_modes, dcgm_report, dcgm_findings = _dcgm(ask, pack, scope, found, needs, checks)
    computed = {
        "vllm": vllm_report,
        "cadvisor": _cadvisor(ask, scope["cadvisor"], found),
        "kube_state_metrics": _ksm(ask, cl, scope, found),
        "dcgm": dcgm_report,
        "exporter": _exporter(ask, cl, scope["exporter"], found),
    }
    by_key.update((key, report) for key, report in computed.items() if report is not None)
    reports = [r for s in k.SOURCES for r in (by_key.get(s.key),) if r is not None]
    if features is not None:  # next to the vLLM source
        reports.insert(next((i + 1 for i, r in enumerate(reports) if r.title == "vLLM"), len(reports)), features)
    findings.extend(dcgm_findings)
    findings.extend(_cadvisor_findings(reports))
    findings.extend(_vllm_containers(ask, pack, scope, found))
    cluster_report, cluster_findings = _cluster_label(ask, cl, scope, found)
    reports.append(cluster_report)
    findings.extend(cluster_findings)
    for subject, error in ask.failed.items():
        if subject != "sources":
            findings.append(unchecked(Topic.SOURCE, subject, f"could not be asked: {error}"))
    return Survey(tuple(reports), _kinds(vllm_pods, dcgm_modes, cl), tuple(findings), jobs)


# ---------------------------------------------------------------------------------------------------
# vLLM


def _vllm(
    ask: _Asker, pack: Pack, scope: str, found: Mapping[str, str]
) -> tuple[dict[tuple[str, ...], tuple[str, dict[str, str]]], SourceReport | None]:
    if "vllm" not in found:
        return {}, None
    cl = pack.cluster_label
    by = f"{cl}, namespace, pod, model_name"
    markers = sorted({m for _, ms in k.VLLM_GENERATIONS for m in ms})
    queries = {m: f"group by ({by}) ({m}{c.selector(scope, k.VLLM_ENGINE)})" for m in markers}
    queries["router"] = f"count({found['vllm']}{c.selector(scope, k.VLLM_ROUTER)})"
    rows = ask.rows(queries, "vLLM")
    serves: dict[tuple[str, ...], set[str]] = {}
    labels: dict[tuple[str, ...], dict[str, str]] = {}
    for metric in markers:
        for row in rows[metric]:
            key = (row.get(cl, ""), row.get("namespace", ""), row.get("pod", ""))
            serves.setdefault(key, set()).add(metric)
            labels[key] = {
                cl: key[0],
                "namespace": key[1],
                "pod": key[2],
                "model_name": row.get("model_name", ""),
            }
    pods = {}
    for key, metrics in serves.items():
        generation = next((g for g, need in k.VLLM_GENERATIONS if set(need) <= metrics), "unknown version")
        pods[key] = (generation, labels[key])
    counts = Counter(g for g, _ in pods.values())
    text = ", ".join(f"{n} {g}" for g, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))
    summary = f"{counted(len(pods), 'pod')}: {text}" if pods else "engine series without pod labels"
    router = _count(rows["router"])
    if router:
        summary += f"; {router} router copies (no model_name) left out"
    details = {"pods": len(pods), "generations": dict(counts), "router_series": router}
    return pods, SourceReport("vLLM", True, summary, details)


MAX_NAMED = 10  # pods named per feature in the report's details


def _features(ask: _Asker, pack: Pack, scope: str, found: Mapping[str, str]) -> SourceReport | None:
    """Which pods run which vLLM feature, and through which connector or spec, from the feature's own
    series (obspack/catalogue/vllm_features.py); and which engines sleep now."""
    if "vllm" not in found:
        return None
    pod = f"{pack.cluster_label}, namespace, pod"
    queries: dict[str, str] = {}
    for feature in vf.FEATURES:
        engine = "" if feature.key == vf.LORA.key else k.VLLM_ENGINE  # LoRA's series have no model_name
        for marker in dict.fromkeys((*feature.markers, *(m for m, _ in feature.connectors))):
            queries[f"{feature.key}|{marker}"] = f"group by ({pod}) ({marker}{c.selector(scope, engine)})"
    awake = f"{vf.SLEEP_STATE}{c.selector(scope, k.VLLM_ENGINE, vf.AWAKE)}"
    queries["asleep"] = f"group by ({pod}) ({awake} == 0)"
    rows = ask.rows(queries, "vLLM features")

    def pods(*keys: str) -> list[str]:
        named = {"/".join(filter(None, (r.get(x, "") for x in (pack.cluster_label, "namespace", "pod")))) for key in keys for r in rows[key]}
        return sorted(named)

    parts, details = [], {}
    for feature in vf.FEATURES:
        if feature.key == vf.SLEEP.key:
            using = pods("asleep")
            reporting = pods(*(f"{feature.key}|{m}" for m in feature.markers))
            details[feature.key] = {"pods": len(using), "reporting": len(reporting), "named": using[:MAX_NAMED]}
            if using:
                parts.append(f"{len(using)} of {counted(len(reporting), 'pod')} with a sleep state asleep now")
            continue
        using = pods(*(f"{feature.key}|{m}" for m in feature.markers))
        connectors = {name: len(pods(f"{feature.key}|{m}")) for m, name in feature.connectors}
        connectors = {name: n for name, n in connectors.items() if n}
        details[feature.key] = {"pods": len(using), "connectors": connectors, "named": using[:MAX_NAMED]}
        if using:
            how = f" ({', '.join(f'{name} {n}' for name, n in connectors.items())})" if connectors else ""
            parts.append(f"{feature.title.lower()} on {counted(len(using), 'pod')}{how}")
    summary = "; ".join(parts) if parts else "none of the tracked features (KV connectors, offload, speculative decoding, LoRA, admission control, sleep mode)"
    return SourceReport("vLLM features", True, summary, details)


def _vllm_containers(
    ask: _Asker, pack: Pack, scope: Mapping[str, str], found: Mapping[str, str]
) -> list[Finding]:
    """Whether `vllm_containers` picks any container of the pods that serve vLLM (by image or name)."""
    if "vllm" not in found or "kube_state_metrics" not in found:
        return []
    cl = pack.cluster_label
    pods = f"group by ({cl}, namespace, pod) ({found['vllm']}{c.selector(scope['vllm'], k.VLLM_ENGINE)})"
    info = k.KSM_CONTAINERS + c.selector(scope["kube_state_metrics"], k.CADVISOR_CONTAINER)
    rows = ask.rows(
        {"containers": f"group by (container, image) ({info} and on ({cl}, namespace, pod) {pods})"},
        "vLLM containers",
    )
    containers = rows["containers"]
    wanted = pack.sources
    by_image = wanted.image_regex and [  # empty: off, as in the rules
        r for r in containers if matches(("image", "=~", wanted.image_regex), r.get("image", ""))
    ]
    by_name = wanted.name_regex and [
        r for r in containers if matches(("c", "=~", wanted.name_regex), r.get("container", ""))
    ]
    if not containers or by_image or by_name:
        return []
    images = ", ".join(sorted({r.get("image", "") for r in containers}))
    names = ", ".join(sorted({r.get("container", "") for r in containers}))
    return [
        note(
            Topic.SOURCE,
            "vLLM containers",
            (f"vllm_containers.image_regex {wanted.image_regex!r} matches" if wanted.image_regex else
             "vllm_containers.image_regex is empty (off), and so it matches")  # fmt: skip
            + f" no container of the pods that serve vLLM (images: {images}); they are recognised only where "
            "vLLM's own series name their container",
            action=f"vllm_containers: set image_regex to the serving image, or name_regex to one of: {names}",
        )
    ]


# ---------------------------------------------------------------------------------------------------
# cAdvisor and kube-state-metrics


def _cadvisor(ask: _Asker, scope: str, found: Mapping[str, str]) -> SourceReport | None:
    metric = found.get("cadvisor")
    if metric is None:
        return None
    rows = ask.rows(
        {
            "all": f"count({metric}{c.selector(scope)})",
            "container": f"count({metric}{c.selector(scope, k.CADVISOR_CONTAINER)})",
            "image": f"count({metric}{c.selector(scope, k.CADVISOR_IMAGE)})",
        },
        "cAdvisor",
    )
    labels = {label: _count(rows[label]) > 0 for label in ("container", "image")}
    missing = [label for label, there in labels.items() if not there]
    summary = f"{_count(rows['all'])} series of {metric}; " + (
        "container and image labels set" if not missing else f"no {' or '.join(missing)} label"
    )
    return SourceReport("cAdvisor", True, summary, {"series": _count(rows["all"]), "labels": labels})


def _cadvisor_findings(reports: Sequence[SourceReport]) -> list[Finding]:
    report = next((r for r in reports if r.title == "cAdvisor" and r.found), None)
    if report is None:
        return []
    labels = report.details["labels"]
    out = []
    if not labels["container"]:  # type: ignore[index]
        out.append(
            note(
                Topic.SOURCE,
                "cAdvisor",
                "series carry no container label (some runtimes: cri-o, k3s, rke): per-container memory "
                "cannot be told apart",
                action="cAdvisor: check the kubelet's container runtime integration (the CRI must report "
                "container names to cAdvisor)",
            )
        )
    if not labels["image"]:  # type: ignore[index]
        out.append(
            note(
                Topic.SOURCE,
                "cAdvisor",
                "series carry no image label: vLLM containers are recognised from kube-state-metrics or the "
                "engine series instead",
            )
        )
    return out


def _ksm(ask: _Asker, cl: str, scope: Mapping[str, str], found: Mapping[str, str]) -> SourceReport | None:
    metric = found.get("kube_state_metrics")
    if metric is None:
        return None
    selector = metric + c.selector(scope["kube_state_metrics"])
    rows = ask.rows(
        {"replicas": f"max(count by ({', '.join((cl, *k.KSM_REPLICA_KEY))}) ({selector}))"},
        "kube-state-metrics",
    )
    replicas = _count(rows["replicas"])
    instances = ask.values("instance", selector, "kube-state-metrics")
    shown = f" ({', '.join(instances[:4])})" if instances else ""
    summary = (
        f"{replicas} replicas{shown}: every series {replicas} times, the pack takes one"
        if replicas > 1
        else (f"1 replica{shown}")
    )
    return SourceReport("kube-state-metrics", True, summary, {"replicas": replicas, "instances": instances})


# ---------------------------------------------------------------------------------------------------
# dcgm-exporter


def _dcgm(
    ask: _Asker,
    pack: Pack,
    scope: Mapping[str, str],
    found: Mapping[str, str],
    needs: PackNeeds,
    checks: Mapping[Leaf, Check],
) -> tuple[dict[tuple[str, str, str], str], SourceReport | None, list[Finding]]:
    metric = found.get("dcgm")
    if metric is None:
        return {}, None, []
    cl = pack.cluster_label
    mode_labels = [label for label, _ in k.DCGM_MODES]
    namespaces = {"exported_pod": "exported_namespace", "pod_name": "pod_namespace", "pod": "namespace"}
    by = ", ".join(dict.fromkeys([cl, *k.DCGM_GPU_KEY, *mode_labels, *namespaces.values()]))
    queries = {"gpus": f"group by ({by}) ({metric}{c.selector(scope['dcgm'])})"}
    if "kube_state_metrics" in found:
        requests = k.GPU_REQUESTS[0] + c.selector(scope["kube_state_metrics"], k.GPU_REQUESTS[1])
        queries["requests"] = f"group by ({cl}, namespace, pod) ({requests} > 0)"
    rows = ask.rows(queries, "dcgm-exporter")
    holders = {(r.get(cl, ""), r.get("namespace", ""), r.get("pod", "")) for r in rows.get("requests", [])}
    by_instance: dict[str, set[str]] = {}
    for row in rows["gpus"]:
        by_instance.setdefault(row.get("instance", ""), set()).update(
            m for m in mode_labels[:2] if row.get(m)
        )
    modes: dict[tuple[str, str, str], str] = {}
    counts: Counter[str] = Counter()
    for row in rows["gpus"]:
        label = next((m for m in mode_labels if row.get(m)), None)
        workload = (row.get(cl, ""), row.get(namespaces[label], ""), row.get(label, "")) if label else None
        if label == "pod":
            held = workload in holders if "requests" in rows else not by_instance.get(row.get("instance", ""))
            label = label if held else None
        counts[label or "none"] += 1
        if label and workload:
            modes[workload] = label
    fields = ask.values("__name__", c.selector(scope["dcgm"], '__name__=~"DCGM_.+"'), "dcgm-exporter")
    parts = [f"{counts[m]} {dict(k.DCGM_MODES)[m].split(' ')[0]}" for m in mode_labels if counts[m]]
    if counts["none"]:
        parts.append(f"{counts['none']} without a vLLM pod (idle, or the pod has no nvidia.com/gpu request)")
    if counts["pod"] and "requests" not in rows:
        parts.append("idle GPUs on pod= nodes count as held (kube-state-metrics would tell them apart)")
    summary = f"{counted(sum(counts.values()), 'GPU')}: {', '.join(parts)}; {counted(len(fields), 'field')}"
    details = {"gpus": sum(counts.values()), "modes": dict(counts), "fields": fields}
    return modes, SourceReport("dcgm-exporter", True, summary, details), _dcgm_fallbacks(needs, checks)


def _dcgm_fallbacks(needs: PackNeeds, checks: Mapping[Leaf, Check]) -> list[Finding]:
    """Profiling fields the pack reads that are off, where another field stands in."""
    trees = [r.need for r in (*needs.recording_rules, *needs.alerts)]
    out: dict[str, Finding] = {}
    for tree in trees:
        for choice in alternatives(tree):
            states = {
                p: checks[p].state if isinstance(p, Leaf) and p in checks else None for p in choice.parts
            }
            standing = [p for p, s in states.items() if s is State.OK and isinstance(p, Leaf)]
            for part, state in states.items():
                if state is State.MISSING and isinstance(part, Leaf) and standing:
                    metric = part.selector.metric
                    if metric.startswith(k.DCGM_PROFILING):
                        instead = ", ".join(sorted({p.selector.metric for p in standing}))
                        out[metric] = note(
                            Topic.SOURCE,
                            "dcgm-exporter",
                            f"{metric} is off (DCGM profiling fields need a datacenter GPU and SYS_ADMIN); "
                            f"the pack reads {instead} instead",
                        )
    return [out[m] for m in sorted(out)]


def _kinds(
    pods: Mapping[tuple[str, ...], tuple[str, dict[str, str]]],
    modes: Mapping[tuple[str, str, str], str],
    cl: str,
) -> tuple[PodKind, ...]:
    kinds: dict[str, PodKind] = {}
    for key in sorted(pods):
        generation, labels = pods[key]
        mode = modes.get((key[0], key[1], key[2]))
        kind = f"vLLM {generation}" + (f", DCGM {mode}=" if mode else "")
        kinds.setdefault(kind, PodKind(kind, labels))
    return tuple(kinds[name] for name in sorted(kinds))


# ---------------------------------------------------------------------------------------------------
# obspack exporter and the cluster label


def _exporter(ask: _Asker, cl: str, scope: str, found: Mapping[str, str]) -> SourceReport | None:
    metric = found.get("exporter")
    if metric is None:
        return None
    by = f"{cl}, namespace, pod"
    rows = ask.rows(
        {
            "pods": f"count(group by ({by}) ({metric}{c.selector(scope)}))",
            "probe": f"count(group by ({by}) ({k.EXPORTER_PROBE}{c.selector(scope)}))",
            "down": f"count({metric}{c.selector(scope)} == 0)",
        },
        "obspack exporter",
    )
    pods, probe, down = (_count(rows[n]) for n in ("pods", "probe", "down"))
    summary = f"{counted(pods, 'pod')}; CUDA allocator probe in {probe}" + (f"; {counted(down, 'target')} failing" if down else "")
    return SourceReport(
        "obspack exporter", True, summary, {"pods": pods, "cuda_probe": probe, "failing": down}
    )


def _cluster_label(
    ask: _Asker, cl: str, scope: Mapping[str, str], found: Mapping[str, str]
) -> tuple[SourceReport, list[Finding]]:
    title = "cluster label"
    sources = {key: metric + c.selector(scope[key]) for key, metric in found.items() if key}
    if not sources:
        return SourceReport(title, False, "no source to look at"), []
    labelled = f'{cl}!=""'
    rows = ask.rows(
        {key: f"count({metric}{c.selector(scope[key], labelled)})" for key, metric in found.items() if key},
        title,
    )
    having = sorted(key for key in sources if _count(rows[key]))
    lacking = sorted(key for key in sources if key not in having)
    titles = {s.key: s.title for s in k.SOURCES}
    if having:
        clusters = ask.values(cl, sources[having[0]], title)
        if lacking:
            message = (
                f"`{cl}` is on {', '.join(titles[x] for x in having)} but not on {', '.join(titles[x] for x in lacking)}: "
                "joins between them match nothing"
            )
            action = (
                f"cluster label: add `{cl}` to every scrape of {', '.join(titles[x] for x in lacking)} (external labels "
                "reach only remote storage, not local queries)"
            )
            report = SourceReport(
                title, True, f"`{cl}` on {len(having)} of {len(sources)} sources", {"clusters": clusters}
            )
            return report, [problem(Topic.SOURCE, title, message, action=action)]
        shown = ", ".join(clusters[:5]) + ("..." if len(clusters) > 5 else "")
        return SourceReport(
            title, True, f"`{cl}`: {counted(len(clusters), 'cluster')} ({shown})", {"clusters": clusters}
        ), []
    names = set(ask.names(list(sources.values()), title))
    for candidate in k.CLUSTER_LABELS:
        if candidate == cl or candidate not in names:
            continue
        clusters = ask.values(candidate, next(iter(sources.values())), title)
        fix = Fix(("cluster_label",), candidate, f"clusters here are told apart by {candidate}")
        report = SourceReport(
            title, True, f"no `{cl}`; clusters are in `{candidate}` ({len(clusters)})", {"clusters": clusters}
        )
        message = f"no `{cl}` label, but `{candidate}` names {counted(len(clusters), 'cluster')}: set cluster_label: {candidate}"
        if len(clusters) > 1:
            message += "; until then, pods of the same name in different clusters are merged"
            return report, [problem(Topic.SOURCE, title, message, fixes=(fix,))]
        return report, [note(Topic.SOURCE, title, message, fixes=(fix,))]
    message = (
        f"no `{cl}` label on any source: right for one cluster; if several clusters share this server, set "
        "cluster_label to the label that tells them apart"
    )
    return SourceReport(title, False, f"no `{cl}` label"), [note(Topic.SOURCE, title, message)]
