"""Per partition: open transactions, the last stable offset and the aborted-transactions index.

Derived purely from the partition's data, as Kafka's log layer does (ProducerStateManager's
ongoing transactions + TransactionIndex), whoever appended it (Produce, the transaction
coordinator's markers, the group coordinator's TxnOffsetCommit batches):
- a transactional batch (attribute bit 4) of producer P opens P's transaction at its base
  offset unless P has one open;
- a control batch (bit 5) of P closes it; only its record key is decoded (type 0 ABORT,
  1 COMMIT). An ABORT adds (P, first offset, marker offset, LSO after it) to the index
  (`<segment>.txnindex`, txn_index_file.py).
Last stable offset = min(max(first offset of any open transaction, log start offset), high
watermark). Read committed fetches stop below it and get the aborted transactions that
overlap what they return (Kafka's collectAbortedTransactions).

The index follows every append through PartitionLog.append_listeners. Loading it (first use,
or `TransactionIndexes.preload` at startup) reads the newest checkpoint that still matches the
log (txn_checkpoint.py), the .txnindex files below it, then the batch headers from it to the log
end (only control batches are read past their header). A checkpoint is written at each segment
roll, every CHECKPOINT_EVERY_BATCHES appends and after a load that scanned much, so a restart
scans little. Index files of deleted segments are removed when the log start moves past them.
"""

from __future__ import annotations

import struct
import time
from bisect import bisect_left
from pathlib import Path

import structlog

from kbroker.log import KafkaStorageError, PartitionLog
from kbroker.log.segment import AppendedBatch
from kbroker.txn.scan import CONTROL_KEY_BYTES, NO_CONTROL_TYPE, batch_ending_at, control_record_type, segment_headers
from kbroker.txn.txn_checkpoint import (
    CheckpointError,
    TxnCheckpoint,
    list_checkpoints,
    read_checkpoint,
    write_checkpoint,
)
from kbroker.txn.txn_index_file import (
    AbortedTxn,
    append_entries,
    fsync_file,
    index_path,
    list_index_files,
    read_entries,
)
from protocol.records import CONTROL_BIT, HEADER_SIZE, TRANSACTIONAL_BIT, ControlRecordType

log = structlog.get_logger(__name__)

CHECKPOINTS_TO_KEEP = 2
CHECKPOINT_EVERY_BATCHES = 50_000
SCAN_CHECKPOINT_THRESHOLD = 1_000  # a load that scanned at least this many batches writes a checkpoint
ABORT = int(ControlRecordType.ABORT)
COMMIT = int(ControlRecordType.COMMIT)

_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
ATTRIBUTES_AT = 21  # base offset 8, length 4, leader epoch 4, magic 1, crc 4
ATTRIBUTES_LOW_BYTE = ATTRIBUTES_AT + 1  # int16 big-endian: the transactional and control bits are here
PRODUCER_ID_AT = 43  # ... attributes 2, last offset delta 4, base and max timestamps 16


def _last_offset(entry: AbortedTxn) -> int:
    return entry.last_offset


