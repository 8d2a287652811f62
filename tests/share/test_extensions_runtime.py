"""Delayed delivery, tag filtering and dead letters through the reader and the runtime, on a real LogManager and a
fake clock: headers read from (compressed) batches, held records surviving a kill -9, dead letters copied before
the state that archives them is written."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kbroker.config import BrokerConfig
from kbroker.config_repository import ConfigRepository
from kbroker.log import AppendOrigin, KafkaStorageError, LogConfig, LogManager
from kbroker.share.coordinator import HeartbeatRequest, ShareCoordinatorConfig
from kbroker.share.partition import AcknowledgementBatch, AcknowledgeType, RecordState, SharePartitionConfig
from kbroker.share.reader import acquire_from_log
from kbroker.share.record_headers import RecordInfo, batch_record_info, may_carry_headers
from kbroker.share.runtime import ShareRuntime
from kbroker.waiters import FetchWaiters
from protocol import compression
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch, iter_batches
from tests.group.fakes import FakeClock

T0 = 1_000_000


@dataclass(eq=False)
class BrokerParts:
    logs: LogManager
    config: BrokerConfig = field(default_factory=BrokerConfig.build)
    fetch_waiters: FetchWaiters = field(default_factory=FetchWaiters)
    dynamic_configs: ConfigRepository = field(default_factory=ConfigRepository)


def runtime_on(
    data_dir: Path, clock: FakeClock, configs: dict[str, str] | None = None
) -> tuple[BrokerParts, ShareRuntime]:
    logs = LogManager(data_dir, LogConfig())
    logs.startup()
    parts = BrokerParts(logs)
    if configs:
        parts.dynamic_configs.set_group_configs("g", configs)
    runtime = ShareRuntime(
        parts,  # type: ignore[arg-type]
        ShareCoordinatorConfig(session_timeout_ms=60_000),
        SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=2, max_record_locks=100),
        state_partitions=2,
        clock=clock,
    )
    runtime.load()
    return parts, runtime


def append(logs: LogManager, topic: str, records: list[SimpleRecord], codec: int = compression.NONE) -> None:
    partition = logs.get_partition(topic, 0)
    assert partition is not None
    partition.append_as_leader(bytearray(build_record_batch(records, compression_type=codec)), AppendOrigin.COORDINATOR)


def rec(value: str, *headers: tuple[str, str], timestamp: int = T0) -> SimpleRecord:
    return SimpleRecord(b"k-" + value.encode(), value.encode(), [(k, v.encode()) for k, v in headers], timestamp)


def test_headers_are_found_in_plain_and_compressed_batches() -> None:
    records = [
        rec("a"),
        rec("b", ("kbroker-deliver-at", "2000000")),
        rec("c", ("kbroker-deliver-after-ms", "500"), timestamp=T0 + 7),
        rec("d", ("kbroker-tag", "x"), ("kbroker-tag", "y"), ("other", "1")),
        rec("e", ("kbroker-deliver-at", "junk"), ("kbroker-deliver-after-ms", "-5"), ("kbroker-deliver-at", "9" * 20)),
        rec("f", ("kbroker-deliver-at", "3000000"), ("kbroker-deliver-after-ms", "5000000")),
    ]
    for codec in (compression.NONE, compression.GZIP, compression.ZSTD):
        batch = RecordBatch(build_record_batch(records, base_offset=10, compression_type=codec))
        assert may_carry_headers(batch)
        assert batch_record_info(batch) == {
            11: RecordInfo(deliver_at=2_000_000),
            12: RecordInfo(deliver_at=T0 + 507),
            13: RecordInfo(tags=frozenset({"x", "y"})),
            15: RecordInfo(deliver_at=T0 + 5_000_000),  # the later of the two
        }
        plain = RecordBatch(build_record_batch([rec("a", ("kbroker", "x")), rec("b")], compression_type=codec))
        assert not may_carry_headers(plain) and batch_record_info(plain) == {}


def test_delayed_records_through_the_log_and_a_kill_9(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    parts, runtime = runtime_on(tmp_path, clock, {"share.auto.offset.reset": "earliest"})
    logs = parts.logs
    logs.create_topic("t", 1)
    append(logs, "t", [rec("now-0"), rec("later", ("kbroker-deliver-after-ms", "5000")), rec("now-2")])
    append(logs, "t", [rec("much-later", ("kbroker-deliver-at", str(T0 + 60_000))), rec("now-4")], compression.LZ4)

    async def consume() -> None:
        runtime.heartbeat(HeartbeatRequest("g", "a", 0, None, ("t",)))
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        ranges, data = acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert [(r.first_offset, r.last_offset) for r in ranges] == [(0, 0), (2, 2), (4, 4)]
        assert [b.base_offset for b in iter_batches(data)] == [0, 3]
        acks = [AcknowledgementBatch(o, o, (int(AcknowledgeType.ACCEPT),)) for o in (0, 2, 4)]
        assert partition.acknowledge("a", acks, clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")
        clock.now = T0 + 1000
        runtime.tick()  # (the acknowledged records' lock entries leave the heap)
        assert runtime.next_deadline() == T0 + 5000
        clock.now = T0 + 5000
        waiter = asyncio.ensure_future(parts.fetch_waiters.wait([("t", 0)], 1, 10_000))
        await asyncio.sleep(0)
        runtime.tick()  # the timer: offset 1 is due, a waiting share fetch is woken
        await asyncio.wait_for(waiter, 1)
        ranges, _ = acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [(1, 1, 1)]
        assert partition.start_offset == 1

    asyncio.run(consume())
    logs.abort()  # kill -9: offset 1 acquired and not acknowledged, offset 3 still held
    parts, restarted = runtime_on(tmp_path, clock)
    partition = restarted.partitions[("g", "t", 0)]
    # the state was last written while 1 and 3 were held (acquisitions are not written): both wait for their
    # headers to be read again
    assert partition.unresolved() == [1, 3]
    log = parts.logs.get_log("t", 0)
    assert log is not None
    ranges, _ = acquire_from_log(partition, log, "b", clock(), 100, 1 << 20)
    # offset 1 (due) is delivered again; offset 3 read its time from the log again and is still held
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [(1, 1, 1)]
    assert partition.state_of(3) == (RecordState.AVAILABLE, 0) and partition.held == 1
    assert partition.next_deadline() is not None and partition.next_deadline() <= T0 + 60_000
    clock.now = T0 + 60_000
    ranges, _ = acquire_from_log(partition, log, "b", clock(), 100, 1 << 20)
    assert [(r.first_offset, r.delivery_count) for r in ranges] == [(3, 1)]


def test_tag_filter_through_the_log_reads_past_records_it_archives(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    parts, runtime = runtime_on(
        tmp_path, clock, {"share.auto.offset.reset": "earliest", "kbroker.share.tag.filter": "TagA || TagB"}
    )
    logs = parts.logs
    logs.create_topic("t", 1)
    for i in range(300):  # 300 batches of untagged records (never delivered), then one match
        append(logs, "t", [rec(f"u{i}-{j}") for j in range(10)])
    append(logs, "t", [rec("other", ("kbroker-tag", "TagC")), rec("mine", ("kbroker-tag", "TagB"))])

    async def consume() -> list[int]:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        got: list[int] = []
        calls = 0
        while not got and calls < 100:  # each call reads at most MAX_READS x max_bytes: the handler asks again
            ranges, _ = acquire_from_log(partition, log, "a", clock(), 5, 4096)
            got += [o for r in ranges for o in range(r.first_offset, r.last_offset + 1)]
            calls += 1
        assert 1 < calls < 20
        assert partition.start_offset == 3001  # everything before was skipped for this group
        return got

    assert asyncio.run(consume()) == [3001]


def test_dead_letters_are_copied_before_the_state_is_written(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    parts, runtime = runtime_on(
        tmp_path, clock, {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq"}
    )
    logs = parts.logs
    logs.create_topic("t", 1)
    append(logs, "t", [rec("poison", ("trace", "t1")), rec("slow"), rec("fine")])

    async def consume() -> None:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        kinds = (AcknowledgeType.REJECT, AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT)
        assert partition.acknowledge("a", [AcknowledgementBatch(0, 2, tuple(int(k) for k in kinds))], clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")
        assert logs.topic("dlq") is not None  # auto-created (auto.create.topics.enable defaults to true)
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)  # offset 1, second delivery
        clock.now += 1000
        runtime.tick()  # its lock expires at the delivery limit (2): archived, a dead letter
        await runtime.persist()

    asyncio.run(consume())
    dlq = logs.get_log("dlq", 0)
    assert dlq is not None and dlq.high_watermark == 2
    copies = [r for b in iter_batches(dlq.read(0, 1 << 20).read()) for r in b.records()]
    headers = [dict((h.key, h.value) for h in r.headers) for r in copies]
    assert [(r.key, r.value) for r in copies] == [(b"k-poison", b"poison"), (b"k-slow", b"slow")]
    assert headers[0] == {
        "trace": b"t1",
        "kbroker-dlq-topic": b"t",
        "kbroker-dlq-partition": b"0",
        "kbroker-dlq-offset": b"0",
        "kbroker-dlq-group": b"g",
        "kbroker-dlq-delivery-count": b"1",
        "kbroker-dlq-reason": b"rejected",
        "kbroker-dlq-timestamp": str(T0).encode(),
    }
    assert (headers[1]["kbroker-dlq-offset"], headers[1]["kbroker-dlq-reason"]) == (b"1", b"delivery-count-limit")
    assert headers[1]["kbroker-dlq-delivery-count"] == b"2"


def test_without_auto_creation_a_missing_dead_letter_topic_drops_the_copies(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    parts, runtime = runtime_on(
        tmp_path, clock, {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq"}
    )
    parts.config = BrokerConfig.build({"auto.create.topics.enable": "false"})
    logs = parts.logs
    logs.create_topic("t", 1)
    append(logs, "t", [rec("poison")])

    async def consume() -> None:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert partition.acknowledge("a", [AcknowledgementBatch(0, 0, (int(AcknowledgeType.REJECT),))], clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")  # the acknowledgement succeeds; the record is archived without a copy

    asyncio.run(consume())
    assert logs.topic("dlq") is None
    assert runtime.partitions[("g", "t", 0)].start_offset == 1


def test_a_copy_the_dead_letter_topic_refuses_is_dropped(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    parts, runtime = runtime_on(
        tmp_path, clock, {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq"}
    )
    logs = parts.logs
    logs.create_topic("t", 1)
    logs.create_topic("dlq", 1, configs={"max.message.bytes": "400"})
    append(logs, "t", [rec("x" * 500), rec("small")])

    async def consume() -> None:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert partition.acknowledge("a", [AcknowledgementBatch(0, 0, (int(AcknowledgeType.REJECT),))], clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")  # too large for the dead-letter topic: dropped, the acknowledgement stands
        assert partition.acknowledge("a", [AcknowledgementBatch(1, 1, (int(AcknowledgeType.REJECT),))], clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")

    asyncio.run(consume())
    dlq = logs.get_log("dlq", 0)
    assert dlq is not None
    assert [r.value for b in iter_batches(dlq.read(0, 1 << 20).read()) for r in b.records()] == [b"small"]


def test_holding_a_record_wakes_a_timer_that_sleeps_past_its_time(tmp_path: Path) -> None:
    """Whoever acquires (ShareFetch, the HTTP gateway), a new held record earlier than the timer's next wake-up
    wakes the timer, which then sleeps until that time."""
    clock = FakeClock(T0)
    parts, runtime = runtime_on(tmp_path, clock, {"share.auto.offset.reset": "earliest"})
    logs = parts.logs
    logs.create_topic("t", 1)
    append(logs, "t", [rec("later", ("kbroker-deliver-at", str(T0 + 3000))), rec("now")])

    async def scenario() -> None:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        runtime._sleeping_until = T0 + 60_000  # the timer sleeps until a session timeout
        runtime._wake.clear()
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert runtime._wake.is_set()
        assert partition.next_deadline() == T0 + 1000  # the lock of "now"; then the hold
        partition.expire_locks(T0 + 1000)
        assert partition.next_deadline() == T0 + 3000

    asyncio.run(scenario())


def test_a_crash_between_the_copy_and_the_state_copies_again(tmp_path: Path) -> None:
    """The order that makes dead letters at least once: the copy is durable before the state archiving the record
    is written. A crash in between (here: the state write fails, then kill -9) redelivers the record, and
    rejecting it again copies it again, with the same origin headers."""
    clock = FakeClock(T0)
    configs = {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq"}
    parts, runtime = runtime_on(tmp_path, clock, configs)
    logs = parts.logs
    logs.create_topic("t", 1)
    append(logs, "t", [rec("poison")])
    reject = [AcknowledgementBatch(0, 0, (int(AcknowledgeType.REJECT),))]

    async def first_life() -> None:
        partition = runtime.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        await runtime.persist()  # the initial start offset
        acquire_from_log(partition, log, "a", clock(), 100, 1 << 20)
        assert partition.acknowledge("a", reject, clock()) == 0
        runtime.after_acknowledge("g", "t", 0)

        async def crash(states: object) -> None:
            raise KafkaStorageError("the broker died here")

        runtime.store.write = crash  # type: ignore[method-assign]
        with pytest.raises(KafkaStorageError):
            await runtime.persist("g")

    asyncio.run(first_life())
    logs.abort()
    parts, restarted = runtime_on(tmp_path, clock, configs)
    logs = parts.logs

    async def second_life() -> None:
        partition = restarted.share_partition("g", "t", 0)
        log = logs.get_log("t", 0)
        assert partition is not None and log is not None
        ranges, _ = acquire_from_log(partition, log, "b", clock(), 100, 1 << 20)
        assert [(r.first_offset, r.delivery_count) for r in ranges] == [(0, 1)]  # not archived: delivered again
        assert partition.acknowledge("b", reject, clock()) == 0
        restarted.after_acknowledge("g", "t", 0)
        await restarted.persist("g")

    asyncio.run(second_life())
    dlq = logs.get_log("dlq", 0)
    assert dlq is not None
    copies = [r for b in iter_batches(dlq.read(0, 1 << 20).read()) for r in b.records()]
    origins = [
        {h.key: h.value for h in r.headers if h.key in ("kbroker-dlq-topic", "kbroker-dlq-offset")} for r in copies
    ]
    assert origins == [{"kbroker-dlq-topic": b"t", "kbroker-dlq-offset": b"0"}] * 2
