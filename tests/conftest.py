import pytest

from obspack.config import ObspackConfig


@pytest.fixture
def default_config() -> ObspackConfig:
    return ObspackConfig()


# The longest files first. With `-n 2 --dist loadfile` a file runs whole on one worker, in the order the
# files were collected: a long file collected last (the fuzz test, the e2e stacks) would run alone at the
# end while the other core idles. The sort is stable, so tests keep their order within a file.
SLOW_FIRST = (
    "tests/test_config_fuzz.py",
    "tests/e2e/",
    "tests/rules/test_promtool.py",
    "tests/rules/test_promtool_order.py",
    "tests/rules/test_slo.py",
    "tests/doctor/",
    "tests/dashboards/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)
