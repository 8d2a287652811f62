"""tests/conftest.py's sharing out among xdist workers, in a real `pytest -n 2` of a small suite: each
module's tests run on one worker, a group's modules on one worker, and both workers get work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import SHARED, work_unit
from tests.process import REPO

CONFTEST = """
from tests.conftest import SHARED, pytest_cmdline_main, pytest_xdist_make_scheduler

SHARED.update({"test_c.py": "g", "test_d.py": "g"})
"""

MODULE = """
import time

def test_1(): time.sleep(0.1)
def test_2(): time.sleep(0.1)
def test_3(): time.sleep(0.1)
def test_4(): time.sleep(0.1)
"""


def test_every_shared_module_exists() -> None:
    assert all((REPO / module).is_file() for module in SHARED), SHARED


def test_a_module_or_its_group_is_the_unit() -> None:
    assert work_unit("tests/broker/test_fetch.py::test_x[a::b]") == "tests/broker/test_fetch.py"
    assert work_unit("tests/log/test_stateful.py::TestLogMachine::runTest") == "tests/log/test_stateful.py"
    assert work_unit("tests/compat/scenarios/test_spark.py::test_sink_columns") == "spark"


def test_two_workers_keep_modules_and_groups_together(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in "abcd":
        (tmp_path / f"test_{name}.py").write_text(MODULE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "-p", "no:kbroker"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED (test_\w)\.py::", done.stdout):
        workers[module].add(worker)
    assert sorted(workers) == ["test_a", "test_b", "test_c", "test_d"], done.stdout
    assert all(len(used) == 1 for used in workers.values()), workers
    assert workers["test_c"] == workers["test_d"], workers
    assert set.union(*workers.values()) == {"gw0", "gw1"}, workers
