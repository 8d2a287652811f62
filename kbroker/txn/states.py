"""The broker's producer state: one ProducerStateManager per partition log, loaded on first use.

`producer_states(broker).for_log(log)` loads a partition's state the first time
it is needed (newest usable snapshot, then the log's batch headers after it) and
keeps it for the life of that PartitionLog object (a deleted topic's state goes
with its log). Snapshots are taken after a record when the log has rolled a new
segment (as Kafka snapshots at each roll), SNAPSHOT_INTERVAL_MS has passed or
SNAPSHOT_EVERY_BATCHES batches were recorded, and right after a load that had to
scan batches; so a restart scans at most about that much of the log (a header
scan costs a few microseconds per batch).

Optional broker wiring (server.py): `preload(logs)` at startup loads every partition
before serving (else the first idempotent batch of a partition pays for its scan),
`run()` as a duty snapshots logs that moved on and expires idle producers, and
`snapshot_all()` before the logs shut down makes the next start scan nothing.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import structlog

from kbroker.log import KafkaStorageError, PartitionLog
from kbroker.txn.producer_state import (
    DEFAULT_EXPIRATION_CHECK_INTERVAL_MS,
    DEFAULT_EXPIRATION_MS,
    CompletedTxn,
    ProducerStateManager,
    wall_clock_ms,
)
from kbroker.txn.recovery import load_producer_state, take_snapshot

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

EXTENSION = "producer_states"
SNAPSHOT_INTERVAL_MS = 60_000
SNAPSHOT_EVERY_BATCHES = 100_000


class SnapshotPolicy:
    """Decides, after each recorded batch, whether the partition's state is due for a snapshot."""

    __slots__ = ("log", "manager", "interval_ms", "clock", "last_offset", "last_ms", "segment_base", "recorded")

    def __init__(self, log_: PartitionLog, manager: ProducerStateManager, interval_ms: int, clock: Callable[[], int]):
        self.log = log_
        self.manager = manager
        self.interval_ms = interval_ms
        self.clock = clock
        self.last_offset = -1
        self.last_ms = clock()
        self.segment_base = log_.segments[-1].base_offset
        self.recorded = 0  # batches recorded since the last snapshot

    def after_record(self) -> None:
        self.recorded += 1
        segment_base = self.log.segments[-1].base_offset
        if (
            segment_base != self.segment_base
            or self.recorded >= SNAPSHOT_EVERY_BATCHES
            or self.clock() - self.last_ms >= self.interval_ms
        ):
            self.segment_base = segment_base
            self.snapshot()

    def snapshot(self) -> None:
        self.last_ms = self.clock()
        self.recorded = 0
        if self.log.log_end_offset == self.last_offset:
            return
        try:
            take_snapshot(self.log, self.manager)
            self.last_offset = self.log.log_end_offset
        except (OSError, KafkaStorageError) as error:  # a snapshot only speeds up the next load: log, go on
            log.warning(
                "producer_snapshot_failed", topic=self.log.topic, partition=self.log.partition, error=str(error)
            )


class ProducerStates:
    """Every partition's producer state, keyed by the PartitionLog object."""

    def __init__(
        self,
        *,
        expiration_ms: int = DEFAULT_EXPIRATION_MS,
        expiration_check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS,
        snapshot_interval_ms: int = SNAPSHOT_INTERVAL_MS,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.expiration_ms = expiration_ms
        self.expiration_check_interval_ms = expiration_check_interval_ms
        self.snapshot_interval_ms = snapshot_interval_ms
        self.clock = clock
        self._states: weakref.WeakKeyDictionary[PartitionLog, SnapshotPolicy] = weakref.WeakKeyDictionary()
        # called with (log, CompletedTxn) for every COMMIT/ABORT marker a partition applies, live or
        # while it is rebuilt from the log (register before preload to see the rebuilt ones)
        self.txn_listeners: list[Callable[[PartitionLog, CompletedTxn], None]] = []

    def for_log(self, log_: PartitionLog) -> ProducerStateManager:
        """The partition's state, loaded from snapshot + log on first use (KafkaStorageError if unreadable)."""
        policy = self._states.get(log_)
        if policy is None:
            policy = self._load(log_)
        return policy.manager

    def _load(self, log_: PartitionLog) -> SnapshotPolicy:
        manager = ProducerStateManager(
            log_.topic,
            log_.partition,
            expiration_ms=self.expiration_ms,
            expiration_check_interval_ms=self.expiration_check_interval_ms,
            clock=self.clock,
        )
        manager.on_txn_completed = functools.partial(self._txn_completed, weakref.ref(log_))
        stats = load_producer_state(log_, manager)
        policy = SnapshotPolicy(log_, manager, self.snapshot_interval_ms, self.clock)
        if log_.log_end_offset > max(stats.snapshot_offset, 0):
            policy.snapshot()  # the log was scanned past the snapshot: save the next load that work
        else:
            policy.last_offset = stats.snapshot_offset
        manager.on_record = policy.after_record
        self._states[log_] = policy
        return policy

    def _txn_completed(self, log_ref: weakref.ref[PartitionLog], completed: CompletedTxn) -> None:
        log_ = log_ref()
        if log_ is not None:
            for listener in self.txn_listeners:
                listener(log_, completed)

    def loaded(self) -> list[tuple[PartitionLog, ProducerStateManager]]:
        return [(log_, policy.manager) for log_, policy in self._states.items()]

    def snapshot_all(self) -> None:
        """Snapshot every loaded partition (call before the logs shut down, for a fast next start)."""
        for policy in list(self._states.values()):
            policy.snapshot()

    def remove_expired(self, now: int | None = None) -> int:
        """Expire idle producers in every loaded partition; return how many were forgotten."""
        now = self.clock() if now is None else now
        return sum(policy.manager.remove_expired(now) for policy in list(self._states.values()))

    def preload(self, logs: Iterable[PartitionLog]) -> None:
        """Load every partition now (at startup, before serving) instead of on its first idempotent batch."""
        for log_ in logs:
            try:
                self.for_log(log_)
            except (KafkaStorageError, OSError) as error:
                log.error("producer_state_load_failed", topic=log_.topic, partition=log_.partition, error=str(error))

    def tick(self, now: int | None = None) -> None:
        """One round of duties: snapshot partitions whose log moved on, expire where the check is due."""
        now = self.clock() if now is None else now
        for policy in list(self._states.values()):
            policy.snapshot()
            if now >= policy.manager.next_expiration_check:
                policy.manager.remove_expired(now)

    async def run(self) -> None:
        """Periodic duties until cancelled, every snapshot interval: see tick().

        Without this duty a partition still snapshots and expires when batches arrive;
        only idle or non-idempotent partitions then keep their old snapshot and memory.
        """
        while True:
            await asyncio.sleep(self.snapshot_interval_ms / 1000)
            self.tick()


def producer_states(broker: Broker) -> ProducerStates:
    """The broker's ProducerStates, created on first use from producer.id.expiration.* configs."""
    states = broker.extensions.get(EXTENSION)
    if states is None:
        states = ProducerStates(
            expiration_ms=broker.config.get_int("producer.id.expiration.ms"),
            expiration_check_interval_ms=broker.config.get_int("producer.id.expiration.check.interval.ms"),
        )
        broker.extensions[EXTENSION] = states
    assert isinstance(states, ProducerStates)
    return states
