"""The two memory planes, live: host RAM creeping into the kernel's OOM kill, and VRAM filling up into a
CUDA out-of-memory crash, next to a healthy pod at vLLM's normal 90% VRAM preallocation, and a pod that
appears in the middle with its GPU already full; a LeaderWorkerSet group whose worker (no vLLM /metrics of
its own) creeps in host RAM alongside, next to its quiet leader. The pods' cAdvisor, kube-state-metrics (two replicas)
and dcgm-exporter series (both label modes) come from fake exporters that a real Prometheus scrapes every
5 s with the pack's rules evaluated every 5 s; alerts go through a real Alertmanager with the pack's
example routes and inhibitions. The incident is obspack.demo.memory_planes (scripts/demo.sh plays it too).

Each alert must fire no later than `for` + 2 evaluation intervals + 1 scrape interval after the fake
exporters began to show its condition (obspack/demo/lag.py); the lags are printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.demo import memory_planes as mp
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, wait_until
from obspack.demo.lag import Lag, measure
from obspack.demo.stack import Stack, Tools
from tests.e2e.checks import (
    CRITICAL,
    WARNING,
    check_delivered,
    deliveries,
    explained,
    fired,
    inhibited_by,
    now,
    pending_then_firing,
    report_lags,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

VLLM = {"container": "vllm"}


@pytest.fixture(scope="module")
def stack(e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(tmp_path_factory.mktemp("memory-planes"), list(mp.PODS), e2e_tools) as stack:
        with explained(stack):
            stack.wait_for_data()
        yield stack


def gpu_labels(stack: Stack, pod: str) -> dict[str, str]:
    """What the GPU alert carries for the pod's GPU: index, UUID and node, as the attribution found them."""
    gpu = stack.cluster.pods[pod].gpus[0]
    return {"gpu": str(gpu.index), "UUID": gpu.uuid, "Hostname": stack.cluster.pods[pod].node}


def test_both_memory_planes_fire_route_inhibit_resolve_on_time(stack: Stack) -> None:
    lags: list[Lag] = []
    with explained(stack):
        # VRAM of vllm-cuda-0 fills up; host RAM of vllm-ram-0 and of the LWS worker creeps to its limit.
        started = now(stack)
        vram = mp.fill_vram(stack)
        ram = mp.creep_host_memory(stack)
        lags += [measure(stack, vram), *(measure(stack, onset) for onset in ram)]
        for pod in (mp.RAM, mp.WORKER):
            pending_then_firing(stack, "VLLMHostMemoryNearLimit", pod, started)
        pending_then_firing(stack, "VLLMGPUMemoryNearFull", mp.CUDA, started)
        for pod in (mp.RAM, mp.WORKER):  # the worker by its own name, though it serves no vLLM metrics
            check_delivered(
                stack, "VLLMHostMemoryNearLimit", pod, WARNING | VLLM, "vllm-host-memory-near-limit", "obspack-chat"
            )
        check_delivered(
            stack,
            "VLLMGPUMemoryNearFull",
            mp.CUDA,
            WARNING | gpu_labels(stack, mp.CUDA),
            "vllm-gpu-memory-near-full",
            "obspack-chat",
        )

        # The kernel OOM-kills vllm-ram-0 (exit 137); PyTorch's CUDA OOM crashes vllm-cuda-0 (Error).
        oom = mp.kernel_kills(stack)
        crash = mp.cuda_oom_crash(stack)
        lags += [measure(stack, oom), measure(stack, crash)]
        killed = check_delivered(
            stack, "VLLMContainerOOMKilled", mp.RAM, CRITICAL | VLLM, "vllm-container-oom-killed", "obspack-pager"
        )
        muted = stack.wait_alert(ALERTMANAGER, "VLLMHostMemoryNearLimit", mp.RAM, "suppressed")
        assert inhibited_by(muted) == [killed.last["fingerprint"]], "the OOM kill mutes the RAM warning"
        check_delivered(
            stack,
            "VLLMContainerRestarted",
            mp.CUDA,
            WARNING | VLLM | {"reason": "Error"},
            "vllm-container-restarted",
            "obspack-chat",
        )
        stack.wait_alert(PROMETHEUS, "VLLMGPUMemoryNearFull", mp.CUDA, "inactive")  # back at 90% after restart

        # A new pod appears with its GPU already full: attributed and alerted like the others.
        new = mp.new_pod_appears(stack)
        lags.append(measure(stack, new))
        check_delivered(
            stack,
            "VLLMGPUMemoryNearFull",
            mp.NEW,
            WARNING | gpu_labels(stack, mp.NEW),
            "vllm-gpu-memory-near-full",
            "obspack-chat",
        )

        # Every receiver got its notification; the muted RAM warning only before the kill.
        notified = set(mp.NOTIFIED)
        wait_until(lambda: notified <= deliveries(stack, "firing"), 30, f"notifications {notified}")

        # Recovery: RAM settles, the new pod's VRAM drops to 90%, the restarts leave the alerts' window.
        mp.recover(stack)
        for alertname, pod, _ in mp.NOTIFIED:
            stack.wait_alert(PROMETHEUS, alertname, pod, "inactive", timeout=180)
            stack.wait_alert(ALERTMANAGER, alertname, pod, "resolved", timeout=180)
        muted_pairs = {(a, p) for a, p, _ in mp.INHIBITED}
        expected = {(a, p, r) for a, p, r in notified if (a, p) not in muted_pairs}
        wait_until(lambda: expected <= deliveries(stack, "resolved"), 30, f"resolved notifications {expected}")

        # Exactly the alerts each pod should fire, and none on the healthy pod or the LWS leader; the worker,
        # whose vLLM Prometheus never scrapes, never VLLMTargetDown.
        assert {pod: fired(stack, pod) for pod in mp.FIRES} == mp.FIRES
        assert stack.watcher is not None
        assert not stack.watcher.tracks(PROMETHEUS, "VLLMTargetDown", pod=mp.WORKER), "not even pending"
    report_lags(stack, "Memory planes: lag from the exporters showing the condition to firing", lags)


