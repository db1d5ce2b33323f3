"""Runbooks: one Markdown page per alert, rendered from templates/runbooks/<slug>.md.j2.

Every page extends `runbooks/_base.md.j2`, which lays out the sections in a fixed order: facts, what to do
now (the first safe mitigation), confirm (the first command, the alert's expression, its checks), for the
alerts about a crash the shared "which memory ran out" triage, then meaning, impact, causes, fixes, how to
verify, when to escalate and related alerts. A page names another alert only when the config renders it
(`has_alert`); `link` to an alert that is switched off stops the render, so no page points at a page that
is not there.
The queries on a page are built here from the config, so they carry the configured cluster label,
selectors, thresholds and recording-rule names. What the on-call engineer fills in is written as a
`<placeholder>` (`<namespace>`, `<pod>`, `<container>`, ...), never left as Jinja or Go template syntax.

Each page says, under its first command, which placeholders are the alert's own labels and, for every other
one it uses, the command that finds it from those labels (`<container>` from the pod, `<pod>` from the
model, ...) or that it is a value the reader chooses. A placeholder that is none of these stops the render.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any

import jinja2
from pydantic import BaseModel

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.errors import RenderError
from obspack.memo import per_config
from obspack.numbers import percent, text
from obspack.rules.alerts import all_alerts, dashboard_url, enabled, settings
from obspack.rules.model import AlertRule, tidy
from obspack.rules.recording import dcgm
from obspack.rules.recording.cost import hours_per_evaluation
from obspack.rules.recording.vllm import prefix_hits_rate, prefix_queries_rate
from obspack.templating import render_template

TEMPLATE_DIR = "runbooks"

# Alert label -> the placeholder a runbook shows in its place. The cluster label is `<cluster>`.
PLACEHOLDERS: dict[str, str] = {
    "namespace": "<namespace>",
    "pod": "<pod>",
    "container": "<container>",
    "model_name": "<model>",
    "engine": "<engine>",
    "gpu": "<gpu>",
    "UUID": "<uuid>",
    "Hostname": "<node>",
    "node": "<node>",
    "reason": "<reason>",
    "horizontalpodautoscaler": "<hpa>",
    "scaledObject": "<scaledobject>",
    "scaledResource": "<scaledobject>",
    "role": "<role>",
    "short": "<short>",
    "inference_pool": "<pool>",
    "job": "<job>",
    "signal": "<signal>",
}
CLUSTER_PLACEHOLDER = "<cluster>"
_GO_LABEL = re.compile(r"\{\{\s*\$labels\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_LABEL_REF = re.compile(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)")
PLACEHOLDER = re.compile(r"<([a-z][a-z0-9-]*)>")
_NOTE = "__OBSPACK_PLACEHOLDER_NOTE__"
CONFIRM_SECTION = "#confirm"


# What a label holds, where its placeholder's name does not say it.
LABEL_NOTES = {"Hostname": "the node's name where dcgm-exporter sets NODE_NAME, as its Helm chart does"}
# Values the reader picks or reads off a step, not the alert.
CHOSEN: dict[str, str] = {
    "replicas": "the replica count you choose",
    "new-limit": "the memory limit you choose",
    "port": "vLLM's port (8000 unless set)",
    "max-replicas": "the new maximum you choose",
    "grafana-url": "your Grafana's address (set `grafana.url` in obspack.yaml to have it filled in)",
    "selector": "the pool's `spec.selector.matchLabels` from the step above, written `key=value,key=value`",
}


def finders(cfg: ObspackConfig) -> dict[str, str]:
    """Placeholders that are not a label of every alert, and how to find each from the alert's labels (shown
    when the alert does not carry it). One line each; they introduce no other placeholder than the alert's."""
    cluster = f'{cfg.cluster_label}="{CLUSTER_PLACEHOLDER}"'
    return {
        "pod": f"a pod that serves the model: [Confirm]({CONFIRM_SECTION}) lists them with their restarts",
        "model": (
            f"the model the pod serves: the `model_name` label of "
            f'`count by (model_name) ({c.RUNNING}{{{cluster}, namespace="<namespace>", pod="<pod>"}})`'
        ),
        "container": (
            "the pod's vLLM container (not a sidecar such as the obspack exporter): the `container` label of "
            f'`{c.VLLM_CONTAINER}{{{cluster}, namespace="<namespace>", pod="<pod>"}}`, or `kubectl -n '
            "<namespace> get pod <pod> -o jsonpath='{range .spec.containers[*]}{.name}{\" \"}{.image}{\"\\n\"}{end}'` "
            "lists each container with its image (set `vllm_containers.name_regex` to the name to have it "
            "filled in)"
        ),
        "node": "the node the pod runs on: `kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.nodeName}'`",
        "pool": (
            "the InferencePool the endpoint picker serves: `kubectl -n <namespace> get inferencepool -o "
            "custom-columns=POOL:.metadata.name,EPP:.spec.endpointPickerRef.name` lists each pool with its EPP Service"
        ),
        "epp": (
            "the endpoint picker's Service, the EPP column of `kubectl -n <namespace> get inferencepool -o "
            "custom-columns=POOL:.metadata.name,EPP:.spec.endpointPickerRef.name` (GAIE's and llm-d's charts name "
            "its Deployment the same; the Prometheus job of its ServiceMonitor is that name too)"
        ),
        "deployment": (
            "the Deployment that owns the pod: `kubectl -n <namespace> get pod <pod> -o jsonpath="
            "'{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}'` prints "
            "`ReplicaSet/NAME-HASH`, and NAME is the Deployment (a pod of a StatefulSet prints "
            "`StatefulSet/NAME`: write `statefulset/NAME` where a command says `deployment/<deployment>`)"
        ),
    }


