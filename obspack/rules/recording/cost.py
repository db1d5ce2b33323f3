"""What the GPUs of vLLM pods cost: GPU-hours per pod, workload, team and model, split into serving, idle and
asleep; the price of each GPU in use; cost per hour, per million input and output tokens, the prefix
cache's savings, and the goodput share (docs/cost.md).

The records the cost alerts read (GPUs held per pod and model and state, the pods' roles, tokens) sit in the
GPU attribution group, after the attribution record they start from, so that they are computed from raw
series within one group: the alerts read them one group hop from the data, and a rule reading one made
earlier in the group sees this evaluation's value. The prices and costs, which only the cost page reads,
are a group of their own (`obspack-cost.rules`), one hop further, with the workload and team of each pod,
which only the costs per workload read.

- GPUs held per pod: the GPUs dcgm-exporter maps to the pod (the attribution record: one holder per GPU,
  so a GPU time-sliced between pods is counted once; a MIG instance as its share of the GPU's compute
  slices), else, on nodes where DCGM maps no vLLM GPU at all, the pod's `nvidia.com/gpu` requests from
  kube-state-metrics (running pods only), with the GPU model from GPU Feature Discovery's node label.
- State per pod: asleep (sleep mode: the `awake` sleep state reads 0), else serving (a request runs now,
  or a prompt went in or a token came out within the last 5 minutes), else idle (holding GPUs, serving
  nothing). A request that ran within the window and is gone now took a prompt or gave a token in it,
  unless it hung and was dropped: the instant gauge spares a range read of every engine.
- Prices per node and GPU model in use: the first `cost.gpus` entry that matches (model, cluster, node
  pool), else `cost.default_hourly`; or OpenCost's node_gpu_hourly_cost; or 1 (costs in GPU-hours).
- Cost is split into input and output: a prefill pod's cost goes to input tokens, a decode pod's to output
  tokens; a pod that does both splits its cost by the time its requests spent in prefill and in decode
  (vLLM's request_prefill_time and request_decode_time; half and half when it served nothing in the hour),
  as OpenCost's inference cost does.
- Tokens: input tokens (prompt, cached or not) of pods that prefill, output tokens of pods that decode, so a
  disaggregated request counts once; production-stack's router copies (no model_name) never count.
- Over a range, a record's GPU-hours are the sum of its samples times the evaluation step, which the
  evaluation-time record gives (the step is whatever interval Prometheus runs the group at).
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack import slos
from obspack.catalogue.vllm import DECODE, PREFILL
from obspack.config import ObspackConfig, promql_string, scope_matcher
from obspack.config.cost import GPU_HOURS
from obspack.rules import lws
from obspack.rules.model import RecordingRule, RuleGroup
from obspack.rules.recording.dcgm import attribution
from obspack.rules.recording.vllm import PREFIX_HITS, asleep, sel
from obspack.rules.roles import ksm_label, role_of

POD = ("namespace", "pod")
MODEL = ("namespace", "model_name")
HELD = ("namespace", "pod", "model_name", "modelName", "node")  # what a pod's GPUs are keyed by
WORKLOAD = ("workload_type", "workload", "team_name")
STATE_WINDOW = "5m"  # serving: a prompt went in or a token came out within this window
SHARE_WINDOW = "1h"  # the prefill/decode time split of pods that do both
GPU_REQUEST = 'resource="nvidia_com_gpu"'
FIRST_GPU = 'gpu="0"'  # dcgm-exporter's device index: every node with a GPU has a GPU 0
RUNNING = 'phase="Running"'
BY_REPLICASET = 'owner_kind="ReplicaSet"'
NOT_BY_REPLICASET = 'owner_kind!="ReplicaSet"'
INPUT = 'tokens="input"'
GFD_PRODUCT = "label_nvidia_com_gpu_product"  # GPU Feature Discovery's nvidia.com/gpu.product node label
# A MIG instance's share of its GPU: its compute slices (the N of an `Ng.XXgb` profile) over the GPU's.
# NVIDIA's MIG user guide: A100, H100, H200, B200 and GB200 have 7 slices; A30 and the RTX PRO 6000 have 4.
# Each label_replace below matches every value (an empty group where there is nothing to take):
# VictoriaMetrics, inside a long expression, can set a label a non-matching label_replace should leave alone.
MIG_SLICES = 7
MIG_PROFILE = "(?:.*\\.)?([1-47])g\\..*|.*"  # 3g.40gb, 1g.10gb+me, 1c.3g.40gb: "g3"; a whole GPU or another N: "g"
MIG_PROFILE_NS = (1, 2, 3, 4, 7)
MIG_FOUR_SLICES = ".*(A)30.*|.*(R)TX[ -]PRO[ -]6000.*|.*"  # "sA", "sR": 4 slices; "s": 7
MIG_GPU_KEYS = {"s": 7, "sA": 4, "sR": 4}
ROLES = ("prefill", "decode", "both")


def blank_tolerant(regex: str) -> str:
    """A GPU model regex where a space (outside brackets) also matches a dash: DCGM writes NVIDIA H100 80GB
    HBM3, dcgm-exporter --replace-blanks-in-model-name and GPU Feature Discovery NVIDIA-H100-80GB-HBM3."""
    out, depth, escaped = [], 0, False
    for ch in regex:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif ch == "[":
            depth += 1
            out.append(ch)
        elif ch == "]" and depth:
            depth -= 1
            out.append(ch)
        else:
            out.append("[ -]" if ch == " " and not depth else ch)
    return "".join(out)


def _set(label: str) -> str:
    return f'{label}!=""'


def hours_per_evaluation(window: str) -> str:
    """Hours between two evaluations of the cost records over `window`, from the evaluation-time record:
    a record's sum over the window times this is its integral (GPU-hours, money). Where several rulers
    write the record (Thanos, one per cluster), the slowest step counts."""
    t = c.COST_EVALUATION
    span = f"max_over_time({t}[{window}]) - min_over_time({t}[{window}])"
    return f"max(\n  ({span})\n  / (count_over_time({t}[{window}]) - 1)\n) / 3600"


def integral(cfg: ObspackConfig, record: str, window: str, *labels: str) -> str:
    """A per-hour record summed over `window` by `labels`: GPU-hours, or cost (`record` may carry matchers)."""
    return (
        f"sum by ({c.by(cfg, *labels)}) (sum_over_time({record}[{window}]))\n"
        f"* on () group_left ()\n({hours_per_evaluation(window)})"
    )


def _ksm(cfg: ObspackConfig, *matchers: str) -> str:
    return c.selector(cfg.selectors.kube_state_metrics, *matchers)


def _ksm_of(cfg: ObspackConfig, metric: str, *matchers: str) -> str:
    """The selector of a kube-state-metrics `metric`: its node series are in no namespace (c.node_matchers)."""
    ksm = cfg.selectors.kube_state_metrics
    return c.selector(c.node_matchers(ksm) if metric.startswith("kube_node_") else ksm, *matchers)


def _indent(expr: str) -> str:
    return textwrap.indent(expr, "  ")


def _label(expr: str, label: str, value: str) -> str:
    return f'label_replace(\n{_indent(expr)},\n  "{label}", "{value}", "", ""\n)'


def _copy(expr: str, to: str, source: str) -> str:
    return f'label_replace(\n{_indent(expr)},\n  "{to}", "$1", "{source}", "(.*)"\n)'


# ---------------------------------------------------------------------------------------------------------
# GPUs held per pod


def mig_shares() -> str:
    """A constant table: the share of its GPU each MIG instance holds, by its compute slices (`mig_g`, from
    the profile) and the GPU's (`mig_slices`, from the model); 1 for a whole GPU (`mig_g="g"`), and never
    more than 1."""
    rows = []
    for key, slices in MIG_GPU_KEYS.items():
        for g, share in (("g", "1"), *((f"g{n}", f"{n} / {slices}" if n < slices else "1") for n in MIG_PROFILE_NS)):
            rows.append(f'label_replace(label_replace(vector({share}), "mig_g", "{g}", "", ""), "mig_slices", "{key}", "", "")')
    return "\n  or\n  ".join(rows)


def dcgm_held(cfg: ObspackConfig) -> str:
    """GPUs per pod from the attribution: whole GPUs count 1, MIG instances their share (a profile of another
    shape counts 1: never less than it may cost). The shares are looked up per pod and profile (the count
    record made from the attribution earlier in the group), not per GPU."""
    info = f'label_replace(\n{_indent(c.POD_NODE_GPU_COUNT)},\n  "mig_g", "g$1", "GPU_I_PROFILE", {promql_string(MIG_PROFILE)}\n)'
    info = f'label_replace(\n{_indent(info)},\n  "mig_slices", "s$1$2", "modelName", {promql_string(MIG_FOUR_SLICES)}\n)'
    shared = f"{info}\n* on (mig_g, mig_slices) group_left ()\n(\n  {mig_shares()}\n)"
    return f"sum by ({c.by(cfg, *HELD)}) (\n{_indent(_copy(shared, 'node', 'Hostname'))}\n)"


def dcgm_nodes(cfg: ObspackConfig, nodes: str) -> str:
    """1 for each of `nodes` where DCGM maps a vLLM pod's GPU, else 0: kube-state-metrics' requests count only
    where it is 0. (A fallback, not a negation: on partial data a node DCGM does not answer for counts its
    requests, so the group warns under Thanos where nothing else in it negates.) The mapped nodes come from
    the GPU count per pod and node, one series per pod, not from the attribution's one per GPU."""
    node = c.by(cfg, "node")
    mapped = _copy(f"group by ({c.by(cfg, 'Hostname')}) ({c.POD_NODE_GPU_COUNT})", "node", "Hostname")
    return f"max by ({node}) (\n{_indent(mapped)}\n)\nor on ({node})\n0 * {nodes}"


