"""Cost settings: the price of a GPU-hour per GPU model (or OpenCost's), the currency, and the labels that
tell teams and node pools apart (prefill/decode roles: disaggregation.py). docs/cost.md.

Until prices are set, costs are counted in GPU-hours (currency `GPU-hours`, every GPU-hour worth 1): the
cost page, the cost per million tokens and the alerts work from the first render, and no price is made up.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from obspack.config.values import K8sKey, Matchers, Regex, _entries, _Model

GPU_HOURS = "GPU-hours"  # the currency of a pack without prices: a GPU-hour costs 1
Price = Annotated[float, Field(ge=0, le=100_000, allow_inf_nan=False)]
_PRICE = "(0 to 100000, per GPU-hour)"


def _currency(value: str) -> str:
    if not value.strip() or len(value) > 16:
        raise ValueError(f"{value!r} is not a currency (allowed: 1 to 16 characters, e.g. USD, EUR, {GPU_HOURS})")
    if any(ch in value for ch in "{}\"'\\"):
        raise ValueError(f"{value!r} contains braces, quotes or a backslash (allowed: e.g. USD, EUR, {GPU_HOURS})")
    return value


Currency = Annotated[str, AfterValidator(_currency)]


class GPUPrice(_Model):
    """The price of a GPU-hour for the GPU models `model_regex` matches (first match wins), optionally only
    in some clusters or node pools."""

    model_regex: Regex = Field(
        description="DCGM's modelName, e.g. 'NVIDIA H100.*' (full match; a space also matches a dash, as in "
        "GPU Feature Discovery's NVIDIA-H100-80GB-HBM3)",
    )
    hourly: Price = Field(description=f"price of one GPU-hour in cost.currency {_PRICE}")
    cluster_regex: Regex = Field("", description="only in clusters whose cluster_label matches (empty: all)")
    node_pool_regex: Regex = Field("", description="only on node pools that match, read from cost.node_pool_label (empty: all)")


class OpenCost(_Model):
    """Where OpenCost runs: its per-node GPU price, node_gpu_hourly_cost."""

    selector: Matchers = Field("", description="matchers for OpenCost's series, e.g. job=\"opencost\"")


class Cost(_Model):
    """What the GPUs held by vLLM pods cost: recorded per pod, workload, team and model (docs/cost.md)."""

    source: Literal["config", "opencost"] = Field(
        "config", description="config (the prices below) or opencost (its node_gpu_hourly_cost per node)"
    )
    currency: Currency = Field(
        GPU_HOURS,
        description=f"unit of every cost, e.g. USD or EUR; {GPU_HOURS} (the default) counts GPU time until prices are set",
    )
    gpus: Annotated[list[GPUPrice], AfterValidator(_entries)] = Field(
        default_factory=list,
        description="prices per GPU model, first match wins, e.g. [{model_regex: 'NVIDIA H100.*', hourly: 2.5}]",
    )
    default_hourly: Price | None = Field(
        None,
        description="price of a GPU-hour of a model no entry matches (unset: none; doctor reports such GPUs, "
        f"and the cost page counts their GPU-hours as unpriced) {_PRICE}",
    )
    opencost: OpenCost = OpenCost.model_construct()
    node_pool_label: K8sKey | Literal[""] = Field(
        "",
        description="node label naming the node pool, e.g. karpenter.sh/nodepool (kube-state-metrics must "
        "allowlist it for nodes; empty: no per-pool prices)",
    )
    team_label: K8sKey | Literal[""] = Field(
        "team",
        description="pod label (else namespace label) naming the team that pays (kube-state-metrics must allowlist it; empty: none)",
    )

    @property
    def priced(self) -> bool:
        """Whether costs are money (prices or OpenCost) rather than GPU-hours."""
        return self.source == "opencost" or self.currency != GPU_HOURS
