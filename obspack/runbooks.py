"""Runbooks: one Markdown page per alert, rendered from templates/runbooks/<slug>.md.j2.

Every page extends `runbooks/_base.md.j2`, which lays out the sections in a fixed order (facts, first
command, the shared "which memory ran out" branch, then the alert's own blocks, then related links).
The queries on a page are built here from the config, so they carry the configured cluster label,
selectors, thresholds and recording-rule names. What the on-call engineer fills in is written as a
`<placeholder>` (`<namespace>`, `<pod>`, `<container>`, ...), never left as Jinja or Go template syntax.
"""

from __future__ import annotations

import re
from typing import Any

import jinja2

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig
from obspack.dashboards import slo_queries
from obspack.errors import RenderError
from obspack.rules.alerts import all_alerts, dashboard_url, enabled, settings
from obspack.rules.model import AlertRule, tidy
from obspack.rules.recording import dcgm
from obspack.rules.recording import slo as slo_recording
from obspack.rules.recording.vllm import prefix_hits_rate, prefix_queries_rate
from obspack.templating import render_template

TEMPLATE_DIR = "runbooks"

# Alert label -> the placeholder a runbook shows in its place. The cluster label is `<cluster>`.
PLACEHOLDERS: dict[str, str] = {
    "namespace": "<namespace>",
    "pod": "<pod>",
    "container": "<container>",
    "model_name": "<model>",
    "gpu": "<gpu>",
    "UUID": "<uuid>",
    "Hostname": "<node>",
    "node": "<node>",
    "reason": "<reason>",
}
CLUSTER_PLACEHOLDER = "<cluster>"
_GO_LABEL = re.compile(r"\{\{\s*\$labels\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


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
    return f"{ratio * 100:.4g}%"


def _held(for_: str) -> str:
    """How long the condition must hold, in words: '0m' reads as 'at once'."""
    return "at once" if re.fullmatch(r"(0+[a-z]+)+", for_) else f"for {for_}"


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

    def placeholders(self, *labels: str) -> list[str]:
        """Matchers of the cluster label and `labels` on their placeholders, cluster first."""
        held = [f'{self.cfg.cluster_label}="{CLUSTER_PLACEHOLDER}"']
        return held + [f'{label}="{PLACEHOLDERS[label]}"' for label in labels]

    def on(self, *labels: str) -> str:
        return c.by(self.cfg, *labels)

    def link(self, name: str, anchor: str = "", text: str = "") -> str:
        """A Markdown link to the runbook of alert `name` (a sibling file), or to a heading on this page."""
        target = self.catalogue.get(name)
        if target is None:
            known = ", ".join(sorted(self.catalogue))
            raise RenderError(
                f"runbook {self.alert.runbook}: links to unknown alert {name!r} (known: {known})"
            )
        label = text or name
        if not enabled(self.cfg, name):
            return f"{label} (not enabled in this pack)"
        if name == self.alert.alert:
            return f"[{label}](#{anchor})" if anchor else f"{label} (this page)"
        return f"[{label}](./{target.runbook}.md{'#' + anchor if anchor else ''})"

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


class _SLOPage:
    """What the SLO burn page shows: the window pairs, and queries with the page's placeholders."""

    def __init__(self, cfg: ObspackConfig, page: _Page) -> None:
        self.pairs = slos.window_pairs(cfg)
        self.base = slos.base_window(cfg)
        self.period = slos.period(cfg)
        self.slis = slos.enabled_slis(cfg) or slos.SLIS
        self.titles = slos.TITLES
        self._cfg = cfg
        # matchers on the alert's placeholders: a whole selector for the SLO records, and bare matchers
        # that narrow the engine and HTTP series
        self._engine = ", ".join(page.placeholders("namespace", "model_name"))
        self._pod = ", ".join(page.placeholders("namespace"))
        self._model = c.selector(self._engine)

    @property
    def rule(self) -> str:
        """The window pairs in words: factor, long and short window, severity."""
        return "; ".join(
            f"{p.factor:g}x over {p.long} and {p.short} ({p.severity.value}, for {p.for_})" for p in self.pairs
        )

    def burn(self, window: str) -> str:
        """The model's burn rate over one window, per SLO."""
        return slo_queries.burn(window, self._model)

    def pod_share(self, sli: str) -> str:
        """The share of each pod's events that miss the SLO, over the base window."""
        return slo_recording.pod_bad_share(self._cfg, sli, self.base, self._engine, self._pod)


def _dashboard(cfg: ObspackConfig, name: str) -> dict[str, str]:
    """The page the alert links to: a URL with placeholders (as its dashboard_url) and, if known, a home link."""
    uid = c.dashboard_uid(name)
    url = with_placeholders(cfg, dashboard_url(cfg, name))
    base = cfg.grafana.url.rstrip("/")
    on = "model" if name == c.SLO_DASHBOARD else "pod"
    return {
        "kind": "SLO dashboard" if name == c.SLO_DASHBOARD else "Triage dashboard",
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
        "match": page.match,
        "on": page.on,
        "link": page.link,
        "summary": page.summary,
        "pct": _percent,
        "held": _held,
        "slo": _SLOPage(cfg, page),
    }


def render_runbook(
    cfg: ObspackConfig, alert: AlertRule, catalogue: dict[str, AlertRule], rules: list[AlertRule]
) -> str:
    """One alert's page (`rules`: every rule of that alert, one or more). Errors name the alert and the
    template to fix."""
    name = template_name(alert.runbook)
    try:
        text = render_template(name, **_context(cfg, alert, catalogue, rules))
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
