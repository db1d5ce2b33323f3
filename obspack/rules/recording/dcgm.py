"""The GPU plane: dcgm-exporter fields per GPU, attributed to the vLLM pod (and model) that holds the GPU.

dcgm-exporter puts the workload in `pod`/`namespace`/`container` when scraped with honorLabels: true,
and in `exported_pod`/`exported_namespace`/`exported_container` with the default honorLabels: false
(the target's own labels then name the exporter pod). With --use-old-namespace they are `pod_name`,
`pod_namespace`, `container_name` and `uuid`; newer releases spell `Hostname` as `hostname`. All modes
are normalised here, without configuration, by one attribution rule; every field record joins it on the
exporter series' own key, so the expensive normalisation runs once per evaluation, not once per field.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.model import RecordingRule, RuleGroup
from obspack.rules.recording.vllm import pod_model

MIB = 1024 * 1024
GPU_LABELS = ("namespace", "pod", "gpu", "UUID", "Hostname")
EXPORTED_POD = 'exported_pod!=""'
NO_EXPORTED_POD = 'exported_pod=""'
OLD_POD = 'pod_name!=""'  # dcgm-exporter --use-old-namespace: pod_name, pod_namespace, container_name
NO_OLD_POD = 'pod_name=""'


def _label_replace(inner: str, args: str) -> str:
    return f"label_replace(\n{textwrap.indent(inner, '  ')},\n  {args}\n)"


def normalised(cfg: ObspackConfig, metric: str) -> str:
    """A DCGM series with the workload in pod/namespace/container whichever label mode scraped it."""
    dcgm = cfg.selectors.dcgm
    moved = metric + c.selector(dcgm, EXPORTED_POD)
    for label in ("pod", "namespace", "container"):
        moved = _label_replace(moved, f'"{label}", "$1", "exported_{label}", "(.+)"')
    renamed = metric + c.selector(dcgm, NO_EXPORTED_POD, OLD_POD)
    for new, old in (("pod", "pod_name"), ("namespace", "pod_namespace"), ("container", "container_name")):
        renamed = _label_replace(renamed, f'"{new}", "$1", "{old}", "(.+)"')
    plain = metric + c.selector(dcgm, NO_EXPORTED_POD, NO_OLD_POD)
    every = f"{moved}\nor\n{renamed}\nor\n{plain}"
    return _label_replace(_label_replace(every, '"Hostname", "$1", "hostname", "(.+)"'), '"UUID", "$1", "uuid", "(.+)"')


# One dcgm-exporter series per GPU (or MIG instance) has this key in every label mode.
KEY = ("instance", "gpu", "GPU_I_ID")
HOLDER = ("namespace", "pod", "UUID", "Hostname", "modelName")  # what the attribution adds to the key
WORKLOAD_GPU_LABELS = ("namespace", "pod", "model_name", "gpu", "UUID", "Hostname", "modelName")


@dataclass(frozen=True)
class Field:
    """A DCGM field recorded per held GPU; the first metric present per GPU wins."""

    record: str
    metrics: tuple[str, ...]
    group: str  # rules that read every GPU sit at most two to a group: groups evaluate concurrently
    scale: int = 1


FIELDS = (
    Field(c.WORKLOAD_GPU_FB_USED, ("DCGM_FI_DEV_FB_USED",), "framebuffer", MIB),
    Field(c.WORKLOAD_GPU_FB_FREE, ("DCGM_FI_DEV_FB_FREE",), "framebuffer", MIB),
    Field(c.GPU_UTILIZATION, ("DCGM_FI_DEV_GPU_UTIL",), "utilization"),
    # SM activity needs DCGM profiling; GR_ENGINE_ACTIVE is the coarser field where SM_ACTIVE is off.
    Field(c.GPU_SM_ACTIVE, ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), "utilization"),
    Field(c.GPU_TEMPERATURE, ("DCGM_FI_DEV_GPU_TEMP",), "thermal"),
    Field(c.GPU_POWER, ("DCGM_FI_DEV_POWER_USAGE",), "thermal"),
    Field(c.GPU_XID, ("DCGM_FI_DEV_XID_ERRORS",), "xid"),
)


def attribution(cfg: ObspackConfig) -> str:
    """Each GPU a vLLM pod holds, keyed by its exporter series and labelled with the pod.

    Normalising the label modes reads every GPU through nested label_replace: done once here, so each
    field below is a plain join on the key. topk keeps one holder per key, so a GPU shared by two pods
    (time-slicing) or a pod rescheduled within the lookback cannot break the joins with duplicates."""
    key = c.by(cfg, *KEY)
    held = textwrap.indent(normalised(cfg, "DCGM_FI_DEV_FB_USED"), "    ")
    return (
        f"topk by ({key}) (1,\n"
        f"  group by ({key}, {', '.join(HOLDER)}) (\n{held}\n  )\n"
        f"  and on ({c.by(cfg, 'namespace', 'pod')}) {c.VLLM_POD}\n)"
    )


def workload_attribution(cfg: ObspackConfig) -> str:
    """The attribution with the pod's served model; GPUs of a pod whose engine metrics are missing stay."""
    pod = c.by(cfg, "namespace", "pod")
    return (
        f"{c.GPU_INFO}\n* on ({pod}) group_left (model_name)\n{pod_model(cfg)}\n"
        f"or on ({c.by(cfg, *KEY)})\n{c.GPU_INFO}"
    )


