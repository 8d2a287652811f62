"""kafka-python 3 as an in-process client of the compatibility suite."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, KafkaAdminClient, NewPartitions, NewTopic, OffsetSpec

from tests.compat.clients import kafka_python_groups
from tests.compat.clients.adapter import (
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    Record,
    Start,
    TopicDescription,
)
from tests.compat.clients.adapter import (
    OffsetSpec as Spec,
)
from tests.compat.clients.pydriver import InProcessGroupOps

ACKS: dict[str, Any] = {"all": "all", "1": 1, "0": 0}


def _kind(exc: BaseException) -> str:
    if isinstance(exc, errors.OffsetOutOfRangeError | errors.NoOffsetForPartitionError):
        return "offset_out_of_range"
    if isinstance(exc, errors.MessageSizeTooLargeError):
        return "message_too_large"
    if isinstance(exc, errors.TopicAlreadyExistsError):
        return "topic_exists"
    if isinstance(exc, errors.UnknownTopicOrPartitionError):
        return "unknown_topic"
    if isinstance(exc, errors.KafkaTimeoutError):
        return "timeout"
    return "other"


@dataclass
class KafkaPythonClient(InProcessGroupOps, Client):
    name: str = "kafka-python"
    groups = kafka_python_groups
    to_consumed = Consumed.from_message
    missing: dict[str, str] = field(
        default_factory=lambda: {"group.consumer_protocol": "kafka-python has only the classic group protocol"}
    )
    op_apis: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {"produce": ("Metadata", "Produce", "InitProducerId")}
    )
    idempotent: bool = True  # kafka-python's default with acks=all

    def _admin(self, bootstrap: str) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-kafka-python")

    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks=ACKS[acks],
            compression_type=None if compression == "none" else compression,
            enable_idempotence=self.idempotent and acks == "all",
            linger_ms=5,
            max_block_ms=20000,
        )
        try:
            futures = [
                producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    partition=r.partition,
                    timestamp_ms=r.timestamp,
                )
                for r in records
            ]
            producer.flush(timeout=30)
            out = []
            for future in futures:
                metadata = future.get(timeout=30)
                out.append((metadata.partition, metadata.offset))
            return out
        except errors.KafkaError as exc:
            raise ClientError(_kind(exc), repr(exc)) from exc
        finally:
            producer.close(timeout=5)

    def consume(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        start: Start,
        max_records: int,
        timeout_s: float,
        reset: str = "earliest",
        isolation: str = "read_uncommitted",
    ) -> ConsumeResult:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            isolation_level=isolation,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset=reset,
            fetch_max_wait_ms=200,
        )
        tps = [TopicPartition(topic, p) for p in partitions]
        result = ConsumeResult(records=[])
        try:
            consumer.assign(tps)
            if start == "earliest":
                consumer.seek_to_beginning(*tps)
            elif start == "latest":
                consumer.seek_to_end(*tps)
            else:
                for partition, offset in start.items():
                    consumer.seek(TopicPartition(topic, partition), offset)
            deadline = time.monotonic() + timeout_s
            while len(result.records) < max_records and time.monotonic() < deadline:
                wait_ms = max(1, int(min(0.5, deadline - time.monotonic()) * 1000))
                batches = consumer.poll(timeout_ms=wait_ms, max_records=max_records - len(result.records))
                for batch in batches.values():
                    result.records.extend(Consumed.from_message(m) for m in batch)
            result.positions = {tp.partition: consumer.position(tp) for tp in tps}
        except errors.KafkaError as exc:
            result.error, result.error_message = _kind(exc), repr(exc)
        finally:
            consumer.close()
        return result

    def create_topic(self, bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
        with _closing(self._admin(bootstrap)) as admin:
            admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])

    def describe_topic(self, bootstrap: str, topic: str) -> TopicDescription:
        with _closing(self._admin(bootstrap)) as admin:
            (described,) = admin.describe_topics([topic])
            return TopicDescription(topic, sorted(p["partition_index"] for p in described["partitions"]))

    def topic_configs(self, bootstrap: str, topic: str) -> dict[str, str]:
        with _closing(self._admin(bootstrap)) as admin:
            described = admin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")
            return {k: str(v["value"]) for k, v in described["topic"][topic].items()}

    def alter_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        with _closing(self._admin(bootstrap)) as admin:
            result = admin.alter_configs([ConfigResource("TOPIC", topic, configs={key: value})])
            outcome = result["topic"][topic]
            if isinstance(outcome, Exception):
                raise ClientError("other", repr(outcome))

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        with _closing(self._admin(bootstrap)) as admin:
            admin.create_partitions({topic: NewPartitions(total)})

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        with _closing(self._admin(bootstrap)) as admin:
            admin.delete_topics([topic])

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: Spec) -> int:
        wire: Any = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}.get(str(spec), spec)
        tp = TopicPartition(topic, partition)
        with _closing(self._admin(bootstrap)) as admin:
            return int(admin.list_partition_offsets({tp: wire})[tp].offset)

    def delete_records(self, bootstrap: str, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition)
        with _closing(self._admin(bootstrap)) as admin:
            result = admin.delete_records({tp: before})
            return int(result[tp]["low_watermark"])

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=20000)
        try:
            return sorted(producer.partitions_for(topic) or [])
        finally:
            producer.close(timeout=5)


class _closing:
    """Close an admin client on exit, turning kafka-python errors into ClientError."""

    def __init__(self, admin: KafkaAdminClient) -> None:
        self.admin = admin

    def __enter__(self) -> KafkaAdminClient:
        return self.admin

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.admin.close()
        if isinstance(exc, errors.KafkaError):
            raise ClientError(_kind(exc), repr(exc)) from exc
