"""UnifiedLog: one partition as its writers and readers see it (Kafka's UnifiedLog).

It wraps the local log (PartitionLog: segments, offsets, reads, flushes) and owns what
every append must keep current: the producer state (idempotence and open transactions,
producer_state.py), the aborted-transaction index (txn_index.py), their snapshots, and one
`on_append` event. Every writer goes through it:

    append_as_leader(records, origin)   CLIENT: a Produce batch, checked against the producer
                                        state first (a retried batch gets its original offsets);
                                        COORDINATOR: __consumer_offsets / __transaction_state
                                        records; MARKER: a COMMIT/ABORT control batch
    append_as_follower(buffer)          batches that already carry offsets and leader epochs

Each appended batch with a producer id is applied to the producer state (the local log's
append listener hands over the batches with their offsets), a marker that aborts adds an
entry to the index, then `on_append(log, info, size)` listeners run (fetch waiters wake).

Producer state is loaded when the partition is opened (again on first use if that failed):
the newest usable snapshot (`<offset>.snapshot`), the index files below it, then the batch
headers after it.
Snapshots are taken when a segment rolls, every SNAPSHOT_EVERY_APPENDS appends, when the
manager's periodic duty finds the log moved (`tick`), and at shutdown. A deleted partition
(`mark_deleted`) writes nothing more and drops its state.
"""

from __future__ import annotations

import enum
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError, LogOfflineError
from kbroker.log.leader_epoch import CHECKPOINT_FILE, LeaderEpochCache
from kbroker.log.leader_epoch_scan import epochs_in_log
from kbroker.log.offset_files import list_offset_files
from kbroker.log.partition_log import AppendInfo, LogReadResult, PartitionLog
from kbroker.log.producer_scan import CONTROL_KEY_BYTES, NO_CONTROL_TYPE, control_record_type
from kbroker.log.producer_snapshot import delete_snapshots, list_snapshots
from kbroker.log.producer_state import CompletedTxn, DuplicateBatch, ProducerStateManager
from kbroker.log.producer_state_config import ProducerStateConfig, wall_clock_ms
from kbroker.log.producer_state_loader import LoadStats, rebuild_producer_state, take_snapshot, usable_snapshot
from kbroker.log.segment import AppendedBatch
from kbroker.log.txn_index import TransactionIndex
from kbroker.log.txn_index_file import AbortedTxn, index_path
from kbroker.log.validator import validate_records
from protocol.errors import InvalidRecordError
from protocol.records import CONTROL_BIT, HEADER, HEADER_SIZE, TRANSACTIONAL_BIT, RecordBatch

log = structlog.get_logger(__name__)

SNAPSHOT_EVERY_APPENDS = 100_000
LEGACY_CHECKPOINT_SUFFIX = ".txncheckpoint"  # transaction checkpoints of older versions: the snapshot replaced them
_PRODUCER_ID = struct.Struct(">q")
PRODUCER_ID_AT = 43  # base offset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2, delta 4, timestamps 16

AppendListener = Callable[["UnifiedLog", AppendInfo, int], None]
# cluster mode: returns once the partition's in-sync replicas hold every offset below the given one (acks=all)
ReplicationWait = Callable[["UnifiedLog", int], Awaitable[None]]


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's AppendOrigin): only CLIENT batches are checked against the producer state."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    MARKER = "marker"


@dataclass(slots=True)
class _State:
    producers: ProducerStateManager
    aborted: TransactionIndex