def ksm_held(cfg: ObspackConfig) -> str:
    """GPUs a running vLLM pod requests, on nodes where DCGM maps none (no DCGM, or no pod mapping), with the
    GPU model from GPU Feature Discovery's node label where kube-state-metrics has it."""
    pod, node = c.by(cfg, *POD), c.by(cfg, "node")
    requests = f"max by ({c.by(cfg, *POD, 'container', 'node')}) (kube_pod_container_resource_requests{_ksm(cfg, GPU_REQUEST)})"
    per_pod = f"sum by ({c.by(cfg, *POD, 'node')}) (\n  {requests}\n)"
    running = f"max by ({pod}) (kube_pod_status_phase{_ksm(cfg, RUNNING)}) == 1"
    nodes = f"group by ({node}) (kube_pod_container_resource_requests{_ksm(cfg, GPU_REQUEST)})"
    held = (
        f"{per_pod} > 0\n"
        f"and on ({pod}) ({running})\n"
        f"and on ({pod}) {c.VLLM_POD}\n"
        f"and on ({node}) (\n  (\n{_indent(_indent(dcgm_nodes(cfg, nodes)))}\n  ) == 0\n)"
    )
    gfd = _named(cfg, "kube_node_labels", ("node",), GFD_PRODUCT, "modelName")
    # every node, with its GPU model where GFD's label says it, else where DCGM runs there without its pod
    # mapping (kube_node_info: one series per node). One model per node is kept, so DCGM's first GPU is
    # enough: an eighth of the series on 8-GPU nodes, read at every evaluation even when no pod falls back.
    dcgm = f"topk by ({node}) (1,\n{_indent(dcgm_node_models(cfg, FIRST_GPU))}\n)"
    nodes_typed = f"{gfd}\nor on ({node})\n{dcgm}\nor on ({node})\ngroup by ({node}) (kube_node_info{_ksm_of(cfg, 'kube_node_info')})"
    typed = f"(\n{_indent(held)}\n)\n* on ({node}) group_left (modelName)\n(\n{_indent(nodes_typed)}\n)"
    models = c.VLLM_POD_MODEL  # made first in this group
    return f"(\n{_indent(typed)}\n)\n* on ({pod}) group_left (model_name)\n(\n{_indent(models)}\n)"


