"""The example Alertmanager config of the pack: its shape, `amtool check-config`, routing with `amtool
config routes test`, and its inhibitions in a real Alertmanager fed with alerts through its API."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.clients import Alertmanager, wait_until
from obspack.demo.processes import alertmanager_argv, start_server
from obspack.demo.stack import Tools
from obspack.pack.alertmanager import alertmanager_example
from obspack.render import yamlfmt
from tests.support.tools import amtool_route

TEAM_CONFIG = {
    "alerts": {
        "VLLMZeroThroughput": {"labels": {"team": "ml-platform"}},
        "VLLMPrefixCacheHitRateLow": {"labels": {"team": "ml-platform"}},
        "VLLMKVCacheFragmentationHigh": {"enabled": False},
    }
}


def example(**settings: object) -> dict:
    return alertmanager_example(ObspackConfig.model_validate(settings))


def receivers_used(route: dict) -> set[str]:
    return {route["receiver"]}.union(*(receivers_used(r) for r in route.get("routes", [])))


def write_rendered(tmp_path: Path, settings: dict) -> Path:
    """The example as the pack's writer dumps it (the incident test goes through `obspack render` itself)."""
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yamlfmt.dump(example(**settings)), encoding="utf-8")
    return path


# --- shape ------------------------------------------------------------------------------------------------


def test_groups_by_alert_and_pod_and_every_receiver_is_defined() -> None:
    config = example()
    assert config["route"]["group_by"] == ["alertname", "cluster", "namespace", "pod"]
    defined = [r["name"] for r in config["receivers"]]
    assert len(defined) == len(set(defined))
    assert receivers_used(config["route"]) <= set(defined)
    assert all(set(r) == {"name"} for r in config["receivers"]), "receivers are placeholders"


def test_cluster_label_comes_from_the_config() -> None:
    config = example(cluster_label="k8s_cluster")
    assert "k8s_cluster" in config["route"]["group_by"] and "cluster" not in config["route"]["group_by"]
    assert all(rule["equal"][0] == "k8s_cluster" for rule in config["inhibit_rules"])


def test_team_routes_come_from_the_team_labels_of_the_config() -> None:
    assert [r["matchers"] for r in example()["route"]["routes"][0]["routes"]] == [
        ['severity="critical"'],
        ['severity="warning"'],
        ['severity="info"'],
    ]
    routes = example(**TEAM_CONFIG)["route"]["routes"][0]["routes"]
    assert routes[0]["matchers"] == ['team="ml-platform"']
    assert example(common_labels={"team": "serving"})["route"]["routes"][0]["routes"][0]["matchers"] == [
        'team="serving"'
    ]


def test_inhibitions_pair_each_warning_with_the_critical_that_explains_it() -> None:
    rules = {r["source_matchers"][0]: r for r in example()["inhibit_rules"]}
    kv = rules['alertname="VLLMKVCacheUsageCritical"']
    assert kv["target_matchers"] == ['alertname="VLLMKVCacheUsageHigh"']
    assert kv["equal"] == ["cluster", "namespace", "pod", "model_name"]
    oom = rules['alertname="VLLMContainerOOMKilled"']
    assert oom["target_matchers"] == ['alertname="VLLMHostMemoryNearLimit"']
    assert oom["equal"] == ["cluster", "namespace", "pod", "container"]
    pool = rules['alertname=~"InferenceGatewayPickerDown|InferencePoolNoReadyEndpoints"']
    # engine alerts carry no pool: only an outage that is its namespace's only pool mutes them
    assert pool["source_matchers"][1:] == ['only_pool_in_namespace="true"']
    assert pool["equal"] == ["cluster", "namespace"]
    assert pool["target_matchers"] == ['alertname=~"VLLMTargetDown|VLLMZeroThroughput|VLLMErrorBudgetBurn"']
    empty = rules['alertname="InferencePoolNoReadyEndpoints"']
    assert empty["target_matchers"] == ['alertname="InferenceGatewayFlowControlRejections"']
    assert empty["equal"] == ["cluster", "namespace", "inference_pool"]
    down = rules['alertname="VLLMTargetDown"']
    assert down["equal"] == ["cluster", "namespace", "pod"]
    targets = down["target_matchers"][0]
    assert "VLLMZeroThroughput" in targets and "ObspackExporterTargetDown" in targets
    assert "VLLMContainerOOMKilled" not in targets and "VLLMTargetDown|" not in targets


