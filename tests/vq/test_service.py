"""VirtualQueues on a real LogManager (no HTTP): the index follows appends, survives a restart through its
checkpoint and a tail scan, drops offsets a cut log no longer has, and tombstones delete queues."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.log import AppendOrigin, LogManager
from kbroker.vq import QueueNotFound, VirtualQueues, VqConfig
from kbroker.vq.batch_cache import BatchCache
from kbroker.vq.index import QueueIndex
from kbroker.vq.positions import StaleAck
from protocol import compression
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import Header, RecordBatch

CONFIG = VqConfig(topic="vq-data", partitions=3, positions_topic="__vq_positions", checkpoint_interval_ms=3_600_000)


def values(queues: VirtualQueues, queue: str, start: int = 0) -> list[bytes | None]:
    return [r.value for r in queues.read(queue, start, 1000).records]


async def started(data: Path) -> tuple[LogManager, VirtualQueues]:
    logs = LogManager(data)
    logs.startup()
    queues = VirtualQueues(logs, CONFIG)
    queues.start()
    return logs, queues


async def stopped(logs: LogManager, queues: VirtualQueues) -> None:
    await queues.stop()
    await logs.shutdown()


def kafka_append(logs: LogManager, partition: int, records: list[SimpleRecord]) -> None:
    """As a Kafka producer's batch would be appended (several queues in one batch)."""
    unified = logs.get_partition(CONFIG.topic, partition)
    assert unified is not None
    unified.append_as_leader(RecordBatch(bytearray(build_record_batch(records, partition_leader_epoch=0))),
                             AppendOrigin.CLIENT)  # fmt: skip


def test_index_follows_appends_and_restarts_from_its_checkpoint(tmp_path: Path) -> None:
    async def run() -> None:
        logs, queues = await started(tmp_path)
        assert queues.index is None and not queues.exists("a")
        for i in range(5):
            await queues.publish("a", f"a{i}".encode(), [])
            await queues.publish("b", f"b{i}".encode(), [])
        partition = queues.partition_of("a")
        assert values(queues, "a") == [f"a{i}".encode() for i in range(5)]
        # a batch holding several queues' records, as a Kafka producer writes it, is indexed too
        same = [q for q in (f"q{i}" for i in range(200)) if queues.partition_of(q) == partition][:3]
        kafka_append(logs, partition, [SimpleRecord(q.encode(), q.encode(), (), 1) for q in [*same, "a"]])
        assert [values(queues, q) for q in same] == [[q.encode()] for q in same]
        assert values(queues, "a")[-1] == b"a"
        await queues.ack("a", "c", queues.read("a", 0, 2).next_offset, allow_rewind=False)
        with pytest.raises(StaleAck):
            await queues.ack("a", "c", 0, allow_rewind=False)
        await stopped(logs, queues)

        logs, queues = await started(tmp_path)
        assert queues.index is not None
        for number, part in enumerate(queues.index.partitions):  # loaded: nothing left to scan
            unified = logs.get_partition(CONFIG.topic, number)
            assert unified is not None and part.scanned_to == unified.log_end_offset
        assert values(queues, "a", queues.start_offset("a", "c")) == [b"a2", b"a3", b"a4", b"a"]
        assert values(queues, "b") == [f"b{i}".encode() for i in range(5)]
        assert queues.describe("a").consumers == {"c": (queues.positions.get("a", "c"), 4)}
        await stopped(logs, queues)

    asyncio.run(run())


def test_a_checkpoint_past_the_log_end_is_cut_and_a_tombstone_deletes(tmp_path: Path) -> None:
    async def run() -> None:
        logs, queues = await started(tmp_path)
        for _ in range(3):
            await queues.publish("a", b"x", [])
        partition = queues.partition_of("a")
        await stopped(logs, queues)
        # a checkpoint that knows offsets the log does not have (its tail was cut by recovery)
        metadata = logs.topic(CONFIG.topic)
        assert metadata is not None
        stale = QueueIndex(metadata.partitions, metadata.topic_id.bytes)
        for offset in range(6):
            stale.partition(partition).add("a", offset)
        stale.partition(partition).add("ghost", 7)
        stale.partition(partition).scanned_to = 8
        (tmp_path / "vq-index.checkpoint").write_bytes(stale.to_bytes())

        logs, queues = await started(tmp_path)
        assert queues.read("a", 0, 100).next_offset == 3 and not queues.exists("ghost")
        assert len(values(queues, "a")) == 3
        await queues.publish("a", b"after", [])  # offset 3 again, indexed once
        assert values(queues, "a") == [b"x", b"x", b"x", b"after"]
        # a null value (a Kafka producer's tombstone) forgets the queue's earlier records
        kafka_append(logs, partition, [SimpleRecord(b"a", None, (), 1)])
        assert not queues.exists("a") and values(queues, "a") == []
        with pytest.raises(QueueNotFound):
            await queues.delete_queue("a")
        await queues.publish("a", b"new", [])
        assert values(queues, "a") == [b"new"]
        await stopped(logs, queues)

        (tmp_path / "vq-index.checkpoint").unlink()  # no checkpoint: rebuilt from the whole topic, same answers
        logs, queues = await started(tmp_path)
        assert values(queues, "a") == [b"new"]
        await stopped(logs, queues)

    asyncio.run(run())