def template_name(slug: str) -> str:
    return f"{TEMPLATE_DIR}/{slug}.md.j2"


def with_placeholders(cfg: ObspackConfig, text: str) -> str:
    """Replace Prometheus `{{ $labels.x }}` references with the runbook's `<x>` placeholders."""

    def sub(m: re.Match[str]) -> str:
        label = m.group(1)
        if label == cfg.cluster_label:
            return CLUSTER_PLACEHOLDER
        return PLACEHOLDERS.get(label, f"<{label.lower()}>")

    return _GO_LABEL.sub(sub, text)


def _percent(ratio: float) -> str:
    """0.9 -> '90%', 0.955 -> '95.5%'."""
    return percent(ratio)


def _held(for_: str) -> str:
    """How long the condition must hold, in words: '0m' reads as 'at once'."""
    return "at once" if re.fullmatch(r"(0+[a-z]+)+", for_) else f"for {for_}"


def alert_labels(cfg: ObspackConfig, alert: AlertRule) -> set[str]:
    """The labels an alert carries, as its annotations (summary, description, triage) read them, always
    with the cluster label: the `{{ $labels.x }}` a notification fills in."""
    text = " ".join((alert.summary, alert.description, alert.triage))
    return {*_LABEL_REF.findall(text), cfg.cluster_label}


def _placeholder(cfg: ObspackConfig, label: str) -> str:
    return CLUSTER_PLACEHOLDER if label == cfg.cluster_label else PLACEHOLDERS.get(label, f"<{label.lower()}>")


def _code_list(names: list[str]) -> str:
    items = [f"`<{n}>`" for n in names]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def placeholder_note(cfg: ObspackConfig, alert: AlertRule, used: set[str]) -> str:
    """The paragraph under a page's first command: which of the placeholders the page uses are the alert's
    labels, and how to find each of the others. Raises RenderError for a placeholder nobody can fill."""
    labels = alert_labels(cfg, alert)
    own = {_placeholder(cfg, label).strip("<>"): label for label in sorted(labels)}
    order = [p.strip("<>") for p in (CLUSTER_PLACEHOLDER, *PLACEHOLDERS.values())]
    shown = sorted(own, key=lambda name: (order.index(name) if name in order else len(order), name))
    renamed = [
        f"`<{name}>` is `{own[name]}`" + (f", {LABEL_NOTES[own[name]]}" if own[name] in LABEL_NOTES else "")
        for name in shown
        if name not in (own[name], "cluster")
    ]
    paragraphs = [
        f"**Placeholders.** {_code_list(shown)} are the alert's labels"
        + (f" ({'; '.join(renamed)})" if renamed else "")
        + ": the notification shows them."
    ]
    find = finders(cfg)
    missing = [name for name in find if name in used and name not in own]
    if missing:
        items = "\n".join(f"- `<{name}>`: {find[name]}." for name in missing)
        paragraphs.append(f"The alert does not carry the others; find them from its labels:\n\n{items}")
    chosen = [name for name in CHOSEN if name in used and name not in own]
    if chosen:
        paragraphs.append("; ".join(f"`<{name}>` is {CHOSEN[name]}" for name in chosen) + ".")
    unknown = sorted(used - set(own) - set(find) - set(CHOSEN))
    if unknown:
        raise RenderError(
            f"runbook {alert.runbook}: placeholders {', '.join(f'<{u}>' for u in unknown)} are not labels of "
            f"{alert.alert}, and obspack/runbooks.py neither finds them (finders) nor says who chooses them (CHOSEN)"
        )
    return "\n\n".join(paragraphs)


