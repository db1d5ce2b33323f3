"""The GPU-memory plane: dcgm-exporter framebuffer series, attributed to the vLLM pod that holds the GPU.

dcgm-exporter puts the workload in `pod`/`namespace`/`container` when scraped with honorLabels: true,
and in `exported_pod`/`exported_namespace`/`exported_container` with the default honorLabels: false
(the target's own labels then name the exporter pod). With --use-old-namespace they are `pod_name`,
`pod_namespace`, `container_name` and `uuid`; newer releases spell `Hostname` as `hostname`. Both modes are normalised here, without configuration.
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.model import RecordingRule, RuleGroup

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


def _per_vllm_gpu(cfg: ObspackConfig, metric: str) -> str:
    inner = textwrap.indent(normalised(cfg, metric), "  ")
    return (
        f"{MIB} * max by ({c.by(cfg, *GPU_LABELS)}) (\n{inner}\n)\n"
        f"and on ({c.by(cfg, 'namespace', 'pod')}) {c.VLLM_POD}"
    )


def group(cfg: ObspackConfig) -> RuleGroup:
    on = c.by(cfg, *GPU_LABELS)
    rules = [
        RecordingRule(record=c.GPU_FB_USED, expr=_per_vllm_gpu(cfg, "DCGM_FI_DEV_FB_USED")),
        RecordingRule(record=c.GPU_FB_FREE, expr=_per_vllm_gpu(cfg, "DCGM_FI_DEV_FB_FREE")),
        RecordingRule(
            record=c.GPU_FB_RATIO,
            expr=f"{c.GPU_FB_USED}\n/ on ({on})\n({c.GPU_FB_USED} + on ({on}) {c.GPU_FB_FREE})",
        ),
    ]
    return RuleGroup(name=f"{c.GROUP_PREFIX}-dcgm.rules", rules=tuple(rules), interval=cfg.rule_interval)