class PartitionTxnIndex:
    """Open transactions and aborted transactions of one partition log (event loop thread only)."""

    def __init__(self, partition_log: PartitionLog, ongoing: dict[int, int], aborted: list[AbortedTxn]) -> None:
        self.log = partition_log
        self.directory: Path = partition_log.directory
        self.ongoing = ongoing  # producer id -> first offset of its open transaction here
        self.aborted = aborted  # ordered by last offset (marker order)
        self.stale = False  # an append could not be followed: reload before the next use
        self._dirty: set[int] = set()  # .txnindex files written since the last checkpoint
        self._appends = 0
        self._segment_base = partition_log.active_segment.base_offset
        self._pruned_below = partition_log.segments[0].base_offset
        self.checkpoint_offset = -1  # of the last checkpoint written or loaded
        self.batches_scanned = 0  # by the load

    # -- following the log -------------------------------------------------
    def apply(self, producer_id: int, base_offset: int, attributes: int, control_type: int, segment_base: int) -> None:
        """One batch of the log, in offset order (non-transactional batches change nothing)."""
        if not attributes & TRANSACTIONAL_BIT:
            return
        if not attributes & CONTROL_BIT:
            if producer_id not in self.ongoing:
                self.ongoing[producer_id] = base_offset
            return
        first = self.ongoing.pop(producer_id, base_offset)
        if control_type == ABORT:
            entry = AbortedTxn(producer_id, first, base_offset, min(self.ongoing.values(), default=base_offset + 1))
            self.aborted.append(entry)
            append_entries(index_path(self.directory, segment_base), [entry])
            self._dirty.add(segment_base)
        elif control_type != COMMIT:
            log.warning(
                "transaction_marker_unreadable",
                topic=self.log.topic,
                partition=self.log.partition,
                offset=base_offset,
                producer_id=producer_id,
            )

    def on_append(self, buffer: bytearray | memoryview, batches: list[AppendedBatch]) -> None:
        """PartitionLog append listener: never raises (the data is already in the log)."""
        if self.stale:
            return
        segment_base = self.log.segments[-1].base_offset
        try:
            for batch in batches:
                position = batch.relative_position
                if buffer[position + ATTRIBUTES_LOW_BYTE] & TRANSACTIONAL_BIT:
                    self._apply_appended(buffer, position, batch.base_offset, segment_base)
        except Exception as error:  # noqa: BLE001 - a reload from the last checkpoint repairs any failure
            self.stale = True
            log.error("transaction_index_stale", topic=self.log.topic, partition=self.log.partition, error=str(error))
            return
        self._appends += len(batches)
        if segment_base != self._segment_base or self._appends >= CHECKPOINT_EVERY_BATCHES:
            self.checkpoint()

    def _apply_appended(
        self, buffer: bytearray | memoryview, position: int, base_offset: int, segment_base: int
    ) -> None:
        (attributes,) = _ATTRIBUTES.unpack_from(buffer, position + ATTRIBUTES_AT)
        (producer_id,) = _PRODUCER_ID.unpack_from(buffer, position + PRODUCER_ID_AT)
        control = NO_CONTROL_TYPE
        if attributes & CONTROL_BIT:
            records_at = position + HEADER_SIZE
            control = control_record_type(bytes(buffer[records_at : records_at + CONTROL_KEY_BYTES]))
        self.apply(producer_id, base_offset, attributes, control, segment_base)

    def scan(self, start: int) -> int:
        """Apply the batch headers from offset `start` (a batch boundary) to the log end; return how many."""
        segments = self.log.segments
        first = 0
        for i, segment in enumerate(segments):
            if segment.base_offset <= start:
                first = i
        count = 0
        for segment in segments[first:]:
            position = 0
            if start > segment.base_offset:
                header = segment.find_batch(start)
                if header is None:
                    continue
                position = header.position
            base = segment.base_offset
            for h in segment_headers(segment, position):
                if h.base_offset >= start:
                    count += 1
                    self.apply(h.producer_id, h.base_offset, h.attributes, h.control_type, base)
        return count

    # -- reads -------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset(self) -> int:
        """min(first offset of any open transaction (not below the log start), high watermark)."""
        high_watermark = self.log.high_watermark
        if not self.ongoing:
            return high_watermark
        return min(max(min(self.ongoing.values()), self.log.log_start_offset), high_watermark)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound): marker at or after the fetch
        offset, first offset below the bound; stops once an entry's LSO reaches the bound (Kafka's rule)."""
        self.prune()
        found = []
        aborted = self.aborted
        for i in range(bisect_left(aborted, fetch_offset, key=_last_offset), len(aborted)):
            entry = aborted[i]
            if entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                break
        return found

    # -- checkpoints and retention -----------------------------------------------
    def checkpoint(self) -> None:
        """Checkpoint the state at the log end offset (index files fsynced first); failures only log."""
        self._appends = 0
        self._segment_base = self.log.active_segment.base_offset
        offset = self.log.log_end_offset
        if offset == self.checkpoint_offset and not self._dirty:
            return
        try:
            anchor = batch_ending_at(self.log, offset - 1) if offset > 0 else None
            for base in sorted(self._dirty):
                fsync_file(index_path(self.directory, base))
            self._dirty.clear()
            checkpoint = TxnCheckpoint(
                offset,
                anchor.base_offset if anchor is not None else -1,
                anchor.crc if anchor is not None else 0,
                dict(self.ongoing),
            )
            write_checkpoint(self.directory, checkpoint)
            self.checkpoint_offset = offset
            for _, old in list_checkpoints(self.directory)[CHECKPOINTS_TO_KEEP:]:
                old.unlink(missing_ok=True)
            self.prune()
        except (OSError, KafkaStorageError) as error:  # a checkpoint only speeds up the next load
            log.warning(
                "transaction_checkpoint_failed", topic=self.log.topic, partition=self.log.partition, error=str(error)
            )

    def prune(self) -> None:
        """Forget the aborted transactions of deleted segments and remove their index files."""
        first_base = self.log.segments[0].base_offset
        if first_base <= self._pruned_below:
            return
        self._pruned_below = first_base
        del self.aborted[: bisect_left(self.aborted, first_base, key=_last_offset)]
        try:
            for base, path in list_index_files(self.directory):
                if base < first_base:
                    path.unlink(missing_ok=True)
                    self._dirty.discard(base)
        except OSError as error:
            log.warning("txn_index_prune_failed", directory=str(self.directory), error=str(error))

    def detach(self) -> None:
        if self.on_append in self.log.append_listeners:
            self.log.append_listeners.remove(self.on_append)


# -- loading ---------------------------------------------------------------------
def _is_anchored(partition_log: PartitionLog, checkpoint: TxnCheckpoint) -> bool:
    if checkpoint.offset > partition_log.log_end_offset:
        return False
    anchor = batch_ending_at(partition_log, checkpoint.offset - 1) if checkpoint.offset > 0 else None
    if anchor is not None:
        return (anchor.base_offset, anchor.crc) == (checkpoint.anchor_base, checkpoint.anchor_crc)
    return checkpoint.anchor_base == -1 and checkpoint.offset - 1 < partition_log.segments[0].base_offset


def _usable_checkpoint(partition_log: PartitionLog) -> TxnCheckpoint | None:
    """The newest checkpoint matching the log; the newer ones that do not are deleted."""
    for _, path in list_checkpoints(partition_log.directory):
        try:
            checkpoint = read_checkpoint(path)
            if _is_anchored(partition_log, checkpoint):
                return checkpoint
            reason = "does not match the log"
        except CheckpointError as error:
            reason = str(error)
        log.info("transaction_checkpoint_discarded", path=str(path), reason=reason)
        path.unlink(missing_ok=True)
    return None


def _load_index_files(partition_log: PartitionLog, below: int) -> list[AbortedTxn]:
    live = {segment.base_offset for segment in partition_log.segments}
    aborted: list[AbortedTxn] = []
    for base, path in list_index_files(partition_log.directory):
        if base not in live:
            path.unlink(missing_ok=True)
        else:
            aborted.extend(read_entries(path, below))
    return aborted


def load_transaction_index(partition_log: PartitionLog) -> PartitionTxnIndex:
    """Load a partition's index (checkpoint + index files + scan) and attach it to the log's appends."""
    started = time.perf_counter()
    try:
        checkpoint = _usable_checkpoint(partition_log)
        start = checkpoint.offset if checkpoint is not None else partition_log.segments[0].base_offset
        ongoing = dict(checkpoint.ongoing) if checkpoint is not None else {}
        index = PartitionTxnIndex(partition_log, ongoing, _load_index_files(partition_log, start))
        index.checkpoint_offset = checkpoint.offset if checkpoint is not None else -1
        scanned = index.batches_scanned = index.scan(start)
    except OSError as error:
        raise KafkaStorageError(f"{partition_log.directory}: transaction index load failed: {error}") from error
    if scanned >= SCAN_CHECKPOINT_THRESHOLD:
        index.checkpoint()
    index.prune()
    partition_log.append_listeners.append(index.on_append)
    log.info(
        "transaction_index_loaded",
        topic=partition_log.topic,
        partition=partition_log.partition,
        checkpoint_offset=checkpoint.offset if checkpoint is not None else -1,
        batches_scanned=scanned,
        open_transactions=len(index.ongoing),
        aborted_transactions=len(index.aborted),
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return index