def held(cfg: ObspackConfig) -> str:
    """DCGM's GPUs per pod, or for a pod DCGM maps nothing to, kube-state-metrics' requests."""
    return f"(\n{_indent(dcgm_held(cfg))}\n)\nor on ({c.by(cfg, *POD)})\n(\n{_indent(ksm_held(cfg))}\n)"


def states(cfg: ObspackConfig) -> str:
    """One series per pod holding GPUs, with `state`: asleep, else serving, else idle."""
    pod = c.by(cfg, *POD)
    w = STATE_WINDOW
    serving = (
        f"group by ({pod}) (\n"
        f"  vllm:num_requests_running{sel(cfg)} > 0\n"
        f"  or\n  rate(vllm:generation_tokens_total{sel(cfg)}[{w}]) > 0\n"
        f"  or\n  rate(vllm:prompt_tokens_total{sel(cfg)}[{w}]) > 0\n)"  # embedding models generate nothing
    )
    universe = c.VLLM_POD  # every pod holding GPUs here is a vLLM pod
    # A LeaderWorkerSet worker serves no engine series (and never sleeps): its GPUs serve while its leader
    # does. The serving test is read once for the pods and their workers: the group is the pack's heaviest.
    serving = lws.with_workers(cfg, serving, universe)
    return (
        f"{_label(asleep(cfg), 'state', 'asleep')}\nor on ({pod})\n{_label(serving, 'state', 'serving')}\n"
        f"or on ({pod})\n{_label(universe, 'state', 'idle')}"
    )


