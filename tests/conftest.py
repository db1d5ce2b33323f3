import pytest

from obspack.config import ObspackConfig


@pytest.fixture
def default_config() -> ObspackConfig:
    return ObspackConfig()


# The longest files first. With `-n 2 --dist loadfile` a file runs whole on one worker, in the order the
# files were collected: a long file collected last would run alone at the end while the other core idles.
# Measured (seconds, one suite run on the 2-core machine, docs/benchmarks.md); the rest follow in path
# order. The sort is stable, so tests keep their order within a file.
SLOW_FIRST = (
    "tests/doctor/test_healthy_fleet.py",  # 200: one fleet, a dozen doctor runs
    "tests/rules/test_promtool.py",  # 190: the defaults' shipped tests, whole, as users run them
    "tests/doctor/test_broken_fleets.py",  # 130: four fleets, one after the other
    "tests/e2e/test_memory_planes.py",  # 110: the e2e stacks wait on live timers, a core free meanwhile
    "tests/e2e/test_service.py",  # 95
    "tests/e2e/test_incident.py",  # 95
    "tests/doctor/test_hostile.py",  # 75
    "tests/doctor/test_victoriametrics.py",  # 70
    "tests/rules/test_promtool_order.py",  # 70
    "tests/test_config_fuzz.py",  # 55
    "tests/rules/test_vmalert_replay.py",  # 50
    "tests/rules/test_hostile_configs.py",  # 45
    "tests/rules/test_slo.py",  # 45
    "tests/e2e/",
    "tests/doctor/",
    "tests/rules/",
    "tests/dashboards/",
)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist (3.6 on) hands out the files with the most tests first unless told not to keep the order
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, prefix in enumerate(SLOW_FIRST) if path.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)
