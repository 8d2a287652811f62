"""scripts/cluster (scripts/local_cluster.py): up starts ZooKeeper and the brokers, status names the
controller, down stops everything; a stock client sees the cluster in between."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.ports import free_port, free_ports
from tests.process import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "local_cluster.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_up_status_down(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    base, zk_port = free_ports(2), free_port()
    place = ["--dir", str(directory)]
    up = _run("up", "--brokers", "2", "--base-port", str(base), "--zookeeper-port", str(zk_port), *place)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"bootstrap.servers=127.0.0.1:{base},127.0.0.1:{base + 1}" in up.stdout
        assert f"zookeeper.connect=127.0.0.1:{zk_port}/kbroker" in up.stdout
        again = _run("up", *place)
        assert again.returncode == 1 and "already running" in again.stderr
        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{base}"}).list_topics(timeout=15)
        assert sorted(metadata.brokers) == [1, 2]
        status = _run("status", *place)
        assert status.returncode == 0
        lines = status.stdout.splitlines()
        assert lines[0].startswith(f"zookeeper  127.0.0.1:{zk_port}") and lines[0].endswith("running")
        assert f"controller: {metadata.controller_id}" in lines
        controller_line = next(line for line in lines if line.startswith(f"broker {metadata.controller_id} "))
        assert controller_line.endswith("running, registered, controller")
        assert (directory / "broker-1" / "meta.properties").exists() and (directory / "broker-2.log").exists()
    finally:
        down = _run("down", *place)
    assert down.returncode == 0, down.stderr
    status = _run("status", *place)
    assert "zookeeper" in status.stdout and "down" in status.stdout.splitlines()[0]
    assert all("down" in line for line in status.stdout.splitlines() if line.startswith("broker"))