def pod_gpus(cfg: ObspackConfig) -> str:
    return f"(\n{_indent(held(cfg))}\n)\n* on ({c.by(cfg, *POD)}) group_left (state)\n(\n{_indent(states(cfg))}\n)"


# ---------------------------------------------------------------------------------------------------------
# Who pays: workload, team and role per pod


def workloads(cfg: ObspackConfig) -> str:
    """The workload that owns each pod: a ReplicaSet's own owner (its Deployment), else the pod's owner."""
    pod = c.by(cfg, *POD)
    rs = c.by(cfg, "namespace", "replicaset")
    owned = _set("owner_kind"), 'owner_kind!="<none>"'
    by_rs = f"max by ({pod}, owner_name) (kube_pod_owner{_ksm(cfg, BY_REPLICASET)})"
    rs_owner = f"topk by ({rs}) (1, max by ({rs}, owner_kind, owner_name) (kube_replicaset_owner{_ksm(cfg, *owned)}))"
    via_rs = f"{_copy(by_rs, 'replicaset', 'owner_name')}\n* on ({rs}) group_left (owner_kind, owner_name)\n{rs_owner}"
    direct = f"kube_pod_owner{_ksm(cfg, *owned, NOT_BY_REPLICASET)}"
    named = [
        f"max by ({c.by(cfg, *POD, 'workload_type', 'workload')}) (\n"
        f"{_indent(_copy(_copy(e, 'workload', 'owner_name'), 'workload_type', 'owner_kind'))}\n)"
        for e in (via_rs, direct)
    ]
    return f"topk by ({pod}) (1,\n{_indent(named[0])}\n  or on ({pod})\n{_indent(named[1])}\n)"


def _named(cfg: ObspackConfig, metric: str, keep: tuple[str, ...], label: str, to: str) -> str:
    """One series per `keep` with kube-state-metrics' `label` copied into `to` (where it is set)."""
    keep_ = c.by(cfg, *keep)
    renamed = _copy(f"{metric}{_ksm_of(cfg, metric, _set(label))}", to, label)
    return f"topk by ({keep_}) (1, max by ({keep_}, {to}) (\n{_indent(renamed)}\n))"


def teams(cfg: ObspackConfig, pods: str) -> str:
    """The team of each pod: its `cost.team_label` label, else its namespace's."""
    label = ksm_label(cfg.cost.team_label)
    pod, ns = c.by(cfg, *POD), c.by(cfg, "namespace")
    own = _named(cfg, "kube_pod_labels", POD, label, "team_name")
    space = _named(cfg, "kube_namespace_labels", ("namespace",), label, "team_name")
    by_namespace = f"{pods}\n* on ({ns}) group_left (team_name)\n{space}"
    return f"{own}\nor on ({pod})\n(\n{_indent(by_namespace)}\n)"


def roles(cfg: ObspackConfig) -> str:
    """The prefill/decode role of each vLLM pod (obspack/rules/roles.py): `prefill`, `decode`, else `both`."""
    pods = c.VLLM_POD  # made first in the attribution group
    return f"group by ({c.by(cfg, *POD, 'role')}) (\n{_indent(role_of(cfg, pods, other='both'))}\n)"


def pod_info(cfg: ObspackConfig) -> str:
    """One series per vLLM pod: its role (the role record), workload and team (each missing label stays
    empty). Only the costs per workload read the workload and team: this sits in the cost group, where
    the kube-state-metrics owners of every pod cost the attribution group nothing (docs/benchmarks.md)."""
    pod = c.by(cfg, *POD)
    pods = c.VLLM_POD
    dims = [f"(\n{_indent(workloads(cfg))}\n  or on ({pod})\n  {pods}\n)"]
    if cfg.cost.team_label:
        dims.append(f"(\n{_indent(teams(cfg, pods))}\n  or on ({pod})\n  {pods}\n)")
    joined = c.POD_ROLE
    for dim, labels in zip(dims, ("workload_type, workload", "team_name")):
        joined = f"{joined}\n* on ({pod}) group_left ({labels})\n{dim}"
    return joined