def _texts(value: Any) -> list[str]:
    """Every string a setting holds: a model's values, a mapping's keys and values, a list's items, an
    enum's value (the strings of the config as `model_dump(mode="json")` writes them, less the field names,
    which hold no `<`; tests/test_runbooks.py compares the two). Read off the model, not dumped: dumping
    builds pydantic's serialisers of every config model, which a render of the defaults does not need."""
    if isinstance(value, BaseModel):
        return [t for _, item in value for t in _texts(item)]
    if isinstance(value, Enum):
        return _texts(value.value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for item in value.items() for part in item for t in _texts(part)]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _texts(item)]
    return []


@per_config
def _setting_forms(cfg: ObspackConfig) -> tuple[str, ...]:
    """The text of the settings that hold a `<`, as written and as a PromQL string literal prints it,
    longest first (once per config: every page asks)."""
    found = {t for t in _texts(cfg) if "<" in t}
    forms = {form for t in found for form in (t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1])}
    return tuple(sorted(forms, key=len, reverse=True))


def without_settings(cfg: ObspackConfig, text: str) -> str:
    """The page without the text of the user's settings (a selector's `<none>`, a regex's `(?P<x>...)`):
    only what obspack wrote can be a placeholder."""
    for form in _setting_forms(cfg):
        text = text.replace(form, "")
    return text


