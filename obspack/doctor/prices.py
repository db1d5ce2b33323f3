"""Prices: every GPU model vLLM pods hold must have one, or its cost is left out of the cost page and the
cost records (docs/cost.md). The doctor asks which GPU models vLLM pods hold now, per cluster and node (the
attribution expression on raw series, so it works before the rules are deployed), and prices each the way
the pack does:

- `config`: the first `cost.gpus` entry whose model, cluster and node pool regexes match (a space in a
  model regex also matches a dash), else `cost.default_hourly`; a GPU model none of them prices is a
  problem, with the entry to add;
- `opencost`: OpenCost's node_gpu_hourly_cost on the node; a node without it is a problem;
- GPU-hours (no prices set): a note that costs are counted in GPU-hours.
"""

from __future__ import annotations

import json
import re

from obspack import conventions as c
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.findings import Finding, Topic, note, problem, unchecked
from obspack.pack import Pack
from obspack.pack.model import Costs, Price

SUBJECT = "prices"


def _rows(api: PrometheusAPI, expr: str, at: float, keys: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    try:
        found = api.query(expr, at)
    except QueryFailed:
        return None
    return sorted({tuple(str((r.get("metric") or {}).get(k, "")) for k in keys) for r in found if isinstance(r, dict)})


def _matches(regex: str, value: str) -> bool:
    """Prometheus' anchored match; an empty regex matches anything (a setting left empty)."""
    return not regex or re.fullmatch(regex, value) is not None


def price_of(costs: Costs, cluster: str, model: str, pool: str) -> float | None:
    """The price of a GPU-hour of `model` on a node of `pool` in `cluster`, as the pack's rules compute it."""
    for entry in costs.prices:
        if _matches(entry.model_regex, model) and _matches(entry.cluster_regex, cluster) and _entry_pool(entry, pool):
            return entry.hourly
    return costs.default_hourly


def _entry_pool(entry: Price, pool: str) -> bool:
    return not entry.node_pool_regex or re.fullmatch(entry.node_pool_regex, pool) is not None


def price_findings(api: PrometheusAPI, pack: Pack, at: float) -> list[Finding]:
    costs, cl = pack.costs, pack.cluster_label
    if not costs.in_use:
        return []
    rows = _rows(api, costs.in_use, at, (cl, "node", "modelName"))
    if rows is None:
        return [unchecked(Topic.COST, SUBJECT, "the GPU models vLLM pods hold could not be asked")]
    if not rows:
        return []
    if costs.source == "gpu_hours":
        models = ", ".join(sorted({m for _, _, m in rows if m}))
        return [note(Topic.COST, SUBJECT, f"costs are counted in GPU-hours: no prices are set (GPU models in use: "
                     f"{models}); set cost.currency and cost.gpus to see money (docs/cost.md)")]
    if costs.source == "opencost":
        priced = _rows(api, f"group by ({_by(cl, 'node')}) (node_gpu_hourly_cost{c.selector(costs.opencost_selector)})",
                       at, (cl, "node"))
        if priced is None:
            return [unchecked(Topic.COST, SUBJECT, "OpenCost's node_gpu_hourly_cost could not be asked")]
        missing = sorted({(cluster, node, model) for cluster, node, model in rows if (cluster, node) not in set(priced)})
        return [
            problem(Topic.COST, _who(cluster, model),
                    f"GPUs held by vLLM pods on node {node} have no OpenCost price (node_gpu_hourly_cost): their "
                    "cost is left out; check that OpenCost runs and knows the node's GPUs",
                    action="kubectl -n opencost logs deploy/opencost | grep -i gpu")
            for cluster, node, model in missing
        ]
    pools = _pools(api, pack, at)
    if pools is None:
        return [unchecked(Topic.COST, SUBJECT, "the node pools (kube_node_labels) could not be asked")]
    unpriced: dict[tuple[str, str], set[str]] = {}
    for cluster, node, model in rows:
        if price_of(costs, cluster, model, pools.get((cluster, node), "")) is None:
            unpriced.setdefault((cluster, model), set()).add(node)
    found = []
    for (cluster, model), nodes in sorted(unpriced.items()):
        entry = json.dumps({"model_regex": re.escape(model) if model else ".*", "hourly": "<price>"})
        what = f"GPU model {model}" if model else "GPUs whose model DCGM does not name"
        found.append(problem(
            Topic.COST, _who(cluster, model),
            f"{what} is in use by vLLM pods ({len(nodes)} node{'s' if len(nodes) != 1 else ''}, e.g. "
            f"{min(nodes)}) and has no price: no cost.gpus entry matches it and cost.default_hourly is not set, "
            "so its GPU-hours are counted and its cost is not",
            action=f"add to cost.gpus in obspack.yaml: {entry} (the price of one GPU-hour in {costs.currency})",
        ))
    return found


def _pools(api: PrometheusAPI, pack: Pack, at: float) -> dict[tuple[str, str], str] | None:
    label, cl = pack.costs.node_pool_label, pack.cluster_label
    if not label:
        return {}
    ksm = c.selector(c.node_matchers(pack.sources.selectors.get("kube_state_metrics", "")), f'{label}!=""')
    rows = _rows(api, f"max by ({_by(cl, 'node', label)}) (kube_node_labels{ksm})", at, (cl, "node", label))
    return None if rows is None else {(cluster, node): pool for cluster, node, pool in rows}


def _by(*labels: str) -> str:
    return ", ".join(label for label in labels if label)


def _who(cluster: str, model: str) -> str:
    return (model or "unnamed GPU model") + (f" ({cluster})" if cluster else "")
