"""aiokafka as an in-process client of the compatibility suite (each call runs its own event loop)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiokafka.errors as errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.compat.clients import aiokafka_groups
from tests.compat.clients.adapter import (
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    OffsetSpec,
    Record,
    Start,
    TopicDescription,
)
from tests.compat.clients.pydriver import InProcessGroupOps

T = TypeVar("T")
ACKS: dict[str, Any] = {"all": "all", "1": 1, "0": 0}
CODE_KINDS = {3: "unknown_topic", 36: "topic_exists"}


def _kind(exc: BaseException) -> str:
    if isinstance(exc, errors.OffsetOutOfRangeError):
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


def _run(coroutine: Awaitable[T]) -> T:
    async def guarded() -> T:
        try:
            return await coroutine
        except errors.KafkaError as exc:
            raise ClientError(_kind(exc), repr(exc)) from exc

    return asyncio.run(guarded())


def _check(response: Any) -> None:
    """Raise on the first non-zero error code in a raw admin response (aiokafka returns them unchecked).

    Each entry of the per-topic/per-resource list is a tuple whose first integer is the error code:
    (topic, code, ...) for topic APIs, (code, message, type, name, ...) for config APIs.
    """
    for name in ("topic_errors", "topic_error_codes", "resources"):
        for item in getattr(response, name, None) or []:
            code = next((field for field in item if isinstance(field, int)), 0)
            if code != 0:
                raise ClientError(CODE_KINDS.get(code, "other"), f"error {code} in {response!r}")


@dataclass
class AiokafkaClient(InProcessGroupOps, Client):
    name: str = "aiokafka"
    groups = aiokafka_groups
    to_consumed = Consumed.from_message
    missing: dict[str, str] = field(
        default_factory=lambda: {
            "group.cooperative": "aiokafka has only eager assignors (range, roundrobin, sticky)",
            "group.consumer_protocol": "aiokafka has only the classic group protocol",
        }
    )
    op_apis: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"alter_config": ("Metadata", "AlterConfigs")})

    async def _with_admin(self, bootstrap: str, action: Callable[[AIOKafkaAdminClient], Awaitable[T]]) -> T:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-aiokafka")
        await admin.start()
        try:
            return await action(admin)
        finally:
            await admin.close()

    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        async def go() -> list[tuple[int, int]]:
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                acks=ACKS[acks],
                compression_type=None if compression == "none" else compression,
                linger_ms=5,
            )
            await producer.start()
            try:
                futures = [
                    await producer.send(
                        topic,
                        key=r.key,
                        value=r.value,
                        headers=list(r.headers),
                        partition=r.partition,
                        timestamp_ms=r.timestamp,
                    )
                    for r in records
                ]
                out = []
                for future in futures:
                    metadata = await future  # None for acks=0
                    out.append((-1, -1) if metadata is None else (metadata.partition, metadata.offset))
                return out
            finally:
                await producer.stop()

        return _run(go())

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
        async def go() -> ConsumeResult:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                isolation_level=isolation,
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset=reset,
                fetch_max_wait_ms=200,
            )
            await consumer.start()
            tps = [TopicPartition(topic, p) for p in partitions]
            result = ConsumeResult(records=[])
            try:
                consumer.assign(tps)
                if start == "earliest":
                    await consumer.seek_to_beginning(*tps)
                elif start == "latest":
                    await consumer.seek_to_end(*tps)
                else:
                    for partition, offset in start.items():
                        consumer.seek(TopicPartition(topic, partition), offset)
                deadline = time.monotonic() + timeout_s
                while len(result.records) < max_records and time.monotonic() < deadline:
                    wait_ms = max(1, int(min(0.5, deadline - time.monotonic()) * 1000))
                    batches = await consumer.getmany(timeout_ms=wait_ms, max_records=max_records - len(result.records))
                    for batch in batches.values():
                        result.records.extend(Consumed.from_message(m) for m in batch)
                result.positions = {tp.partition: await consumer.position(tp) for tp in tps}
            except errors.KafkaError as exc:
                result.error, result.error_message = _kind(exc), repr(exc)
            finally:
                await consumer.stop()
            return result

        return _run(go())

    def create_topic(self, bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
        new = NewTopic(topic, partitions, 1, topic_configs=configs)
        _check(_run(self._with_admin(bootstrap, lambda a: a.create_topics([new]))))

    def describe_topic(self, bootstrap: str, topic: str) -> TopicDescription:
        (described,) = _run(self._with_admin(bootstrap, lambda a: a.describe_topics([topic])))
        if described["error_code"]:
            raise ClientError("unknown_topic", repr(described))
        return TopicDescription(topic, sorted(p["partition"] for p in described["partitions"]))

    def topic_configs(self, bootstrap: str, topic: str) -> dict[str, str]:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        (response,) = _run(self._with_admin(bootstrap, lambda a: a.describe_configs([resource])))
        _check(response)
        (entry,) = response.resources
        return {c[0]: str(c[1]) for c in entry[4]}

    def alter_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, {key: value})
        (response,) = _run(self._with_admin(bootstrap, lambda a: a.alter_configs([resource])))
        _check(response)

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        new = {topic: NewPartitions(total)}
        _check(_run(self._with_admin(bootstrap, lambda a: a.create_partitions(new))))

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        _check(_run(self._with_admin(bootstrap, lambda a: a.delete_topics([topic]))))

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        async def go() -> int:
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
            await consumer.start()
            tp = TopicPartition(topic, partition)
            try:
                if spec == "earliest":
                    return int((await consumer.beginning_offsets([tp]))[tp])
                if spec == "latest":
                    return int((await consumer.end_offsets([tp]))[tp])
                found = (await consumer.offsets_for_times({tp: int(spec)}))[tp]
                return -1 if found is None else int(found.offset)
            finally:
                await consumer.stop()

        return _run(go())

    def delete_records(self, bootstrap: str, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition)
        result = _run(self._with_admin(bootstrap, lambda a: a.delete_records({tp: RecordsToDelete(before)})))
        return int(result[tp])

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        async def go() -> list[int]:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
            await producer.start()
            try:
                return sorted(await producer.partitions_for(topic))
            finally:
                await producer.stop()

        return _run(go())