class _Page:
    """The helpers one page's template calls, bound to the config and to the alert being rendered."""

    def __init__(self, cfg: ObspackConfig, alert: AlertRule, catalogue: dict[str, AlertRule]) -> None:
        self.cfg = cfg
        self.alert = alert
        self.catalogue = catalogue

    def match(self, *labels: str, source: str = "", extra: tuple[str, ...] = ()) -> str:
        """A `{...}` selector: the source's configured matchers, extra matchers, then placeholders.

        The cluster label always comes first among the placeholders, so a query pasted into a
        multi-cluster Prometheus stays on the alert's cluster.
        """
        configured = getattr(self.cfg.selectors, source) if source else ""
        return c.selector(configured, *extra, *self.placeholders(*labels))

    def match_nodes(self, *extra: str) -> str:
        """`match` for kube-state-metrics' node series, which are in no namespace (c.node_matchers)."""
        return c.selector(c.node_matchers(self.cfg.selectors.kube_state_metrics), *extra, *self.placeholders())

    def placeholders(self, *labels: str) -> list[str]:
        """Matchers of the cluster label and `labels` on their placeholders, cluster first."""
        held = [f'{self.cfg.cluster_label}="{CLUSTER_PLACEHOLDER}"']
        return held + [f'{label}="{PLACEHOLDERS[label]}"' for label in labels]

    def on(self, *labels: str) -> str:
        return c.by(self.cfg, *labels)

    def has_alert(self, name: str) -> bool:
        """Whether the config renders alert `name`: a page names another alert only then."""
        if name not in self.catalogue:
            known = ", ".join(sorted(self.catalogue))
            raise RenderError(f"runbook {self.alert.runbook}: names unknown alert {name!r} (known: {known})")
        return enabled(self.cfg, name)

    def link(self, name: str, anchor: str = "", text: str = "") -> str:
        """A Markdown link to the runbook of alert `name` (a sibling file), or to a heading on this page."""
        if not self.has_alert(name):
            raise RenderError(
                f"runbook {self.alert.runbook}: links to {name}, which this config does not render: put the "
                f'sentence under {{% if has_alert("{name}") %}} in templates/{template_name(self.alert.runbook)}'
            )
        target = self.catalogue[name]
        label = text or name
        if name == self.alert.alert:
            return f"[{label}](#{anchor})" if anchor else f"{label} (this page)"
        return f"[{label}](./{target.runbook}.md{'#' + anchor if anchor else ''})"

    def links(self, *names: str) -> str:
        """Links to those of `names` the config renders, joined with commas (empty when none is)."""
        return ", ".join(self.link(name) for name in names if self.has_alert(name))

    def summary(self, name: str) -> str:
        return self.catalogue[name].summary

    def gpu_field(self, *metrics: str) -> str:
        """A DCGM field for each GPU the alert's pod holds: raw series joined to the attribution record."""
        info = c.GPU_INFO + self.match("namespace", "pod")
        return dcgm.held(self.cfg, dcgm.field(self.cfg, *metrics), dcgm.GPU_LABELS, info)

    def gpu_ratio(self) -> str:
        """Framebuffer used / (used + free) for each GPU the alert's pod holds."""
        info = c.GPU_INFO + self.match("namespace", "pod")
        return dcgm.held(self.cfg, dcgm.framebuffer_ratio(self.cfg), dcgm.GPU_LABELS, info)

    def prefix_ratio(self, window: str) -> str:
        """Prefix-cache hits / queried tokens of the alert's pod over `window`, from the counters."""
        pod = self.placeholders("namespace", "pod")
        hits, queries = prefix_hits_rate(self.cfg, window, *pod), prefix_queries_rate(self.cfg, window, *pod)
        return f"{hits}\n/ on ({self.on('namespace', 'pod', 'model_name')})\n{queries}"

    def model_pods(self, window: str = "1h") -> str:
        """From a model to its pods: every pod that served `<model>` within `window`, with its container
        restarts in that window (HA kube-state-metrics counted once), most restarts first."""
        restarts = "kube_pod_container_status_restarts_total" + self.match("namespace", source="kube_state_metrics")
        served = c.RUNNING + self.match("namespace", "model_name")
        pod, container = self.on("namespace", "pod"), self.on("namespace", "pod", "container")
        return (
            f"sort_desc(\n  sum by ({pod}) (max by ({container}) (increase({restarts}[{window}])))\n"
            f"  * on ({pod}) group_left ()\n"
            f"  group by ({pod}) (last_over_time({served}[{window}]))\n)"
        )

    def model_alerts(self) -> str:
        """The alerts firing now on the model's pods (memory, GPU and restart alerts carry a pod, not a model)."""
        served = c.RUNNING + self.match("namespace", "model_name")
        pod = self.on("namespace", "pod")
        firing = "ALERTS" + self.match("namespace", extra=('alertstate="firing"',))
        return f"{firing}\nand on ({pod})\ngroup by ({pod}) ({served})"


class _SLOPage:
    """What the SLO burn page says about the SLOs: the window pairs in words, the period and the SLIs. Its
    queries come from the page's helpers (from the model to its pods), the rest from the SLO dashboard."""

    def __init__(self, cfg: ObspackConfig) -> None:
        self.pairs = slos.window_pairs(cfg)
        self.period = slos.period(cfg)
        self.slis = slos.enabled_slis(cfg) or slos.SLIS
        self.titles = slos.TITLES

    @property
    def rule(self) -> str:
        """The window pairs in words: factor, long and short window, severity."""
        return "; ".join(
            f"{p.factor:g}x over {p.long} and {p.short} ({p.severity.value}, for {p.for_})" for p in self.pairs
        )


def _dashboard(cfg: ObspackConfig, name: str) -> dict[str, str]:
    """The page the alert links to: a URL with placeholders (as its dashboard_url) and, if known, a home link."""
    uid = c.dashboard_uid(name)
    url = with_placeholders(cfg, dashboard_url(cfg, name))
    base = cfg.grafana.url.rstrip("/")
    on = {c.SLO_DASHBOARD: "model", c.FLEET_DASHBOARD: "namespace", c.COST_DASHBOARD: "model",
          c.DISAGGREGATION_DASHBOARD: "model", c.GATEWAY_DASHBOARD: "namespace"}.get(name, "pod")
    kind = {c.SLO_DASHBOARD: "SLO dashboard", c.FLEET_DASHBOARD: "Fleet dashboard", c.COST_DASHBOARD: "Cost dashboard",
            c.DISAGGREGATION_DASHBOARD: "Disaggregated serving dashboard",
            c.GATEWAY_DASHBOARD: "Gateway dashboard"}.get(name, "Triage dashboard")
    return {
        "kind": kind,
        "on": on,
        "title": c.DASHBOARDS[name],
        "uid": uid,
        "url": url if base else f"<grafana-url>{url}",
        "home": f"{base}/d/{uid}/{name}" if base else "",
    }