# ---------------------------------------------------------------------------------------------------------
# Prices


def node_pools(cfg: ObspackConfig) -> str:
    return _named(cfg, "kube_node_labels", ("node",), ksm_label(cfg.cost.node_pool_label), "node_pool")


def dcgm_node_models(cfg: ObspackConfig, *matchers: str) -> str:
    """The GPU models dcgm-exporter reports per node, whether or not a pod holds the GPUs. It spells the node
    Hostname, newer releases hostname: each is read where it is set (a label_replace that always matches).
    `matchers` narrow the DCGM series read (`FIRST_GPU`: one GPU per node, where one model per node is enough)."""
    def spelled(label: str) -> str:
        selector = c.selector(cfg.selectors.dcgm, label + '!=""', *matchers)
        return _copy(f"group by ({c.by(cfg, label, 'modelName')}) (DCGM_FI_DEV_FB_USED{selector})", "node", label)

    parts = [spelled(label) for label in ("Hostname", "hostname")]
    return f"group by ({c.by(cfg, 'node', 'modelName')}) (\n{_indent(parts[0])}\n  or\n{_indent(parts[1])}\n)"


def node_models(cfg: ObspackConfig) -> str:
    """The GPU models of each node, from raw series: DCGM's modelName (whether or not a pod holds the GPU),
    and GPU Feature Discovery's label on nodes where only kube-state-metrics' requests count; with the node
    pool where a label names it. Prices are set per row (and read per node and model), so this reads no
    record: what reads the prices stays cheap to check (obspack doctor writes records out)."""
    keep = c.by(cfg, "node", "modelName")
    gfd = _named(cfg, "kube_node_labels", ("node",), GFD_PRODUCT, "modelName")
    requests = f"group by ({c.by(cfg, 'node')}) (kube_pod_container_resource_requests{_ksm(cfg, GPU_REQUEST)} > 0)"
    models = f"{dcgm_node_models(cfg)}\nor\ngroup by ({keep}) (\n{_indent(gfd)}\n)\nor on ({c.by(cfg, 'node')})\n{requests}"
    if not cfg.cost.node_pool_label:
        return models
    return f"(\n{_indent(models)}\n)\n* on ({c.by(cfg, 'node')}) group_left (node_pool)\n{node_pools(cfg)}\nor on ({keep})\n(\n{_indent(models)}\n)"


def prices(cfg: ObspackConfig, in_use: str = c.NODE_GPU_MODEL) -> str:
    """The price of a GPU-hour per node and GPU model; first match wins (`or` keeps the left one)."""
    cost, keep = cfg.cost, c.by(cfg, "node", "modelName")
    if cost.source == "opencost":
        opencost = f"max by ({c.by(cfg, 'node')}) (node_gpu_hourly_cost{c.selector(cost.opencost.selector)})"
        return f"group by ({keep}) ({in_use})\n* on ({c.by(cfg, 'node')}) group_left ()\n{opencost}"
    if cost.currency == GPU_HOURS:
        return f"group by ({keep}) ({in_use})"
    branches = []
    for entry in cost.gpus:
        matchers = [f"modelName=~{promql_string(blank_tolerant(entry.model_regex))}"]
        matchers.append(scope_matcher(cfg.cluster_label, entry.cluster_regex))
        matchers.append(scope_matcher("node_pool", entry.node_pool_regex))
        branches.append(f"{entry.hourly:g} * group by ({keep}) ({in_use}{c.selector(*matchers)})")
    if cost.default_hourly is not None:
        branches.append(f"{cost.default_hourly:g} * group by ({keep}) ({in_use})")
    return "\nor\n".join(branches) or f"group by ({keep}) ({in_use}) < 0"


def pod_cost(cfg: ObspackConfig, *info_matchers: str, labels: str = "") -> str:
    """Cost per hour of each pod's GPUs, with the pod's `labels` from the pod info record (narrowed by
    `info_matchers`)."""
    priced = f"{c.POD_GPUS_ALLOCATED}\n* on ({c.by(cfg, 'node', 'modelName')}) group_left ()\n{c.GPU_PRICE}"
    info = c.POD_COST_INFO + c.selector(*info_matchers)
    return f"{priced}\n* on ({c.by(cfg, *POD)}) group_left ({labels})\n{info}"