class UnifiedLog:
    """One partition: its local log plus producer state, transaction index and append event."""

    def __init__(
        self,
        local: PartitionLog,
        producer_config: ProducerStateConfig | None = None,
        on_append: list[AppendListener] | None = None,
    ) -> None:
        self.local = local
        self.topic = local.topic
        self.partition = local.partition
        self._name = f"{local.topic}-{local.partition}"
        self.producer_config = producer_config or ProducerStateConfig()
        self.on_append: list[AppendListener] = [] if on_append is None else on_append  # may be shared
        self.deleted = False
        self.replication_wait: ReplicationWait | None = None  # set by the cluster for a replicated partition
        self._state: _State | None = None  # loaded on first use; None again after a failure
        self._snapshot_offset = -1
        self._segment_base = local.active_segment.base_offset
        self._appends = 0  # since the last snapshot
        self.last_load: LoadStats | None = None  # of the producer state
        local.append_listeners.append(self._follow_append)
        self.leader_epochs = self._load_leader_epochs()
        try:
            self.load_state()
        except KafkaStorageError as error:  # the partition serves; the state loads again on first use
            log.error("producer_state_load_failed", topic=self.topic, partition=self.partition, error=str(error))

    # -- the local log's offsets and reads --------------------------------------------
    @property
    def config(self) -> LogConfig:
        return self.local.config

    @property
    def log_start_offset(self) -> int:
        return self.local.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.local.high_watermark

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        to_log_end: bool = False,
    ) -> LogReadResult:
        return self.local.read(
            fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch, to_log_end=to_log_end
        )

    async def wait_for_ack(self, info: AppendInfo, acks: int) -> None:
        """Once `info`'s append may be acknowledged: fsynced when the config asks, and with acks=all on a
        replicated partition once the ISR has it (NotEnoughReplicasError otherwise)."""
        await self.local.wait_for_ack(info, acks)
        if acks == -1 and self.replication_wait is not None:
            await self.replication_wait(self, info.last_offset + 1)

    # -- leader epochs ----------------------------------------------------------------
    def _load_leader_epochs(self) -> LeaderEpochCache:
        """The checkpoint, or for a log written before it existed the epochs its batch headers carry;
        entries past the recovered log end (recorded before a write the crash lost) are dropped."""
        local = self.local
        try:
            if (local.directory / CHECKPOINT_FILE).exists() or local.log_end_offset == 0:
                cache = LeaderEpochCache.load(local.directory)
            else:
                cache = LeaderEpochCache(local.directory, epochs_in_log(local))
                cache.truncate_from_start(local.log_start_offset)
                cache.flush()
            cache.truncate_from_end(local.log_end_offset)
            cache.truncate_from_start(local.log_start_offset)
        except OSError as error:  # the data is readable; an epoch cache rebuilt in memory serves until restart
            log.error("leader_epoch_cache_failed", topic=self.topic, partition=self.partition, error=str(error))
            cache = LeaderEpochCache(local.directory)
        return cache

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        try:
            self.leader_epochs.assign(epoch, start_offset)
        except OSError as error:
            raise KafkaStorageError(f"{self._name}: leader epoch checkpoint failed: {error}") from error

    def assign_leader_epoch(self, epoch: int) -> None:
        """This replica becomes the partition's leader at `epoch`: the epoch starts at the log end offset
        (Kafka's maybeAssignEpochStartOffset), so followers' divergence checks see it before any write."""
        self._assign_epoch(epoch, self.local.log_end_offset)

    def end_offset_for_epoch(self, epoch: int, current_epoch: int = -1) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch and a follower's divergence check: see
        LeaderEpochCache.end_offset_for; (-1, -1) for an unknown higher epoch. `current_epoch` is the
        leader's epoch when it has not written under it yet: it counts as starting at the log end offset
        (Kafka records that entry when a replica becomes leader)."""
        cache = self.leader_epochs
        if cache.entries and cache.entries[0].start_offset < self.local.log_start_offset and not self.deleted:
            try:
                cache.truncate_from_start(self.local.log_start_offset)
            except OSError as error:  # the answer is right in memory; the file follows on the next change
                log.warning("leader_epoch_checkpoint_failed", topic=self.topic, error=str(error))
        if current_epoch > cache.latest_epoch:
            cache = LeaderEpochCache(self.local.directory, cache.entries)
            cache.enabled = False  # a view: never written
            cache.assign(current_epoch, self.local.log_end_offset)
        return cache.end_offset_for(epoch, self.local.log_end_offset)

    # -- appends ----------------------------------------------------------------------
    def append_as_leader(
        self,
        records: RecordBatch | bytearray | memoryview,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        *,
        leader_epoch: int = 0,
        coordinator_epoch: int = 0,
        now: int | None = None,
    ) -> AppendInfo:
        """Assign offsets and append. A CLIENT batch (a RecordBatch whose header the caller checked) has
        its records validated (validator.py: RecordValidationError refuses it), then is checked
        against the producer state: a retried one is answered with its original offsets and not
        appended; ProducerStateError (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER) refuses it.
        Raises what PartitionLog.append raises (KafkaStorageError, RecordTooLargeError, InvalidRecordError)."""
        if self.deleted:
            raise LogOfflineError(f"{self.topic}-{self.partition} was deleted")
        if isinstance(records, RecordBatch):
            buffer: bytearray | memoryview = records.view()
            if origin is AppendOrigin.CLIENT:
                validate_records(records, self.config, wall_clock_ms() if now is None else now, self._name)
            if origin is AppendOrigin.CLIENT and records.producer_id >= 0:
                duplicate = self.producer_state().check(records)
                if duplicate is not None:
                    return self._duplicate_info(duplicate)
        else:
            buffer = records
        # a leader's epoch never goes back: callers that do not know it (coordinators, markers) pass 0
        leader_epoch = max(leader_epoch, self.leader_epochs.latest_epoch)
        self._assign_epoch(leader_epoch, self.local.log_end_offset)  # recorded before the data, as Kafka
        info = self.local.append(buffer, leader_epoch=leader_epoch, now=now)
        if origin is AppendOrigin.MARKER and self._state is not None:
            self._state.producers.set_coordinator_epoch(RecordBatch(buffer).producer_id, coordinator_epoch)
        self._appended(info, len(buffer))
        return info

    def append_as_follower(self, buffer: bytearray | memoryview) -> AppendInfo:
        """Store batches that carry their offsets and leader epochs already (replication): nothing is
        checked against the producer state, which follows them. Their offsets rise from the log end
        offset (gaps kept, as compaction upstream leaves them)."""
        if self.deleted:
            raise LogOfflineError(f"{self.topic}-{self.partition} was deleted")
        view = memoryview(buffer)
        groups = _follower_groups(view, self.local.log_end_offset, self.local.config.log_append_time)
        first: AppendInfo | None = None
        info: AppendInfo | None = None
        for start, end, epoch, stamp, base_offset in groups:
            self._assign_epoch(epoch, base_offset)
            info = self.local.append(view[start:end], leader_epoch=epoch, now=stamp, assign_offsets=False)
            self._appended(info, end - start)
            first = first or info
        assert first is not None and info is not None
        return AppendInfo(
            first.base_offset,
            info.last_offset,
            first.log_append_time,
            info.log_start_offset,
            max(first.max_timestamp, info.max_timestamp),
            first.flush_required or info.flush_required,
        )

    def truncate_to(self, offset: int) -> bool:
        """Drop everything at or past `offset` (Kafka's truncateTo, for a follower whose log diverged):
        the local log, the leader epochs starting there, the producer snapshots above it, and the
        producer state and transaction index, reloaded from the newest snapshot left. False when
        `offset` is not below the log end offset. No flush may be in flight (await `local.idle()`)."""
        if self.deleted:
            raise LogOfflineError(f"{self.topic}-{self.partition} was deleted")
        local = self.local
        bases = [segment.base_offset for segment in local.segments]
        if not local.truncate_to(offset):
            # as Kafka: an epoch recorded at the log end with no data under it (a leader that wrote nothing
            # before another was elected) contradicts the new leader's log: it goes all the same
            try:
                self.leader_epochs.truncate_from_end(local.log_end_offset)
            except OSError as error:
                raise KafkaStorageError(f"{self._name}: leader epoch checkpoint failed: {error}") from error
            return False
        try:
            self.leader_epochs.truncate_from_end(local.log_end_offset)
            if local.log_start_offset == local.log_end_offset:
                self.leader_epochs.clear()
            delete_snapshots(path for at, path in list_snapshots(local.directory) if at > local.log_end_offset)
            kept = {segment.base_offset for segment in local.segments}
            for base in bases:
                if base not in kept:
                    index_path(local.directory, base).unlink(missing_ok=True)
        except OSError as error:
            raise KafkaStorageError(f"{self._name}: truncation failed: {error}") from error
        self._rebuild_state()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Start again empty at `offset` (Kafka's truncateFullyAndStartAt, for a follower whose leader's log
        start passed its log end): no segment, epoch, producer snapshot or aborted index is kept. No flush may
        be in flight (await `local.idle()`)."""
        if self.deleted:
            raise LogOfflineError(f"{self.topic}-{self.partition} was deleted")
        local = self.local
        bases = [segment.base_offset for segment in local.segments]
        local.truncate_fully_and_start_at(offset)
        try:
            self.leader_epochs.clear()
            delete_snapshots(path for _, path in list_snapshots(local.directory))
            for base in bases:
                index_path(local.directory, base).unlink(missing_ok=True)
        except OSError as error:
            raise KafkaStorageError(f"{self._name}: truncation failed: {error}") from error
        self._rebuild_state()

    def _rebuild_state(self) -> None:
        """Producer state again from the snapshots left and the log after a truncation."""
        self._state = None
        self._snapshot_offset = -1
        self._segment_base = self.local.active_segment.base_offset
        self.load_state()

    def _appended(self, info: AppendInfo, size: int) -> None:
        for listener in self.on_append:
            try:
                listener(self, info, size)
            except Exception:  # noqa: BLE001 - the data is in the log; one listener must not fail the append
                log.exception("append_listener_failed", topic=self.topic, partition=self.partition)
        self._appends += 1
        segment_base = self.local.segments[-1].base_offset
        if segment_base != self._segment_base or self._appends >= SNAPSHOT_EVERY_APPENDS:
            self._segment_base = segment_base
            self.take_snapshot()  # as Kafka snapshots producer state at each roll

    def _follow_append(self, buffer: bytearray | memoryview, batches: list[AppendedBatch]) -> None:
        """The local log's append listener: apply each batch with a producer id (offsets assigned)."""
        state = self._state
        if state is None:
            return  # not loaded: the load will read these batches from the log
        try:
            apply = state.producers.apply
            for batch in batches:
                position = batch.relative_position
                if _PRODUCER_ID.unpack_from(buffer, position + PRODUCER_ID_AT)[0] < 0:
                    continue
                _, _, _, _, _, attributes, delta, _, max_ts, pid, epoch, seq, _ = HEADER.unpack_from(buffer, position)
                control = NO_CONTROL_TYPE
                if attributes & CONTROL_BIT:
                    at = position + HEADER_SIZE
                    control = control_record_type(bytes(buffer[at : at + CONTROL_KEY_BYTES]))
                apply(
                    pid,
                    epoch,
                    seq,
                    delta,
                    batch.base_offset,
                    max_ts,
                    bool(attributes & TRANSACTIONAL_BIT),
                    bool(attributes & CONTROL_BIT),
                    control,
                )
        except Exception as error:  # noqa: BLE001 - a reload from the last snapshot repairs any failure
            self._state = None
            log.error("producer_state_stale", topic=self.topic, partition=self.partition, error=str(error))

    def _duplicate_info(self, duplicate: DuplicateBatch) -> AppendInfo:
        """The answer to a retried batch: its original offsets (Kafka also reports its stored timestamp)."""
        append_time = duplicate.timestamp if self.local.config.log_append_time else -1
        return AppendInfo(
            duplicate.base_offset,
            duplicate.last_offset,
            append_time,
            self.local.log_start_offset,
            duplicate.timestamp,
            False,
        )

    # -- producer state and transactions ------------------------------------------------
    def producer_state(self) -> ProducerStateManager:
        """The partition's producers, loaded on first use (KafkaStorageError when the log cannot be read)."""
        return self._loaded().producers

    @property
    def state_loaded(self) -> bool:
        return self._state is not None

    def _loaded(self) -> _State:
        state = self._state
        if state is None:
            state = self.load_state()
        return state

    def load_state(self) -> _State:
        """Load producer state and the aborted index: newest usable snapshot, index files, headers after it."""
        if self.deleted:
            raise LogOfflineError(f"{self.topic}-{self.partition} was deleted")
        started = time.perf_counter()
        local = self.local
        config = self.producer_config
        try:
            snapshot = usable_snapshot(local)
            start = snapshot.offset if snapshot is not None else 0
            bases = [segment.base_offset for segment in local.segments]
            producers = ProducerStateManager(
                self.topic,
                self.partition,
                expiration_ms=config.expiration_ms,
                expiration_check_interval_ms=config.expiration_check_interval_ms,
                clock=config.clock,
            )
            state = _State(producers, TransactionIndex.load(local.directory, bases, start))
            producers.on_txn_completed = lambda completed: self._index_abort(state, completed)
            stats = rebuild_producer_state(local, producers, snapshot)
            for _, path in list_offset_files(local.directory, LEGACY_CHECKPOINT_SUFFIX):
                path.unlink(missing_ok=True)
        except OSError as error:
            raise KafkaStorageError(f"{local.directory}: producer state load failed: {error}") from error
        self._state = state
        self._snapshot_offset = stats.snapshot_offset
        if local.log_end_offset > max(stats.snapshot_offset, 0):
            self.take_snapshot()  # the log was scanned past the snapshot: save the next load that work
        state.aborted.prune(local.segments[0].base_offset)
        log.debug(
            "producer_state_loaded",
            topic=self.topic,
            partition=self.partition,
            snapshot_offset=stats.snapshot_offset,
            batches_scanned=stats.batches_scanned,
            producers=stats.producers,
            open_transactions=len(producers.ongoing),
            aborted_transactions=len(state.aborted.aborted),
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        self.last_load = stats
        return state

    def _index_abort(self, state: _State, completed: CompletedTxn) -> None:
        if not completed.is_aborted:
            return
        marker = completed.last_offset
        stable = min(state.producers.ongoing.values(), default=marker + 1)
        segment_base = self.local.segments[0].base_offset
        for segment in self.local.segments:
            if segment.base_offset > marker:
                break
            segment_base = segment.base_offset
        entry = AbortedTxn(completed.producer_id, completed.first_offset, marker, stable)
        state.aborted.add(entry, segment_base)

    def transaction_index(self) -> TransactionIndex:
        """The aborted transactions of the partition (loaded with the producer state)."""
        return self._loaded().aborted

    def first_unstable_offset(self) -> int | None:
        return self.producer_state().first_unstable_offset()

    def last_stable_offset(self) -> int:
        """min(first offset of any open transaction (not below the log start), high watermark)."""
        ongoing = self._loaded().producers.ongoing
        high_watermark = self.local.high_watermark
        if not ongoing:
            return high_watermark
        return min(max(min(ongoing.values()), self.local.log_start_offset), high_watermark)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (see TransactionIndex)."""
        aborted = self._loaded().aborted
        aborted.prune(self.local.segments[0].base_offset)
        return aborted.collect_aborted(fetch_offset, upper_bound)

    # -- snapshots, duties, deletion -----------------------------------------------------
    def take_snapshot(self) -> None:
        """Snapshot the producer state at the log end offset (index files fsynced first); failures only log."""
        self._appends = 0
        state = self._state
        if self.deleted or state is None:
            return
        offset = self.local.log_end_offset
        if offset == self._snapshot_offset:
            return
        try:
            state.aborted.sync()
            take_snapshot(self.local, state.producers)
            self._snapshot_offset = offset
            state.aborted.prune(self.local.segments[0].base_offset)
        except (OSError, KafkaStorageError) as error:  # a snapshot only speeds up the next load
            log.warning("producer_snapshot_failed", topic=self.topic, partition=self.partition, error=str(error))

    def tick(self, now: int | None = None) -> None:
        """The periodic duty: snapshot if the log moved on, expire idle producers when the check is due."""
        if self.deleted or self._state is None:
            return
        self.take_snapshot()
        self.end_offset_for_epoch(-1)  # the log start may have moved: the epoch cache follows
        producers = self._state.producers
        now = producers.clock() if now is None else now
        if now >= producers.next_expiration_check:
            producers.remove_expired(now)

    def mark_deleted(self) -> None:
        """The partition's topic was deleted: drop the state, never write into the directory again."""
        self.deleted = True
        self.leader_epochs.enabled = False
        self._state = None
        self.on_append = []
        if self._follow_append in self.local.append_listeners:
            self.local.append_listeners.remove(self._follow_append)

    def __repr__(self) -> str:
        return f"UnifiedLog({self.local!r}, deleted={self.deleted})"


def _follower_groups(
    view: memoryview, next_offset: int, log_append_time: bool
) -> list[tuple[int, int, int, int | None, int]]:
    """(start, end, leader epoch, append time, base offset) runs of batches that one local append stores
    as they are: the same leader epoch, and under LogAppendTime one batch each. Offsets must rise
    from the log end offset; gaps (compacted away upstream) are kept, as Kafka's follower does."""
    groups: list[tuple[int, int, int, int | None, int]] = []
    position = 0
    while position < len(view):
        batch = RecordBatch(view, position)
        if batch.base_offset < next_offset:
            raise InvalidRecordError(f"follower batch at offset {batch.base_offset}, below {next_offset}")
        stamp = batch.max_timestamp if log_append_time else None
        end = position + batch.size
        epoch = batch.partition_leader_epoch
        if groups and not log_append_time and groups[-1][2] == epoch:
            groups[-1] = (groups[-1][0], end, epoch, None, groups[-1][4])
        else:
            groups.append((position, end, epoch, stamp, batch.base_offset))
        next_offset = batch.next_offset
        position = end
    if not groups:
        raise InvalidRecordError("no record batch to append")
    return groups
