"""One cleaning round of one partition, in the cleaner thread (Kafka's Cleaner.doClean / cleanSegments).

The event loop takes a `CleanJob` snapshot (segments below the first uncleanable offset, each
with a duplicated fd, so retention closing a segment meanwhile cannot pull the file away);
this module reads them, builds the offset map, cleans each group of segments into
`<base>.log.cleaned`, fsyncs it and marks it complete (`.swap`). The event loop then swaps
each group in (PartitionLog.replace_segments) if the partition still has those segments.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbroker.cleaner.batch_writer import build_empty
from kbroker.cleaner.offset_map import OffsetMap, build_offset_map
from kbroker.cleaner.record_filter import CleanerStats, LastRecord, RecordFilter
from kbroker.cleaner.throttle import CleaningAbortedError, Throttler
from kbroker.cleaner.txn_metadata import AbortedTxnLike, CleanedTransactionMetadata
from kbroker.log.config import LogConfig
from kbroker.log.segment import LogSegment, now_ms
from kbroker.log.swap import cleaned_path, mark_complete
from protocol.records import HEADER_SIZE, LOG_OVERHEAD, RecordBatch

READ_CHUNK = 1 << 20
WRITE_CHUNK = 1 << 20
INT_MAX = 2**31 - 1
_OFFSET_INDEX_ENTRY = 8
_TIME_INDEX_ENTRY = 12


@dataclass(slots=True)
class SourceSegment:
    """An inactive segment as the round sees it."""

    segment: LogSegment  # identity, checked when the cleaned group is swapped in
    fd: int  # a duplicate of the segment's fd, owned by the job
    base_offset: int
    size: int
    next_base: int  # the next segment's base offset


@dataclass(slots=True)
class CleanJob:
    topic: str
    partition: int
    directory: Path
    segments: list[SourceSegment]  # every segment below the first uncleanable offset
    first_dirty_offset: int
    first_dirty_position: int  # in the segment holding the first dirty offset
    first_uncleanable_offset: int
    aborted: Sequence[AbortedTxnLike]
    active_producers: Mapping[int, LastRecord]
    now: int
    delete_retention_ms: int
    config: LogConfig

    def close(self) -> None:
        for source in self.segments:
            try:
                os.close(source.fd)
            except OSError:
                pass


@dataclass(slots=True)
class CleanedGroup:
    swap: Path
    segment: LogSegment  # open on the swap file, indexes built in memory
    old: list[LogSegment]
    base_offset: int
    bytes_in: int
    bytes_out: int


@dataclass(slots=True)
class RoundResult:
    end_offset: int  # the next round's first dirty offset
    groups: list[CleanedGroup] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)
    map_full: bool = False


def iter_segment_batches(fd: int, position: int, end: int, throttler: Throttler | None = None) -> Iterator[RecordBatch]:
    """Every batch of the file between `position` and `end`, read in large chunks."""
    while position < end:
        data = os.pread(fd, min(READ_CHUNK, end - position), position)
        if not data:
            return
        used = 0
        while len(data) - used >= HEADER_SIZE:
            size = LOG_OVERHEAD + int.from_bytes(data[used + 8 : used + 12], "big", signed=True)
            if size < HEADER_SIZE or used + size > len(data):
                break
            yield RecordBatch(data, used)
            used += size
        if used == 0:  # one batch larger than the chunk
            header = os.pread(fd, HEADER_SIZE, position)
            size = LOG_OVERHEAD + int.from_bytes(header[8:12], "big", signed=True)
            if size < HEADER_SIZE or position + size > end:
                raise CleaningAbortedError(f"invalid batch at position {position}")
            data = os.pread(fd, size, position)
            yield RecordBatch(data)
            used = size
        if throttler is not None:
            throttler.maybe_throttle(used)
        position += used


def group_segments_by_size(
    segments: Sequence[SourceSegment], max_size: int, max_index_bytes: int, index_interval: int, upper: int
) -> list[list[SourceSegment]]:
    """Consecutive segments whose total log (and estimated index) size fits one segment (Kafka's groupSegmentsBySize)."""

    def index_bytes(source: SourceSegment, entry: int) -> int:
        return (source.size // max(index_interval, 1) + 1) * entry

    groups: list[list[SourceSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        offset_index = index_bytes(segments[i], _OFFSET_INDEX_ENTRY)
        time_index = index_bytes(segments[i], _TIME_INDEX_ENTRY)
        i += 1
        while i < len(segments):
            candidate = segments[i]
            last_offset = (segments[i + 1].base_offset if i + 1 < len(segments) else upper) - 1
            if (
                log_size + candidate.size > max_size
                or offset_index + index_bytes(candidate, _OFFSET_INDEX_ENTRY) > max_index_bytes
                or time_index + index_bytes(candidate, _TIME_INDEX_ENTRY) > max_index_bytes
                or (candidate.size > 0 and last_offset - group[0].base_offset > INT_MAX)
            ):
                break
            group.append(candidate)
            log_size += candidate.size
            offset_index += index_bytes(candidate, _OFFSET_INDEX_ENTRY)
            time_index += index_bytes(candidate, _TIME_INDEX_ENTRY)
            i += 1
        groups.append(group)
    return groups


def clean_partition(job: CleanJob, offset_map: OffsetMap, throttler: Throttler | None = None) -> RoundResult:
    """Build the offset map over the dirty section, then clean every group of segments up to its end."""
    dirty = [s for s in job.segments if s.next_base > job.first_dirty_offset]
    result = RoundResult(job.first_dirty_offset)
    sources = (
        (
            iter_segment_batches(s.fd, job.first_dirty_position if i == 0 else 0, s.size, throttler),
            s.next_base,
        )
        for i, s in enumerate(dirty)
    )
    result.map_full = build_offset_map(offset_map, sources, job.first_dirty_offset, job.aborted)
    if offset_map.latest_offset < job.first_dirty_offset:
        return result
    result.end_offset = offset_map.latest_offset + 1
    to_clean = [s for s in job.segments if s.base_offset < result.end_offset]
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions(job.aborted)
    record_filter = RecordFilter(
        offset_map,
        transactions,
        now=job.now,
        delete_retention_ms=job.delete_retention_ms,
        last_records_of_active_producers=job.active_producers,
        upper_bound_offset=job.first_uncleanable_offset,
        stats=result.stats,
    )
    config = job.config
    groups = group_segments_by_size(
        to_clean,
        config.segment_bytes,
        config.segment_index_bytes,
        config.index_interval_bytes,
        job.first_uncleanable_offset,
    )
    try:
        for group in groups:
            result.groups.append(_clean_group(job, group, record_filter, throttler))
    except BaseException:
        for done in result.groups:
            done.segment.close()
            done.swap.unlink(missing_ok=True)
        raise
    return result


def _clean_group(
    job: CleanJob, group: list[SourceSegment], record_filter: RecordFilter, throttler: Throttler | None
) -> CleanedGroup:
    base = group[0].base_offset
    path = cleaned_path(job.directory, base)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    written = 0
    try:
        pending = bytearray()
        last: RecordBatch | None = None
        kept_last = False
        for source in group:
            for batch in iter_segment_batches(source.fd, 0, source.size, throttler):
                data = record_filter.filter_batch(batch)
                last, kept_last = batch, data is not None
                if data is not None:
                    pending += data
                if len(pending) >= WRITE_CHUNK:
                    written += _write(fd, pending, written, throttler)
                    pending = bytearray()
        if last is not None and not kept_last:
            # the group's last offset stays in it as an empty batch, so the cleaned segment still ends
            # where the next one starts: a gap between segments keeps meaning lost data (log_offset_gaps)
            pending += build_empty(last)
        written += _write(fd, pending, written, throttler)
        os.fsync(fd)
        # the indexes are built here, off the event loop; the files are written once it is in place
        segment = LogSegment(job.directory, base, job.config, fd, written, now_ms())
        segment.index_in_memory()
        swap = mark_complete(path)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        path.with_name(path.name[: -len(".cleaned")] + ".swap").unlink(missing_ok=True)
        raise
    return CleanedGroup(swap, segment, [s.segment for s in group], base, sum(s.size for s in group), written)


def _write(fd: int, data: bytearray, position: int, throttler: Throttler | None) -> int:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, position)
        view = view[done:]
        position += done
    if throttler is not None:
        throttler.maybe_throttle(len(data))
    return len(data)
