import pytest

from obspack.config import ObspackConfig


@pytest.fixture
def default_config() -> ObspackConfig:
    return ObspackConfig()


# The longest files first. With `-n 2 --dist loadfile` a file runs whole on one worker, in the order the
# files were collected: a long file collected last would run alone at the end while the other core idles.
# Seconds per file in the suite run of docs/benchmarks.md ("The test suite on two cores"; the machine was
# loaded); the rest follow in path order. The sort is stable, so tests keep their order within a file.
SLOW_FIRST = (
    "tests/rules/test_promtool.py",  # 213: the defaults' shipped tests whole, as users run them (164)
    "tests/doctor/test_healthy_fleet.py",  # 161: one fleet, a dozen doctor runs
    "tests/doctor/test_broken_fleets.py",  # 130: four fleets, one after the other
    "tests/e2e/test_memory_planes.py",  # 114: the live stacks wait on timers, leaving a core to the rest
    "tests/e2e/test_service.py",  # 91
    "tests/test_config_fuzz.py",  # 86
    "tests/e2e/test_incident.py",  # 85
    "tests/doctor/test_victoriametrics.py",  # 71
    "tests/rules/test_slo.py",  # 70
    "tests/doctor/test_hostile.py",  # 66
    "tests/rules/test_promtool_order.py",  # 52
    "tests/rules/test_hostile_configs.py",  # 50
    "tests/rules/test_vmalert_replay.py",  # 47
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
