"""What the doctor says about the autoscalers of vLLM's namespaces, asked of a real Prometheus: an HPA on a
metric with no series, one on a renamed adapter metric that does exist, a ScaledObject whose trigger gets
empty answers, an HPA on CPU, and HPAs outside vLLM's namespaces left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from obspack.config import ObspackConfig
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.autoscalers import autoscaler_findings
from obspack.pack import build
from tests.support.prometheus import backfill_openmetrics, running_prometheus

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

PACK = build(ObspackConfig())
END = 1_790_000_000 // 60 * 60
HOURS = 2
TARGETS = (  # namespace, hpa, metric_name, metric_target_type
    ("llm", "stale", "vllm:gpu_cache_usage_perc", "average"),
    ("llm", "adapter", "vllm_num_requests_waiting", "value"),
    ("llm", "keda-hpa-chat", "s0-prometheus", "value"),
    ("llm", "cpu", "cpu", "utilization"),
    ("web", "shop", "nginx_requests", "average"),
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusAPI]:
    root = tmp_path_factory.mktemp("autoscalers")
    times = range(END - HOURS * 3600, END + 1, 60)
    series = {
        "vllm:num_requests_running": [('cluster="east",namespace="llm",pod="chat-0",model_name="m"', 2.0)],
        "vllm:num_requests_waiting": [('cluster="east",namespace="llm",pod="chat-0",model_name="m"', 1.0)],
        "kube_horizontalpodautoscaler_spec_target_metric": [
            (f'cluster="east",namespace="{ns}",horizontalpodautoscaler="{hpa}",metric_name="{name}",'
             f'metric_target_type="{kind}",job="kube-state-metrics"', 1.0)
            for ns, hpa, name, kind in TARGETS
        ],
    }
    with (root / "fleet.om").open("w") as out:
        for name, rows in series.items():
            out.write(f"# TYPE {name} gauge\n")
            for labels, value in rows:
                out.writelines(f"{name}{{{labels}}} {value} {t}\n" for t in times)
        name = "keda_scaler_empty_upstream_responses"
        out.write(f"# TYPE {name} counter\n")
        labels = 'cluster="east",namespace="keda",exported_namespace="llm",scaledResource="chat",ignoreNullValues="true"'
        out.writelines(f"{name}_total{{{labels}}} {i} {t}\n" for i, t in enumerate(times))
        out.write("# EOF\n")
    backfill_openmetrics(root / "fleet.om", root / "data", max_block="24h")
    with running_prometheus(root / "data") as prom, PrometheusAPI(Connection(prom.url)) as client:
        yield client


def test_hpas_on_missing_metrics_and_keda_empty_answers_are_problems(api: PrometheusAPI) -> None:
    found = {(f.level.value, f.subject): f for f in autoscaler_findings(api, PACK, END, 3600)}
    stale = found[("problem", "llm/stale (east)")]
    assert "scales on vllm:gpu_cache_usage_perc, and this Prometheus has no series of it" in stale.message.replace(
        "no series of vllm:gpu_cache_usage_perc", "no series of it"
    )
    assert "use vllm:kv_cache_usage_perc" in stale.message and stale.action == "kubectl -n llm describe hpa stale"
    assert ("problem", "llm/adapter (east)") not in found  # vllm_num_requests_waiting is vllm:num_requests_waiting
    assert "CPU utilisation does not follow" in found[("note", "llm/cpu (east)")].message
    keda = found[("problem", "llm/chat (east)")]  # the ScaledObject's namespace, though scraped without honor_labels
    assert "empty answers" in keda.message and keda.action.startswith("kubectl -n llm get scaledobject chat")
    listed = found[("note", "autoscalers")].message
    assert "llm/stale on vllm:gpu_cache_usage_perc" in listed and "web/shop" not in listed  # not a vLLM namespace