# ---------------------------------------------------------------------------------------------------------
# Per model: cost split into input and output, tokens, cost per million, savings


def _role(*roles: str) -> str:
    return f"role=~{promql_string('|'.join(roles))}" if len(roles) > 1 else f"role={promql_string(roles[0])}"


def _per_pod_of_roles(cfg: ObspackConfig, series: str, *roles: str, labels: str = "") -> str:
    """Per-pod series (tokens, times) of the vLLM pods with these roles (whether or not a GPU of theirs is seen)."""
    return f"{series}\n* on ({c.by(cfg, *POD)}) group_left ({labels})\n{c.POD_ROLE}{{{_role(*roles)}}}"


def input_share(cfg: ObspackConfig) -> str:
    """The share of prefill in the request time of the model's pods that do both, over the hour; a half
    where they served nothing in it."""
    keep = c.by(cfg, *MODEL)

    def time(histogram: str) -> str:
        return f"sum by ({keep}) (\n{_indent(_per_pod_of_roles(cfg, f'rate({histogram}_sum{sel(cfg)}[{SHARE_WINDOW}])', 'both'))}\n)"

    prefill, decode = time(PREFILL), time(DECODE)
    engines = f"vllm:num_requests_running{sel(cfg)}"
    both = f"group by ({keep}) (\n{_indent(_per_pod_of_roles(cfg, engines, 'both'))}\n)"
    return f"(\n  {prefill}\n  /\n  ({prefill} + {decode})\n) >= 0\nor on ({keep})\n0.5 * {both}"


def model_cost(cfg: ObspackConfig) -> str:
    """Cost per hour per model, role and direction: a prefill pod's to input, a decode pod's to output, a
    pod doing both split by the input share. The per-role sum is written twice (once for the pure roles,
    once for the split), never once per case."""
    keep = c.by(cfg, *MODEL)
    per_role = f"sum by ({c.by(cfg, *MODEL, 'role')}) (\n{_indent(pod_cost(cfg, labels='role'))}\n)"
    pure = " or ".join(
        f'label_replace(label_replace(vector(1), "role", "{role}", "", ""), "tokens", "{tokens}", "", "")'
        for role, tokens in (("prefill", "input"), ("decode", "output"))
    )
    share = input_share(cfg)
    split = (
        f'label_replace(\n{_indent(share)},\n  "tokens", "input", "", ""\n)\nor\n'
        f'label_replace(\n  1 - (\n{_indent(_indent(share))}\n  ),\n  "tokens", "output", "", ""\n)'
    )
    both = f'label_replace(\n{_indent(split)},\n  "role", "both", "", ""\n)'
    return (
        f"(\n{_indent(per_role)}\n)\n* on (role) group_left (tokens)\n({pure})\nor\n"
        f"(\n{_indent(both)}\n)\n* on ({keep}, role) group_left ()\n(\n{_indent(per_role)}\n)"
    )


def model_tokens(cfg: ObspackConfig) -> str:
    """Tokens per second per model and role: input of the pods that prefill, output of those that decode."""
    keep = c.by(cfg, *MODEL, "role")

    def rate(counter: str, *roles: str) -> str:
        per_pod = _per_pod_of_roles(cfg, f"rate({counter}{sel(cfg)}[5m])", *roles, labels="role")
        return f"sum by ({keep}) (\n{_indent(per_pod)}\n)"

    return (
        f"{_label(rate('vllm:prompt_tokens_total', 'prefill', 'both'), 'tokens', 'input')}\nor\n"
        f"{_label(rate('vllm:generation_tokens_total', 'decode', 'both'), 'tokens', 'output')}"
    )


def cost_per_million(cfg: ObspackConfig) -> str:
    on = c.by(cfg, *MODEL, "role", "tokens")
    return f"1e6 * {c.MODEL_COST}\n/ on ({on})\n(3600 * {c.MODEL_TOKENS} > 0)"


