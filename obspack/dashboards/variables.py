"""Template variables: datasource, cluster, namespace, model and pod, chained in that order.

The names are a contract: alerts and runbooks link to the triage dashboard with
`?var-cluster=..&var-namespace=..&var-pod=..`. Each variable's values come from a recording rule
filtered by the variables before it, so picking a namespace narrows the models, and a model the pods.
Values are refreshed when the time range changes, so pods that died an hour ago can still be picked.
"""

from __future__ import annotations

from grafanalib.core import HIDE_VARIABLE, REFRESH_ON_TIME_RANGE_CHANGE, SHOW, SORT_ALPHA_ASC, Template

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import queries as q
from obspack.dashboards.panels import DATASOURCE

ALL_VALUE = ".*"


def datasource(cfg: ObspackConfig) -> Template:
    """Any Prometheus datasource; the default is picked by name, so no uid is hard-coded."""
    return Template(
        name="datasource",
        label="Data source",
        type="datasource",
        query="prometheus",
        default=cfg.grafana.datasource,
        regex="",
        hide=SHOW,
    )


def _label_values(
    cfg: ObspackConfig,
    name: str,
    title: str,
    record: str,
    parents: tuple[str, ...],
    *,
    multi: bool,
    hide: int = SHOW,
) -> Template:
    selector = q.rec(cfg, record, parents) if parents else record
    return Template(
        name=name,
        label=title,
        type="query",
        dataSource=DATASOURCE,
        query=f"label_values({selector}, {q.label(cfg, name)})",
        refresh=REFRESH_ON_TIME_RANGE_CHANGE,
        sort=SORT_ALPHA_ASC,
        multi=multi,
        includeAll=multi,
        allValue=ALL_VALUE if multi else None,
        default="$__all" if multi else None,
        regex="",
        hide=hide,
    )


def cluster(cfg: ObspackConfig, *, multi: bool) -> Template:
    """Hidden unless the fleet spans clusters (grafana.multi_cluster); links still set it."""
    hide = SHOW if cfg.grafana.multi_cluster else HIDE_VARIABLE
    return _label_values(cfg, "cluster", "Cluster", c.VLLM_POD, (), multi=multi, hide=hide)


def namespace(cfg: ObspackConfig, *, multi: bool) -> Template:
    return _label_values(cfg, "namespace", "Namespace", c.VLLM_POD, ("cluster",), multi=multi)


def model(cfg: ObspackConfig) -> Template:
    """Always multi-value with All: a triage link names no model, so All must be the default."""
    return _label_values(cfg, "model", "Model", c.RUNNING, ("cluster", "namespace"), multi=True)


def pod(cfg: ObspackConfig, *, multi: bool) -> Template:
    return _label_values(cfg, "pod", "Pod", c.RUNNING, ("cluster", "namespace", "model"), multi=multi)


def fleet(cfg: ObspackConfig) -> list[Template]:
    """For pages that compare many pods: every filter takes several values or All."""
    return [
        datasource(cfg),
        cluster(cfg, multi=True),
        namespace(cfg, multi=True),
        model(cfg),
        pod(cfg, multi=True),
    ]


def gpu_instance(cfg: ObspackConfig) -> Template:
    """Hidden: the dcgm-exporter instances holding the selected pod's GPUs (a pod runs on one node).

    Per-GPU panels filter raw DCGM series with it, so they read that node's GPUs instead of the fleet's.
    All, without an allValue, is the list of the values found, as a regex alternation."""
    return Template(
        name="gpu_instance",
        label="GPU exporter",
        type="query",
        dataSource=DATASOURCE,
        query=f"label_values({q.rec(cfg, c.GPU_INFO, q.POD)}, instance)",
        refresh=REFRESH_ON_TIME_RANGE_CHANGE,
        sort=SORT_ALPHA_ASC,
        multi=True,
        includeAll=True,
        default="$__all",
        regex="",
        hide=HIDE_VARIABLE,
    )


def one_pod(cfg: ObspackConfig, *, fleet_scope: bool = False) -> list[Template]:
    """For pages about one pod: exactly one pod, and its GPU exporters for per-GPU panels. The triage page
    also takes one cluster and namespace; the GPU page (`fleet_scope`) keeps several for its fleet panels."""
    return [
        datasource(cfg),
        cluster(cfg, multi=fleet_scope),
        namespace(cfg, multi=fleet_scope),
        model(cfg),
        pod(cfg, multi=False),
        gpu_instance(cfg),
    ]