def test_delayed_records_with_a_fake_clock(tmp_path: Path) -> None:
    async def run() -> None:
        logs = LogManager(tmp_path)
        logs.startup()
        now = [1_000_000]
        queues = VirtualQueues(logs, CONFIG, clock=lambda: now[0])
        queues.start()
        await queues.publish("q", b"first", [])
        await queues.publish("q", b"later", [("kbroker-deliver-after-ms", b"5000")])
        await queues.publish("q", b"behind", [])
        held = queues.read("q", 0, 10)
        assert [r.value for r in held.records] == [b"first"] and held.blocked_until == 1_005_000
        assert held.next_offset == held.records[0].offset + 1
        browsed, more = queues.browse("q", 0, 10)  # the console's view: due or not, in order
        assert [(r.value, r.due_at) for r in browsed.records] == [
            (b"first", None),
            (b"later", 1_005_000),
            (b"behind", None),
        ]
        assert browsed.next_offset == browsed.records[-1].offset + 1 and browsed.blocked_until is None and not more
        first_two, more = queues.browse("q", 0, 2)
        assert [r.value for r in first_two.records] == [b"first", b"later"] and more
        assert [r.value for r in queues.browse("q", first_two.next_offset, 2)[0].records] == [b"behind"]
        now[0] += 4999
        assert [r.value for r in queues.read("q", 0, 10).records] == [b"first"]
        now[0] += 1
        due = queues.read("q", 0, 10)
        assert [r.value for r in due.records] == [b"first", b"later", b"behind"] and due.blocked_until is None
        await stopped(logs, queues)

    asyncio.run(run())


def test_reads_jumping_between_large_compressed_batches(tmp_path: Path) -> None:
    """Queues packed by thousands in lz4 batches, read one after the other across partitions: each answer is the
    queue's own record, whether its batch is cached (read from the file: its header only) or not (the cache
    too small for even one: every read decodes afresh)."""

    async def run() -> None:
        logs, queues = await started(tmp_path)
        queues.ensure_topic()
        names = [f"tenant-{i:05d}" for i in range(6000)]
        by_partition: dict[int, list[SimpleRecord]] = {}
        for i, name in enumerate(names):
            record = SimpleRecord(name.encode(), f"job {i}".encode(), [("n", str(i).encode())], 1000 + i)
            by_partition.setdefault(queues.partition_of(name), []).append(record)
        batches = 0
        for partition, records in by_partition.items():
            for start in range(0, len(records), 700):
                unified = logs.get_partition(CONFIG.topic, partition)
                assert unified is not None
                data = build_record_batch(
                    records[start : start + 700], partition_leader_epoch=0, compression_type=compression.LZ4
                )
                unified.append_as_leader(RecordBatch(bytearray(data)), AppendOrigin.CLIENT)
                batches += 1

        def read_all() -> None:
            for i in [*range(0, 6000, 7), *range(5999, 0, -13)]:  # forwards and back, across every batch
                (record,) = queues.read(names[i], 0, 10).records
                assert (record.value, record.timestamp, record.headers) == (f"job {i}".encode(), 1000 + i,
                                                                           (Header("n", str(i).encode()),))  # fmt: skip

        read_all()
        assert len(queues.batches) == batches  # each batch decompressed and walked once, then kept
        assert 0 < queues.batches.bytes < 64 * 6000  # the records as encoded, 4 bytes of position each
        queues.batches = BatchCache(max_bytes=1)  # no room even for one (kept alone, replaced by the next)
        read_all()
        assert len(queues.batches) == 1
        await stopped(logs, queues)

    asyncio.run(run())
