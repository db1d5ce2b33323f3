"""The incident the demo plays and the e2e test checks, on nine simulated pods of one cluster.

- `vllm-healthy-0` (two data-parallel engines) serves normal load and `vllm-idle-0` serves nothing, the
  whole time: no alert.
- `vllm-pd-prefill-0` and `vllm-pd-decode-0`: a disaggregated prefill/decode pair over NIXL (llm-d's role
  label on each), serving normally the whole time: no alert. The decode pod finds 1% of its prompt tokens
  in its own prefix cache, by design (their KV arrives from the prefill pod), and gets no
  VLLMPrefixCacheHitRateLow ticket.
- `vllm-noprefix-0`: its prompts stop sharing a prefix, the same 1% local hit rate without a connector
  (VLLMPrefixCacheHitRateLow, info, to the ticket queue); once ticketed, they share it again.
- `vllm-kv-0`: the KV cache saturates, first above the warning ratio (VLLMKVCacheUsageHigh, to chat),
  then above the critical one (VLLMKVCacheUsageCritical, to the pager; the warning is inhibited).
- `vllm-stall-0`: the engine stalls with requests in flight (VLLMZeroThroughput, labelled team:
  ml-platform in the demo config, so it goes to that team's pager).
- `vllm-backlog-0`: requests pile up in the queue (VLLMRequestQueueBacklog, to chat).
- `vllm-down-0`: vLLM answers 503 (VLLMTargetDown, to the pager). Its exporter sidecar cannot scrape it
  either, and ObspackExporterTargetDown never fires, not even while vLLM comes back a scrape before the
  sidecar does: its rule leaves out a pod whose own vLLM target was down within `vllm_down_window`.

Then every pod recovers and every alert resolves. The steps return when each alert's condition became
visible (`lag.Onset`), so the alerts' lags can be measured.

The demo (obspack.demo.narrate) plays this incident, then the memory-plane one, on one stack.
"""

from __future__ import annotations

from obspack.demo import fake_vllm as fv
from obspack.demo import lag
from obspack.demo.lag import Onset
from obspack.demo.stack import PodSpec, Stack

HEALTHY = "vllm-healthy-0"
IDLE = "vllm-idle-0"
KV = "vllm-kv-0"
STALL = "vllm-stall-0"
BACKLOG = "vllm-backlog-0"
DOWN = "vllm-down-0"
PREFILL = "vllm-pd-prefill-0"
DECODE = "vllm-pd-decode-0"
NO_PREFIX = "vllm-noprefix-0"

PODS = [
    PodSpec(HEALTHY, fv.NORMAL, node="gpu-node-a", gpus=2, engines=2),  # data parallel: two engines, one GPU each
    PodSpec(IDLE, fv.IDLE, node="gpu-node-b"),
    PodSpec(KV, fv.NORMAL, node="gpu-node-a"),
    PodSpec(STALL, fv.NORMAL, node="gpu-node-b"),
    PodSpec(BACKLOG, fv.NORMAL, node="gpu-node-a"),
    PodSpec(DOWN, fv.NORMAL, node="gpu-node-b"),
    # one node for the pair: the KV goes over NVLink between their GPUs
    PodSpec(PREFILL, fv.PREFILL, node="gpu-node-b", role="prefill", kv_connector="nixl"),
    PodSpec(DECODE, fv.DECODE, node="gpu-node-b", role="decode", kv_connector="nixl"),
    PodSpec(NO_PREFIX, fv.NORMAL, node="gpu-node-a"),
]
QUIET = (HEALTHY, IDLE, PREFILL, DECODE)

# (alert, pod, receiver) of every notification the incident should cause.
NOTIFIED = [
    ("VLLMKVCacheUsageHigh", KV, "obspack-chat"),
    ("VLLMKVCacheUsageCritical", KV, "obspack-pager"),
    ("VLLMZeroThroughput", STALL, "obspack-team-ml-platform-pager"),
    ("VLLMRequestQueueBacklog", BACKLOG, "obspack-chat"),
    ("VLLMTargetDown", DOWN, "obspack-pager"),
    ("VLLMPrefixCacheHitRateLow", NO_PREFIX, "obspack-ticket"),
]
# (alert, pod, inhibiting alert) of the alerts that fire but must not notify.
INHIBITED = [
    ("VLLMKVCacheUsageHigh", KV, "VLLMKVCacheUsageCritical"),
]
# (alert, pod) of the alerts whose condition the incident touches and that must never fire: the exporter's
# scrapes of the dead vLLM fail, and they follow from VLLMTargetDown.
NEVER_FIRED = [("ObspackExporterTargetDown", DOWN)]


def start_incident(stack: Stack) -> list[Onset]:
    """KV high, engine stalled, queue backlog, target down; prompts without a shared prefix. A stalled
    engine shows as one only once a whole window has gone by without a generated token. The prefix cache's
    hit rate over the alert's window sinks as the window fills: no onset to measure a lag from."""
    stalled = stack.set_load(STALL, fv.STALLED) + lag.window_seconds(stack, "VLLMZeroThroughput")
    down = stack.take_down(DOWN)
    stack.set_load(NO_PREFIX, fv.NO_PREFIX)
    return [
        Onset("VLLMKVCacheUsageHigh", KV, stack.set_load(KV, fv.KV_HIGH)),
        Onset("VLLMRequestQueueBacklog", BACKLOG, stack.set_load(BACKLOG, fv.QUEUE_BACKLOG)),
        Onset("VLLMTargetDown", DOWN, down),
        Onset("VLLMZeroThroughput", STALL, stalled),
    ]


def share_prefix_again(stack: Stack) -> None:
    """The prompts of `vllm-noprefix-0` share their prefix again (the hit rate over the alert's window climbs
    back as the window fills, in about two thirds of it: sooner than the end of the incident)."""
    stack.set_load(NO_PREFIX, fv.NORMAL)


def saturate_kv_cache(stack: Stack) -> Onset:
    return Onset("VLLMKVCacheUsageCritical", KV, stack.set_load(KV, fv.KV_FULL))


def end_incident(stack: Stack) -> None:
    for pod in (KV, STALL, BACKLOG, DOWN, NO_PREFIX):  # NO_PREFIX: already back if share_prefix_again ran
        stack.set_load(pod, fv.NORMAL)
