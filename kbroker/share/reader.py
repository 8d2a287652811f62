"""Acquiring records of one share partition from its log, and the batches that carry them.

New records are acquired up to the end of the whole batches one read returns (the share
partition never acquires half of a batch it has not read); redeliveries are whatever the
in-flight window holds. In Kafka's batch-optimized acquire mode (ShareFetch v1, and v2's mode 0)
the last new batch is acquired whole even past `max_records`, so a consumer never receives the same
batch twice; the record-limit mode (v2's mode 1) stops exactly at `max_records`. The answer carries every batch overlapping an acquired range; a consumer
skips the records outside the ranges, and acknowledges as GAP acquired offsets with no record
(control batches, compacted-away offsets).

kbroker's header extensions (record_headers.py) are read here, batch by batch as they are acquired:
a batch whose records do not contain `kbroker-` costs one search and nothing per record. When all
the new records one read returns are held for later or refused by the tag filter, the next batches
are read, up to MAX_READS reads per call (the caller asks again: see `more_to_read`).
"""

from __future__ import annotations

import structlog

from kbroker.log import PartitionLog, UnifiedLog
from kbroker.log.txn_index_file import AbortedTxn
from kbroker.share.partition import AcquiredRecords, RecordState, SharePartition
from kbroker.share.record_headers import RecordInfo, batch_record_info
from protocol.errors import InvalidRecordError
from protocol.records import RecordBatch, iter_batches

logger = structlog.get_logger(__name__)

READ_BYTES = 1024 * 1024
MAX_READS = 8


def acquire_from_log(
    partition: SharePartition,
    log: PartitionLog,
    member_id: str,
    now: int,
    max_records: int,
    max_bytes: int,
    fetch_end: int | None = None,
    whole_batches: bool = True,
) -> tuple[list[AcquiredRecords], bytes]:
    """Acquire up to `max_records` for `member_id`: (acquired ranges, the record batches holding them)."""
    end = log.high_watermark if fetch_end is None else fetch_end
    if partition.needs_resolve:
        resolve_restored(partition, log, now)
    ranges: list[AcquiredRecords] = []
    for reads in range(MAX_READS):
        start = partition.end_offset
        limit = start
        info: dict[int, RecordInfo] = {}
        wanted_records = max_records
        if start < end and partition.in_flight < partition.config.max_record_locks:
            data = log.read(start, max(1, min(max_bytes, READ_BYTES)), max_offset=end).read()
            wanted = start + max_records
            for batch in iter_batches(data):
                limit = batch.next_offset
                if limit > start:
                    _read_headers(batch, info)
                # after a read that gave nothing (all held or refused), the whole read is looked at
                if whole_batches and limit >= wanted and not reads:
                    break
            limit = min(limit, end)
            if whole_batches and limit > wanted and not reads:
                wanted_records += limit - wanted  # the last batch whole
        ranges += partition.acquire(member_id, now, wanted_records, limit, info)
        if ranges or partition.end_offset == start or partition.end_offset >= end:
            break
    return ranges, batches_covering(log, ranges) if ranges else b""


def more_to_read(partition: SharePartition, fetch_end: int) -> bool:
    """Whether an acquire that returned nothing may still find records below `fetch_end` without waiting for an
    append (it read records that were all held or archived, and stopped at MAX_READS)."""
    return partition.end_offset < fetch_end and partition.in_flight < partition.config.max_record_locks


def _read_headers(batch: RecordBatch, info: dict[int, RecordInfo]) -> None:
    try:
        info.update(batch_record_info(batch))
    except InvalidRecordError as error:  # delivered as it is; the consumer sees the same bytes
        logger.warning("share_record_headers_unreadable", offset=batch.base_offset, error=str(error))


def resolve_restored(partition: SharePartition, log: PartitionLog, now: int) -> None:
    """After a restart: read again the headers of the held records the persisted state named (their delivery
    times and tags are not persisted)."""
    offsets = partition.unresolved()
    info: dict[int, RecordInfo] = {}
    if not offsets:  # deleted from the log meanwhile
        partition.resolve(info, now)
        return
    position, last = max(offsets[0], log.log_start_offset), offsets[-1]
    while position <= last and position < log.log_end_offset:
        data = log.read(position, READ_BYTES).read()
        before = position
        for batch in iter_batches(data):
            if batch.next_offset > position:
                _read_headers(batch, info)
                position = batch.next_offset
        if position == before:
            break
    partition.resolve(info, now)


def batches_covering(log: PartitionLog, ranges: list[AcquiredRecords]) -> bytes:
    """The log's batches overlapping `ranges` (in offset order), each once, back to back."""
    parts: list[memoryview] = []
    covered = -1  # every offset below this is in `parts` already
    for item in ranges:
        offset = max(item.first_offset, covered)
        while offset <= item.last_offset and offset < log.log_end_offset:
            data = log.read(offset, READ_BYTES).read()
            before = offset
            for batch in iter_batches(data):
                if batch.next_offset <= offset:
                    continue
                parts.append(batch.view())
                covered = offset = batch.next_offset
                if offset > item.last_offset:
                    break
            else:
                if offset != before:
                    continue
            break
    return b"".join(parts)


def acquire_committed(
    partition: SharePartition,
    unified: UnifiedLog,
    member_id: str,
    now: int,
    max_records: int,
    max_bytes: int,
    whole_batches: bool = True,
) -> tuple[list[AcquiredRecords], bytes]:
    """read_committed (`share.isolation.level`): acquire below the last stable offset, and archive at once the
    records of aborted transactions (they are never delivered; their batches are left out of the answer).
    Control batches stay acquired: the consumer acknowledges them as GAP."""
    log = unified.local
    first_new = partition.end_offset
    ranges, _ = acquire_from_log(
        partition, log, member_id, now, max_records, max_bytes, unified.last_stable_offset(), whole_batches
    )
    span_end = partition.end_offset  # new records were read up to here: acquired, held or archived
    low = min([first_new] + [r.first_offset for r in ranges])
    if low >= span_end:
        return ranges, batches_covering(log, ranges) if ranges else b""
    aborted = unified.collect_aborted(low, span_end)
    if aborted:
        data = batches_covering(log, [AcquiredRecords(low, span_end - 1, 0)])
        for batch in iter_batches(data):
            if (
                batch.is_transactional
                and not batch.is_control
                and _aborted_batch(batch.producer_id, batch.base_offset, aborted)
            ):
                partition.archive_acquired(member_id, batch.base_offset, batch.last_offset)
        ranges = _still_acquired(partition, member_id, ranges)
    return ranges, batches_covering(log, ranges) if ranges else b""


def _aborted_batch(producer_id: int, base_offset: int, aborted: list[AbortedTxn]) -> bool:
    return any(t.producer_id == producer_id and t.first_offset <= base_offset <= t.last_offset for t in aborted)


def _still_acquired(partition: SharePartition, member_id: str, ranges: list[AcquiredRecords]) -> list[AcquiredRecords]:
    kept: list[AcquiredRecords] = []
    for item in ranges:
        run: int | None = None
        for offset in range(item.first_offset, item.last_offset + 1):
            state = partition.state_of(offset)
            held = state is not None and state[0] is RecordState.ACQUIRED
            if held and run is None:
                run = offset
            if not held and run is not None:
                kept.append(AcquiredRecords(run, offset - 1, item.delivery_count))
                run = None
        if run is not None:
            kept.append(AcquiredRecords(run, item.last_offset, item.delivery_count))
    return kept
