"""Rebuilding a partition's producer state (newest usable snapshot + the log's batch headers after it), snapshots."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from kbroker.log.partition_log import PartitionLog
from kbroker.log.producer_scan import ProducerBatchHeader, batch_ending_at, log_headers
from kbroker.log.producer_snapshot import (
    Snapshot,
    SnapshotError,
    delete_snapshots,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from kbroker.log.producer_state import ProducerStateManager
from protocol.records import CONTROL_BIT, TRANSACTIONAL_BIT

log = structlog.get_logger(__name__)

SNAPSHOTS_TO_KEEP = 2


@dataclass(slots=True)
class LoadStats:
    snapshot_offset: int = -1  # -1: no usable snapshot, the log was scanned from its start
    batches_scanned: int = 0
    producers: int = 0
    duration_ms: float = 0.0


def _anchor(log_: PartitionLog, offset: int) -> ProducerBatchHeader | None:
    return batch_ending_at(log_, offset - 1) if offset > 0 else None


def is_anchored(log_: PartitionLog, snapshot: Snapshot) -> bool:
    """Whether the log still holds the data the snapshot was taken of (see snapshot.py)."""
    if snapshot.offset > log_.log_end_offset:
        return False
    header = _anchor(log_, snapshot.offset)
    if header is not None:
        return (header.base_offset, header.crc) == (snapshot.anchor_base, snapshot.anchor_crc)
    # nothing ends at offset - 1: valid only when the log no longer holds (or never held) that offset
    return snapshot.offset - 1 < log_.segments[0].base_offset


def usable_snapshot(log_: PartitionLog) -> Snapshot | None:
    """The newest snapshot that matches the log; newer ones that do not are deleted."""
    stale = []
    chosen = None
    for _offset, path in list_snapshots(log_.directory):
        try:
            snapshot = read_snapshot(path)
        except SnapshotError as error:
            log.warning("producer_snapshot_unreadable", path=str(path), error=str(error))
            stale.append(path)
            continue
        if is_anchored(log_, snapshot):
            chosen = snapshot
            break
        log.info("producer_snapshot_discarded", path=str(path), log_end_offset=log_.log_end_offset)
        stale.append(path)
    delete_snapshots(stale)
    return chosen


def rebuild_producer_state(log_: PartitionLog, manager: ProducerStateManager, snapshot: Snapshot | None) -> LoadStats:
    """Fill `manager` from `snapshot` (usable_snapshot's choice) and the batch headers after it.

    Markers found in the log are reported through manager.on_txn_completed, as live appends do.
    """
    started = time.perf_counter()
    stats = LoadStats()
    start = 0
    if snapshot is not None:
        # as Kafka: expired entries of the snapshot are dropped now, producers found in the log
        # only at the next expiration check (so a restart never hurries an expiry)
        now = manager.clock()
        manager.load(e for e in snapshot.entries if not e.is_expired(now, manager.expiration_ms))
        start = stats.snapshot_offset = snapshot.offset
    apply = manager.apply
    scanned = 0
    for header in log_headers(log_, start):
        if header.producer_id < 0 or header.base_offset < start:
            continue
        scanned += 1
        attributes = header.attributes
        apply(
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.last_offset_delta,
            header.base_offset,
            header.max_timestamp,
            bool(attributes & TRANSACTIONAL_BIT),
            bool(attributes & CONTROL_BIT),
            header.control_type,
        )
    stats.batches_scanned = scanned
    stats.producers = len(manager)
    stats.duration_ms = (time.perf_counter() - started) * 1000
    return stats


def take_snapshot(log_: PartitionLog, manager: ProducerStateManager) -> Path:
    """Snapshot the state at the log end offset; keep the newest SNAPSHOTS_TO_KEEP files.

    The caller has fsynced the partition's .txnindex files first: the snapshot promises them."""
    offset = log_.log_end_offset
    anchor = _anchor(log_, offset)
    snapshot = Snapshot(
        offset,
        anchor.base_offset if anchor is not None else -1,
        anchor.crc if anchor is not None else 0,
        list(manager.producers.values()),
    )
    path = write_snapshot(log_.directory, snapshot)
    delete_snapshots(old for _, old in list_snapshots(log_.directory)[SNAPSHOTS_TO_KEEP:])
    log.debug("producer_snapshot_written", topic=log_.topic, partition=log_.partition, offset=offset)
    return path
