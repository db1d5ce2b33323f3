"""The Helm chart's model, derived from the config like the Pack (`build_chart(cfg) -> Chart`); the Helm
writer (obspack.render.helm) turns it into the chart's files.

How values reach the rules, with no rule text kept twice: the rule groups are built with a config in which
every setting the chart exposes holds a unique sentinel (thresholds such as 0.70013917, durations such as
91001s, made-up runbook and Grafana URLs), once with each of two sentinel sets (`rule_packs`). The writer
replaces each sentinel by the Helm expression that prints the value the way Python would; both sets must
give the same template, and no sentinel may survive. Enabled flags, severity and labels are structural.
SLOs work the same way (objectives printed, latency thresholds inside the `le` matcher).

Dashboards compute with thresholds (`ratio - 0.1`), so they are not templated: they show the config's
thresholds; the cluster label, selectors and regexes are baked in too. Both change by rendering the chart
from one's own obspack.yaml (`obspack render --config obspack.yaml --helm CHART`).

The modules: layout (the chart's paths and the exporter's settings), settings (the alert settings exposed
as values), sentinels, values (the table of values, and the way back to a config).
"""

from __future__ import annotations

from dataclasses import dataclass

from obspack import __version__
from obspack.config import ObspackConfig, defaults, flat_dump
from obspack.dashboards import all_dashboards
from obspack.memo import per_config
from obspack.pack.autoscaling import manifests
from obspack.pack.build import stamp
from obspack.pack.chart.layout import CHART_SOURCE
from obspack.pack.chart.sentinels import Sentinels
from obspack.pack.chart.values import S, V, config_from_values, values_table
from obspack.pack.model import Dashboard, Pack, Sources
from obspack.rules.alerts import alert_groups
from obspack.rules.recording import all_recording_groups


@dataclass(frozen=True)
class Chart:
    source: str  # what the chart was rendered from (the config's stamp), for the files' headers
    version: str  # the chart's version: obspack's, with the config's digest when it is not the default one
    values: dict[str, V | S]  # values.yaml and its schema, as one table
    pack: Pack  # the config's rule groups and dashboards (the dashboards go into the chart as they are)
    rule_packs: tuple[tuple[Pack, Sentinels], ...]  # the rule groups under each sentinel set


def chart_version(cfg: ObspackConfig) -> str:
    """obspack's version; a chart rendered from another config carries the config's digest as SemVer build
    metadata (0.1.0+config.3f2a...), so `helm list` tells the two apart. appVersion, the exporter image's
    tag, stays obspack's version."""
    if cfg == defaults():
        return __version__
    return f"{__version__}+{stamp(cfg).replace(' ', '.')}"


def chart_pack(cfg: ObspackConfig, *, dashboards: bool = True) -> Pack:
    """The part of `build(cfg)` the chart renders: rule groups and dashboards (no runbooks or unit tests,
    which would be made from sentinel values for nothing). A test proves the groups equal build()'s."""
    return Pack(
        version=__version__,
        source=CHART_SOURCE,
        cluster_label=cfg.cluster_label,
        sources=Sources(flat_dump(cfg.selectors), cfg.vllm_containers.image_regex, cfg.vllm_containers.name_regex),
        recording_groups=all_recording_groups(cfg),
        alert_groups=alert_groups(cfg),
        alerts=(),
        dashboards=tuple(
            Dashboard(name=name, title=str(model["title"]), uid=str(model["uid"]), model=model)
            for name, model in (all_dashboards(cfg) if dashboards else [])
        ),
        runbooks=(),
        rule_tests=(),
        missing_tests=(),
        alertmanager={},
        prometheus_rule=flat_dump(cfg.prometheus_rule),
        grafana=flat_dump(cfg.grafana),
        autoscaling=manifests(cfg),
    )


@per_config
def build_chart(cfg: ObspackConfig) -> Chart:
    sets = tuple(map(Sentinels.make, (0, 1)))
    return Chart(
        source=stamp(cfg),
        version=chart_version(cfg),
        values=values_table(cfg),
        pack=chart_pack(cfg),
        rule_packs=tuple((chart_pack(s.config(cfg), dashboards=False), s) for s in sets),
    )


__all__ = ["Chart", "S", "Sentinels", "V", "build_chart", "chart_pack", "chart_version", "config_from_values"]
