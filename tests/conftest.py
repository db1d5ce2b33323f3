import pytest

from obspack.config import ObspackConfig


@pytest.fixture
def default_config() -> ObspackConfig:
    return ObspackConfig()


# scripts/test.sh runs one worker per core and one more for the live stacks, `--dist loadfile`. The live
# e2e files wait on real scrape, evaluation and notification timers: 337 s of wall time for 75 s of CPU on
# two cores. With loadfile they go together to one worker (pytest_xdist_make_scheduler below), one stack at
# a time, so that their timing budgets never share the cores with a second stack, while the other workers
# keep the cores busy with every other file, each run whole on one worker.
LIVE = "tests/e2e/"

# Then the longest files first: a long file handed out last would run alone at the end while the other
# cores idle. Seconds per file in a whole run with `-n 2 --dist loadfile` (2026-11-26, 2 cores, nothing else
# running: 587 s in all); the rest follow in path order. The sort is stable, so tests keep their order
# within a file.
SLOW_FIRST = (
    LIVE,  # the live group: 337 s alone, 75 s of it CPU; first, on its own worker
    "tests/rules/test_promtool.py",  # 104: the defaults' shipped tests whole, as users run them (85)
    "tests/doctor/test_broken_fleets.py",  # 82: four fleets, one after the other
    "tests/doctor/test_healthy_fleet.py",  # 76: one fleet, a dozen doctor runs
    "tests/doctor/test_hostile.py",  # 64
    "tests/doctor/test_victoriametrics.py",  # 58
    "tests/rules/test_slo.py",  # 39
    "tests/test_config_fuzz.py",  # 36
    "tests/rules/test_hostile_configs.py",  # 28
    "tests/dashboards/test_no_data.py",  # 25
    "tests/rules/test_promtool_order.py",  # 23
    "tests/rightsize/test_staleness.py",  # 22
    "tests/render/test_disabled_alerts.py",  # 20
    "tests/rules/test_vmalert_replay.py",  # 20
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


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: no error where it is not installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadfile`, with the live e2e files as one unit; any other --dist as pytest-xdist makes it."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LiveTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return LIVE if nodeid.startswith(LIVE) else super()._split_scope(nodeid)

    return LiveTogether(config, log)