def cache_savings(cfg: ObspackConfig) -> str:
    """What computing the prefix cache's hits would have cost, per hour: the input cost per computed input
    token times the tokens served from the cache (vLLM counts them in blocks before 0.9.0)."""
    keep = c.by(cfg, *MODEL)
    hits = "\n  or\n  ".join(f"rate({m}{sel(cfg)}[5m])" for m in PREFIX_HITS)
    per_pod = _per_pod_of_roles(cfg, f"(\n  {hits}\n)", "prefill", "both")
    cached = f"sum by ({keep}) (\n{_indent(per_pod)}\n)"
    inputs = f"sum by ({keep}) ({c.MODEL_TOKENS}{{{INPUT}}})"
    cost = f"sum by ({keep}) ({c.MODEL_COST}{{{INPUT}}})"
    return f"{cost}\n* on ({keep})\n{cached}\n/ on ({keep})\n({inputs} - on ({keep}) {cached} > 0)"


def in_use(cfg: ObspackConfig) -> str:
    """GPUs held by vLLM pods per cluster, node and GPU model, from raw series only (the attribution
    expression inline, whole GPUs): what the doctor prices without the records."""
    keep = c.by(cfg, "node", "modelName")
    return f"count by ({keep}) (\n{_indent(_copy(attribution(cfg), 'node', 'Hostname'))}\n)"


def rules(cfg: ObspackConfig) -> list[RecordingRule]:
    """The records the cost alerts read, and what they start from, in the order they read each other: they
    sit in the GPU attribution group, after the attribution record, so each alert is one hop from raw."""
    return [
        RecordingRule(c.COST_EVALUATION, "vector(time())"),
        RecordingRule(c.POD_GPUS_ALLOCATED, pod_gpus(cfg)),
        RecordingRule(c.POD_ROLE, roles(cfg)),
        RecordingRule(c.MODEL_GPUS_ALLOCATED, f"sum by ({c.by(cfg, *MODEL, 'state')}) ({c.POD_GPUS_ALLOCATED})"),
        RecordingRule(c.MODEL_TOKENS, model_tokens(cfg)),
    ]


def price_group(cfg: ObspackConfig) -> RuleGroup:
    """The pods' owners, the prices and what the GPUs cost, for the cost page only: a group of their own, one
    hop after the attribution group (a page may read two hops from raw series), so that neither group takes
    a second alone at 1,000 pods (docs/benchmarks.md)."""
    workload = c.by(cfg, "namespace", *WORKLOAD, "model_name", "state")
    rules = (
        RecordingRule(c.POD_COST_INFO, pod_info(cfg)),
        RecordingRule(c.NODE_GPU_MODEL, node_models(cfg)),
        RecordingRule(c.GPU_PRICE, prices(cfg)),
        RecordingRule(
            c.WORKLOAD_COST,
            f"sum by ({workload}) (\n{_indent(pod_cost(cfg, labels=', '.join(WORKLOAD)))}\n)",
        ),
        RecordingRule(c.MODEL_COST, model_cost(cfg)),
        RecordingRule(c.MODEL_COST_PER_MILLION, cost_per_million(cfg)),
        RecordingRule(c.MODEL_CACHE_SAVINGS, cache_savings(cfg)),
    )
    return RuleGroup(name=f"{c.GROUP_PREFIX}-cost.rules", rules=rules, interval=cfg.rule_interval)


def goodput(cfg: ObspackConfig) -> str:
    """The share of a model's tokens from requests that met its SLOs, where SLOs are on: one less the bad
    shares of its SLOs added up (each over the SLOs' base window). A request that missed two SLOs is
    subtracted twice, so this is a lower bound: histograms cannot tell which request missed which."""
    base = slos.base_window(cfg)
    keep = c.by(cfg, *MODEL)
    bad = f"{c.slo_rate('errors', base)}\n/ on ({c.by(cfg, *MODEL, 'slo')})\n({c.slo_rate('events', base)} > 0)"
    return f"clamp_min(\n  1 - sum by ({keep}) (\n{textwrap.indent(bad, '    ')}\n  ),\n  0\n)"


def goodput_groups(cfg: ObspackConfig) -> list[RuleGroup]:
    """The goodput share, from the SLO records (for the cost page only), where an SLO is on: a group of the
    SLO family (`obspack-slo-`), so the chart's `slos.enabled` switches it with the others."""
    if not slos.enabled_slis(cfg):
        return []
    rule = RecordingRule(c.MODEL_GOODPUT, goodput(cfg))
    return [RuleGroup(name=f"{c.GROUP_PREFIX}-slo-goodput.rules", rules=(rule,), interval=cfg.rule_interval)]
