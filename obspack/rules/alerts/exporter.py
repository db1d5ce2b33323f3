"""Alerts on what the obspack exporter derives: KV and CUDA-allocator fragmentation, and its own scrape."""

from __future__ import annotations

from collections.abc import Callable

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.numbers import text
from obspack.rules.model import AlertRule

GIB = 1 << 30
RATIO = "obspack_cuda_allocator_fragmentation_ratio"
SPLIT = "obspack_cuda_allocator_inactive_split_bytes"


def split_floor(cfg: ObspackConfig) -> str:
    """VLLMCUDAAllocatorFragmentationHigh's `min_split_gib` in bytes, printed as the setting is written."""
    return f"{text(cfg.alerts.VLLMCUDAAllocatorFragmentationHigh.min_split_gib)} * {GIB}"


def fragmentation_over_floor(cfg: ObspackConfig, series: Callable[[str], str]) -> str:
    """Each GPU's allocator fragmentation where its split blocks reach the alert's floor, else 0: a cache just
    emptied shows a ratio of 1 on a few MiB, which the alert leaves out too. `series` selects a metric."""
    return f"{series(RATIO)} * ({series(SPLIT)} >= bool {split_floor(cfg)})"


def kv_cache_fragmentation_high(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMKVCacheFragmentationHigh
    sel = c.selector(cfg.selectors.exporter)
    # The estimate is the expected empty tail of each running request's last block over all used slots.
    # With 16-token blocks it passes 0.3 only when requests average under ~25 tokens of KV: the block size
    # is too coarse for the workload, and about a third of the cache the engine thinks is used holds nothing.
    return AlertRule(
        alert="VLLMKVCacheFragmentationHigh",
        expr=f"""
            max by ({c.by(cfg, 'namespace', 'pod', 'model_name')}) (
              obspack_vllm_kv_cache_fragmentation_ratio{sel}
            ) > {t.ratio}
        """,
        for_=t.for_,
        severity=t.severity,
        summary="A large share of vLLM's used KV cache slots sits empty in partly filled blocks.",
        description="{{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.model_name }}): an estimated "
        "{{ $value | humanizePercentage }} of used KV slots are empty block tails.",
        runbook="vllm-kv-cache-fragmentation-high",
        triage="kubectl -n {{ $labels.namespace }} get pod {{ $labels.pod }} -o jsonpath='{.spec.containers[*].args}'",
    )


def cuda_allocator_fragmentation_high(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMCUDAAllocatorFragmentationHigh
    sel = c.selector(cfg.selectors.exporter)
    # Inactive split blocks are cached memory that only fits requests smaller than the holes. The ratio is
    # their share of the memory the allocator holds unused (weights and KV cache leave it out); the bytes
    # floor keeps out the few MiB of holes left when the cache was just emptied (ratio 1 on almost nothing).
    return AlertRule(
        alert="VLLMCUDAAllocatorFragmentationHigh",
        expr=f"""
            max by ({c.by(cfg, 'namespace', 'pod')}) (
              {RATIO}{sel} > {t.ratio}
              and
              {SPLIT}{sel} >= {split_floor(cfg)}
            )
        """,
        for_=t.for_,
        severity=t.severity,
        summary="PyTorch's CUDA allocator in a vLLM pod is fragmented; CUDA OOM can follow.",
        description="{{ $labels.namespace }}/{{ $labels.pod }}: {{ $value | humanizePercentage }} of the memory "
        "the CUDA caching allocator holds unused is in inactive split blocks.",
        runbook="vllm-cuda-allocator-fragmentation-high",
        triage="kubectl -n {{ $labels.namespace }} exec {{ $labels.pod }} -- env | grep PYTORCH_CUDA_ALLOC_CONF",
    )


def exporter_target_down(cfg: ObspackConfig) -> AlertRule:
    """The exporter cannot scrape vLLM while Prometheus can. Pods whose own vLLM target was down within
    `vllm_down_window` are left out in the rule, not only muted by VLLMTargetDown in Alertmanager: an
    inhibition holds only while its source fires, and the exporter sees vLLM die before Prometheus' scrape
    does and come back after it (by up to one of its own scrapes), so either edge would reach a receiver."""
    t = cfg.alerts.ObspackExporterTargetDown
    pod = c.by(cfg, "namespace", "pod")
    vllm_down = f"min_over_time(up{c.selector(cfg.selectors.vllm)}[{t.vllm_down_window}]) == 0"
    return AlertRule(
        alert="ObspackExporterTargetDown",
        expr=(
            f"max by ({pod}) (obspack_target_up{c.selector(cfg.selectors.exporter)} == 0)\n"
            f"unless on ({pod})\n"
            f"group by ({pod}) ({vllm_down})"
        ),
        for_=t.for_,
        severity=t.severity,
        summary="The obspack exporter cannot scrape its vLLM target, though Prometheus can; the KV figures it "
        "derives are missing.",
        description="The obspack exporter in {{ $labels.namespace }}/{{ $labels.pod }} cannot scrape its vLLM "
        f"target, while Prometheus' own scrapes of vLLM in that pod succeeded over the last {t.vllm_down_window}.",
        runbook="obspack-exporter-target-down",
        triage="kubectl -n {{ $labels.namespace }} logs {{ $labels.pod }} -c obspack-exporter --tail=50",
    )


ALERTS = (kv_cache_fragmentation_high, cuda_allocator_fragmentation_high, exporter_target_down)
