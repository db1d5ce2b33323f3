import pytest

from obspack.config import ObspackConfig


@pytest.fixture
def default_config() -> ObspackConfig:
    return ObspackConfig()


# How the suite shares two cores (scripts/test.sh: `-n 3 --dist loadgroup`). Each file is one group, run whole
# on one worker (its module fixtures, such as a backfilled Prometheus, start once), except the live e2e
# stacks: they are one group, run one after the other on one worker. They mostly wait on real scrape and
# rule intervals, so the two other workers keep both cores busy meanwhile, and no two stacks compete for
# the cores their timing budgets assume.
LIVE = "tests/e2e/"

# The longest groups first, in the order they are handed out: a long file collected last (the fuzz test)
# would run alone at the end while the other cores idle. The sort is stable, so tests keep their order
# within a file.
SLOW_FIRST = (
    LIVE,
    "tests/test_config_fuzz.py",
    "tests/rules/test_promtool.py",
    "tests/rules/test_promtool_order.py",
    "tests/rules/test_hostile_configs.py",
    "tests/test_config_scope.py",
    "tests/rules/test_slo.py",
    "tests/doctor/",
    "tests/dashboards/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)
    for item in items:
        group = "live" if item.nodeid.startswith(LIVE) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
