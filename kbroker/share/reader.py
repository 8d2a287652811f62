"""Acquiring records of one share partition from its log, and the batches that carry them.

New records are acquired up to the end of the whole batches one read returns (the share
partition never acquires half of a batch it has not read); redeliveries are whatever the
in-flight window holds. In Kafka's batch-optimized acquire mode (ShareFetch v1, and v2's mode 0)
the last new batch is acquired whole even past `max_records`, so a consumer never receives the same
batch twice; the record-limit mode (v2's mode 1) stops exactly at `max_records`. The answer carries every batch overlapping an acquired range; a consumer
skips the records outside the ranges, and acknowledges as GAP acquired offsets with no record
(control batches, compacted-away offsets).
"""

from __future__ import annotations

from kbroker.log import PartitionLog
from kbroker.share.partition import AcquiredRecords, SharePartition
from protocol.records import iter_batches

READ_BYTES = 1024 * 1024


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
    start = partition.end_offset
    limit = start
    if start < end and partition.in_flight < partition.config.max_record_locks:
        data = log.read(start, max(1, min(max_bytes, READ_BYTES)), max_offset=end).read()
        wanted = start + max_records
        for batch in iter_batches(data):
            limit = batch.next_offset
            if whole_batches and limit >= wanted:
                break
        limit = min(limit, end)
        if whole_batches and limit > wanted:
            max_records += limit - wanted  # the last batch whole
    ranges = partition.acquire(member_id, now, max_records, limit)
    return ranges, batches_covering(log, ranges) if ranges else b""


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