def test_disabled_alerts_leave_routes_and_inhibitions() -> None:
    config = example(alerts={"VLLMKVCacheUsageCritical": {"enabled": False}})
    assert "VLLMKVCacheUsageCritical" not in config["route"]["routes"][0]["matchers"][0]
    assert all("VLLMKVCacheUsageCritical" not in r["source_matchers"][0] for r in config["inhibit_rules"])
    picker_off = example(alerts={"InferenceGatewayPickerDown": {"enabled": False}, "VLLMZeroThroughput": {"enabled": False}})
    pool = [r for r in picker_off["inhibit_rules"] if r["equal"] == ["cluster", "namespace"]]
    assert pool == [{
        "source_matchers": ['alertname="InferencePoolNoReadyEndpoints"', 'only_pool_in_namespace="true"'],
        "target_matchers": ['alertname=~"VLLMTargetDown|VLLMErrorBudgetBurn"'],
        "equal": ["cluster", "namespace"],
    }]
    both_off = example(alerts={a: {"enabled": False} for a in ("InferenceGatewayPickerDown", "InferencePoolNoReadyEndpoints")})
    assert not [r for r in both_off["inhibit_rules"] if "Inference" in r["source_matchers"][0]]


# --- amtool -----------------------------------------------------------------------------------------------


