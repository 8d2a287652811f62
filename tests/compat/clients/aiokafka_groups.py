"""aiokafka: group members (an event loop on the member's thread), descriptions, idempotent and transactional
producers (an event loop on a thread of their own)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiokafka.errors as errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import OffsetAndMetadata

from tests.compat.clients.adapter import ClientError, Consumed, Record
from tests.compat.clients.members import (
    GroupDescription,
    GroupMemberDescription,
    Member,
    MemberConfig,
    ThreadMember,
    TxnProducer,
    fenced_or_other,
)

T = TypeVar("T")
ASSIGNORS: dict[str, Any] = {
    "": RangePartitionAssignor,
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
}


def _fail(exc: BaseException) -> ClientError:
    return ClientError(fenced_or_other(repr(exc)), repr(exc))


@dataclass
class AiokafkaMember(ThreadMember):
    consumer: AIOKafkaConsumer | None = None
    loop: asyncio.AbstractEventLoop | None = None
    to_consumed: Any = None

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self.loop is not None
        return self.loop.run_until_complete(coroutine)

    def _open(self) -> None:
        c = self.config
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                c.topic,
                bootstrap_servers=self.bootstrap,
                group_id=c.group,
                group_instance_id=c.instance_id,
                enable_auto_commit=False,
                auto_offset_reset=c.reset,
                session_timeout_ms=c.session_timeout_ms,
                heartbeat_interval_ms=c.heartbeat_interval_ms,
                partition_assignment_strategy=(ASSIGNORS[c.assignor],),
                isolation_level=c.isolation,
                fetch_max_wait_ms=200,
                metadata_max_age_ms=2000,
            )
            await consumer.start()
            return consumer

        self.consumer = self._run(start())

    def _poll(self) -> tuple[list[Consumed], set[int]]:
        assert self.consumer is not None
        batches = self._run(self.consumer.getmany(timeout_ms=200))
        records = [self.to_consumed(m) for batch in batches.values() for m in batch]
        return records, {tp.partition for tp in self.consumer.assignment()}

    def _commit(self, offsets: dict[int, int] | None) -> None:
        assert self.consumer is not None
        wire = None
        if offsets is not None:
            wire = {TopicPartition(self.config.topic, p): OffsetAndMetadata(o, "") for p, o in offsets.items()}
        try:
            self._run(self.consumer.commit(wire))
        except errors.KafkaError as exc:
            raise _fail(exc) from exc

    def _close(self) -> None:
        assert self.consumer is not None and self.loop is not None
        self._run(self.consumer.stop())
        self.loop.close()


def open_member(bootstrap: str, config: MemberConfig, to_consumed: Any) -> Member:
    if config.assignor not in ASSIGNORS:
        raise ClientError("unsupported", f"aiokafka has no {config.assignor} assignor")
    return AiokafkaMember(config=config, bootstrap=bootstrap, to_consumed=to_consumed).start()


def describe_group(bootstrap: str, group: str, topic: str) -> GroupDescription:
    async def go() -> GroupDescription:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-aiokafka")
        await admin.start()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            (response,) = await admin.describe_consumer_groups([group])
            committed = await admin.list_consumer_group_offsets(group)
            partitions = consumer.partitions_for_topic(topic) or set()
            if not partitions:
                await consumer._client.force_metadata_update()  # the consumer loads metadata lazily
                partitions = consumer.partitions_for_topic(topic) or set()
            ends = await consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        finally:
            await consumer.stop()
            await admin.close()
        (described,) = response.groups
        error_code, _, state = described[0], described[1], described[2]
        if error_code:
            raise ClientError("other", f"DescribeGroups error {error_code}")
        members = []
        for member in described[5]:
            assigned = ConsumerProtocolMemberAssignment.decode(member[4]) if member[4] else None
            mine = [p for t, parts in (assigned.assignment if assigned else []) if t == topic for p in parts]
            members.append(GroupMemberDescription(member[0], None, sorted(mine)))
        return GroupDescription(
            str(state),
            members,
            {tp.partition: om.offset for tp, om in committed.items() if tp.topic == topic and om.offset >= 0},
            {tp.partition: int(o) for tp, o in ends.items()},
        )

    try:
        return asyncio.run(go())
    except errors.KafkaError as exc:
        raise _fail(exc) from exc


@dataclass
class LoopThread:
    """An event loop running on a thread of its own, for objects that outlive one call."""

    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 90) -> T:
        try:
            return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)
        except errors.KafkaError as exc:
            raise _fail(exc) from exc

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not None:
            self.thread.join(timeout=10)


def produce_idempotent(bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int) -> list[tuple[int, int]]:
    async def go() -> list[tuple[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
        await producer.start()
        try:
            futures = []
            for r in records:
                futures.append(await producer.send(topic, key=r.key, value=r.value, partition=r.partition))
                if pace_ms:
                    await asyncio.sleep(pace_ms / 1000)
            return [(m.partition, m.offset) for m in [await f for f in futures]]
        finally:
            await producer.stop()

    try:
        return asyncio.run(go())
    except errors.KafkaError as exc:
        raise _fail(exc) from exc


@dataclass
class AiokafkaTxn(TxnProducer):
    runner: LoopThread
    producer: AIOKafkaProducer

    def begin(self) -> None:
        self.runner.run(self.producer.begin_transaction())

    def send(self, topic: str, records: Sequence[Record]) -> None:
        async def go() -> None:
            futures = [
                await self.producer.send(topic, key=r.key, value=r.value, partition=r.partition) for r in records
            ]
            for f in futures:
                await f

        self.runner.run(go())

    def send_offsets(self, member: Member, group: str, topic: str, offsets: dict[int, int]) -> None:
        wire = {TopicPartition(topic, p): o for p, o in offsets.items()}
        self.runner.run(self.producer.send_offsets_to_transaction(wire, group))

    def commit(self) -> None:
        self.runner.run(self.producer.commit_transaction())

    def abort(self) -> None:
        self.runner.run(self.producer.abort_transaction())

    def close(self) -> None:
        try:
            self.runner.run(self.producer.stop(), timeout_s=10)
        finally:
            self.runner.stop()


def txn_producer(bootstrap: str, transactional_id: str, timeout_ms: int) -> TxnProducer:
    runner = LoopThread()

    async def start() -> AIOKafkaProducer:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            linger_ms=5,
        )
        await producer.start()  # InitProducerId happens here
        return producer

    try:
        return AiokafkaTxn(runner, runner.run(start()))
    except BaseException:
        runner.stop()
        raise
