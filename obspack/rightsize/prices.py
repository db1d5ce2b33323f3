"""What each recommendation saves or costs a month at the configured prices (docs/cost.md).

Only GPUs cost money here: a GPU is held whole by its pod whatever the pod does with its memory, so a
smaller memory limit or request, a lower `--gpu-memory-utilization`, `--max-model-len` or `--max-num-seqs`
frees no GPU and saves nothing. What frees GPUs is fewer replicas (`--autoscaling`: the replicas the
traffic needed at its peak) or fewer GPUs per replica (a lower tensor-parallel degree, said only where the
KV cache stayed mostly empty, and only as a possibility: rightsize cannot see whether the weights fit).

measure: the GPUs of each pod (dcgm-exporter's pod mapping, else kube-state-metrics' nvidia.com/gpu
requests), its GPU model and node (pool), over the window; price: the pack's own rule (obspack/doctor/
prices.py: the first cost.gpus entry that matches, else cost.default_hourly; or OpenCost's price on the
node; or 1 in GPU-hours); decide: pure functions below.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.doctor.prices import price_of
from obspack.pack.build import costs
from obspack.pack.model import Costs
from obspack.rightsize.assemble import groups
from obspack.rightsize.measure import Measurements
from obspack.rightsize.model import KVVerdict, ModelScaling, Saving, Workload, WorkloadCost
from obspack.rightsize.queries import Plan, Query
from obspack.rules.recording.cost import GPU_REQUEST
from obspack.rules.recording.dcgm import normalised
from obspack.rules.roles import ksm_label

HOURS_PER_MONTH = 730  # 24 x 365 / 12, as OpenCost and the clouds' calculators count a month
NOW = "10m"  # the pods and GPUs that run at the window's end: seen within its last ten minutes
POD = ("namespace", "pod")


def queries(cfg: ObspackConfig, plan: Plan) -> list[Query]:
    """GPUs per pod and their model and node at the window's end (the pods that run now: a month of them is
    what the workload costs, not every pod a rollout replaced in the window); OpenCost's price per node
    where it is the source; the node pools where a label names them."""
    w, now, cl = plan.window, NOW, cfg.cluster_label
    pod = c.by(cfg, *POD)
    last = normalised(cfg, "DCGM_FI_DEV_FB_USED", read=lambda s: f"last_over_time({s}[{now}])")
    # each GPU (or MIG instance) once: a restarted exporter's second series of it does not count twice
    dcgm = f"count by ({pod}, modelName, Hostname) (\n  group by ({pod}, modelName, Hostname, UUID, GPU_I_ID) (\n{last}\n  )\n)"
    ksm = c.selector(cfg.selectors.kube_state_metrics, GPU_REQUEST)
    requests = f"sum by ({pod}, node) (max by ({pod}, container, node) (last_over_time(kube_pod_container_resource_requests{ksm}[{now}])))"
    out = [
        Query("gpu_dcgm", dcgm, (cl, *POD, "modelName", "Hostname")),
        Query("gpu_requests", f"{requests} > 0", (cl, *POD, "node")),
    ]
    if cfg.cost.source == "opencost":
        selector = c.selector(cfg.cost.opencost.selector)
        out.append(Query("gpu_node_price", f"max by ({c.by(cfg, 'node')}) (last_over_time(node_gpu_hourly_cost{selector}[{w}]))",
                         (cl, "node")))
    if cfg.cost.node_pool_label:
        label = ksm_label(cfg.cost.node_pool_label)
        labels = c.selector(c.node_matchers(cfg.selectors.kube_state_metrics), f'{label}!=""')
        out.append(Query("gpu_node_pool", f"max by ({c.by(cfg, 'node', label)}) (last_over_time(kube_node_labels{labels}[{w}]))",
                         (cl, "node", label)))
    return out


def _pods(m: Measurements) -> dict[tuple[str, str, str], tuple[float, str, str]]:
    """Per pod (cluster, namespace, pod): GPUs, GPU model, node. DCGM's mapping first; requests where DCGM
    maps none of the pod's GPUs."""
    found: dict[tuple[str, str, str], tuple[float, str, str]] = {}
    for (cluster, namespace, pod, model, node), gpus in sorted(m.get("gpu_dcgm").items()):
        held, _, _ = found.get((cluster, namespace, pod), (0.0, "", ""))
        if gpus > held:  # a pod seen on two nodes (it moved) holds the GPUs of one
            found[(cluster, namespace, pod)] = (gpus, model, node)
    for (cluster, namespace, pod, node), gpus in sorted(m.get("gpu_requests").items()):
        found.setdefault((cluster, namespace, pod), (gpus, "", node))
    return found


