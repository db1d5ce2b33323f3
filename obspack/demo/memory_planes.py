"""The memory-plane incident the demo plays and the e2e test checks: the two ways a vLLM pod dies.

- `vllm-ram-0` (gpu-node-a): host RAM creeps up to its cgroup limit (VLLMHostMemoryNearLimit, to chat),
  then the kernel kills the container: restarts up, last terminated reason `OOMKilled`, exit 137
  (VLLMContainerOOMKilled, to the pager). The restarted container loads its weights into host RAM again,
  so the RAM warning is still firing for a while: the OOM kill inhibits it.
- `vllm-cuda-0` (gpu-node-b, dcgm-exporter scraped with the default honor_labels: false, so the
  workload is in `exported_pod`): VRAM fills up (VLLMGPUMemoryNearFull, to chat), then PyTorch raises
  CUDA out of memory and the engine crashes: reason `Error`, exit 1 (VLLMContainerRestarted with
  reason=Error, to chat). After the restart vLLM reserves its usual 90% again and the GPU alert resolves.
- `vllm-new-0` appears in the middle of it on gpu-node-a (honor_labels: true, workload in `pod`), its
  GPU already near full: the GPU alert must fire as fast for a pod Prometheus has never seen.
- `vllm-lws-0` and `vllm-lws-0-1`: a LeaderWorkerSet group spreading one 70B engine over two nodes. Only
  the leader serves vLLM's /metrics; the worker holds GPUs and host RAM. The worker's RAM creeps with
  `vllm-ram-0`'s: VLLMHostMemoryNearLimit names the worker pod (to chat), and no VLLMTargetDown ever
  fires for it (Prometheus has no vLLM target there). The leader stays quiet.
- `vllm-healthy-0` runs at vLLM's normal 90% VRAM preallocation and half its RAM limit: no alert.

Then every pod recovers and every alert resolves. Each step returns the wall-clock time at which the
fake exporters started to show its condition, so the alerts' lags can be measured (`Lag`).
"""

from __future__ import annotations

from obspack.demo import fake_vllm as fv
from obspack.demo import incident
from obspack.demo.fake_k8s import PREALLOCATED
from obspack.demo.lag import Onset
from obspack.demo.stack import PodSpec, Stack

HEALTHY = incident.HEALTHY  # the engine incident's healthy pod: 90% VRAM, half its RAM limit, two GPUs
RAM = "vllm-ram-0"
CUDA = "vllm-cuda-0"
NEW = "vllm-new-0"
LWS = "vllm-lws"  # the LeaderWorkerSet: leader `vllm-lws-0`, worker `vllm-lws-0-1`
LEADER = f"{LWS}-0"
WORKER = f"{LWS}-0-1"
LWS_MODEL = "meta-llama/Llama-3.1-70B-Instruct"

PODS = [
    next(p for p in incident.PODS if p.name == HEALTHY),
    PodSpec(RAM, fv.NORMAL, node="gpu-node-a"),
    PodSpec(CUDA, fv.NORMAL, node="gpu-node-b"),
    # pipeline parallel over two nodes, two GPUs each
    PodSpec(LEADER, fv.NORMAL, node="gpu-node-a", gpus=2, model=LWS_MODEL, lws=(LWS, 0)),
    PodSpec(WORKER, fv.IDLE, node="gpu-node-b", gpus=2, model=LWS_MODEL, lws=(LWS, 1)),
]
NEW_POD = PodSpec(NEW, fv.NORMAL, node="gpu-node-a", vram=0.99)
QUIET = (HEALTHY, LEADER)

RAM_CREEP = (0.7, 0.85, 0.93)  # working set / limit, one step per scrape; the warning is at 0.9
RAM_RELOADING = 0.95  # the restarted container loads the weights into host RAM again
VRAM_FULL = 0.99

# (alert, pod, receiver) of every notification the incident should cause.
NOTIFIED = [
    ("VLLMHostMemoryNearLimit", RAM, "obspack-chat"),
    ("VLLMHostMemoryNearLimit", WORKER, "obspack-chat"),
    ("VLLMContainerOOMKilled", RAM, "obspack-pager"),
    ("VLLMGPUMemoryNearFull", CUDA, "obspack-chat"),
    ("VLLMContainerRestarted", CUDA, "obspack-chat"),
    ("VLLMGPUMemoryNearFull", NEW, "obspack-chat"),
]
# (alert, pod, inhibiting alert): fires, and is muted while the other fires.
INHIBITED = [("VLLMHostMemoryNearLimit", RAM, "VLLMContainerOOMKilled")]
# What each pod fires in Prometheus over the whole incident, and nothing else.
FIRES = {
    RAM: {"VLLMHostMemoryNearLimit", "VLLMContainerOOMKilled"},
    CUDA: {"VLLMGPUMemoryNearFull", "VLLMContainerRestarted"},
    NEW: {"VLLMGPUMemoryNearFull"},
    WORKER: {"VLLMHostMemoryNearLimit"},  # and never VLLMTargetDown: only its leader serves vLLM metrics
    LEADER: set(),
    HEALTHY: set(),
}


def creep_host_memory(stack: Stack) -> list[Onset]:
    """Host RAM of `vllm-ram-0` and of the LWS worker creeps to 93% of its limit, a scrape interval per step."""
    crossed: dict[str, float] = {}
    for ratio in RAM_CREEP:
        for pod in (RAM, WORKER):
            crossed[pod] = stack.set_host_memory(pod, ratio)
        if ratio != RAM_CREEP[-1]:
            stack.sleep_scrape()
    return [Onset("VLLMHostMemoryNearLimit", pod, at) for pod, at in crossed.items()]


def fill_vram(stack: Stack) -> Onset:
    return Onset("VLLMGPUMemoryNearFull", CUDA, stack.set_vram(CUDA, VRAM_FULL))


def kernel_kills(stack: Stack) -> Onset:
    """The OOM killer ends the container (exit 137); the new one climbs in RAM while loading weights."""
    stack.set_host_memory(RAM, RAM_RELOADING)
    return Onset("VLLMContainerOOMKilled", RAM, stack.terminate(RAM, "OOMKilled", 137))


def cuda_oom_crash(stack: Stack) -> Onset:
    """CUDA out of memory: the engine exits with an error (exit 1); the new one reserves its usual 90%."""
    at = stack.terminate(CUDA, "Error", 1)
    stack.set_vram(CUDA, PREALLOCATED)
    return Onset("VLLMContainerRestarted", CUDA, at)


def new_pod_appears(stack: Stack) -> Onset:
    return Onset("VLLMGPUMemoryNearFull", NEW, stack.add_pod(NEW_POD))


def recover(stack: Stack) -> None:
    stack.set_host_memory(RAM, 0.5)
    stack.set_host_memory(WORKER, 0.5)
    stack.set_vram(NEW, PREALLOCATED)
