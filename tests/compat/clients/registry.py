"""The clients of the compatibility suite, by name, and how to build each one's adapter."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.compat.clients.adapter import GROUP_APIS, Client
from tests.compat.clients.driver_client import DRIVERS, DriverClient

JAVA_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
GO_BINARY = DRIVERS / "go" / "bin" / "franzgo-driver"
NODE_SCRIPT = DRIVERS / "node" / "driver.js"

KAFKAJS_MISSING = {
    "compression.snappy": "kafkajs ships only gzip; snappy needs a third-party codec package",
    "compression.lz4": "kafkajs ships only gzip; lz4 needs a third-party codec package",
    "compression.zstd": "kafkajs ships only gzip; zstd needs a third-party codec package",
    "consume.reset_none": "kafkajs has no auto.offset.reset=none",
    "partitions_for": "kafkajs has no metadata call that may auto-create a topic (only a produce does)",
    "list_offsets.no_match": "kafkajs replaces ListOffsets' -1 (no record late enough) by the high watermark",
    "group.cooperative": "kafkajs ships only the round-robin assignor (eager)",
    "group.static": "kafkajs has no group.instance.id (static membership)",
    "group.consumer_protocol": "kafkajs has only the classic group protocol",
}


def java_build(major: str) -> Path | None:
    """The newest built Java driver for kafka-clients ``major`` (e.g. "3.9" or "4"), if any."""
    builds = sorted(
        (p for p in (DRIVERS / "java" / "target").glob(f"kafka-{major}.*") if (p / "classes").is_dir()),
        key=lambda p: [int(x) for x in p.name.removeprefix("kafka-").split(".") if x.isdigit()],
    )
    return builds[-1] if builds else None


def _java(major: str) -> Client | str:
    build = java_build(major)
    if build is None:
        return f"Java driver for kafka-clients {major}.x is not built: run scripts/install_clients"
    if shutil.which("java") is None:
        return "java is not installed"
    version = build.name.removeprefix("kafka-")
    classpath = f"{build / 'classes'}:{build / 'deps' / '*'}"
    missing = {}
    if major == "3.9":
        missing["group.consumer_protocol"] = "kafka-clients 3.x has the consumer group protocol only as a preview"
    return DriverClient(
        name=f"java-{version}",
        missing=missing,
        command=["java", *JAVA_OPTS, "-cp", classpath, "kbroker.compat.Driver"],
        op_apis={"produce": ("Metadata", "Produce", "InitProducerId")},
    )


def _franz_go() -> Client | str:
    if not GO_BINARY.exists():
        return "franz-go driver is not built: run scripts/install_clients"
    return DriverClient(
        name="franz-go",
        command=[str(GO_BINARY)],
        missing={
            "txn.send_offsets": "franz-go commits offsets in a transaction only through GroupTransactSession, "
            "whose producer is its own group consumer (not wired in the driver)",
            # Apache Kafka 4.3 answers the same: the restarted member gets UNRELEASED_INSTANCE_ID until the
            # old one's session expires (tests/compat/scenarios/test_consumer_groups.py, run against both brokers).
            "group.consumer_static": "franz-go 1.22 leaves a KIP-848 group with epoch -2 but no InstanceId, "
            "which the broker refuses (InstanceId can't be null), so the static member is never released",
        },
        op_apis={"produce": ("Metadata", "Produce", "InitProducerId")},
    )


def _kafkajs() -> Client | str:
    if not (DRIVERS / "node" / "node_modules" / "kafkajs").is_dir():
        return "kafkajs is not installed: run scripts/install_clients"
    return DriverClient(
        name="kafkajs",
        command=["node", str(NODE_SCRIPT)],
        missing=dict(KAFKAJS_MISSING),
        op_apis={
            # kafkajs consumers always join a group, even to read assigned partitions.
            "consume": ("Metadata", "Fetch", "ListOffsets", *GROUP_APIS),
            "alter_config": ("Metadata", "AlterConfigs"),
            # kafkajs does not return the new low watermark; the driver asks ListOffsets for it.
            "delete_records": ("Metadata", "DeleteRecords", "ListOffsets"),
        },
    )


def _confluent() -> Client | str:
    from tests.compat.clients.confluent_client import ConfluentClient

    return ConfluentClient()


def _kafka_python() -> Client | str:
    from tests.compat.clients.kafka_python_client import KafkaPythonClient

    return KafkaPythonClient()


def _aiokafka() -> Client | str:
    from tests.compat.clients.aiokafka_client import AiokafkaClient

    return AiokafkaClient()


def _kcat() -> Client | str:
    if shutil.which("kcat") is None:
        return "kcat is not installed: run scripts/install_clients"
    from tests.compat.clients.kcat_client import KcatClient

    return KcatClient()


FACTORIES: dict[str, Callable[[], Client | str]] = {
    "confluent-kafka": _confluent,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "kcat": _kcat,
    "java-3.9": lambda: _java("3.9"),
    "java-4": lambda: _java("4"),
    "franz-go": _franz_go,
    "kafkajs": _kafkajs,
}