def _hourly(table: Costs, m: Measurements, cluster: str, model: str, node: str) -> float | None:
    if table.source == "gpu_hours":
        return 1.0
    if table.source == "opencost":
        return m.get("gpu_node_price").get((cluster, node))
    pools = {(k[0], k[1]): k[2] for k in m.get("gpu_node_pool")}
    return price_of(table, cluster, model, pools.get((cluster, node), ""))


def workload_costs(cfg: ObspackConfig, m: Measurements, found: tuple[Workload, ...]) -> tuple[Workload, ...]:
    """Each workload with the cost of its GPUs and what its recommendations save (or cost) a month."""
    table, per_pod = costs(cfg), _pods(m)
    members: dict[object, list[tuple[str, str, str]]] = defaultdict(list)
    for (key, _), containers in groups(m).items():
        members[key] += sorted({(cl, ns, pod) for cl, ns, pod, _ in containers})
    out = []
    for w in found:
        pods = [per_pod[p] for p in members.get(w.key, []) if p in per_pod]
        if not pods:
            out.append(w)
            continue
        gpus = max(g for g, _, _ in pods)
        model = next((mo for g, mo, _ in pods if g == gpus and mo), "")
        prices = [_hourly(table, m, w.key.cluster, mo or model, node) for _, mo, node in pods]
        hourly = max((p for p in prices if p is not None), default=None)
        out.append(replace(w, cost=decide(w, gpus, model, hourly, len(pods))))
    return tuple(out)


def monthly(gpus: float, hourly: float | None) -> float | None:
    return None if hourly is None else gpus * hourly * HOURS_PER_MONTH


def decide(w: Workload, gpus_per_pod: float, model: str, hourly: float | None, pods: int) -> WorkloadCost:
    """The workload's GPUs a month now, and per recommendation what it frees: none for memory and engine
    arguments; half the GPUs of each pod for a lower tensor-parallel degree where the KV cache stayed
    mostly empty (a possibility)."""
    savings = []
    m = w.memory
    for what, change in (("memory limit", m.limit_change), ("memory request", m.request_change)):
        if change:
            savings.append(Saving(what, 0.0, 0.0 if hourly is not None else None, "host RAM frees no GPU"))
    for knob in w.knobs:
        if knob.change:
            savings.append(Saving(knob.flag, 0.0, 0.0 if hourly is not None else None, "frees no GPU"))
    if w.gpu is not None and w.gpu.recommended_utilization is not None:
        savings.append(Saving("--gpu-memory-utilization", 0.0, 0.0 if hourly is not None else None, "frees no GPU"))
    if w.gpu is not None and w.gpu.verdict is KVVerdict.IDLE and gpus_per_pod >= 2 and gpus_per_pod % 2 == 0:
        freed = pods * gpus_per_pod / 2
        savings.append(Saving(
            f"tensor-parallel {gpus_per_pod:g} -> {gpus_per_pod / 2:g} GPUs per pod", freed, monthly(freed, hourly),
            "possible: the KV cache stayed under half full; only if the weights fit in half the GPUs", possible=True,
        ))
    return WorkloadCost(gpus_per_pod, model, hourly, pods, monthly(pods * gpus_per_pod, hourly), tuple(savings))


def scaling_savings(scaling: tuple[ModelScaling, ...], found: tuple[Workload, ...]) -> tuple[ModelScaling, ...]:
    """Per model of `--autoscaling`: running the replicas its traffic needed at its peak instead of those
    running now, all month: GPUs per replica from the model's workloads."""
    by_key: Mapping[object, Workload] = {w.key: w for w in found}
    out = []
    for s in scaling:
        priced = [by_key[k].cost for k in s.workloads if k in by_key and by_key[k].cost is not None]
        if s.replicas_peak is None or not priced:
            out.append(s)
            continue
        gpus = max(p.gpus_per_pod for p in priced if p is not None)
        hourly = max((p.hourly for p in priced if p is not None and p.hourly is not None), default=None)
        freed = (s.replicas_now - s.replicas_peak) * gpus
        change = f"replicas {s.replicas_now} -> {s.replicas_peak}"
        out.append(replace(s, saving=Saving(change, freed, monthly(freed, hourly), "the replicas the peak needed")))
    return tuple(out)