@pytest.mark.tool
@pytest.mark.parametrize(
    "settings", [{}, TEAM_CONFIG, {"cluster_label": "k8s_cluster"}], ids=["default", "teams", "label"]
)
def test_amtool_check_config_accepts_the_rendered_file(amtool: str, tmp_path: Path, settings: dict) -> None:
    path = write_rendered(tmp_path, settings)
    run = subprocess.run([amtool, "check-config", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


ROUTES = [
    ("critical to the pager", ["alertname=VLLMKVCacheUsageCritical", "severity=critical"], "obspack-pager"),
    ("warning to chat", ["alertname=VLLMKVCacheUsageHigh", "severity=warning"], "obspack-chat"),
    ("info to tickets", ["alertname=VLLMPrefixCacheHitRateLow", "severity=info"], "obspack-ticket"),
    ("team critical to the team pager", ["alertname=VLLMZeroThroughput", "severity=critical", "team=ml-platform"],
     "obspack-team-ml-platform-pager"),
    ("team warning to team chat", ["alertname=VLLMKVCacheUsageHigh", "severity=warning", "team=ml-platform"],
     "obspack-team-ml-platform-chat"),
    ("team info to tickets", ["alertname=VLLMPrefixCacheHitRateLow", "severity=info", "team=ml-platform"],
     "obspack-ticket"),
    ("unknown team by severity", ["alertname=VLLMTargetDown", "severity=critical", "team=other"], "obspack-pager"),
    ("other packs' alerts to the default", ["alertname=KubePodCrashLooping", "severity=critical"], "default"),
]  # fmt: skip


@pytest.mark.tool
@pytest.mark.parametrize(("labels", "receiver"), [r[1:] for r in ROUTES], ids=[r[0] for r in ROUTES])
def test_amtool_routes_alerts_to_the_expected_receiver(
    amtool: str, tmp_path: Path, labels: list[str], receiver: str
) -> None:
    path = write_rendered(tmp_path, TEAM_CONFIG)
    amtool_route(amtool, path, receiver, labels)


# --- a real Alertmanager ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def alertmanager(e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Alertmanager]:
    """Alertmanager running the rendered example as is (placeholder receivers, 30s group_wait)."""
    workdir = tmp_path_factory.mktemp("alertmanager")
    config = write_rendered(workdir, TEAM_CONFIG)
    with contextlib.ExitStack() as cleanup:
        argv = alertmanager_argv(e2e_tools.alertmanager, config, workdir / "data")
        server = start_server("alertmanager", argv, "/-/ready", workdir, cleanup)
        yield Alertmanager(f"http://{server.address}")


def alert(name: str, severity: str, pod: str = "vllm-0", cluster: str = "prod", **labels: str) -> dict:
    """An alert as Prometheus sends it (pod "": an alert without a pod, such as a pool's or a model's)."""
    base = {"alertname": name, "severity": severity, "cluster": cluster, "namespace": "llm", "pod": pod}
    return {"labels": {k: v for k, v in {**base, **labels}.items() if v}, "annotations": {"summary": name}}


# (case, alert, inhibited by the alert named here, or None)
INHIBITION_CASES = [
    ("kv high under kv critical", alert("VLLMKVCacheUsageHigh", "warning", "kv-0", model_name="m"),
     "VLLMKVCacheUsageCritical"),
    ("kv critical stays", alert("VLLMKVCacheUsageCritical", "critical", "kv-0", model_name="m"), None),
    ("kv high on another pod", alert("VLLMKVCacheUsageHigh", "warning", "kv-1", model_name="m"), None),
    ("kv high in another cluster", alert("VLLMKVCacheUsageHigh", "warning", "kv-0", "staging", model_name="m"),
     None),
    # per-engine KV alerts (data-parallel engines): a critical engine mutes the pod's warnings, its own
    # engine's, another engine's and the pod-wide one alike: one page for one pod's KV cache
    ("kv high of the critical engine", alert("VLLMKVCacheUsageHigh", "warning", "kv-2", model_name="m", engine="1"),
     "VLLMKVCacheUsageCritical"),
    ("kv high of another engine", alert("VLLMKVCacheUsageHigh", "warning", "kv-2", model_name="m", engine="0"),
     "VLLMKVCacheUsageCritical"),
    ("kv high of the whole pod", alert("VLLMKVCacheUsageHigh", "warning", "kv-2", model_name="m"),
     "VLLMKVCacheUsageCritical"),
    ("kv high of an engine under a pod-wide critical",
     alert("VLLMKVCacheUsageHigh", "warning", "kv-0", model_name="m", engine="1"), "VLLMKVCacheUsageCritical"),
    ("kv high of an engine on another pod",
     alert("VLLMKVCacheUsageHigh", "warning", "kv-1", model_name="m", engine="1"), None),
    ("host memory under oom kill", alert("VLLMHostMemoryNearLimit", "warning", "mem-0", container="vllm"),
     "VLLMContainerOOMKilled"),
    ("host memory of another container", alert("VLLMHostMemoryNearLimit", "warning", "mem-0", container="proxy"),
     None),
    ("zero throughput under target down", alert("VLLMZeroThroughput", "critical", "down-0", model_name="m"),
     "VLLMTargetDown"),
    ("exporter down under target down", alert("ObspackExporterTargetDown", "warning", "down-0"), "VLLMTargetDown"),
    ("oom kill explains target down", alert("VLLMContainerOOMKilled", "critical", "down-0", container="vllm"), None),
    ("other packs' alerts on the pod", alert("KubePodNotReady", "warning", "down-0"), None),
    # an EPP outage in prod/gateway: the engines behind the pool go quiet, the picker pages once
    ("engine down behind a dead picker", alert("VLLMTargetDown", "critical", "llama-1", namespace="gateway"),
     "InferenceGatewayPickerDown"),
    ("engine stuck behind a dead picker", alert("VLLMZeroThroughput", "critical", "llama-2", namespace="gateway",
     model_name="m"), "InferenceGatewayPickerDown"),
    ("slo burn behind a dead picker", alert("VLLMErrorBudgetBurn", "critical", "", namespace="gateway",
     model_name="m", slo="availability"), "InferenceGatewayPickerDown"),
    ("oom kill explains an empty pool", alert("VLLMContainerOOMKilled", "critical", "llama-1", namespace="gateway",
     container="vllm"), None),
    ("engine down in another namespace", alert("VLLMTargetDown", "critical", "llama-1", namespace="llm"), None),
    ("engine down in another cluster", alert("VLLMTargetDown", "critical", "llama-1", "staging", namespace="gateway"),
     None),
    # prod/shared holds two pools, llama (empty) and qwen: an engine alert there may be qwen's, so it pages;
    # the empty pool's own flow-control rejections do not, the other pool's do
    ("engine down beside a second pool", alert("VLLMTargetDown", "critical", "qwen-1", namespace="shared"), None),
    ("rejections of the empty pool", alert("InferenceGatewayFlowControlRejections", "warning", "", namespace="shared",
     inference_pool="llama"), "InferencePoolNoReadyEndpoints"),
    ("rejections of the other pool", alert("InferenceGatewayFlowControlRejections", "warning", "", namespace="shared",
     inference_pool="qwen"), None),
]  # fmt: skip

SOURCES = [
    alert("VLLMKVCacheUsageCritical", "critical", "kv-0", model_name="m"),
    alert("VLLMKVCacheUsageCritical", "critical", "kv-2", model_name="m", engine="1"),
    alert("VLLMContainerOOMKilled", "critical", "mem-0", container="vllm"),
    alert("VLLMTargetDown", "critical", "down-0"),
    alert("InferenceGatewayPickerDown", "critical", "", namespace="gateway", job="llm-d-router-epp",
          only_pool_in_namespace="true"),
    alert("InferencePoolNoReadyEndpoints", "critical", "", namespace="shared", inference_pool="llama"),
]


@pytest.mark.e2e
def test_alertmanager_inhibits_warnings_under_their_critical(alertmanager: Alertmanager) -> None:
    def listed() -> dict[tuple, dict]:
        return {tuple(sorted(a["labels"].items())): a for a in alertmanager.alerts()}

    def key(sent: dict) -> tuple:
        return tuple(sorted(sent["labels"].items()))

    # Sources first: the inhibitor learns about alerts asynchronously, after the API accepted them.
    alertmanager.post_alerts(SOURCES)

    def sources_listed() -> dict[tuple, dict] | None:
        seen = listed()
        return seen if all(key(a) in seen for a in SOURCES) else None

    sources = wait_until(sources_listed, 10, "the source alerts to be listed")
    def inhibitor_of(sent: dict, name: str) -> str:
        """The fingerprint of the source named `name` where `sent` is: on its pod, or for a source about a
        whole namespace (a pool's picker), in its cluster and namespace."""
        where = [sent["labels"][k] for k in ("cluster", "namespace")]
        [source] = [a for a in SOURCES if a["labels"]["alertname"] == name
                    and [a["labels"][k] for k in ("cluster", "namespace")] == where
                    and a["labels"].get("pod") in (None, sent["labels"].get("pod"))]  # fmt: skip
        return sources[key(source)]["fingerprint"]

    alertmanager.post_alerts([case[1] for case in INHIBITION_CASES])

    def problems() -> list[str]:
        seen, found = listed(), []
        for case, sent, inhibitor in INHIBITION_CASES:
            status = seen.get(key(sent), {}).get("status", {})
            by = inhibitor_of(sent, inhibitor) if inhibitor else None
            expected = ("suppressed", [by]) if by else ("active", [])
            if (status.get("state"), status.get("inhibitedBy")) != expected:
                found.append(f"{case}: expected {expected}, got {status}")
        return found

    try:
        wait_until(lambda: not problems(), 10, "the inhibitions to apply")
    except TimeoutError:
        pytest.fail("\n".join(problems()))


@pytest.mark.e2e
def test_alertmanager_loads_the_rendered_routes(alertmanager: Alertmanager) -> None:
    from obspack.demo.clients import get_json

    status = get_json(f"{alertmanager.url}/api/v2/status")
    loaded = yaml.safe_load(status["config"]["original"])
    assert [r["name"] for r in loaded["receivers"]] == [
        r["name"] for r in example(**TEAM_CONFIG)["receivers"]
    ]
    assert len(loaded["inhibit_rules"]) == len(example(**TEAM_CONFIG)["inhibit_rules"])
