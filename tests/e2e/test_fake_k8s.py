"""The fake Kubernetes-side exporters serve what the real ones serve, and follow the simulated pods."""

from __future__ import annotations

import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from obspack.demo.fake_k8s import FB_TOTAL_MIB, LWS_WORKER_INDEX, Cluster, FakeSources, exposition


def samples(cluster: Cluster, path: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    body = exposition(cluster, path)
    assert body is not None, path
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def cluster() -> Cluster:
    c = Cluster()
    c.add("vllm-a", "llm", "gpu-node-a", gpus=2)
    c.add("vllm-b", "llm", "gpu-node-b")
    return c


def test_kube_state_metrics_shows_a_termination_only_after_it_happened() -> None:
    c = cluster()
    before = samples(c, "/kube-state-metrics/metrics")
    assert "kube_pod_container_status_last_terminated_reason" not in before
    assert {s[1] for s in before["kube_pod_container_status_restarts_total"]} == {0}
    c.terminate("vllm-a", "OOMKilled", 137)
    after = samples(c, "/kube-state-metrics/metrics")
    (labels, value), = after["kube_pod_container_status_last_terminated_reason"]
    assert (labels["pod"], labels["container"], labels["reason"], value) == ("vllm-a", "vllm", "OOMKilled", 1)
    assert after["kube_pod_container_status_last_terminated_exitcode"][0][1] == 137
    restarts = {(lb["pod"], lb["container"]): v for lb, v in after["kube_pod_container_status_restarts_total"]}
    assert restarts[("vllm-a", "vllm")] == 1 and restarts[("vllm-b", "vllm")] == 0
    gpus = [v for lb, v in after["kube_pod_container_resource_limits"] if lb["resource"] == "nvidia_com_gpu"]
    assert sorted(gpus) == [1, 2]


def test_cadvisor_reports_containers_and_the_pod_cgroup_of_its_node_only() -> None:
    c = cluster()
    c.set_host_memory("vllm-a", 0.93)
    ws = samples(c, "/nodes/gpu-node-a/metrics/cadvisor")["container_memory_working_set_bytes"]
    by_container = {lb["container"]: v for lb, v in ws}
    assert {lb["pod"] for lb, _ in ws} == {"vllm-a"}
    assert set(by_container) == {"vllm", "obspack-exporter", ""}  # "" is the pod-level cgroup
    limit = next(v for lb, v in samples(c, "/kube-state-metrics/metrics")["kube_pod_container_resource_limits"]
                 if lb["pod"] == "vllm-a" and lb["resource"] == "memory")
    assert by_container["vllm"] == int(limit * 0.93) and by_container[""] > by_container["vllm"]


def test_dcgm_labels_held_gpus_with_their_pod_and_leaves_the_idle_one_bare() -> None:
    c = cluster()
    c.set_vram("vllm-a", 0.99)
    used = samples(c, "/nodes/gpu-node-a/dcgm")["DCGM_FI_DEV_FB_USED"]
    by_gpu = {lb["gpu"]: (lb["pod"], v) for lb, v in used}
    assert by_gpu == {"0": ("vllm-a", round(FB_TOTAL_MIB * 0.99)), "1": ("vllm-a", round(FB_TOTAL_MIB * 0.99)), "2": ("", 0)}
    free = {lb["gpu"]: v for lb, v in samples(c, "/nodes/gpu-node-a/dcgm")["DCGM_FI_DEV_FB_FREE"]}
    assert free["0"] + by_gpu["0"][1] == FB_TOTAL_MIB


def test_served_over_http_with_the_exposition_content_type() -> None:
    sources = FakeSources(cluster())
    try:
        with urllib.request.urlopen(f"http://{sources.address}/nodes/gpu-node-b/dcgm") as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert b'pod="vllm-b"' in response.read()
        try:
            urllib.request.urlopen(f"http://{sources.address}/nope")
            raise AssertionError("an unknown path must be a 404")
        except urllib.error.HTTPError as e:
            assert e.code == 404
    finally:
        sources.stop()


def test_owners_and_labels_tell_a_leaderworkerset_worker_and_a_decode_pod() -> None:
    """kube-state-metrics names each pod's owner (a LeaderWorkerSet worker's StatefulSet is named after its
    leader pod) and its allowlisted labels, keys sanitised; the worker runs no exporter sidecar, so cAdvisor
    and kube-state-metrics show only its vLLM container."""
    c = Cluster()
    c.add("vllm-pd-decode-0", "llm", "gpu-node-a", labels={"llm-d.ai/role": "decode"})
    c.add("vllm-lws-0", "llm", "gpu-node-a", 2, owner=("StatefulSet", "vllm-lws"), labels={LWS_WORKER_INDEX: "0"})
    c.add("vllm-lws-0-1", "llm", "gpu-node-b", 2, owner=("StatefulSet", "vllm-lws-0"), labels={LWS_WORKER_INDEX: "1"},
          sidecar=False)  # fmt: skip
    ksm = samples(c, "/kube-state-metrics/metrics")
    owners = {lb["pod"]: (lb["owner_kind"], lb["owner_name"]) for lb, _ in ksm["kube_pod_owner"]}
    assert owners == {
        "vllm-pd-decode-0": ("ReplicaSet", "vllm-pd-decode"),
        "vllm-lws-0": ("StatefulSet", "vllm-lws"),
        "vllm-lws-0-1": ("StatefulSet", "vllm-lws-0"),
    }
    labels = {lb["pod"]: lb for lb, _ in ksm["kube_pod_labels"]}
    assert labels["vllm-pd-decode-0"]["label_llm_d_ai_role"] == "decode"
    assert labels["vllm-lws-0-1"]["label_leaderworkerset_sigs_k8s_io_worker_index"] == "1"
    containers = {(lb["pod"], lb["container"]) for lb, _ in ksm["kube_pod_container_info"]}
    assert ("vllm-lws-0-1", "vllm") in containers and ("vllm-lws-0-1", "obspack-exporter") not in containers
    assert ("vllm-lws-0", "obspack-exporter") in containers
    ws = samples(c, "/nodes/gpu-node-b/metrics/cadvisor")["container_memory_working_set_bytes"]
    assert {lb["container"] for lb, _ in ws} == {"vllm", ""}
    gpus = {lb["pod"] for lb, _ in samples(c, "/nodes/gpu-node-b/dcgm")["DCGM_FI_DEV_FB_USED"]}
    assert gpus == {"vllm-lws-0-1", ""}, "the worker's GPUs are its own"