def test_both_dcgm_label_modes_come_from_the_real_scrape(stack: Stack) -> None:
    """honor_labels: true keeps the workload in `pod`; the chart's default false moves it to `exported_pod`
    and puts the exporter's own pod in `pod`. Both nodes' GPUs are attributed all the same."""
    assert stack.prometheus is not None
    honored = stack.prometheus.query(f'DCGM_FI_DEV_FB_USED{{pod="{mp.RAM}"}}')
    exported = stack.prometheus.query(f'DCGM_FI_DEV_FB_USED{{exported_pod="{mp.CUDA}"}}')
    assert honored and "exported_pod" not in honored[0]["metric"]
    assert exported and exported[0]["metric"]["pod"] == "nvidia-dcgm-exporter-gpu-node-b"
    attributed = stack.prometheus.query(f'namespace_pod_model_gpu:vllm_gpu:info{{pod=~"{mp.RAM}|{mp.CUDA}"}}')
    assert sorted(r["metric"]["pod"] for r in attributed) == sorted([mp.CUDA, mp.RAM])


def test_the_lws_worker_is_a_vllm_pod_of_its_leaders_model_with_no_vllm_target(stack: Stack) -> None:
    """The worker serves no vLLM metrics, yet its GPUs count for its leader's model (kube_pod_owner: its
    StatefulSet is named after the leader pod) and its container is a vLLM container for the memory plane."""
    assert stack.prometheus is not None
    prometheus = stack.prometheus
    assert not prometheus.query(f'up{{pod="{mp.WORKER}"}}'), "Prometheus has no target on the worker"
    assert prometheus.query(f'up{{pod="{mp.LEADER}", job="vllm"}} == 1')
    gpus = prometheus.query(f'namespace_pod_model_gpu:vllm_gpu:info{{pod="{mp.WORKER}"}}')
    assert {r["metric"].get("model_name") for r in gpus} == {mp.LWS_MODEL}
    assert len(gpus) == len(stack.cluster.pods[mp.WORKER].gpus)
    assert prometheus.query(f'namespace_pod_container:vllm_container_memory_working_set_bytes:ratio_limit{{pod="{mp.WORKER}"}}')


def test_healthy_pod_at_vllms_preallocation_raises_nothing(stack: Stack) -> None:
    """90% VRAM, half the RAM limit, two GPUs: scraped, attributed, and silent (the LWS leader too)."""
    assert stack.watcher is not None and stack.prometheus is not None
    with explained(stack):
        for pod in mp.QUIET:
            gpus = stack.prometheus.query(f'namespace_pod_model_gpu:vllm_gpu:info{{pod="{pod}"}}')
            assert len(gpus) == len(stack.cluster.pods[pod].gpus), "its GPUs are attributed"
            ratio = stack.prometheus.query(f'namespace_pod_model:vllm_gpu_framebuffer_used:ratio_max{{pod="{pod}"}}')
            assert [round(float(r["value"][1]), 2) for r in ratio] == [0.9]
            assert stack.prometheus.query(
                f'namespace_pod_container:vllm_container_memory_working_set_bytes:ratio_limit{{pod="{pod}"}} == 0.5'
            )
            seen = stack.watcher.tracks(PROMETHEUS, pod=pod)
            assert not [t.labels["alertname"] for t in seen if "firing" in t.went_through()], "fired"
            assert stack.warm_at is not None
            late = [(t.labels["alertname"], t.states) for t in seen if any(at >= stack.warm_at for at, _ in t.states)]
            assert not late, f"alerts after warm-up: {late}"  # before: see FIRST_SCRAPE_ARTEFACTS, test_incident
            assert not stack.watcher.tracks(ALERTMANAGER, pod=pod)
