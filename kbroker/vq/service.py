"""VirtualQueues: many small queues on one data topic, with named consumers (the runtime around the
pure parts: index.py, positions.py, records.py).

A queue is a record key of the data topic (`kbroker.vq.topic`, created on the first publish with
`kbroker.vq.topic.partitions`; one created before is adopted). Its records are in partition
murmur2(name) % partitions, where Kafka's default partitioner puts them, so a Kafka producer
publishes to a queue by producing with the queue name as key. The QueueIndex follows every
append to the data topic (the logs' on_append event), so a read looks up the queue's own offsets.
At start-up it is loaded from its checkpoint (`<data dir>/vq-index.checkpoint`, written every
`kbroker.vq.index.checkpoint.interval.ms` and when stopping) and completed by reading the log
from where the checkpoint ends (a missing or damaged checkpoint: from the log start).

Positions live in the compacted topic `kbroker.vq.positions.topic` (one partition), loaded at
start-up; deleting a consumer or a queue writes tombstones. Deleting a queue also appends a
tombstone (the queue name as key, a null value) to the data topic: the index forgets the queue's
earlier records there, at once and at every later rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.group.store import encode_batches, read_partition
from kbroker.log import AppendOrigin, KafkaStorageError, TopicExistsError
from kbroker.log.checkpoint import write_atomically
from kbroker.log.coordinator_log import CoordinatorLog
from kbroker.vq.batch_cache import BatchCache, BatchKey, BatchRecords
from kbroker.vq.index import CheckpointError, QueueIndex
from kbroker.vq.positions import Ack, Positions, encode_key, encode_value
from kbroker.vq.records import QueueRecord, deliverable
from protocol.errors import InvalidRecordError
from protocol.partitioner import partition_for_key
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import CONTROL_BIT, HEADER, HEADER_SIZE, TRANSACTIONAL_BIT, Record, RecordBatch, iter_batches

if TYPE_CHECKING:
    from kbroker.log import LogManager, UnifiedLog
    from kbroker.log.partition_log import AppendInfo, FileRegion
    from kbroker.log.txn_index_file import AbortedTxn

log = structlog.get_logger(__name__)

CHECKPOINT_FILE = "vq-index.checkpoint"
SCAN_CHUNK_BYTES = 4 * 1024 * 1024
READ_BYTES = 16 * 1024  # a sparse queue reads one batch per record; a dense one a few at a time
CACHED_BYTES = 32 * 1024 * 1024  # records sections and positions of recently read batches (batch_cache.py)
POSITIONS_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(16 * 1024 * 1024)}


def _now() -> int:
    return int(time.time() * 1000)


class QueueNotFound(Exception):
    pass


@dataclass(frozen=True, slots=True)
class VqConfig:
    topic: str = "kbroker-vq"
    partitions: int = 4
    positions_topic: str = "__kbroker_vq_positions"
    checkpoint_interval_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class ReadResult:
    partition: int
    records: list[QueueRecord]
    next_offset: int  # the position after these records: ack it once they are processed
    blocked_until: int | None  # a record not yet due holds the queue until then


@dataclass(frozen=True, slots=True)
class QueueInfo:
    name: str
    partition: int
    depth: int  # records from the log start on
    consumers: dict[str, tuple[int, int]]  # name -> (position, lag)


class VirtualQueues:
    def __init__(self, logs: LogManager, config: VqConfig, clock: Callable[[], int] = _now) -> None:
        self.logs = logs
        self.config = config
        self.clock = clock  # wall-clock ms: record timestamps and when delayed records are due
        self.positions = Positions()
        self.positions_log = CoordinatorLog(
            logs, config.positions_topic, 1, POSITIONS_CONFIGS, snapshot_min_bytes=2**62
        )
        self.index: QueueIndex | None = None  # None until the data topic exists
        self.checkpoint_path = Path(logs.data_dir) / CHECKPOINT_FILE
        self._task: asyncio.Task[None] | None = None
        self.batches = BatchCache(CACHED_BYTES)
        self._writing: asyncio.Future[None] | None = None
        self._checkpointed: object = None  # what the last checkpoint covered (skip writing it again)

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        begin = time.monotonic()
        self._load_positions()
        metadata = self.logs.topic(self.config.topic)
        scanned = 0
        if metadata is not None:
            self.index = self._load_checkpoint(metadata.topic_id.bytes, metadata.partitions)
            scanned = sum(self._catch_up(p) for p in range(metadata.partitions))
        self.logs.on_append.append(self._on_append)
        self._task = asyncio.get_running_loop().create_task(self._checkpoints(), name="vq-index-checkpoints")
        log.info(
            "virtual_queues_loaded",
            queues=self.index.queue_count() if self.index else 0,
            consumers=sum(len(c) for c in self.positions.by_queue.values()),
            records_scanned=scanned,
            ms=round((time.monotonic() - begin) * 1000, 1),
        )

    async def stop(self) -> None:
        if self._on_append in self.logs.on_append:
            self.logs.on_append.remove(self._on_append)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._writing is not None:  # a periodic write still in the executor finishes first
            with contextlib.suppress(OSError):
                await self._writing
        self.write_checkpoint()

    def _load_positions(self) -> None:
        if self.logs.topic(self.config.positions_topic) is None:
            return
        unified = self.logs.get_partition(self.config.positions_topic, 0)
        if unified is None:
            return
        for record in read_partition(unified, 0):
            try:
                self.positions.replay(record.key, record.value)
            except ValueError as error:
                log.warning("vq_position_record_skipped", error=str(error))

    def _load_checkpoint(self, topic_id: bytes, partitions: int) -> QueueIndex:
        try:
            index = QueueIndex.from_bytes(self.checkpoint_path.read_bytes(), topic_id, partitions)
        except FileNotFoundError:
            return QueueIndex(partitions, topic_id)
        except (CheckpointError, ValueError, UnicodeDecodeError) as error:
            log.warning("vq_index_checkpoint_ignored", path=str(self.checkpoint_path), error=str(error))
            return QueueIndex(partitions, topic_id)
        for number, partition in enumerate(index.partitions):
            unified = self.logs.get_partition(self.config.topic, number)
            if unified is not None:
                partition.truncate(unified.log_end_offset)  # a torn tail cut by recovery
        return index

    async def _checkpoints(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.config.checkpoint_interval_ms / 1000)
            data = self._checkpoint_data()
            if data is None:
                continue
            self._writing = loop.run_in_executor(None, write_atomically, self.checkpoint_path, data)
            try:
                await asyncio.shield(self._writing)
            except OSError as error:
                log.error("vq_index_checkpoint_failed", error=str(error))

    def _checkpoint_data(self) -> bytes | None:
        """The index as a checkpoint (offsets below the log start dropped first); None: unchanged since the last."""
        index = self.index
        if index is None:
            return None
        dropped = 0
        starts = []
        for number, partition in enumerate(index.partitions):
            unified = self.logs.get_partition(self.config.topic, number)
            start = unified.log_start_offset if unified is not None else 0
            dropped += partition.trim(start)
            starts.append((partition.scanned_to, start))
        mark = (index.topic_id, tuple(starts))
        if mark == self._checkpointed:
            return None
        self._checkpointed = mark
        data = index.to_bytes()
        log.info("vq_index_checkpoint_written", queues=index.queue_count(), expired_queues=dropped, bytes=len(data))
        return data

    def write_checkpoint(self) -> None:
        data = self._checkpoint_data()
        if data is not None:
            write_atomically(self.checkpoint_path, data)

    # -- the index follows the data topic -------------------------------------------------
    def _on_append(self, unified: UnifiedLog, info: AppendInfo, size: int) -> None:
        if unified.topic != self.config.topic:
            return
        if self.index is None or self._index_stale():
            metadata = self.logs.topic(self.config.topic)
            assert metadata is not None
            self.index = QueueIndex(metadata.partitions, metadata.topic_id.bytes)
        self._catch_up(unified.partition)

    def _index_stale(self) -> bool:
        metadata = self.logs.topic(self.config.topic)
        index = self.index
        return (
            metadata is None
            or index is None
            or index.topic_id != metadata.topic_id.bytes
            or len(index.partitions) != metadata.partitions
        )

    def _catch_up(self, number: int) -> int:
        """Index the partition's records from `scanned_to` to the log end; returns records read."""
        assert self.index is not None
        unified = self.logs.get_partition(self.config.topic, number)
        if unified is None:
            return 0
        partition = self.index.partition(number)
        offset = max(partition.scanned_to, unified.log_start_offset)
        end = unified.log_end_offset
        seen = 0
        while offset < end:
            data = unified.read(offset, SCAN_CHUNK_BYTES).read()
            if not data:
                break
            try:
                for batch in iter_batches(data):
                    if not batch.is_control:
                        for record in batch.records():
                            if record.offset < offset or record.key is None:
                                continue
                            seen += 1
                            queue = record.key.decode("utf-8", "replace")
                            if record.value is None:
                                partition.delete(queue)
                            else:
                                partition.add(queue, record.offset)
                    offset = batch.next_offset
            except InvalidRecordError as error:
                log.error("vq_data_log_unreadable", partition=number, offset=offset, error=str(error))
                offset = end
        partition.scanned_to = max(offset, partition.scanned_to)
        return seen

    # -- queues ---------------------------------------------------------------------------
    def partition_of(self, queue: str) -> int:
        metadata = self.logs.topic(self.config.topic)
        return _partition(queue, metadata.partitions if metadata is not None else self.config.partitions)

    def exists(self, queue: str) -> bool:
        if self.positions.by_queue.get(queue):
            return True
        return self.index is not None and self.index.exists(self.partition_of(queue), queue)

    def _data_log(self, queue: str) -> UnifiedLog | None:
        return self.logs.get_partition(self.config.topic, self.partition_of(queue))

    def ensure_topic(self) -> None:
        if self.logs.topic(self.config.topic) is None:
            try:
                self.logs.create_topic(self.config.topic, self.config.partitions)
            except TopicExistsError:
                pass
        if self._index_stale():
            metadata = self.logs.topic(self.config.topic)
            assert metadata is not None
            self.index = QueueIndex(metadata.partitions, metadata.topic_id.bytes)
            for number in range(metadata.partitions):
                self._catch_up(number)

    async def publish(self, queue: str, value: bytes, headers: list[tuple[str, bytes | None]]) -> tuple[int, int]:
        """Append one record to the queue, acknowledged as an acks=all produce: (partition, offset)."""
        self.ensure_topic()
        unified = self._data_log(queue)
        if unified is None:
            raise KafkaStorageError(f"{self.config.topic} has no log for queue {queue}")
        record = SimpleRecord(queue.encode(), value, headers, self.clock())
        batch = RecordBatch(bytearray(build_record_batch([record], partition_leader_epoch=0)))
        info = unified.append_as_leader(batch, AppendOrigin.CLIENT)
        await unified.wait_for_ack(info, -1)
        return unified.partition, info.base_offset

    def start_offset(self, queue: str, consumer: str) -> int:
        position = self.positions.get(queue, consumer)
        unified = self._data_log(queue)
        start = unified.log_start_offset if unified is not None else 0
        return start if position is None else max(position, start)

    def read(self, queue: str, start: int, limit: int, now: int | None = None) -> ReadResult:
        """Up to `limit` records of the queue at or after `start`, in order, below the last stable offset,
        records of aborted transactions left out, stopping at one not yet due."""
        partition, start, entries = self._entries(queue, start, limit)
        ready, next_offset, blocked = deliverable(entries, self.clock() if now is None else now, start)
        return ReadResult(partition, ready, next_offset, blocked)

    def browse(self, queue: str, start: int, limit: int) -> tuple[ReadResult, bool]:
        """What `read` finds, due or not (the console shows a queue's records; a read stops at one not yet
        due): the next offset is past the last record looked at, nothing is blocked; and whether the queue
        may have more records after them."""
        partition, start, entries = self._entries(queue, start, limit)
        records = [record for _, record in entries if record is not None]
        return ReadResult(partition, records, entries[-1][0] + 1 if entries else start, None), len(entries) == limit

    def _entries(self, queue: str, start: int, limit: int) -> tuple[int, int, list[tuple[int, QueueRecord | None]]]:
        """(partition, start moved up to the log start, the first `limit` of the queue's entries at or after
        it below the last stable offset)."""
        partition = self.partition_of(queue)
        unified = self._data_log(queue)
        if unified is None or self.index is None:
            return partition, start, []
        start = max(start, unified.log_start_offset)
        stable = unified.last_stable_offset()
        wanted = [o for o in self.index.next_offsets(partition, queue, start, limit) if o < stable]
        return partition, start, list(self._fetch(unified, wanted))

    def _fetch(self, unified: UnifiedLog, offsets: list[int]) -> Iterator[tuple[int, QueueRecord | None]]:
        """(offset, record) for `offsets` (ascending), decoding only those records; the record is None for
        one of an aborted transaction, or gone (retention)."""
        at, count = 0, len(offsets)
        aborted: list[AbortedTxn] | None = None
        while at < count:
            before = at
            for batch in self._batches(unified.partition, unified.read(offsets[at], READ_BYTES).region):
                if batch.is_control or batch.last_offset < offsets[at]:
                    continue
                if batch.is_transactional:
                    if aborted is None:
                        aborted = unified.collect_aborted(offsets[0], offsets[-1] + 1)
                    skip = _aborted(batch.producer_id, batch.base_offset, aborted)
                else:
                    skip = False
                records = None if skip else self._records(batch)
                while at < count and offsets[at] <= batch.last_offset:
                    record = None if records is None else records.get(offsets[at])
                    yield offsets[at], None if record is None else _queue_record(record)
                    at += 1
                if at >= count:
                    break
            if at == before:
                yield offsets[at], None  # gone (retention)
                at += 1

    def _batches(self, partition: int, region: FileRegion | None) -> Iterator[_Batch]:
        """The batches of a log read, from its first: when that one is cached, it alone and nothing more
        is read from the file than its header; otherwise all of them, read."""
        if region is None:
            return
        topic_id = self.index.topic_id if self.index is not None else b""
        head = region.head(HEADER_SIZE)
        if len(head) == HEADER_SIZE:
            base, length, _, _, crc, attributes, delta, _, _, producer_id, _, _, _ = HEADER.unpack(head)
            key = (topic_id, partition, base, length, crc)
            cached = self.batches.get(key)
            if cached is not None:
                yield _Batch(key, base, base + delta, attributes, producer_id, cached, None)
                return
        for batch in iter_batches(region.read()):
            key = (topic_id, partition, batch.base_offset, batch.batch_length, batch.crc)
            yield _Batch(key, batch.base_offset, batch.last_offset, batch.attributes, batch.producer_id, None, batch)

    def _records(self, batch: _Batch) -> BatchRecords:
        if batch.records is None:
            assert batch.batch is not None
            batch.records = self.batches.get(batch.key)
            if batch.records is None:
                batch.records = BatchRecords(batch.batch)
                self.batches.put(batch.key, batch.records)
        return batch.records

    # -- positions ------------------------------------------------------------------------
    async def ack(self, queue: str, consumer: str, offset: int, *, allow_rewind: bool) -> Ack:
        unified = self._data_log(queue)
        log_end = unified.log_end_offset if unified is not None else 0
        result = self.positions.ack(queue, consumer, offset, allow_rewind=allow_rewind, log_end=log_end)
        if result.previous != result.position:
            try:
                await self._write_positions([(encode_key(queue, consumer), encode_value(offset, self.clock()))])
            except KafkaStorageError:
                if self.positions.get(queue, consumer) == offset:  # not moved again meanwhile: undo
                    if result.previous is None:
                        self.positions.remove(queue, consumer)
                    else:
                        self.positions.set(queue, consumer, result.previous)
                raise
        return result

    async def delete_consumer(self, queue: str, consumer: str) -> bool:
        if not self.positions.remove(queue, consumer):
            return False
        await self._write_positions([(encode_key(queue, consumer), None)])
        return True

    async def delete_queue(self, queue: str) -> list[str]:
        """Forget the queue's records (a tombstone in the data topic) and its consumers (tombstones)."""
        if not self.exists(queue):
            raise QueueNotFound(queue)
        consumers = self.positions.remove_queue(queue)
        unified = self._data_log(queue)
        waits: list[Any] = []
        if unified is not None:
            tombstone = SimpleRecord(queue.encode(), None, (), self.clock())
            info = unified.append_as_leader(bytearray(build_record_batch([tombstone], partition_leader_epoch=0)),
                                            AppendOrigin.COORDINATOR)  # fmt: skip
            waits.append(unified.wait_for_ack(info, -1))
        if consumers:
            waits.append(self._write_positions([(encode_key(queue, c), None) for c in consumers]))
        for wait in waits:
            await wait
        return consumers

    async def _write_positions(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        self.positions_log.ensure_topic()
        unified, info = self.positions_log.append_to("", encode_batches(entries))
        await self.positions_log.wait_durable(unified, info)

    # -- listing --------------------------------------------------------------------------
    def describe(self, queue: str) -> QueueInfo:
        partition = self.partition_of(queue)
        unified = self._data_log(queue)
        start = unified.log_start_offset if unified is not None else 0
        index = self.index or QueueIndex(partition + 1)
        consumers = {
            name: (position, index.count_from(partition, queue, max(position, start)))
            for name, position in self.positions.consumers(queue).items()
        }
        return QueueInfo(queue, partition, index.count_from(partition, queue, start), consumers)

    def names(self, prefix: str = "") -> list[str]:
        names = set(self.positions.by_queue)
        if self.index is not None:
            names.update(q for _, q in self.index.queues())
        return sorted(n for n in names if n.startswith(prefix))


@dataclass(slots=True)
class _Batch:
    """A batch of a log read: its header's facts, its records once cached or read."""

    key: BatchKey
    base_offset: int
    last_offset: int
    attributes: int
    producer_id: int
    records: BatchRecords | None
    batch: RecordBatch | None  # the bytes, when read

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)


def _queue_record(record: Record) -> QueueRecord:
    return QueueRecord(record.offset, record.timestamp, record.value, tuple(record.headers))


def _aborted(producer_id: int, base_offset: int, aborted: list[AbortedTxn]) -> bool:
    return any(t.producer_id == producer_id and t.first_offset <= base_offset <= t.last_offset for t in aborted)


@lru_cache(maxsize=4096)  # the queues of the requests in progress
def _partition(queue: str, partitions: int) -> int:
    return partition_for_key(queue.encode(), partitions)
