"""How the suite shares out among pytest-xdist workers (`scripts/test` runs two: `-n 2`).

A test module is the smallest unit of work: its tests run on one worker, one after another, so a
module-scoped fixture (a broker with its own settings, Apache Kafka, a SparkSession) starts once and a
module's tests never run beside each other. `SHARED` joins modules into one unit when they use something
only one process may use at a time. Units go out in collection order. `-n N` alone means this scheduling
(xdist's `loadgroup` mode, named here); an explicit other `--dist` mode keeps xdist's own meaning.

The groups are a table here rather than `xdist_group` marks: xdist 3.8 carries a mark's group to the
scheduler by renaming the test's node id, which pytest 9.2's node ids no longer allow, so the marks are
silently ignored (pytest-xdist issue 1386).
"""

from __future__ import annotations

from typing import Any

import pytest

# module -> group: the modules of one group run on one worker, one after another
SHARED = {
    # Spark resolves its Kafka connector into one Ivy cache in $HOME, and a SparkSession takes 1 GiB
    "tests/cluster/test_cluster_spark.py": "spark",
    "tests/compat/scenarios/test_spark.py": "spark",
    "tests/compat/scenarios/test_spark_readme.py": "spark",
}


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module's group, or its module."""
    module = nodeid.split("::", 1)[0]
    return SHARED.get(module, module)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadgroup"  # before xdist's own hook would make it "load"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # in collection order, not "most tests first"
    return ModuleScheduling(config, log)
