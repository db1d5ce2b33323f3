"""The autoscalers obspack renders: valid against KEDA's published CRD and Kubernetes' own schemas, reading
the signal the rules record, scaling up fast and down slowly, and off unless asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from obspack import conventions as c
from obspack.config import ObspackConfig, conflicts
from obspack.pack import build
from obspack.pack.autoscaling import manifests
from obspack.render.files import pack_files

SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "reference" / "schemas"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def config(*autoscalers: dict[str, Any], **autoscaling: Any) -> ObspackConfig:
    return ObspackConfig.model_validate({"autoscaling": {**autoscaling, "autoscalers": list(autoscalers)}})


def keda(**changes: Any) -> dict[str, Any]:
    return {"name": "chat", "namespace": "llm", "model": MODEL, "target": {"name": "vllm-chat"}, **changes}


def crd_schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / name
    if not path.exists():
        pytest.skip(f"{path} is not there (the shared reference sits beside the checkout)")
    crd = yaml.safe_load(path.read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_nothing_is_rendered_by_default() -> None:
    assert manifests(ObspackConfig()).files == () and not any("autoscaling/" in p for p in pack_files(build(ObspackConfig())))


@pytest.mark.parametrize(
    "autoscaler",
    [
        keda(),
        keda(prometheus={"authentication": "prom-token", "authentication_kind": "ClusterTriggerAuthentication"}),
        keda(min_replicas=0, wake_query='sum(inference_pool_queue{pool="chat"})', activation=1, target={"kind": "StatefulSet", "name": "s"}),
        keda(cluster="gpu-east", target={"kind": "LeaderWorkerSet", "name": "big"}, max_replicas=16),
    ],
)
def test_every_scaled_object_validates_against_kedas_crd(autoscaler: dict[str, Any]) -> None:
    ((_, (so,)),) = manifests(config(autoscaler)).files
    schema = crd_schema("keda-scaledobject-crd.yaml")
    jsonschema.validate(so, schema)
    assert so["apiVersion"] == "keda.sh/v1alpha1" and so["kind"] == "ScaledObject"
    broken = {**so, "spec": {**so["spec"], "maxReplicaCount": "4", "triggers": []}}
    with pytest.raises(jsonschema.ValidationError):  # the schema does check: no trigger, a count as text
        jsonschema.validate(broken, schema)


def test_the_trigger_reads_one_series_of_the_signal_and_holds_replicas_when_it_is_missing() -> None:
    ((_, (so,)),) = manifests(config(keda(cluster="gpu-east"))).files
    (trigger,) = so["spec"]["triggers"]
    assert trigger["metricType"] == "Value" and trigger["metadata"]["threshold"] == "1"
    assert trigger["metadata"]["query"] == f'max({c.SATURATION}{{cluster="gpu-east", namespace="llm", model_name="{MODEL}"}})'
    assert trigger["metadata"]["ignoreNullValues"] == "false"  # an empty signal is an error, not a 0
    behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0 and behavior["scaleDown"]["stabilizationWindowSeconds"] == 600
    assert behavior["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 300}]


def test_scale_from_zero_wakes_on_the_wake_query_at_the_activation_threshold() -> None:
    ((_, (so,)),) = manifests(config(keda(min_replicas=0, wake_query="sum(gateway_queue)", activation=2), targets={"queue": 4})).files
    saturation, wake = so["spec"]["triggers"]
    assert saturation["metadata"]["ignoreNullValues"] == "true" and so["spec"]["minReplicaCount"] == 0
    assert wake["metadata"] == {
        "serverAddress": "http://prometheus-operated.monitoring.svc:9090",
        "query": "sum(gateway_queue)",
        "threshold": "4",
        "activationThreshold": "2",
        "ignoreNullValues": "true",
    }
    assert so["spec"]["cooldownPeriod"] == 600


def test_an_hpa_validates_against_kubernetes_and_its_adapter_rule_serves_its_metric() -> None:
    found = manifests(config(keda(engine="hpa", cluster="gpu-east")))
    ((name, (hpa,)),) = found.files
    kubernetes_validate.validate(hpa, "1.30.0", strict=True)
    (rule,) = found.adapter_rules
    assert hpa["spec"]["metrics"][0]["external"]["metric"]["name"] == rule["name"]["as"] == "obspack_vllm_saturation_chat"
    assert rule["seriesQuery"] == f'{c.SATURATION}{{cluster="gpu-east", namespace="llm", model_name="{MODEL}"}}'
    assert rule["metricsQuery"] == f'max(<<.Series>>{{<<.LabelMatchers>>, cluster="gpu-east", model_name="{MODEL}"}})'
    files = pack_files(build(config(keda(engine="hpa"))))
    adapter = yaml.safe_load(files["kubernetes/autoscaling/prometheus-adapter-rules.yaml"])
    assert adapter == {"externalRules": [rule | {"seriesQuery": f'{c.SATURATION}{{namespace="llm", model_name="{MODEL}"}}',
                                                 "metricsQuery": f'max(<<.Series>>{{<<.LabelMatchers>>, model_name="{MODEL}"}})'}]}
    assert name == "llm-chat.yaml" and "kubernetes/autoscaling/llm-chat.yaml" in files


def test_the_signal_each_autoscaler_reads_is_a_record_the_pack_writes() -> None:
    pack = build(config(keda(), keda(name="b", engine="hpa")))
    records = {r.record for g in pack.recording_groups for r in g.rules}  # type: ignore[union-attr]
    assert c.SATURATION in records and c.SATURATION_PART in records


@pytest.mark.parametrize(
    ("autoscaler", "message"),
    [
        (keda(wake_query="sum(("), "is not a PromQL expression"),
        (keda(name="Chat"), "is not a Kubernetes name"),
        (keda(engine="argo"), "Input should be 'keda' or 'hpa'"),
    ],
)
def test_bad_autoscaler_values_are_refused_with_the_reason(autoscaler: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        config(autoscaler)


@pytest.mark.parametrize(
    ("autoscalers", "where", "message"),
    [
        ([keda(min_replicas=3, max_replicas=2)], ("0", "max_replicas"), "2 is below min_replicas"),
        ([keda(min_replicas=0)], ("0", "min_replicas"), "0 needs wake_query"),
        ([keda(min_replicas=0, engine="hpa", wake_query="x")], ("0", "min_replicas"), "0 needs engine: keda"),
        ([keda(), keda(model="other")], ("1", "name"), "'chat' is taken in namespace llm by another autoscaler"),
    ],
)
def test_autoscalers_that_cannot_work_are_conflicts_at_their_key(
    autoscalers: list[dict[str, Any]], where: tuple[str, str], message: str
) -> None:
    (found,) = conflicts(config(*autoscalers))
    assert found.loc == ("autoscaling", "autoscalers", *where) and found.message.startswith(message)
