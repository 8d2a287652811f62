"""The plugin as a project uses it: a pytest run of its own, the shared broker configured in the ini file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.process import REPO

USER_TEST = """
from kafka import KafkaProducer
from confluent_kafka.admin import AdminClient


def test_shared_broker_is_configured(kbroker):
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap)
    producer.send("auto", b"x").get(10)
    producer.close()
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    assert len(admin.list_topics("auto", timeout=10).topics["auto"].partitions) == 4


def test_next_test_starts_empty(kbroker):
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    assert "auto" not in admin.list_topics(timeout=10).topics
"""


def test_a_project_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nkbroker_config =\n    num.partitions=4\n")
    # the entry point when kbroker is installed with it; else (or a checkout on PYTHONPATH) by module name
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:kbroker",
            "-p",
            "kbroker.testing.plugin",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_bad_ini_line_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text("def test_x(kbroker):\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nkbroker_config =\n    num.partitions\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:kbroker",
            "-p",
            "kbroker.testing.plugin",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "kbroker_config: expected KEY=VALUE" in result.stdout + result.stderr
