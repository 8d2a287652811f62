"""The log of one partition: segments, offsets, appends, reads, retention, flushes.

Offsets named as in Kafka: the log start offset (first readable offset), the
log end offset (next offset to assign), the high watermark (equal to the log
end offset on this single-replica broker) and the recovery point (everything
below it is fsynced: recovery starts there). Invariant:
log_start_offset <= recovery_point-or-LEO, recovery_point <= log_end_offset.
"""

from __future__ import annotations

import asyncio
import functools
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import structlog

from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError, LogOfflineError, OffsetOutOfRangeError, RecordTooLargeError
from kbroker.log.files import OpenFiles
from kbroker.log.flush import FlushPlan, GroupCommit, plan_flush
from kbroker.log.index import MAX_RELATIVE_OFFSET
from kbroker.log.loader import RecoveryStats, load_segments
from kbroker.log.scan import BatchHeader
from kbroker.log.segment import AppendedBatch, LogSegment, now_ms
from kbroker.log.swap import install
from protocol.errors import InvalidRecordError
from protocol.records import RecordBatch, TimestampAndOffset, iter_batches

log = structlog.get_logger(__name__)

# ListOffsets special timestamps
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

P = ParamSpec("P")
R = TypeVar("R")

# called after every successful append with the buffer (offsets assigned) and its batches
AppendListener = Callable[[bytearray | memoryview, list[AppendedBatch]], None]


def _storage_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Turn an OSError (EIO, ENOSPC, EMFILE...) into KafkaStorageError."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except OSError as error:
            raise KafkaStorageError(f"{method.__name__} failed: {error}") from error

    return wrapper


