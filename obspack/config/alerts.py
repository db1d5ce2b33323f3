"""Alert settings: one class per alert, its defaults from the alert catalogue."""

from __future__ import annotations

from pydantic import Field

from obspack.catalogue.gateway import JOB_HINT
from obspack.config.values import (
    EVENT_WINDOW,
    FOR,
    RATIO,
    SEVERITY,
    WINDOW,
    Duration,
    HitRatio,
    LabelMap,
    Number,
    Ratio,
    Regex,
    Severity,
    SeverityName,
    Window,
    _Model,
)


class AlertSettings(_Model):
    enabled: bool = Field(True, description="render this alert")
    for_: Duration = Field("5m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.WARNING, description=SEVERITY)
    labels: LabelMap = Field(
        default_factory=dict,
        description="extra static labels, e.g. team: ml-platform (values: no {{ }})",
    )


class HostMemoryNearLimit(AlertSettings):
    ratio: Ratio = Field(0.9, description=f"working set / memory limit above this fires {RATIO}")


class ContainerOOMKilled(AlertSettings):
    for_: Duration = Field("0m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    window: Window = Field("15m", description=f"a restart within this window counts {EVENT_WINDOW}")


class ContainerRestarted(AlertSettings):
    for_: Duration = Field("0m", alias="for", description=FOR)
    window: Window = Field("15m", description=f"a restart within this window counts {EVENT_WINDOW}")


class GPUMemoryNearFull(AlertSettings):
    ratio: Ratio = Field(0.97, description=f"framebuffer used / (used + free) above this fires {RATIO}")


class KVCacheUsageHigh(AlertSettings):
    ratio: Ratio = Field(0.9, description="KV cache usage above this fires (0.001 to 0.999, below the critical one)")


class KVCacheUsageCritical(AlertSettings):
    for_: Duration = Field("2m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    ratio: Ratio = Field(0.95, description="KV cache usage above this fires (0.001 to 0.999, above the high one)")


class RequestQueueBacklog(AlertSettings):
    waiting_to_running: Number = Field(
        3.0, gt=0, le=1000, description="waiting requests above this multiple of running (above 0, at most 1000)"
    )
    min_waiting: Number = Field(5.0, ge=1, le=100_000, description="and at least this many requests waiting (1 to 100000)")


class ZeroThroughput(AlertSettings):
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    window: Window = Field("5m", description=f"no generated token in this window, with requests in flight {WINDOW}")


class TargetDown(AlertSettings):
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    lookback: Window = Field("1h", description=f"only targets that served vLLM metrics within this window {EVENT_WINDOW}")
    job_regex: Regex = Field(".*vllm.*", description="also targets of jobs matching this that were up in the window")


class RequestPreemptions(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    rate: Number = Field(
        0.0, ge=0, le=1_000_000, description="preemptions per second above this (0: any preemption; at most 1000000)"
    )


class PrefixCacheHitRateLow(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    ratio: HitRatio = Field(0.3, description="hit rate (hits / queried tokens) below this fires (0.001 to 0.9)")
    window: Window = Field("30m", description=f"window of the hit-rate computation {WINDOW}")
    min_query_tokens_per_second: Number = Field(
        1.0, ge=0, le=1_000_000, description="ignore pods with less prefix-cache traffic (0 to 1000000)"
    )


class KVCacheFragmentationHigh(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    ratio: Ratio = Field(0.3, description=f"estimated share of used KV slots left empty above this fires {RATIO}")


class CUDAAllocatorFragmentationHigh(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    ratio: Ratio = Field(
        0.3, description=f"share of the allocator's unused memory in split blocks above this fires {RATIO}"
    )
    min_split_gib: Number = Field(
        0.25,
        ge=0,
        le=1024,
        description="and only with at least this many GiB in split blocks on the GPU (0 to 1024)",
    )


class ExporterTargetDown(AlertSettings):
    vllm_down_window: Window = Field(
        "5m", description=f"leave out pods whose own vLLM target was down at any scrape within this window {WINDOW}"
    )


class KVTransferFailures(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)
    window: Window = Field("5m", description=f"window of the failure rate {WINDOW}")
    rate: Number = Field(
        0.0,
        ge=0,
        le=1_000_000,
        description="failed KV transfers per second above this (0: any, in every window of `for`; at most 1000000)",
    )
    expired_ratio: Ratio = Field(
        0.01, description=f"requests whose KV blocks expired unread, per request the pod finished, above this {RATIO}"
    )


class AdmissionRejections(AlertSettings):
    ratio: Ratio = Field(0.01, description=f"refused requests / (refused + finished) above this fires {RATIO}")
    window: Window = Field("5m", description=f"window of the refused share {WINDOW}")


class KVOffloadAllocationFailures(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    window: Window = Field("5m", description=f"window of the failure rate {WINDOW}")
    rate: Number = Field(
        0.0, ge=0, le=1_000_000, description="allocation failures per second above this (0: any; at most 1000000)"
    )


class SpecDecodeAcceptanceLow(AlertSettings):
    for_: Duration = Field("30m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    ratio: Ratio = Field(0.25, description=f"accepted / drafted tokens below this fires {RATIO}")
    window: Window = Field("30m", description=f"window of the acceptance rate {WINDOW}")
    min_draft_tokens_per_second: Number = Field(
        1.0, ge=0, le=1_000_000, description="ignore pods that draft fewer tokens per second (0 to 1000000)"
    )


class AutoscalerThrashing(AlertSettings):
    for_: Duration = Field("0m", alias="for", description=FOR)
    window: Window = Field("30m", description=f"window in which the desired replicas went up and down {WINDOW}")
    reversals: Number = Field(
        2.0, ge=1, le=100, description="fires when the replicas went up at least this often and down as often "
        "(1 to 100, and at most half the window's minutes)"
    )


class AutoscalerMaxedOut(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    saturation: Number = Field(
        1.0, gt=0, le=100, description="the model's saturation signal above this, at max replicas, fires (above 0, at most 100)"
    )


class AutoscalerScaleUpBlocked(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)


class AutoscalerSignalMissing(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)
    window: Window = Field("10m", description=f"window of KEDA's scaler errors {WINDOW}")


class GPUsMostlyIdle(AlertSettings):
    for_: Duration = Field("1h", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    ratio: Ratio = Field(0.75, description=f"idle share of a model's GPU-hours over the window above this fires {RATIO}")
    window: Window = Field("1d", description=f"window of the idle share; the model must have held GPUs all along {WINDOW}")


class CostPerMillionTokensRising(AlertSettings):
    for_: Duration = Field("1h", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.INFO, description=SEVERITY)
    increase: Number = Field(
        0.2, gt=0, le=100, description="GPU-hours per million tokens up by more than this share on the week before "
        "(0.2: 20% more; above 0, at most 100)"
    )
    min_tokens_per_second: Number = Field(
        1.0, ge=0, le=1_000_000, description="ignore models that served fewer tokens per second in either week (0 to 1000000)"
    )


class PrefillDecodeImbalance(AlertSettings):
    for_: Duration = Field("15m", alias="for", description=FOR)
    waiting_per_pod: Number = Field(
        5.0, ge=1, le=100_000,
        description="requests waiting for capacity per pod of one role above this: that side is saturated (1 to 100000)",
    )
    kv_ratio: Ratio = Field(
        0.9, description=f"or its pods' average KV cache usage above this, with requests waiting: saturated too {RATIO}"
    )
    room_kv_ratio: Ratio = Field(
        0.6,
        description="the other side has room: average KV cache usage below this (keep it under kv_ratio) and under "
        f"one request waiting for capacity per pod {RATIO}",
    )


# The inference pool (Gateway API Inference Extension / llm-d router endpoint picker), docs/gateway.md


class PickerDown(AlertSettings):
    for_: Duration = Field("2m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    lookback: Window = Field(
        "1h", description=f"only EPP targets that served EPP series (or were up, see job_regex) within this window {EVENT_WINDOW}"
    )
    job_regex: Regex = Field(
        JOB_HINT,
        description="also targets of jobs matching this (epp as a word by default) that were up in the window (empty: off)",
    )


class PoolNoReadyEndpoints(AlertSettings):
    for_: Duration = Field("2m", alias="for", description=FOR)
    severity: SeverityName = Field(Severity.CRITICAL, description=SEVERITY)
    lookback: Window = Field("1h", description=f"only pools that had a ready endpoint within this window {EVENT_WINDOW}")


class PoolSaturated(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)
    kv_ratio: Ratio = Field(0.9, description=f"the pool's average KV cache utilisation above this fires {RATIO}")
    queue_size: Number = Field(
        10.0, gt=0, le=100_000, description="the pool's average waiting queue per endpoint above this fires (above 0, at most 100000)"
    )


class FlowControlRejections(AlertSettings):
    ratio: Ratio = Field(0.05, description=f"rejected / all requests leaving flow control above this fires {RATIO}")
    window: Window = Field("5m", description=f"window of the rejected share {WINDOW}")


class SchedulingLatencyHigh(AlertSettings):
    for_: Duration = Field("10m", alias="for", description=FOR)
    seconds: Number = Field(
        0.05, gt=0, lt=0.1, description="p99 of the EPP's scheduling time above this fires (above 0, below 0.1: the "
        "histogram's last bucket)"
    )
    window: Window = Field("5m", description=f"window of the p99 {WINDOW}")


class Alerts(_Model):
    """Per-alert settings. Keys are alert names."""

    VLLMHostMemoryNearLimit: HostMemoryNearLimit = HostMemoryNearLimit.model_construct()
    VLLMContainerOOMKilled: ContainerOOMKilled = ContainerOOMKilled.model_construct()
    VLLMContainerRestarted: ContainerRestarted = ContainerRestarted.model_construct()
    VLLMGPUMemoryNearFull: GPUMemoryNearFull = GPUMemoryNearFull.model_construct()
    VLLMKVCacheUsageHigh: KVCacheUsageHigh = KVCacheUsageHigh.model_construct()
    VLLMKVCacheUsageCritical: KVCacheUsageCritical = KVCacheUsageCritical.model_construct()
    VLLMRequestQueueBacklog: RequestQueueBacklog = RequestQueueBacklog.model_construct()
    VLLMZeroThroughput: ZeroThroughput = ZeroThroughput.model_construct()
    VLLMTargetDown: TargetDown = TargetDown.model_construct()
    VLLMRequestPreemptions: RequestPreemptions = RequestPreemptions.model_construct()
    VLLMPrefixCacheHitRateLow: PrefixCacheHitRateLow = PrefixCacheHitRateLow.model_construct()
    VLLMKVCacheFragmentationHigh: KVCacheFragmentationHigh = KVCacheFragmentationHigh.model_construct()
    VLLMCUDAAllocatorFragmentationHigh: CUDAAllocatorFragmentationHigh = CUDAAllocatorFragmentationHigh.model_construct()
    ObspackExporterTargetDown: ExporterTargetDown = ExporterTargetDown.model_construct()
    VLLMKVTransferFailures: KVTransferFailures = KVTransferFailures.model_construct()
    VLLMAdmissionRejections: AdmissionRejections = AdmissionRejections.model_construct()
    VLLMKVOffloadAllocationFailures: KVOffloadAllocationFailures = KVOffloadAllocationFailures.model_construct()
    VLLMSpecDecodeAcceptanceLow: SpecDecodeAcceptanceLow = SpecDecodeAcceptanceLow.model_construct()
    VLLMAutoscalerThrashing: AutoscalerThrashing = AutoscalerThrashing.model_construct()
    VLLMAutoscalerMaxedOut: AutoscalerMaxedOut = AutoscalerMaxedOut.model_construct()
    VLLMAutoscalerScaleUpBlocked: AutoscalerScaleUpBlocked = AutoscalerScaleUpBlocked.model_construct()
    VLLMAutoscalerSignalMissing: AutoscalerSignalMissing = AutoscalerSignalMissing.model_construct()
    VLLMGPUsMostlyIdle: GPUsMostlyIdle = GPUsMostlyIdle.model_construct()
    VLLMCostPerMillionTokensRising: CostPerMillionTokensRising = CostPerMillionTokensRising.model_construct()
    VLLMPrefillDecodeImbalance: PrefillDecodeImbalance = PrefillDecodeImbalance.model_construct()
    InferenceGatewayPickerDown: PickerDown = PickerDown.model_construct()
    InferencePoolNoReadyEndpoints: PoolNoReadyEndpoints = PoolNoReadyEndpoints.model_construct()
    InferencePoolSaturated: PoolSaturated = PoolSaturated.model_construct()
    InferenceGatewayFlowControlRejections: FlowControlRejections = FlowControlRejections.model_construct()
    InferenceGatewaySchedulingLatencyHigh: SchedulingLatencyHigh = SchedulingLatencyHigh.model_construct()
