"""The GPU plane: which vLLM pod (and model) holds each GPU, and per-pod summaries of the DCGM fields.

dcgm-exporter puts the workload in `pod`/`namespace`/`container` when scraped with honorLabels: true,
and in `exported_pod`/`exported_namespace`/`exported_container` with the default honorLabels: false
(the target's own labels then name the exporter pod). With --use-old-namespace they are `pod_name`,
`pod_namespace`, `container_name` and `uuid`; newer releases spell `Hostname` as `hostname`. All modes
are normalised here, without configuration, by one attribution rule.

The design keeps the GPU plane cheap and live (docs/rules.md, "The GPU plane"):
- One series per held GPU, `namespace_pod_model_gpu:vllm_gpu:info`, keyed by the exporter series
  (`instance`, `gpu`, `GPU_I_ID`). It reads raw series only, so it is one rule-group hop from them.
- Consumers join raw DCGM fields to it on that key: the GPU alert (one hop from raw), the per-GPU
  panels of the pods a dashboard selects, and the per-pod summaries below.
- Per-pod summaries (`namespace_pod_model:vllm_gpu_*`) are what the fleet-wide GPU panels draw: one
  series per pod instead of one per GPU and field.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import promql_parser

from obspack import conventions as c
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig, scope_matcher
from obspack.rules import lws
from obspack.rules.model import RecordingRule, RuleGroup
from obspack.rules.recording.kubernetes import vllm_image_pods, vllm_leaders

MIB = 1024 * 1024
EXPORTED_POD = 'exported_pod!=""'
NO_EXPORTED_POD = 'exported_pod=""'
OLD_POD = 'pod_name!=""'  # dcgm-exporter --use-old-namespace: pod_name, pod_namespace, container_name
NO_OLD_POD = 'pod_name=""'

# One dcgm-exporter series per GPU (or MIG instance) has this key in every label mode.
KEY = ("instance", "gpu", "GPU_I_ID")
POD_LABELS = ("namespace", "pod")
HOLDER = ("namespace", "pod", "UUID", "Hostname", "modelName", "GPU_I_PROFILE")  # what the attribution adds to the key
# (GPU_I_PROFILE: a MIG instance's profile, e.g. 3g.40gb; absent on a whole GPU)
# The labels of a GPU as alerts and per-GPU panels show it.
GPU_LABELS = ("namespace", "pod", "gpu", "UUID", "Hostname")
# What a pod's GPUs are counted by: every GPU of a pod on one node, of one model and MIG profile, is alike.
NODE_GPUS = (*POD_MODEL, "modelName", "Hostname", "GPU_I_PROFILE")


def _operand(expr: str) -> str:
    """`expr` as an operand of a join: parenthesised where it is itself a binary expression (an `or` would
    otherwise bind looser than the join)."""
    if isinstance(promql_parser.parse(expr), promql_parser.BinaryExpr):
        return f"(\n{textwrap.indent(expr, '  ')}\n)"
    return expr


def _label_replace(inner: str, args: str) -> str:
    return f"label_replace(\n{textwrap.indent(inner, '  ')},\n  {args}\n)"


def normalised(cfg: ObspackConfig, metric: str, read: Callable[[str], str] = lambda selector: selector) -> str:
    """A DCGM series with the workload in pod/namespace/container whichever label mode scraped it.

    `read` wraps each raw selector, e.g. in `max_over_time(...[14d])` (obspack rightsize reads windows)."""
    renamed = [
        _renamed(read(metric + c.selector(cfg.selectors.dcgm, *mode.matchers(cfg))), mode.renames)
        for mode in MODES
    ]
    every = "\nor\n".join(renamed)
    return _label_replace(_label_replace(every, '"Hostname", "$1", "hostname", "(.+)"'), '"UUID", "$1", "uuid", "(.+)"')


def _renamed(series: str, renames: tuple[tuple[str, str], ...]) -> str:
    for new, old in renames:
        series = _label_replace(series, f'"{new}", "$1", "{old}", "(.+)"')
    return series


@dataclass(frozen=True)
class Mode:
    """A dcgm-exporter label mode: where it puts the workload, and the matchers that pick its series."""

    pod: str
    namespace: str
    container: str
    picks: tuple[str, ...]

    def matchers(self, cfg: ObspackConfig) -> tuple[str, ...]:
        # scope.namespace_regex on the label this mode carries the workload's namespace in
        return (*self.picks, scope_matcher(self.namespace, regex=cfg.scope.namespace_regex))

    @property
    def renames(self) -> tuple[tuple[str, str], ...]:
        moves = (("pod", self.pod), ("namespace", self.namespace), ("container", self.container))
        return tuple((new, old) for new, old in moves if new != old)


OLD_NAMES = Mode("pod_name", "pod_namespace", "container_name", (NO_EXPORTED_POD, OLD_POD))  # --use-old-namespace
MODES = (
    Mode("exported_pod", "exported_namespace", "exported_container", (EXPORTED_POD,)),  # honorLabels: false
    OLD_NAMES,
    Mode("pod", "namespace", "container", (NO_EXPORTED_POD, NO_OLD_POD)),  # honorLabels: true
)


def pod_models(cfg: ObspackConfig, pods: str) -> str:
    """One series per vLLM pod, with its served model where the engine metrics say it.

    LeaderWorkerSet workers serve no engine metrics: they take their leader's model. vLLM pods whose
    engine metrics are missing (crash-looping, not scraped yet) stay, without model_name, so their GPUs
    are still attributed. topk keeps one model per pod for the join. `pods`: the vLLM pods besides those
    (empty: none); `vllm_image_pods(cfg)` (by image or name) is enough: with the engines' pods and their
    workers, the first two legs, every pod a vLLM container is found in by its image, name or engine
    metrics. The attribution group records these first, then the pods alone from them (one read of the
    sources for both)."""
    pod = c.by(cfg, "namespace", "pod")
    leaders = vllm_leaders(cfg)
    workers = f"group by ({pod}, model_name) (\n{textwrap.indent(lws.workers(cfg, leaders, ('model_name',)), '  ')}\n)"
    return f"{leaders}\nor on ({pod})\n{workers}" + (f"\nor on ({pod})\n{pods}" if pods else "")


def attribution(cfg: ObspackConfig, models: str | None = None) -> str:
    """Each GPU a vLLM pod holds, keyed by its exporter series, labelled with the pod and its model.

    Each label mode's GPUs are grouped by the key, what the record keeps and the labels that mode names the
    workload with, then joined to the vLLM pods on those labels: the pods' labels are renamed to the mode's
    (one series per pod) instead of the GPUs' to `pod` and `namespace` (one per GPU), and the join copies
    `pod`, `namespace` and the model. `uuid` (--use-old-namespace) is renamed in that mode's GPUs only, and
    `hostname` (newer releases) in the GPUs held. The outer topk keeps one holder per key, so a GPU shared
    by two pods (time-slicing) or a pod rescheduled within the lookback cannot break the joins with
    duplicates. `models`: the vLLM pods and their models, by default from raw series (the doctor prices
    GPUs with it before any record exists); the record reads them from the record made first in its
    group, so the GPU alert stays one hop from the data."""
    key = c.by(cfg, *KEY)
    models = models or pod_models(cfg, vllm_image_pods(cfg))
    legs = []
    for mode in MODES:
        plain = mode.pod == "pod"
        by = (*KEY, *(label for label in HOLDER if label not in POD_LABELS), mode.namespace, mode.pod, "hostname")
        by += ("uuid",) if mode is OLD_NAMES else ()
        gpus = f"group by ({c.by(cfg, *by)}) (DCGM_FI_DEV_FB_USED{c.selector(cfg.selectors.dcgm, *mode.matchers(cfg))})"
        # the renamed pods are a label_replace call: only the pods as given can be a binary expression
        pods = _operand(models) if plain else _renamed(models, ((mode.pod, "pod"), (mode.namespace, "namespace")))
        copied = "model_name" if plain else f"{', '.join(POD_LABELS)}, model_name"
        leg = f"{gpus}\n* on ({c.by(cfg, mode.namespace, mode.pod)}) group_left ({copied})\n{pods}"
        legs.append(_renamed(leg, (("UUID", "uuid"),)) if mode is OLD_NAMES else leg)
    held = _label_replace("\nor\n".join(legs), '"Hostname", "$1", "hostname", "(.+)"')
    return f"topk by ({key}) (1,\n  group by ({key}, {', '.join(HOLDER)}, model_name) (\n{textwrap.indent(held, '    ')}\n  )\n)"


def field(cfg: ObspackConfig, *metrics: str, where: str = "") -> str:
    """A raw DCGM field per exporter key; the first metric present per GPU wins. `where` adds matchers
    (dashboards narrow to the exporters of the selected pods).

    `max by` the key first: two jobs scraping one exporter, or label modes that differ only in the
    workload labels, would otherwise collide in the join."""
    sel = c.selector(cfg.selectors.dcgm, where)
    reads = [f"max by ({c.by(cfg, *KEY)}) ({m}{sel})" for m in metrics]
    return reads[0] if len(reads) == 1 else "(\n  " + "\n  or\n  ".join(reads) + "\n)"


def framebuffer_ratio(cfg: ObspackConfig, where: str = "") -> str:
    """Framebuffer used / (used + free) per exporter key, written 1 / (1 + free / used) so that each field is
    read once (0 where nothing is used: free / 0 is +Inf); every GPU of the fleet goes through it."""
    used, free = field(cfg, "DCGM_FI_DEV_FB_USED", where=where), field(cfg, "DCGM_FI_DEV_FB_FREE", where=where)
    return f"1 / (\n  1 + {free}\n  / on ({c.by(cfg, *KEY)})\n  {used}\n)"


def held(cfg: ObspackConfig, per_key: str, labels: tuple[str, ...], info: str = c.GPU_INFO) -> str:
    """A per-key DCGM expression on the GPUs vLLM pods hold, labelled with `labels` of the holder."""
    copied = ", ".join(label for label in labels if label not in KEY)
    return f"{_operand(per_key)}\n* on ({c.by(cfg, *KEY)}) group_left ({copied})\n{info}"


@dataclass(frozen=True)
class Summary:
    """A DCGM field summarised over the GPUs of each vLLM pod."""

    record: str
    agg: str
    per_key: Callable[[ObspackConfig], str]  # the field per exporter key, before the join
    group: str  # rules that read every GPU sit two to a group: groups evaluate concurrently


SUMMARIES = (
    Summary(c.POD_GPU_FB_RATIO_MAX, "max", framebuffer_ratio, "framebuffer"),
    # The number of GPUs whose last XID error is not 0: present (0) on healthy pods, so panels show 0.
    Summary(c.POD_GPU_XID_COUNT, "sum", lambda cfg: f"{field(cfg, 'DCGM_FI_DEV_XID_ERRORS')} != bool 0", "xid"),
    Summary(c.POD_GPU_UTILIZATION, "avg", lambda cfg: field(cfg, "DCGM_FI_DEV_GPU_UTIL"), "utilization"),
    # SM activity needs DCGM profiling; GR_ENGINE_ACTIVE is the coarser field where SM_ACTIVE is off.
    Summary(
        c.POD_GPU_SM_ACTIVE,
        "avg",
        lambda cfg: field(cfg, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        "utilization",
    ),
    Summary(c.POD_GPU_TEMPERATURE, "max", lambda cfg: field(cfg, "DCGM_FI_DEV_GPU_TEMP"), "thermal"),
    Summary(c.POD_GPU_POWER, "sum", lambda cfg: field(cfg, "DCGM_FI_DEV_POWER_USAGE"), "thermal"),
)


def summary_expr(cfg: ObspackConfig, s: Summary) -> str:
    joined = held(cfg, s.per_key(cfg), POD_MODEL)
    return f"{s.agg} by ({c.by(cfg, *POD_MODEL)}) (\n{textwrap.indent(joined, '  ')}\n)"


def groups(cfg: ObspackConfig, after_attribution: Iterable[RecordingRule] = ()) -> list[RuleGroup]:
    """The GPU plane's groups: the vLLM pods and the attribution (then `after_attribution`, the cost records,
    which start from them within the group), then the per-pod summaries reading it. The pod record comes
    first: the cost records read it several times each, where the raw sources behind it (images in
    kube-state-metrics and cAdvisor, engine series, LeaderWorkerSet owners) cost far more; the attribution
    reads the pods' models from it too (vmalert does not show a rule what an earlier rule of its group wrote
    at the same evaluation, so there a pod that starts reaches the attribution an evaluation later:
    docs/engines.md). The GPUs per pod, node, model and profile come next: the cost records and the GPU count
    read them, one series per pod, where each read of the attribution reads one series per GPU.

    A rule over every GPU costs 0.3 to 0.5 s at 8,000 GPUs with the rule groups sharing two cores
    (docs/benchmarks.md). Prometheus evaluates the rules of a group one after the other and groups
    concurrently, so the summaries sit at most two to a group (the framebuffer ratio, which reads two fields,
    alone; the GPU count per pod, which only dashboards read, beside the XID count)."""

    def group(suffix: str, rules: Iterable[RecordingRule]) -> RuleGroup:
        return RuleGroup(name=f"{c.GROUP_PREFIX}-dcgm{suffix}.rules", rules=tuple(rules), interval=cfg.rule_interval)

    def summaries(name: str) -> list[RecordingRule]:
        return [RecordingRule(s.record, summary_expr(cfg, s)) for s in SUMMARIES if s.group == name]

    # GPUs per pod, for the dashboards only: beside the XID count, the lightest of the per-pod summaries
    model, pod = c.by(cfg, "namespace", "model_name"), c.by(cfg, *POD_MODEL)
    gpus = f"sum by ({pod}) ({c.POD_NODE_GPU_COUNT})"
    count = RecordingRule(c.POD_GPU_COUNT, gpus)
    # per model, for the GPU page's mean utilisation: after the per-pod means, with the GPU counts they are
    # weighted by, both from the attribution group's count (one hop, read at one time, so they agree); the
    # per-pod count is the same expression as the record above, inline (that record is a group away)
    per_model = (
        RecordingRule(
            c.MODEL_GPU_UTILIZATION_SUM,
            f"sum by ({model}) (\n  {c.POD_GPU_UTILIZATION}\n  * on ({pod})\n  {gpus}\n)",
        ),
        RecordingRule(c.MODEL_GPU_COUNT, f"sum by ({model}) ({c.POD_NODE_GPU_COUNT})"),
    )
    return [
        group(
            "-attribution",
            (
                RecordingRule(c.VLLM_POD_MODEL, pod_models(cfg, vllm_image_pods(cfg))),
                RecordingRule(c.VLLM_POD, f"group by ({c.by(cfg, 'namespace', 'pod')}) ({c.VLLM_POD_MODEL})"),
                RecordingRule(c.GPU_INFO, attribution(cfg, c.VLLM_POD_MODEL)),
                RecordingRule(c.POD_NODE_GPU_COUNT, f"count by ({c.by(cfg, *NODE_GPUS)}) ({c.GPU_INFO})"),
                *after_attribution,
            ),
        ),
        group("-framebuffer", summaries("framebuffer")),
        group("-xid", (*summaries("xid"), count)),
        group("-utilization", (*summaries("utilization"), *per_model)),
        group("-thermal", summaries("thermal")),
    ]