@dataclass(frozen=True, slots=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    max_timestamp: int
    flush_required: bool  # flush.messages reached: the acknowledgement waits for the fsync


@dataclass(slots=True)  # not frozen: built on every read, and a frozen dataclass costs 3x to build
class FileRegion:
    """A contiguous byte range of a segment file: send it with os.sendfile(sock, fd, position, size).

    The fd stays open until the event loop's next iteration. `data`, when set, holds the
    bytes already (the open-file bound had too many descriptors lent): send those instead."""

    fd: int
    position: int
    size: int
    data: bytes | None = None

    def read(self) -> bytes:
        """The bytes, with one pread."""
        if self.data is not None:
            return self.data
        try:
            data = os.pread(self.fd, self.size, self.position)
        except OSError as error:
            raise KafkaStorageError(f"read failed: {error}") from error
        if len(data) != self.size:
            raise KafkaStorageError(f"short read: {len(data)} of {self.size} bytes")
        return data

    def head(self, size: int) -> bytes:
        """The first `size` bytes (at most the region's), with one pread: a batch header, say."""
        size = min(size, self.size)
        if self.data is not None:
            return self.data[:size]
        try:
            data = os.pread(self.fd, size, self.position)
        except OSError as error:
            raise KafkaStorageError(f"read failed: {error}") from error
        if len(data) != size:
            raise KafkaStorageError(f"short read: {len(data)} of {size} bytes")
        return data


@dataclass(slots=True)
class LogReadResult:
    region: FileRegion | None  # None: nothing to return
    first_offset: int  # base offset of the first batch returned (the fetch offset when empty)
    high_watermark: int
    log_start_offset: int
    log_end_offset: int

    @property
    def size(self) -> int:
        return self.region.size if self.region else 0

    def read(self) -> bytes:
        return self.region.read() if self.region else b""


class PartitionLog:
    """Segments of one partition; all methods run on the event loop thread except fsyncs."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        executor: Executor | None = None,
        recovery: RecoveryStats | None = None,
        files: OpenFiles | None = None,
    ) -> None:
        self.directory = directory
        self.topic, _, partition = directory.name.rpartition("-")
        self.partition = int(partition) if partition.isdigit() else -1
        self.config = config
        self.segments = segments
        self._bases = [s.base_offset for s in segments]
        self.log_start_offset = max(log_start_offset, segments[0].base_offset)
        self.recovery_point = max(min(recovery_point, self.log_end_offset), self.segments[0].base_offset)
        self.recovery = recovery or RecoveryStats()
        self.files = files
        self.last_flush_ms = now_ms()
        self._rolls = 1  # the first flush also fsyncs the directory (a new segment file may be in it)
        self._synced_rolls = 0
        self._deleted: list[tuple[int, LogSegment]] = []  # (destroy after ms, segment)
        self.offline: str | None = None  # why appends are refused until a restart
        self.replicated = False  # other replicas count: the high watermark moves apart from the log end
        self._high_watermark = self.log_end_offset  # the checkpointed value once the manager restores it
        # derived per-partition state kept current with every append (e.g. kbroker.txn.transaction_index)
        self.append_listeners: list[AppendListener] = []
        self._commit = GroupCommit(
            self._plan_flush, self._on_durable, lambda: self.recovery_point, executor, self._on_flush_failed
        )

    @classmethod
    def open(
        cls,
        directory: Path | str,
        config: LogConfig | None = None,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        clean_shutdown: bool = False,
        executor: Executor | None = None,
        files: OpenFiles | None = None,
    ) -> PartitionLog:
        """Open (creating it if needed) a partition directory, recovering it after an unclean stop."""
        directory = Path(directory)
        config = config or LogConfig()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            segments, stats = load_segments(
                directory,
                config,
                log_start_offset=log_start_offset,
                recovery_point=recovery_point,
                clean_shutdown=clean_shutdown,
                files=files,
            )
            if log_start_offset > segments[-1].next_offset:
                segments = _start_empty_at(directory, config, segments, log_start_offset, files)
        except OSError as error:
            raise KafkaStorageError(f"{directory}: load failed: {error}") from error
        # a clean stop flushed everything; a recovery fsynced what it scanned, and the rest was durable
        return cls(
            directory,
            config,
            segments,
            log_start_offset=log_start_offset,
            recovery_point=segments[-1].next_offset,
            executor=executor,
            recovery=stats,
            files=files,
        )

    # -- offsets -------------------------------------------------------
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """The offset below which every in-sync replica has the data: what consumers may read.
        Not replicated (a single broker, or the leader alone in its ISR) it is the log end offset,
        as Kafka's leader advances it at once when it is its only in-sync replica; replicated it
        moves by `update_high_watermark`, within [log start offset, log end offset]."""
        log_end_offset = self.segments[-1].next_offset
        if not self.replicated:
            return log_end_offset
        return min(max(self._high_watermark, self.log_start_offset), log_end_offset)

    def start_replication(self, high_watermark: int | None = None) -> None:
        """Other replicas count from now on: the high watermark stays where it is (or at the given
        offset, e.g. the checkpointed one) until `update_high_watermark` moves it."""
        if high_watermark is not None:
            self._high_watermark = high_watermark
        elif not self.replicated:
            self._high_watermark = self.log_end_offset
        self.replicated = True
        self._high_watermark = self.high_watermark  # clamped to the log

    def stop_replication(self) -> None:
        """Back to a single replica: the high watermark follows the log end offset again."""
        self.replicated = False
        self._high_watermark = self.log_end_offset

    def update_high_watermark(self, offset: int, *, only_forward: bool = True) -> bool:
        """Move the high watermark to `offset` (clamped to the log); only forward unless told (a follower
        takes its leader's, a truncation lowers it). True when it moved."""
        before = self.high_watermark
        target = min(max(offset, self.log_start_offset), self.log_end_offset)
        if only_forward and target <= before:
            return False
        self._high_watermark = target
        return self.high_watermark != before

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    def _segment_for(self, offset: int) -> int:
        return max(0, bisect_right(self._bases, offset) - 1)

    # -- append --------------------------------------------------------
    @_storage_errors
    def append(
        self,
        buffer: bytearray | memoryview,
        *,
        leader_epoch: int = 0,
        now: int | None = None,
        assign_offsets: bool = True,
    ) -> AppendInfo:
        """Assign offsets to the batches in `buffer` (writable; rewritten in place) and write them.
        `assign_offsets=False` (a follower): the batches keep their offsets, leader epochs and times;
        they must rise from the log end offset, gaps allowed (compaction upstream).

        The data is in the file (the OS page cache) when this returns; durability
        is `wait_for_ack`'s business. Raises RecordTooLargeError, InvalidRecordError
        (malformed buffer) or KafkaStorageError (nothing of the buffer is then readable).
        """
        if self.offline is not None:
            raise LogOfflineError(f"{self.directory.name} is offline: {self.offline}")
        now = now_ms() if now is None else now
        append_time = now if self.config.log_append_time else -1
        if assign_offsets:
            batches, next_offset, max_timestamp = self._assign_offsets(buffer, leader_epoch, append_time)
        else:
            batches, next_offset, max_timestamp = self._check_offsets(buffer)
        segment = self._maybe_roll(len(buffer), len(batches), next_offset - 1, now)
        base_offset = self.log_end_offset if assign_offsets else batches[0].base_offset
        if next_offset - 1 - segment.base_offset > MAX_RELATIVE_OFFSET:
            raise InvalidRecordError(f"offset {next_offset - 1} too far above segment {segment.base_offset}")
        if segment.size == 0:
            segment.created_ms = now  # segment.ms counts from the first append
        try:
            segment.append(buffer, batches)
        except LogOfflineError as error:
            self._go_offline(str(error))
            raise
        for listener in self.append_listeners:
            listener(buffer, batches)
        flush_required = self.unflushed_messages >= self.config.flush_messages
        if flush_required and _running_loop() is not None:
            self._commit.flush_in_background(self.log_end_offset)
        return AppendInfo(
            base_offset, next_offset - 1, append_time, self.log_start_offset, max_timestamp, flush_required
        )

    def _assign_offsets(
        self, buffer: bytearray | memoryview, leader_epoch: int, append_time: int
    ) -> tuple[list[AppendedBatch], int, int]:
        offset = self.log_end_offset
        batches: list[AppendedBatch] = []
        max_timestamp = -1
        position = 0
        limit = min(self.config.max_message_bytes, self.config.segment_bytes)
        while position < len(buffer):
            batch = RecordBatch(buffer, position)
            if batch.last_offset_delta < 0:
                raise InvalidRecordError(f"negative last offset delta {batch.last_offset_delta}")
            if batch.size > limit:
                raise RecordTooLargeError(f"batch of {batch.size} bytes exceeds the limit of {limit}")
            batch.set_base_offset(offset)
            batch.set_partition_leader_epoch(leader_epoch)
            if append_time >= 0:
                batch.set_log_append_time(append_time)
            batches.append(AppendedBatch(position, batch.size, offset, batch.last_offset, batch.max_timestamp))
            max_timestamp = max(max_timestamp, batch.max_timestamp)
            offset = batch.next_offset
            position += batch.size
        if not batches:
            raise InvalidRecordError("no record batch to append")
        return batches, offset, max_timestamp

    def _check_offsets(self, buffer: bytearray | memoryview) -> tuple[list[AppendedBatch], int, int]:
        offset = self.log_end_offset
        batches: list[AppendedBatch] = []
        max_timestamp = -1
        position = 0
        while position < len(buffer):
            batch = RecordBatch(buffer, position)
            if batch.last_offset_delta < 0 or batch.base_offset < offset:
                raise InvalidRecordError(
                    f"batch at offset {batch.base_offset} (delta {batch.last_offset_delta}), log end {offset}"
                )
            batches.append(
                AppendedBatch(position, batch.size, batch.base_offset, batch.last_offset, batch.max_timestamp)
            )
            max_timestamp = max(max_timestamp, batch.max_timestamp)
            offset = batch.next_offset
            position += batch.size
        if not batches:
            raise InvalidRecordError("no record batch to append")
        return batches, offset, max_timestamp

    def _maybe_roll(self, size: int, entries: int, last_offset: int, now: int) -> LogSegment:
        segment = self.active_segment
        if segment.size == 0:
            return segment
        if (
            segment.size + size > self.config.segment_bytes
            or now - segment.created_ms > self.config.segment_ms
            or segment.index_room() < entries
            or last_offset - segment.base_offset > MAX_RELATIVE_OFFSET
        ):
            return self.roll()
        return segment

    @_storage_errors
    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (a no-op when the active one is empty)."""
        active = self.active_segment
        if active.size == 0:
            return active
        base = self.log_end_offset
        segment = LogSegment.create(self.directory, base, self.config, self.files)
        active.on_become_inactive()
        self.segments.append(segment)
        self._bases.append(base)
        self._rolls += 1
        log.info("segment_rolled", topic=self.topic, partition=self.partition, base_offset=base)
        if _running_loop() is not None:
            self._commit.flush_in_background(base)  # like Kafka: flush the finished segment soon
        return segment

    # -- durability ----------------------------------------------------
    def _plan_flush(self) -> FlushPlan:
        directory = self.directory if self._rolls > self._synced_rolls else None
        plan = plan_flush(self.segments, self._bases, self.recovery_point, self.log_end_offset, directory)
        plan.rolls = self._rolls
        return plan

    def _on_durable(self, plan: FlushPlan) -> None:
        plan.complete()
        self._synced_rolls = max(self._synced_rolls, plan.rolls)
        self.recovery_point = max(self.recovery_point, plan.target_offset)
        self.last_flush_ms = now_ms()

    def _on_flush_failed(self, error: Exception) -> None:
        # after a failed fsync the kernel may have dropped the dirty pages: never retry it
        self._go_offline(f"fsync failed: {error}")

    def _go_offline(self, reason: str) -> None:
        if self.offline is None:
            self.offline = reason
            log.error("log_offline", topic=self.topic, partition=self.partition, reason=reason)

    async def flush(self, offset: int | None = None) -> None:
        """Return once everything below `offset` (default: the log end offset) is fsynced (group commit)."""
        if self.offline is not None:
            raise LogOfflineError(f"{self.directory.name} is offline: {self.offline}")
        await self._commit.flush(self.log_end_offset if offset is None else min(offset, self.log_end_offset))

    def flush_sync(self) -> None:
        """fsync everything now, in this thread (no asynchronous flush may be in flight)."""
        if self.offline is not None:
            raise LogOfflineError(f"{self.directory.name} is offline: {self.offline}")
        self._commit.flush_now()

    async def wait_for_ack(self, info: AppendInfo, acks: int) -> None:
        """Return when `info`'s append may be acknowledged: after an fsync when the config asks for one."""
        if info.flush_required or (acks == -1 and self.config.fsync_before_ack):
            await self.flush(info.last_offset + 1)

    # -- reads ---------------------------------------------------------
    def _check_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)

    @_storage_errors
    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        to_log_end: bool = False,
    ) -> LogReadResult:
        """Whole batches from the one holding `fetch_offset` (in an offset gap: the next one), up to
        `max_bytes` (but always one batch when `min_one_batch`), below `max_offset` and the high
        watermark (`to_log_end`: the log end offset instead, Kafka's FetchIsolation.LOG_END, for a
        follower's fetch and state rebuilds), from one segment. Raises OffsetOutOfRangeError outside
        [log start offset, log end offset]."""
        self._check_offset(fetch_offset)
        limit = self.log_end_offset if to_log_end else self.high_watermark
        bound = limit if max_offset is None else min(max_offset, limit)
        i = self._segment_for(fetch_offset)
        while fetch_offset < bound and i < len(self.segments):
            segment = self.segments[i]
            if segment.base_offset >= bound:
                break
            next_base = self._bases[i + 1] if i + 1 < len(self._bases) else self.log_end_offset
            max_position = segment.size if bound >= next_base else segment.position_of(bound)
            found = segment.read(fetch_offset, max_bytes, max_position, min_one_batch)
            if found is not None:
                first, size = found
                region = FileRegion(segment.fd, first.position, size)
                files = segment.files
                if files is not None and files.evicted and not files.lend(segment):
                    region.data = region.read()  # too many descriptors lent: hand out the bytes
                return self._result(region, first.base_offset)
            i += 1
        return self._result(None, fetch_offset)

    def batches(self, start_offset: int | None = None, *, chunk_bytes: int = 8 << 20) -> Iterator[RecordBatch]:
        """Every batch from the one holding `start_offset` (default: the log start offset) to the
        log end, read in large chunks: for state rebuilds at startup, tools and tests, not fetches."""
        offset = self.log_start_offset if start_offset is None else start_offset
        while offset < self.log_end_offset:
            data = self.read(offset, chunk_bytes, to_log_end=True).read()
            if not data:
                return
            for batch in iter_batches(data):
                yield batch
                offset = batch.next_offset

    def _result(self, region: FileRegion | None, first_offset: int) -> LogReadResult:
        return LogReadResult(region, first_offset, self.high_watermark, self.log_start_offset, self.log_end_offset)

    @_storage_errors
    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: EARLIEST/LATEST/MAX_TIMESTAMP or the first offset whose timestamp >= `timestamp`.

        None when no record qualifies (the caller answers offset -1).
        """
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampAndOffset(-1, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.high_watermark)
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        if timestamp < 0:
            return None
        for i, segment in enumerate(self.segments):
            if i + 1 < len(self._bases) and self._bases[i + 1] <= self.log_start_offset:
                continue
            start = max(segment.base_offset, self.log_start_offset)
            header = segment.find_by_timestamp(timestamp, start)
            if header is not None:
                return self._exact_offset(segment, header, timestamp, start)
        return None

    def _max_timestamp_offset(self) -> TimestampAndOffset | None:
        best: LogSegment | None = None
        for i, segment in enumerate(self.segments):
            if i + 1 < len(self._bases) and self._bases[i + 1] <= self.log_start_offset:
                continue
            segment.ensure_indexes()
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        if best is None:
            return None
        header = best.find_batch(best.offset_of_max_timestamp)
        if header is None:
            return None
        return self._exact_offset(best, header, best.max_timestamp, self.log_start_offset)

    def _exact_offset(self, segment: LogSegment, header: BatchHeader, timestamp: int, start: int) -> TimestampAndOffset:
        """The first record of the batch at or after `start` with a timestamp >= `timestamp`."""
        batch = RecordBatch(segment.pread(header.position, header.size))
        try:
            for record in batch.records():
                if record.offset >= start and record.timestamp >= timestamp:
                    return TimestampAndOffset(record.timestamp, record.offset)
        except InvalidRecordError as error:
            log.warning("timestamp_lookup_undecodable", topic=self.topic, partition=self.partition, error=str(error))
        return TimestampAndOffset(header.max_timestamp, max(header.base_offset, start))

    # -- log start offset and retention --------------------------------
    def delete_records(self, offset: int) -> int:
        """DeleteRecords: advance the log start offset to `offset` (-1: the high watermark); return it."""
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.high_watermark)
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            log.info("log_start_offset_advanced", topic=self.topic, partition=self.partition, offset=offset)
        return self.log_start_offset

    @_storage_errors
    def delete_old_segments(self, now: int | None = None) -> int:
        """Delete whole segments below the log start offset or past retention.ms / retention.bytes,
        oldest first, never the active one; return the bytes released."""
        now = now_ms() if now is None else now
        config = self.config
        excess = self.size_in_bytes - config.retention_bytes if config.retention_bytes >= 0 else -1
        count = 0
        for i, segment in enumerate(self.segments[:-1]):
            below_start = self._bases[i + 1] <= self.log_start_offset
            expired = (
                config.delete_enabled
                and config.retention_ms >= 0
                and (now - segment.largest_timestamp() > config.retention_ms)
            )
            oversize = config.delete_enabled and config.retention_bytes >= 0 and excess - segment.size >= 0
            if not (below_start or expired or oversize):
                break
            excess -= segment.size
            count += 1
        return self._delete_segments(count, now)

    def _delete_segments(self, count: int, now: int) -> int:
        if count == 0:
            return 0
        doomed, self.segments = self.segments[:count], self.segments[count:]
        del self._bases[:count]
        released = 0
        for segment in doomed:
            segment.mark_deleted()
            released += segment.size
            self._deleted.append((now + self.config.file_delete_delay_ms, segment))
        self.log_start_offset = max(self.log_start_offset, self._bases[0])
        self.recovery_point = max(self.recovery_point, self._bases[0])
        log.info(
            "segments_deleted",
            topic=self.topic,
            partition=self.partition,
            segments=count,
            bytes=released,
            log_start_offset=self.log_start_offset,
        )
        return released

    def replace_segments(
        self, swap: Path, old: Sequence[LogSegment], now: int | None = None, segment: LogSegment | None = None
    ) -> LogSegment | None:
        """Install the cleaned segment `swap` (`<base>.log.swap`) in place of `old`, consecutive
        inactive segments starting at that base (see swap.py); their files go as retention's do.
        `segment`: the swap file already opened and indexed in memory (else it is opened here).

        None (and nothing changed) when the segment list no longer holds `old` there.
        """
        now = now_ms() if now is None else now
        first = next((i for i, s in enumerate(self.segments) if s is old[0]), None)
        end = None if first is None else first + len(old)
        if (
            end is None
            or end >= len(self.segments)
            or any(a is not b for a, b in zip(self.segments[first:end], old, strict=True))
        ):
            return None
        for replaced in old:
            replaced.mark_deleted()
            self._deleted.append((now + self.config.file_delete_delay_ms, replaced))
        install(swap)
        if segment is None:
            segment = LogSegment.open(self.directory, old[0].base_offset, self.config, self.files)
            segment.rebuild_indexes()  # derived: a header walk of the cleaned file (its .index files went with `old`)
        elif self.files is not None:  # in its place now: it may be closed and reopened by name
            segment.files = self.files
            self.files.opened(segment)
        self.segments[first:end] = [segment]
        self._bases[first:end] = [segment.base_offset]
        return segment

    @_storage_errors
    def truncate_to(self, offset: int, now: int | None = None) -> bool:
        """Remove every batch at or past `offset` (a follower whose log diverged from its leader's, Kafka's
        truncateTo): later segments go as retention's do, the one holding `offset` is cut at the first
        batch reaching it. Below the log start, the log starts again empty at `offset`. False when
        `offset` is not below the log end. No flush may be in flight (await `idle()` first)."""
        if offset >= self.log_end_offset:
            return False
        if self._commit.in_flight:
            raise KafkaStorageError(f"{self.directory.name}: truncation while a flush is in flight")
        now = now_ms() if now is None else now
        if offset < self.log_start_offset or offset <= self._bases[0]:
            kept: list[LogSegment] = []
        else:
            kept = self.segments[: self._segment_for(offset) + 1]
            if kept[-1].base_offset >= offset:
                kept.pop()
        for segment in self.segments[len(kept) :]:
            segment.mark_deleted()
            self._deleted.append((now + self.config.file_delete_delay_ms, segment))
        if not kept:
            kept = [LogSegment.create(self.directory, offset, self.config, self.files)]
            self.log_start_offset = offset
        cut = kept[-1].truncate_to(offset)
        self.segments = kept
        self._bases = [segment.base_offset for segment in kept]
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        log.info(
            "log_truncated",
            topic=self.topic,
            partition=self.partition,
            offset=offset,
            log_end_offset=self.log_end_offset,
            bytes_cut=cut,
        )
        return True

    @_storage_errors
    def truncate_fully_and_start_at(self, offset: int, now: int | None = None) -> None:
        """Drop every segment and start again empty at `offset` (Kafka's truncateFullyAndStartAt: a follower
        whose leader no longer has the offsets it would fetch next, its log start having passed them). No
        flush may be in flight (await `idle()` first)."""
        if self._commit.in_flight:
            raise KafkaStorageError(f"{self.directory.name}: truncation while a flush is in flight")
        now = now_ms() if now is None else now
        for segment in self.segments:
            segment.mark_deleted()
            self._deleted.append((now + self.config.file_delete_delay_ms, segment))
        self.segments = [LogSegment.create(self.directory, offset, self.config, self.files)]
        self._bases = [offset]
        self.log_start_offset = self.recovery_point = self._high_watermark = offset
        log.info("log_truncated_fully", topic=self.topic, partition=self.partition, start_offset=offset)

    def purge_deleted_segments(self, now: int | None = None, force: bool = False) -> int:
        """Close and remove segments deleted more than file.delete.delay.ms ago; return how many."""
        if self._commit.in_flight and not force:
            return 0
        now = now_ms() if now is None else now
        due = [(t, s) for t, s in self._deleted if force or t <= now]
        self._deleted = [(t, s) for t, s in self._deleted if not (force or t <= now)]
        for _, segment in due:
            segment.destroy()
        return len(due)

    # -- lifecycle -----------------------------------------------------
    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for segment in self.segments:
            segment.config = config

    @property
    def flush_in_flight(self) -> bool:
        return self._commit.in_flight

    def release_files(self) -> None:
        """Close every fd without writing or removing anything (the files were moved, or a crash is simulated)."""
        for segment in self.segments:
            segment.close()
        for _, segment in self._deleted:
            segment.close()
        self._deleted = []

    async def idle(self) -> None:
        """Wait for any flush in flight."""
        await self._commit.idle()

    async def shutdown(self) -> None:
        """Flush everything, then close (orderly stop)."""
        await self.idle()
        try:
            await self.flush()
            self.active_segment.write_indexes(fsync=True)  # a clean start trusts them
        finally:
            self.close()

    def close(self) -> None:
        """Write pending index entries and close every file (no fsync: flush first for that)."""
        if self._commit.in_flight:
            raise RuntimeError("close with a flush in flight; await idle() first")
        for segment in self.segments:
            if segment.indexes_loaded and not segment.closed:
                try:
                    segment.write_indexes(fsync=False)
                except OSError as error:
                    log.warning("index_write_failed", segment=str(segment.log_path), error=str(error))
            segment.close()
        self.purge_deleted_segments(force=True)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory.name}, log_start_offset={self.log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, segments={len(self.segments)})"
        )


def _start_empty_at(
    directory: Path, config: LogConfig, segments: list[LogSegment], offset: int, files: OpenFiles | None
) -> list[LogSegment]:
    """The log ends below its checkpointed start (data lost in recovery): as Kafka does, drop it
    and start empty at the log start offset, so no offset a client saw is handed out again."""
    log.warning(
        "log_truncated_fully",
        directory=str(directory),
        log_end_offset=segments[-1].next_offset,
        log_start_offset=offset,
    )
    for segment in segments:
        segment.destroy()
    return [LogSegment.create(directory, offset, config, files)]


def _running_loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
