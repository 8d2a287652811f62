"""SharePartition: the in-flight records of one (share group, topic partition), as KIP-932 defines them.

Pure and sans-io: time comes in as `now` (milliseconds), records never; the caller reads the
log and says how far it may acquire. Vocabulary is Kafka's:

- share-partition start offset (SPSO): every offset below it is done for this group
  (acknowledged or archived); records at and above it may still be delivered.
- end offset: the first offset never acquired. [start offset, end offset) is the in-flight
  window; its length is at most `max_record_locks` (`share.partition.max.record.locks`).
- each in-flight offset is AVAILABLE, ACQUIRED (by one member, until its acquisition lock
  expires), ACKNOWLEDGED or ARCHIVED, with a delivery count (how many times it was acquired).

Transitions (Kafka's SharePartition rules):
- acquire: AVAILABLE -> ACQUIRED, delivery count + 1, lock until now + lock duration;
  offsets at the end offset become in-flight ACQUIRED with delivery count 1.
- acknowledge by the member holding the lock: ACCEPT -> ACKNOWLEDGED; REJECT and GAP ->
  ARCHIVED; RELEASE -> AVAILABLE; RENEW keeps it ACQUIRED with a fresh lock.
- lock expiry, or the member leaving: ACQUIRED -> AVAILABLE.
- whenever a record would become AVAILABLE with delivery count >= `delivery_count_limit`,
  it is ARCHIVED instead: it is never delivered again.
- the start offset then moves past every leading ACKNOWLEDGED/ARCHIVED offset, which leave
  the window.

kbroker's extensions (the caller passes what the records' headers say, record_headers.py):
- delayed delivery: a new record whose delivery time is still ahead enters the window AVAILABLE
  but *held* (delivery count 0): acquire skips it until `now` reaches that time, so records behind
  it are delivered first; being in the window, it keeps the start offset from passing it, and
  counts towards `max_record_locks`.
- tag filter (`config.tag_filter`): a record whose tags do not match is ARCHIVED with delivery count
  0 instead of being acquired, at its first acquisition (for a delayed record: the first after it
  became due; its tags are kept until then).
- dead letters: with `config.dead_letters`, each record ARCHIVED by REJECT or by the delivery limit
  is noted in `dead_letters` (offset, delivery count, reason) for the caller to copy and drain.
- after a restore the held times are unknown (not persisted): AVAILABLE records with delivery count
  0 stay held as *unresolved* until the caller, having re-read their headers, calls `resolve`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from kbroker.share.record_headers import NO_TAGS, RecordInfo
from kbroker.share.tag_filter import TagFilter
from protocol.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's RecordState ids (also the persisted values)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
MAX_RESTORED_WINDOW = 100_000
UNRESOLVED = 1 << 62  # the hold of a restored record whose delivery time is not known yet
REJECTED = "rejected"
DELIVERY_LIMIT = "delivery-count-limit"
_AFTER_ACK = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
    AcknowledgeType.RENEW: RecordState.ACQUIRED,
}


@dataclass(frozen=True)
class AcquiredRecords:
    """One range of acquired offsets with its delivery count (ShareFetch's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AcknowledgementBatch:
    """Offsets first..last (inclusive) and one type for all of them, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True)
class StateBatch:
    """A run of offsets with the same persisted state and delivery count (Kafka's PersisterStateBatch)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True)
class DeadLetter:
    """A record archived by REJECT or by the delivery limit, to be copied to the group's dead-letter topic."""

    offset: int
    delivery_count: int
    reason: str  # REJECTED or DELIVERY_LIMIT


@dataclass(frozen=True)
class SharePartitionConfig:
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    tag_filter: TagFilter | None = None  # kbroker.share.tag.filter
    dead_letters: bool = False  # note dead letters (the group has errors.deadletterqueue.topic.name)


class _InFlight:
    __slots__ = ("deadline", "delivery_count", "member_id", "state")

    def __init__(self, state: RecordState, delivery_count: int, member_id: str = "", deadline: int = 0) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline = deadline


class SharePartition:
    """The in-flight window of one share partition. Not thread-safe; one caller at a time."""

    def __init__(self, start_offset: int, config: SharePartitionConfig | None = None) -> None:
        self.config = config or SharePartitionConfig()
        self.start_offset = start_offset
        self.end_offset = start_offset
        self._records: dict[int, _InFlight] = {}  # offset -> state, offsets in increasing order
        self._available = 0  # how many in-flight records are AVAILABLE
        self._locks: list[tuple[int, int, int]] = []  # heap of (deadline, first, last)
        self._held: dict[int, tuple[int, frozenset[str]]] = {}  # AVAILABLE offset -> (delivery time, tags)
        self._holds: list[tuple[int, int]] = []  # heap of (delivery time, offset); stale entries skipped
        self._due_tags: dict[int, frozenset[str]] = {}  # tags of held records now due, until their first acquisition
        self.dead_letters: list[DeadLetter] = []  # drained by the caller
        self.on_hold: Callable[[int], None] | None = None  # told the earliest new delivery time (a timer to set)
        self.needs_resolve = False  # restored held records wait for `resolve`

    # ------------------------------------------------------------------ queries

    @property
    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def state_of(self, offset: int) -> tuple[RecordState, int] | None:
        """(state, delivery count) of an in-flight offset; None outside the window."""
        record = self._records.get(offset)
        return None if record is None else (record.state, record.delivery_count)

    def can_acquire(self) -> bool:
        """Whether an acquire could return something without new records (redeliveries) or may take new ones."""
        return self._available > 0 or self.in_flight < self.config.max_record_locks

    @property
    def has_available(self) -> bool:
        return self._available > 0

    def delivery_complete_count(self) -> int:
        """In-flight records already acknowledged or archived (they do not count as lag)."""
        return sum(1 for record in self._records.values() if record.state in TERMINAL)

    def acquired_by(self, member_id: str) -> int:
        return sum(1 for r in self._records.values() if r.state is RecordState.ACQUIRED and r.member_id == member_id)

    @property
    def held(self) -> int:
        """In-flight records waiting for their delivery time (or, after a restore, for `resolve`)."""
        return len(self._held)

    def acquired_offsets(self, member_id: str) -> list[int]:
        """The offsets `member_id` holds now (ACQUIRED by it), ascending."""
        return [o for o, r in self._records.items() if r.state is RecordState.ACQUIRED and r.member_id == member_id]

    def next_deadline(self) -> int | None:
        """The earliest lock expiry or delivery time."""
        lock = self._locks[0][0] if self._locks else None
        hold = self._holds[0][0] if self._holds else None
        if lock is None or hold is None:
            return lock if hold is None else hold
        return min(lock, hold)

    def unresolved(self) -> list[int]:
        """Restored offsets whose delivery time and tags the caller must read from the log (then `resolve`)."""
        return [offset for offset, (due, _) in self._held.items() if due == UNRESOLVED]

    def state_batches(self) -> list[StateBatch]:
        """The window as runs for persistence; ACQUIRED is written as AVAILABLE (a lock does not survive a restart)."""
        batches: list[StateBatch] = []
        first = prev = -1
        key: tuple[RecordState, int] | None = None
        for offset, record in self._records.items():
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            this = (state, record.delivery_count)
            if key == this and offset == prev + 1:
                prev = offset
                continue
            if key is not None:
                batches.append(StateBatch(first, prev, key[0], key[1]))
            first = prev = offset
            key = this
        if key is not None:
            batches.append(StateBatch(first, prev, key[0], key[1]))
        return batches

    # ------------------------------------------------------------------ acquire

    def acquire(
        self,
        member_id: str,
        now: int,
        max_records: int,
        fetch_end: int,
        info: Mapping[int, RecordInfo] | None = None,
    ) -> list[AcquiredRecords]:
        """Lock up to `max_records` records for `member_id`: redeliveries (and records now due) first, in
        offset order, then new offsets from the end offset up to `fetch_end` (exclusive: the high
        watermark, or the last stable offset) within the in-flight window. `info` gives the delivery
        time and tags of the new offsets that have any (the others have neither; so with a tag filter or
        `info`, every new offset below `fetch_end` must have been looked at): a record not yet due is
        held, one the tag filter refuses is archived (or skipped, at the head of an empty window);
        neither counts as acquired, but held and archived entries take room in the window."""
        if self._holds and self._holds[0][0] <= now:
            self.release_due(now)
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        deadline = now + self.config.record_lock_duration_ms
        tag_filter = self.config.tag_filter
        if self._available and max_records > 0:
            held = self._held
            for offset, record in self._records.items():
                if record.state is RecordState.AVAILABLE and offset not in held:
                    if record.delivery_count == 0 and self._refused_when_due(offset, tag_filter):
                        record.state = RecordState.ARCHIVED  # a delayed record, judged at its first acquisition
                        self._available -= 1
                        if not self._available:
                            break
                        continue
                    record.state = RecordState.ACQUIRED
                    record.delivery_count += 1
                    record.member_id = member_id
                    record.deadline = deadline
                    self._available -= 1
                    acquired.append((offset, record.delivery_count))
                    if len(acquired) >= max_records or not self._available:
                        break
        room = min(max_records - len(acquired), self.start_offset + self.config.max_record_locks - self.end_offset)
        if not info and tag_filter is None:
            last_new = min(fetch_end, self.end_offset + max(room, 0))
            for offset in range(self.end_offset, last_new):
                self._records[offset] = _InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
                acquired.append((offset, 1))
        elif fetch_end > self.end_offset:
            last_new = self._take_new(
                member_id, now, deadline, fetch_end, max(room, 0), info or {}, tag_filter, acquired
            )
        else:
            last_new = self.end_offset
        self.end_offset = max(self.end_offset, last_new, self.start_offset)
        if tag_filter is not None:
            self._advance_start()  # archived records at the head leave the window
        ranges = _ranges(acquired)
        for item in ranges:
            heapq.heappush(self._locks, (deadline, item.first_offset, item.last_offset))
        return ranges

    def _refused_when_due(self, offset: int, tag_filter: TagFilter | None) -> bool:
        tags = self._due_tags.pop(offset, NO_TAGS)
        return tag_filter is not None and not tag_filter.matches(tags)

    def _take_new(
        self,
        member_id: str,
        now: int,
        deadline: int,
        fetch_end: int,
        budget: int,
        info: Mapping[int, RecordInfo],
        tag_filter: TagFilter | None,
        acquired: list[tuple[int, int]],
    ) -> int:
        """Take new offsets from the end offset, run by run, making at most `budget` window entries; returns the
        new end offset. Records the tag filter refuses while nothing is in flight before them are skipped (the
        start offset moves past them, no entry is made, no budget is spent), so a filter costs nothing per
        untagged record it refuses."""
        records = self._records
        untagged_match = tag_filter is None or tag_filter.matches(NO_TAGS)
        head_clear = self.start_offset == self.end_offset  # nothing in flight before `offset`
        offset = self.end_offset
        keys = sorted(o for o in info if offset <= o < fetch_end)
        keys.append(fetch_end)
        for key in keys:
            if offset < key:  # offsets without kbroker headers
                if head_clear and not untagged_match:
                    self.start_offset = offset = key
                else:
                    stop = min(key, offset + budget)
                    for plain in range(offset, stop):
                        if untagged_match:
                            records[plain] = _InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
                            acquired.append((plain, 1))
                        else:
                            records[plain] = _InFlight(RecordState.ARCHIVED, 0)
                    budget -= stop - offset
                    head_clear = head_clear and stop == offset
                    offset = stop
                    if offset < key:
                        return offset  # the budget is spent
            if key == fetch_end:
                return offset
            item = info[key]
            refused = tag_filter is not None and not tag_filter.matches(item.tags)
            if head_clear and refused and item.deliver_at <= now:
                self.start_offset = offset = key + 1
                continue
            if budget <= 0:
                return offset
            if item.deliver_at > now:
                records[key] = _InFlight(RecordState.AVAILABLE, 0)
                self._hold(key, item.deliver_at, item.tags)
            elif refused:
                records[key] = _InFlight(RecordState.ARCHIVED, 0)
            else:
                records[key] = _InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
                acquired.append((key, 1))
            budget -= 1
            head_clear = False
            offset = key + 1
        return offset

    def release_due(self, now: int) -> int:
        """Held records whose delivery time has come become AVAILABLE (their tags are kept for the tag filter
        at their first acquisition); how many."""
        released = 0
        while self._holds and self._holds[0][0] <= now:
            due, offset = heapq.heappop(self._holds)
            entry = self._held.get(offset)
            if entry is None or entry[0] != due:
                continue  # stale: archived, deleted, or reset meanwhile
            del self._held[offset]
            if entry[1]:
                self._due_tags[offset] = entry[1]
            self._available += 1
            released += 1
        return released

    def resolve(self, info: Mapping[int, RecordInfo], now: int) -> int:
        """Restored held records get their delivery time and tags from `info` (read from the log again;
        an offset missing from it has neither); those due now are released. How many became available."""
        for offset in self.unresolved():
            item = info.get(offset)
            due, tags = (0, NO_TAGS) if item is None else (item.deliver_at, item.tags)
            self._hold(offset, due, tags)
        self.needs_resolve = False
        return self.release_due(now)

    def _hold(self, offset: int, due: int, tags: frozenset[str]) -> None:
        self._held[offset] = (due, tags)
        if self.on_hold is not None and (not self._holds or due < self._holds[0][0]):
            self.on_hold(due)
        heapq.heappush(self._holds, (due, offset))

    # ------------------------------------------------------------------ acknowledge

    def acknowledge(self, member_id: str, batches: list[AcknowledgementBatch], now: int) -> ErrorCode:
        """Apply one request's acknowledgements for this partition, all or nothing.

        INVALID_REQUEST for malformed batches (unknown type, a types array of the wrong length,
        overlapping or reversed ranges); INVALID_RECORD_STATE when an offset is not ACQUIRED by
        this member (past the window, never acquired, already acknowledged, lock expired). Offsets
        below the start offset are finished already: skipped, as Kafka skips them.
        """
        changes: list[tuple[int, _InFlight, AcknowledgeType]] = []
        previous_last = -1
        for batch in batches:
            count = batch.last_offset - batch.first_offset + 1
            if count <= 0 or batch.first_offset <= previous_last or len(batch.types) not in (1, count):
                return ErrorCode.INVALID_REQUEST
            if batch.last_offset >= self.end_offset:
                return ErrorCode.INVALID_RECORD_STATE  # past the window (checked first: a range costs nothing)
            previous_last = batch.last_offset
            try:
                types = [AcknowledgeType(t) for t in batch.types]
            except ValueError:
                return ErrorCode.INVALID_REQUEST
            for index in range(max(0, self.start_offset - batch.first_offset), count):
                record = self._records.get(batch.first_offset + index)
                if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                changes.append((batch.first_offset + index, record, types[0] if len(types) == 1 else types[index]))
        deadline = now + self.config.record_lock_duration_ms
        renewed = False
        for offset, record, kind in changes:
            if kind is AcknowledgeType.RENEW:
                record.deadline = deadline
                renewed = True
            else:
                if kind is AcknowledgeType.REJECT and self.config.dead_letters:
                    self.dead_letters.append(DeadLetter(offset, record.delivery_count, REJECTED))
                self._settle(offset, record, _AFTER_ACK[kind])
        if renewed:
            for batch in batches:
                heapq.heappush(self._locks, (deadline, batch.first_offset, batch.last_offset))
        self._advance_start()
        return ErrorCode.NONE

    def archive_acquired(self, member_id: str, first: int, last: int) -> int:
        """Archive what `member_id` just acquired in first..last, and the records held there (records of
        aborted transactions, which a read_committed group never delivers); how many."""
        archived = 0
        for offset in range(max(first, self.start_offset), min(last, self.end_offset - 1) + 1):
            record = self._records.get(offset)
            if record is not None and offset in self._held:
                del self._held[offset]
                record.state = RecordState.ARCHIVED
                archived += 1
            elif record is not None and record.state is RecordState.ACQUIRED and record.member_id == member_id:
                record.state = RecordState.ARCHIVED
                record.member_id = ""
                record.deadline = 0
                archived += 1
        if archived:
            self._advance_start()
        return archived

    # ------------------------------------------------------------------ release

    def expire_locks(self, now: int) -> int:
        """Release every record whose acquisition lock has passed; how many were released."""
        released = 0
        while self._locks and self._locks[0][0] <= now:
            deadline, first, last = heapq.heappop(self._locks)
            for offset in range(first, last + 1):
                record = self._records.get(offset)
                if record is not None and record.state is RecordState.ACQUIRED and record.deadline == deadline:
                    self._settle(offset, record, RecordState.AVAILABLE)
                    released += 1
        if released:
            self._advance_start()
        return released

    def release_member(self, member_id: str) -> int:
        """A member left (or its share session closed): its acquired records become available again."""
        released = 0
        for offset, record in self._records.items():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._settle(offset, record, RecordState.AVAILABLE)
                released += 1
        if released:
            self._advance_start()
        return released

    # ------------------------------------------------------------------ offsets

    def reset(self, start_offset: int) -> None:
        """Forget the window and start at `start_offset` (AlterShareGroupOffsets, on an empty group)."""
        self.start_offset = self.end_offset = start_offset
        self._records.clear()
        self._locks.clear()
        self._held.clear()
        self._holds.clear()
        self._due_tags.clear()
        self._available = 0

    def move_to_log_start(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) are gone for this group too."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            record = self._records.pop(offset)
            self._due_tags.pop(offset, None)
            if self._held.pop(offset, None) is not None:
                continue
            if record.state is RecordState.AVAILABLE:
                self._available -= 1
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)

    @classmethod
    def restore(
        cls, start_offset: int, batches: list[StateBatch], config: SharePartitionConfig | None = None
    ) -> SharePartition:
        """Rebuild from persisted state: offsets not named between the start offset and the last batch are
        AVAILABLE with delivery count 0 (they were never persisted as delivered). AVAILABLE records with
        delivery count 0 (held for a later delivery when the state was written) are held until `resolve`."""
        partition = cls(start_offset, config)
        # a window is never longer than max_record_locks (at most 10000); anything beyond is not state we wrote
        bound = start_offset + MAX_RESTORED_WINDOW
        batches = [b for b in batches if b.first_offset <= b.last_offset < bound]
        end = max([start_offset] + [b.last_offset + 1 for b in batches])
        states: dict[int, tuple[RecordState, int]] = {}
        for batch in batches:
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                states[offset] = (batch.state, batch.delivery_count)
        for offset in range(start_offset, end):
            state, count = states.get(offset, (RecordState.AVAILABLE, 0))
            if state is RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            if state is RecordState.AVAILABLE and count >= partition.config.delivery_count_limit:
                state = RecordState.ARCHIVED
                if partition.config.dead_letters:
                    partition.dead_letters.append(DeadLetter(offset, count, DELIVERY_LIMIT))
            partition._records[offset] = _InFlight(state, count)
            if state is RecordState.AVAILABLE and count == 0:
                partition._held[offset] = (UNRESOLVED, NO_TAGS)
                partition.needs_resolve = True
            elif state is RecordState.AVAILABLE:
                partition._available += 1
        partition.end_offset = end
        partition._advance_start()
        return partition

    # ------------------------------------------------------------------ internals

    def _settle(self, offset: int, record: _InFlight, state: RecordState) -> None:
        if state is RecordState.AVAILABLE and record.delivery_count >= self.config.delivery_count_limit:
            state = RecordState.ARCHIVED
            if self.config.dead_letters:
                self.dead_letters.append(DeadLetter(offset, record.delivery_count, DELIVERY_LIMIT))
        record.state = state
        record.member_id = ""
        record.deadline = 0
        if state is RecordState.AVAILABLE:
            self._available += 1

    def _advance_start(self) -> None:
        records = self._records
        offset = self.start_offset
        while offset < self.end_offset:
            record = records.get(offset)
            if record is None or record.state not in TERMINAL:
                break
            del records[offset]
            offset += 1
        self.start_offset = offset


def _ranges(acquired: list[tuple[int, int]]) -> list[AcquiredRecords]:
    """Contiguous offsets with the same delivery count, as AcquiredRecords ranges (input in offset order)."""
    ranges: list[AcquiredRecords] = []
    for offset, count in acquired:
        if ranges and ranges[-1].last_offset == offset - 1 and ranges[-1].delivery_count == count:
            ranges[-1] = AcquiredRecords(ranges[-1].first_offset, offset, count)
        else:
            ranges.append(AcquiredRecords(offset, offset, count))
    return ranges
