"""How the suite shares out among pytest-xdist workers (`scripts/test` runs two: `-n 2`).

A test module is the smallest unit of work: its tests run on one worker, one after another, so a
module-scoped fixture (a broker with its own settings, Apache Kafka, a SparkSession) starts once and a
module's tests never run beside each other. `pytest.mark.xdist_group(name)` joins modules into one unit,
for modules that share something only one process may use at a time (Spark's Ivy cache in $HOME, say).
That is xdist's `--dist loadgroup` with the module, not the single test, as the unit of ungrouped tests;
`-n N` alone means it here. An explicit other `--dist` mode keeps xdist's own meaning.
"""

from __future__ import annotations

from typing import Any

import pytest


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
            # `path::test@group` for a test with an xdist_group marker, else `path::test`
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return "@" + nodeid.rsplit("@", 1)[1]
            return nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False  # in collection order, not "most tests first"
    return ModuleScheduling(config, log)
