"""Apache Kafka as the reference of the fault runs: three KRaft nodes, each broker and controller (combined
mode), from the jars the project's Kafka reference helper resolves. Default settings otherwise, so that
what Kafka does under a fault is what an operator's cluster would do."""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

from scripts.faults.cluster import FaultCluster, free_port
from scripts.faults.netns import Network
from tests.kafka_ref import KAFKA_VERSION, ensure_jars, kafka_home

JVM_OPTS = ("-Xmx512m", "-XX:+UseSerialGC")  # three nodes on a small machine; the benchmark passes Kafka's own


class KafkaCluster(FaultCluster):
    name = "kafka"

    def __init__(
        self,
        network: Network | None = None,
        root: Path | None = None,
        configs: dict[str, str] | None = None,
        jvm_opts: tuple[str, ...] | list[str] = JVM_OPTS,
    ) -> None:
        super().__init__(network, root)
        self.configs = dict(configs or {})
        self.jvm_opts = list(jvm_opts)
        self.controller_ports = {node_id: free_port() if network is None else 9093 for node_id in self.nodes}

    def _java(self, main_class: str, *args: str) -> list[str]:
        home = kafka_home(KAFKA_VERSION)
        return [
            "java",
            *self.jvm_opts,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={home / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self.root}",
            "-cp",
            str(home / "libs" / "*"),
            main_class,
            *args,
        ]

    def _properties(self, node_id: int) -> str:
        node = self.nodes[node_id]
        voters = ",".join(f"{i}@{n.host}:{self.controller_ports[i]}" for i, n in sorted(self.nodes.items()))
        controller = f"{node.host}:{self.controller_ports[node_id]}"
        lines = [
            "process.roles=broker,controller",
            f"node.id={node_id}",
            f"controller.quorum.voters={voters}",
            f"listeners=PLAINTEXT://{node.address},CONTROLLER://{controller}",
            f"advertised.listeners=PLAINTEXT://{node.address}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={self.root / f'data-{node_id}'}",
            "group.initial.rebalance.delay.ms=0",
            *(f"{key}={value}" for key, value in self.configs.items()),
            "",
        ]
        return "\n".join(lines)

    def start(self, timeout: float = 180.0) -> KafkaCluster:
        ensure_jars(KAFKA_VERSION)
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for node_id, node in self.nodes.items():
            config = self.root / f"server-{node_id}.properties"
            config.write_text(self._properties(node_id))
            format_command = self._java(
                "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(config)
            )
            subprocess.run(format_command, check=True, stdout=subprocess.DEVNULL)
            node.command = self._java("kafka.Kafka", str(config))
            node.launch()
        for node in self.nodes.values():
            node.wait_listening(timeout)
        return self
