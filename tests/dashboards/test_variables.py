"""The cluster picker is hidden for a single-cluster fleet and shown when the config says it spans clusters."""

from obspack.config import GrafanaOutput, ObspackConfig
from obspack.dashboards import all_dashboards


def cluster_hide(cfg: ObspackConfig) -> set[int]:
    return {
        v["hide"]
        for _, model in all_dashboards(cfg)
        for v in model["templating"]["list"]  # type: ignore[index]
        if v["name"] == "cluster"
    }


def test_cluster_variable_hidden_by_default_and_shown_for_multi_cluster() -> None:
    assert cluster_hide(ObspackConfig()) == {2}
    assert cluster_hide(ObspackConfig(grafana=GrafanaOutput(multi_cluster=True))) == {0}
