"""What the doctor says about prices, asked of a real Prometheus: a GPU model vLLM pods hold with no price is
a problem that names the entry to add; a priced one, a training pod's GPU and a pack in GPU-hours are not;
with OpenCost, a node without node_gpu_hourly_cost is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.config import ObspackConfig
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.findings import Level
from obspack.doctor.prices import price_findings, price_of
from obspack.pack import build
from obspack.pack.build import costs
from tests.support.prometheus import backfill_openmetrics, running_prometheus

END = 1_790_000_000 // 60 * 60
H100, L4, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA L4", "NVIDIA A100-SXM4-80GB"
PRICED = {"currency": "USD", "gpus": [{"model_regex": "NVIDIA H100.*", "hourly": 4},
                                      {"model_regex": "NVIDIA A100.*", "hourly": 3, "cluster_regex": "west"}]}


def test_prices_follow_the_rules_first_match_cluster_and_blanks() -> None:
    table = costs(ObspackConfig.model_validate({"cost": {**PRICED, "default_hourly": 1}}))
    assert price_of(table, "east", H100, "") == 4
    assert price_of(table, "east", "NVIDIA-H100-80GB-HBM3", "") == 4  # GPU Feature Discovery's spelling
    assert price_of(table, "east", A100, "") == 1  # the A100 entry is for cluster west only: the default
    assert price_of(table, "west", A100, "") == 3
    assert price_of(costs(ObspackConfig.model_validate({"cost": PRICED})), "east", L4, "") is None


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusAPI]:
    root = tmp_path_factory.mktemp("prices")
    times = range(END - 3600, END + 1, 60)
    gpus = [  # node, gpu, model, pod (empty: a training pod's)
        ("gpu-1", "0", H100, "chat-0"), ("gpu-2", "0", L4, "embed-0"), ("gpu-3", "0", A100, "")
    ]
    rows = {
        "vllm:num_requests_running": [
            f'cluster="east",namespace="llm",pod="{pod}",model_name="m",engine="0"' for _, _, _, pod in gpus if pod
        ],
        "DCGM_FI_DEV_FB_USED": [
            f'cluster="east",instance="{node}:9400",gpu="{gpu}",UUID="GPU-{node}",Hostname="{node}",modelName="{model}",'
            f'namespace="{"llm" if pod else "training"}",pod="{pod or "trainer-0"}",container="x"'
            for node, gpu, model, pod in gpus
        ],
        "node_gpu_hourly_cost": ['cluster="east",node="gpu-1",instance="opencost"'],
        # the L4's node pool; a node series, in no namespace
        "kube_node_labels": ['cluster="east",job="kube-state-metrics",node="gpu-2",label_karpenter_sh_nodepool="spot-l4"'],
    }
    with (root / "fleet.om").open("w") as out:
        for name, series in rows.items():
            out.write(f"# TYPE {name} gauge\n")
            for labels in series:
                out.writelines(f"{name}{{{labels}}} 1 {t}\n" for t in times)
        out.write("# EOF\n")
    backfill_openmetrics(root / "fleet.om", root / "data", max_block="24h")
    with running_prometheus(root / "data") as prom, PrometheusAPI(Connection(prom.url)) as client:
        yield client


@pytest.mark.e2e
@pytest.mark.tool
def test_a_gpu_model_in_use_without_a_price_is_a_problem(api: PrometheusAPI) -> None:
    found = price_findings(api, build(ObspackConfig.model_validate({"cost": PRICED})), END)
    assert [(f.level, f.subject) for f in found] == [(Level.PROBLEM, f"{L4} (east)")]
    assert "no cost.gpus entry matches it" in found[0].message
    assert found[0].action.startswith('add to cost.gpus in obspack.yaml: {"model_regex": "NVIDIA\\\\ L4", "hourly": "<price>"}')
    # a default prices everything; no prices at all is GPU-hours, a note
    assert price_findings(api, build(ObspackConfig.model_validate({"cost": {**PRICED, "default_hourly": 1}})), END) == []
    assert [f.level for f in price_findings(api, build(ObspackConfig()), END)] == [Level.NOTE]


@pytest.mark.e2e
@pytest.mark.tool
def test_with_opencost_a_node_without_its_price_is_a_problem(api: PrometheusAPI) -> None:
    pack = build(ObspackConfig.model_validate({"cost": {"source": "opencost", "currency": "USD"}}))
    found = price_findings(api, pack, END)
    assert [(f.level, f.subject) for f in found] == [(Level.PROBLEM, f"{L4} (east)")]
    assert "node gpu-2" in found[0].message


@pytest.mark.e2e
@pytest.mark.tool
def test_a_price_per_node_pool_is_found_with_the_namespaces_in_scope(api: PrometheusAPI) -> None:
    """The pool comes from kube_node_labels, a node series: the scope's namespace must not be asked of it,
    or the L4 priced for its spot pool reads as unpriced."""
    spot = {"model_regex": "NVIDIA L4", "hourly": 1, "node_pool_regex": "spot-.*"}
    cost = {**PRICED, "gpus": [*PRICED["gpus"], spot], "node_pool_label": "karpenter.sh/nodepool"}
    for scope in ({}, {"namespace_regex": "llm"}):
        pack = build(ObspackConfig.model_validate({"cost": cost, "scope": scope}))
        assert price_findings(api, pack, END) == [], scope
    # without the pool's price, the L4 is unpriced: the test can fail
    unpriced = build(ObspackConfig.model_validate({"cost": {**cost, "gpus": PRICED["gpus"]}, "scope": {"namespace_regex": "llm"}}))
    assert [f.subject for f in price_findings(api, unpriced, END)] == [f"{L4} (east)"]