def _context(
    cfg: ObspackConfig, alert: AlertRule, catalogue: dict[str, AlertRule], rules: list[AlertRule]
) -> dict[str, Any]:
    page = _Page(cfg, alert, catalogue)
    return {
        "cfg": cfg,
        "alert_labels": alert_labels(cfg, alert),
        "placeholder_note": _NOTE,
        "alert": alert,
        "t": settings(cfg, alert.alert),
        "expr": tidy(alert.expr),
        "rules": rules,
        "severity": ", ".join(f"`{s}`" for s in dict.fromkeys(r.severity.value for r in rules)),
        "triage": with_placeholders(cfg, alert.triage),
        "c": c,
        "dashboard": _dashboard(cfg, alert.dashboard or c.TRIAGE_DASHBOARD),
        "gpu_field": page.gpu_field,
        "gpu_ratio": page.gpu_ratio,
        "prefix_ratio": page.prefix_ratio,
        "model_pods": page.model_pods,
        "model_alerts": page.model_alerts,
        "match": page.match,
        "match_nodes": page.match_nodes,
        "on": page.on,
        "link": page.link,
        "has_alert": page.has_alert,
        "links": page.links,
        "crash": False,
        "summary": page.summary,
        "pct": _percent,
        "num": text,
        "held": _held,
        "slo": _SLOPage(cfg),
        "hours_per_evaluation": hours_per_evaluation,
    }


def render_runbook(
    cfg: ObspackConfig, alert: AlertRule, catalogue: dict[str, AlertRule], rules: list[AlertRule]
) -> str:
    """One alert's page (`rules`: every rule of that alert, one or more). Errors name the alert and the
    template to fix."""
    name = template_name(alert.runbook)
    try:
        text = _named_container(cfg, alert, render_template(name, **_context(cfg, alert, catalogue, rules)))
        used = set(PLACEHOLDER.findall(without_settings(cfg, text)))
        text = text.replace(_NOTE, placeholder_note(cfg, alert, used))
    except jinja2.TemplateNotFound as e:
        raise RenderError(
            f"alert {alert.alert} has no runbook: add templates/{name} (template not found: {e.name})"
        ) from None
    except jinja2.TemplateSyntaxError as e:
        raise RenderError(
            f"runbook of {alert.alert}: templates/{e.name or name}:{e.lineno}: {e.message}"
        ) from None
    except jinja2.TemplateError as e:
        raise RenderError(f"runbook of {alert.alert} (templates/{name}): {e}") from None
    return text.rstrip("\n") + "\n"


def _named_container(cfg: ObspackConfig, alert: AlertRule, text: str) -> str:
    """`<container>` written as the vLLM container's name where the config gives one and the alert does not
    carry it: `kubectl logs -c vllm`, never a sidecar's log by default."""
    name = c.vllm_container_name(cfg)
    if name is None or "container" in alert_labels(cfg, alert):
        return text
    return text.replace("<container>", name)


def render_runbooks(cfg: ObspackConfig) -> dict[str, str]:
    """Every enabled alert gets its page, keyed by its runbook slug; a link to a disabled alert's page
    becomes its plain name. An alert made of several rules (one per window pair) gets one page that
    shows them all."""
    alerts = all_alerts(cfg)
    catalogue = {a.alert: a for a in alerts}
    by_alert: dict[str, list[AlertRule]] = {}
    for alert in alerts:
        if not enabled(cfg, alert.alert):
            continue
        by_alert.setdefault(alert.alert, []).append(alert)
    pages: dict[str, str] = {}
    for rules in by_alert.values():
        alert = rules[0]
        if alert.runbook in pages:
            raise RenderError(
                f"two alerts share the runbook slug {alert.runbook!r}: give {alert.alert} its own"
            )
        pages[alert.runbook] = render_runbook(cfg, alert, catalogue, rules)
    return pages
