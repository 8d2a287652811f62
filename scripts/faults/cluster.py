"""Three-broker clusters the nemeses act on: their processes, addresses and what each broker believes.

`FaultCluster` is what a nemesis needs of a cluster: kill -9 a broker and start it again on the same data,
tell its leaders and ISRs, and, with a `Network`, run each broker in its own namespace so that one can be
cut off. `KBrokerCluster` is kbroker's ZooKeeper mode (scripts/cluster's shape: one ZooKeeper, brokers with
node.id 1..3); Apache Kafka's KRaft cluster is in kafka_cluster.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.faults import wire
from scripts.faults.netns import Network
from scripts.zookeeper import ZooKeeperServer

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with code {process.returncode} before listening on {host}:{port}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


class Node:
    """One broker process: its id, address, command and log; kill -9 and start again keep data and port."""

    def __init__(self, node_id: int, host: str, port: int, log_path: Path, prefix: list[str]) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.log_path = log_path
        self.prefix = prefix  # e.g. ip netns exec NAME
        self.command: list[str] = []
        self.env: dict[str, str] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def launch(self) -> None:
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                [*self.prefix, *self.command],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=self.env,
                start_new_session=True,
            )

    def wait_listening(self, timeout: float) -> None:
        assert self.process is not None
        wait_for_port(self.host, self.port, timeout, self.process)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self, timeout: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


class FaultCluster:
    """Three brokers (node ids 1..3), on 127.0.0.1 or each in its namespace of `network`."""

    name = "cluster"
    size = 3

    def __init__(self, network: Network | None = None, root: Path | None = None) -> None:
        self.network = network
        self._owns_root = root is None
        self.root = root or Path(tempfile.mkdtemp(prefix=f"faults-{self.name}-"))
        self.nodes: dict[int, Node] = {}
        for node_id in range(1, self.size + 1):
            if network is None:
                host, prefix = LOOPBACK, []
            else:
                host, prefix = network.address(node_id - 1), network.exec_prefix(node_id - 1)
            port = free_port() if network is None else 9092
            self.nodes[node_id] = Node(node_id, host, port, self.root / f"broker-{node_id}.log", prefix)

    def bootstrap(self, *exclude: int) -> str:
        return ",".join(n.address for i, n in sorted(self.nodes.items()) if i not in exclude)

    def start(self, timeout: float = 120.0) -> FaultCluster:
        raise NotImplementedError

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        node = self.nodes[node_id]
        node.kill()
        node.launch()
        node.wait_listening(timeout)

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def isolate(self, node_id: int) -> None:
        assert self.network is not None, "a partition needs the cluster in network namespaces"
        self.network.isolate(node_id - 1)

    def heal(self) -> None:
        assert self.network is not None
        self.network.heal()

    def view(self, node_id: int, topic: str) -> dict[int, dict[str, Any]] | None:
        """What broker node_id says of topic's partitions, or None if it does not answer."""
        if not self.nodes[node_id].alive():
            return None
        try:
            return wire.partitions(self.nodes[node_id].address, topic, timeout=3.0)
        except (OSError, ValueError, KeyError):
            return None

    def healthy(self, topic: str, brokers: list[int] | None = None) -> bool:
        """Every broker in `brokers` (default all) answers and they agree: one leader each, full ISR."""
        views = [self.view(n, topic) for n in brokers or list(self.nodes)]
        if any(v is None or not v for v in views):
            return False
        first = views[0]
        assert first is not None
        for view in views:
            assert view is not None
            for index, part in view.items():
                if part["error_code"] != 0 or part["leader_id"] < 0:
                    return False
                if sorted(part["isr_nodes"]) != sorted(part["replica_nodes"]):
                    return False
                if part["leader_id"] != first[index]["leader_id"]:
                    return False
        return True

    def replica_sizes(self, topic: str, partitions: int) -> dict[int, dict[int, int]] | None:
        """partition -> broker -> bytes of its replica, from every broker; None if one does not answer."""
        sizes: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}
        for node_id, node in self.nodes.items():
            try:
                answer = wire.log_sizes(node.address, topic, list(range(partitions)))
            except (OSError, ValueError, KeyError):
                return None
            for partition, size in answer.items():
                sizes[partition][node_id] = size
        return sizes

    def leaders(self, topic: str, node_id: int | None = None) -> dict[int, int]:
        """partition -> leader, as a live broker (node_id, or the first that answers) sees it."""
        for candidate in [node_id] if node_id else list(self.nodes):
            view = self.view(candidate, topic)
            if view:
                return {index: part["leader_id"] for index, part in view.items()}
        return {}

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
        if self._owns_root and not os.environ.get("KBROKER_FAULTS_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> FaultCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _ZooKeeper(ZooKeeperServer):
    """ZooKeeper on every address, so brokers in namespaces reach it through the bridge."""

    def _config(self) -> Path:
        path = super()._config()
        path.write_text(path.read_text().replace("clientPortAddress=127.0.0.1", "clientPortAddress=0.0.0.0"))
        return path


class KBrokerCluster(FaultCluster):
    """kbroker's ZooKeeper mode: one ZooKeeper (in the root namespace: the majority side of a partition)."""

    name = "kbroker"
    session_timeout_ms = 4000

    def __init__(
        self,
        network: Network | None = None,
        root: Path | None = None,
        configs: dict[str, str] | None = None,
        log_level: str = "info",
    ) -> None:
        super().__init__(network, root)
        self.configs = dict(configs or {})
        self.log_level = log_level
        self.zookeeper = _ZooKeeper(data_dir=self.root / "zookeeper", log_path=self.root / "zookeeper.log")

    def start(self, timeout: float = 120.0) -> KBrokerCluster:
        self.zookeeper.start()
        zk_host = LOOPBACK
        if self.network is not None:
            self.network.zookeeper_port = self.zookeeper.port
            zk_host = self.network.gateway
        connect = f"{zk_host}:{self.zookeeper.port}/kbroker-faults"
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO)
        for node_id, node in self.nodes.items():
            node.command = [sys.executable, "-m", "kbroker", "serve", "--data-dir", str(self.root / f"data-{node_id}")]
            node.command += ["--listen", node.address, "--log-level", self.log_level]
            settings = {
                "node.id": str(node_id),
                "zookeeper.connect": connect,
                "zookeeper.session.timeout.ms": str(self.session_timeout_ms),
                "default.replication.factor": "3",
                **self.configs,
            }
            for key, value in settings.items():
                node.command += ["--config", f"{key}={value}"]
            node.env = env
            node.launch()
        for node in self.nodes.values():
            node.wait_listening(timeout)
        return self

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
        self.zookeeper.stop()
        super().stop()
