"""What a recommendation saves a month: memory and engine arguments free no GPU, a lower tensor-parallel
degree frees half a pod's GPUs (a possibility, where the KV cache stayed mostly empty), fewer replicas
free theirs; amounts written as people write them."""

from __future__ import annotations

from dataclasses import replace

from obspack.config import ObspackConfig
from obspack.rightsize.measure import Measurements
from obspack.rightsize.model import GPU, Key, KVVerdict, ModelScaling
from obspack.rightsize.prices import HOURS_PER_MONTH, NOW, _pods, decide, queries, scaling_savings
from obspack.rightsize.queries import Plan
from obspack.rightsize.report import _cost_lines, _saving_text, money
from tests.rightsize.test_patches import workload


def _gpu(verdict: KVVerdict) -> GPU:
    return GPU(
        framebuffer_total=80e9, peak=70e9, median=70e9, gpu_memory_utilization=0.9, kv_peak=0.3, kv_p99=0.2,
        preemptions=0, waiting_peak=0, waiting_share=0, waits_by_reason=True, verdict=verdict,
        recommended_utilization=None,
    )


def test_a_smaller_memory_limit_frees_no_gpu_and_a_lower_tensor_parallel_degree_frees_half() -> None:
    idle = replace(workload(), gpu=_gpu(KVVerdict.IDLE))
    cost = decide(idle, gpus_per_pod=4, model="NVIDIA H100 80GB HBM3", hourly=4.0, pods=3)
    assert cost.per_month == 3 * 4 * 4.0 * HOURS_PER_MONTH == 35_040
    limit, request, tp = cost.savings
    assert (limit.change, limit.gpus_freed, limit.per_month) == ("memory limit", 0, 0)
    assert (request.change, request.gpus_freed, request.per_month) == ("memory request", 0, 0)
    assert (tp.change, tp.gpus_freed, tp.per_month, tp.possible) == ("tensor-parallel 4 -> 2 GPUs per pod", 6, 17_520, True)
    lines = _cost_lines(cost, "USD")
    assert lines == [
        "  cost        4 GPUs NVIDIA H100 80GB HBM3 per pod x 3 at 4 USD a GPU-hour: 35,040 USD a month",
        "              memory limit: frees no GPU, saves 0 USD (host RAM frees no GPU)",
        "              memory request: frees no GPU, saves 0 USD (host RAM frees no GPU)",
        "              if tensor-parallel 4 -> 2 GPUs per pod: frees 6 GPUs: saves 17,520 USD a month (possible: the "
        "KV cache stayed under half full; only if the weights fit in half the GPUs)",
    ]


def test_a_kv_cache_that_fits_or_one_gpu_gets_no_tensor_parallel_line_and_no_price_says_so() -> None:
    fits = replace(workload(), gpu=_gpu(KVVerdict.FITS))
    assert [s.change for s in decide(fits, 2, "", 1.0, 1).savings] == ["memory limit", "memory request"]
    one = replace(workload(), gpu=_gpu(KVVerdict.IDLE))
    assert [s.change for s in decide(one, 1, "", 1.0, 1).savings] == ["memory limit", "memory request"]
    unpriced = decide(one, 1, "NVIDIA L4", None, 2)
    assert unpriced.per_month is None and money(unpriced.per_month, "USD") == "no price"
    assert _saving_text(unpriced.savings[0], "USD") == "memory limit: no price for these GPUs (host RAM frees no GPU)"


def test_fewer_replicas_save_their_gpus_and_more_cost_them() -> None:
    w = replace(workload(), cost=decide(workload(), 2, "NVIDIA H100 80GB HBM3", 0.5, 4))
    key = w.key

    def model(now: int, peak: int) -> ModelScaling:
        return ModelScaling("gpu-east", "llm", "m", (key,), 10, 3, 0.99, 3.0, None, "", now, peak, 0.0, now, (3.0, 0.8))

    fewer, more = scaling_savings((model(4, 1), model(2, 6)), (w,))
    assert (fewer.saving.change, fewer.saving.gpus_freed, fewer.saving.per_month) == ("replicas 4 -> 1", 6, 2190)
    assert _saving_text(fewer.saving, "USD") == "replicas 4 -> 1: frees 6 GPUs: saves 2,190 USD a month (the replicas the peak needed)"
    assert _saving_text(more.saving, "GPU-hours").startswith("replicas 2 -> 6: adds 8 GPUs: costs 2,920 GPU-hours a month more")
    assert scaling_savings((model(4, 1),), ())[0].saving is None  # no GPU seen: nothing said
    assert Key("gpu-east", "llm", "Deployment", "vllm-chat", "vllm") == key


def test_a_pod_holds_the_gpus_it_holds_now_once_on_one_node() -> None:
    """The pods that run at the window's end, each GPU once: a pod seen on two nodes in the last minutes (it
    moved) holds the GPUs of one, not both; DCGM's mapping wins over the pod's requests; requests count
    where DCGM maps nothing."""
    h100 = "NVIDIA H100 80GB HBM3"
    m = Measurements({
        "gpu_dcgm": {("east", "llm", "sts-0", h100, "node-a"): 4.0, ("east", "llm", "sts-0", h100, "node-b"): 4.0,
                     ("east", "llm", "chat-1", h100, "node-c"): 2.0},
        "gpu_requests": {("east", "llm", "chat-1", "node-c"): 8.0, ("east", "llm", "phi-0", "node-d"): 1.0},
    })
    assert _pods(m) == {
        ("east", "llm", "sts-0"): (4.0, h100, "node-a"),
        ("east", "llm", "chat-1"): (2.0, h100, "node-c"),
        ("east", "llm", "phi-0"): (1.0, "", "node-d"),
    }
    plan = Plan(at=0, window_s=14 * 86400, step_s=900, load_s=600)
    dcgm, requests = queries(ObspackConfig(), plan)[:2]
    assert f"[{NOW}]" in dcgm.expr and "[14d]" not in dcgm.expr and f"[{NOW}]" in requests.expr
    assert "UUID, GPU_I_ID" in dcgm.expr  # each GPU once, however many series an exporter restart left


def test_the_node_pools_are_asked_of_every_node_whatever_namespaces_are_in_scope() -> None:
    """kube_node_labels is a node series, in no namespace: the scope's namespace (or one written in the
    kube-state-metrics selector) is not asked of it, the cluster scope is."""
    plan = Plan(at=0, window_s=14 * 86400, step_s=900, load_s=600)
    for ksm in ("", 'namespace=~"llm-.*", job="kube-state-metrics"'):
        cfg = ObspackConfig.model_validate({
            "cost": {"node_pool_label": "karpenter.sh/nodepool"}, "selectors": {"kube_state_metrics": ksm},
            "scope": {"namespace_regex": "llm-.*", "cluster_regex": "prod-.*"},
        })
        pools = next(q for q in queries(cfg, plan) if q.name == "gpu_node_pool")
        assert 'kube_node_labels{cluster=~"prod-.*", ' in pools.expr and "namespace" not in pools.expr, pools.expr
        requests = next(q for q in queries(cfg, plan) if q.name == "gpu_requests")
        assert 'namespace=~"llm-.*"' in requests.expr  # the pods' series keep the scope