def field_expr(cfg: ObspackConfig, f: Field) -> str:
    """One DCGM field per held GPU: the raw series joined on the key, workload labels from the attribution.

    The raw series are reduced to the key first, so series that differ only in the labels the join
    replaces (two jobs scraping one exporter, a GPU shared by two pods) cannot collide."""
    key = c.by(cfg, *KEY)
    raw = "\nor\n".join(f"max by ({key}) ({m}{c.selector(cfg.selectors.dcgm)})" for m in f.metrics)
    raw = f"(\n{textwrap.indent(raw, '  ')}\n)" if len(f.metrics) > 1 else raw
    copied = ", ".join(label for label in WORKLOAD_GPU_LABELS if label not in KEY)
    joined = f"{raw}\n* on ({key}) group_left ({copied})\n{c.WORKLOAD_GPU_INFO}"
    scale = f"{f.scale} * " if f.scale != 1 else ""
    return f"{scale}max by ({c.by(cfg, *WORKLOAD_GPU_LABELS)}) (\n{textwrap.indent(joined, '  ')}\n)"


def framebuffer_size(cfg: ObspackConfig) -> tuple[RecordingRule, ...]:
    """Framebuffer size and used share per held GPU, from the two framebuffer fields."""
    return (
        RecordingRule(c.WORKLOAD_GPU_FB_TOTAL, f"{c.WORKLOAD_GPU_FB_USED} + {c.WORKLOAD_GPU_FB_FREE}"),
        RecordingRule(c.WORKLOAD_GPU_FB_RATIO, f"{c.WORKLOAD_GPU_FB_USED} / {c.WORKLOAD_GPU_FB_TOTAL}"),
    )


def per_pod(cfg: ObspackConfig) -> tuple[RecordingRule, ...]:
    """The framebuffer records without the model: alerts and the triage page read these."""
    labels = c.by(cfg, *GPU_LABELS)
    return tuple(
        RecordingRule(record, f"max by ({labels}) ({source})")
        for record, source in (
            (c.GPU_FB_USED, c.WORKLOAD_GPU_FB_USED),
            (c.GPU_FB_FREE, c.WORKLOAD_GPU_FB_FREE),
            (c.GPU_FB_RATIO, c.WORKLOAD_GPU_FB_RATIO),
        )
    )


def groups(cfg: ObspackConfig) -> list[RuleGroup]:
    """The GPU plane's groups, in dependency order.

    A rule over every GPU costs 0.1 to 0.5 s at 8,000 GPUs with the rule groups sharing two cores
    (docs/benchmarks.md). Prometheus evaluates the rules of a group one after the other and groups
    concurrently, so those rules sit at most two or three (the cheap ones) to a group, and every group
    stays under a second on a large fleet."""

    def group(suffix: str, rules: Iterable[RecordingRule]) -> RuleGroup:
        name = f"{c.GROUP_PREFIX}-dcgm{suffix}.rules"
        return RuleGroup(name=name, rules=tuple(rules), interval=cfg.rule_interval)

    def fields(name: str) -> list[RecordingRule]:
        return [RecordingRule(f.record, field_expr(cfg, f)) for f in FIELDS if f.group == name]

    return [
        group("-attribution", (RecordingRule(c.GPU_INFO, attribution(cfg)),)),
        group("-attribution-model", (RecordingRule(c.WORKLOAD_GPU_INFO, workload_attribution(cfg)),)),
        group("-framebuffer", fields("framebuffer")),
        group("", framebuffer_size(cfg)),
        group("-pod", per_pod(cfg)),
        *(group(f"-{name}", fields(name)) for name in ("utilization", "thermal", "xid")),
    ]
