"""TransactionMetadata: what the coordinator knows of one transactional id (Kafka's TransactionMetadata).

States and their allowed predecessors are Kafka's (TransactionState):

    Empty            <- Empty, CompleteCommit, CompleteAbort          (InitProducerId)
    Ongoing          <- Ongoing, Empty, CompleteCommit, CompleteAbort (AddPartitionsToTxn/AddOffsetsToTxn)
    PrepareCommit    <- Ongoing                                       (EndTxn commit)
    PrepareAbort     <- Ongoing, PrepareEpochFence                    (EndTxn abort, timeout, fencing)
    CompleteCommit   <- PrepareCommit                                 (markers written)
    CompleteAbort    <- PrepareAbort
    Dead             <- Empty, CompleteCommit, CompleteAbort          (transactional.id.expiration.ms)
    PrepareEpochFence <- Ongoing                                      (never persisted: becomes PrepareAbort)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    EMPTY = ("Empty", 0)
    ONGOING = ("Ongoing", 1)
    PREPARE_COMMIT = ("PrepareCommit", 2)
    PREPARE_ABORT = ("PrepareAbort", 3)
    COMPLETE_COMMIT = ("CompleteCommit", 4)
    COMPLETE_ABORT = ("CompleteAbort", 5)
    DEAD = ("Dead", 6)
    PREPARE_EPOCH_FENCE = ("PrepareEpochFence", 7)

    def __init__(self, label: str, code: int) -> None:
        self.label = label  # the name DescribeTransactions and ListTransactions show
        self.code = code  # the byte in our __transaction_state records (Kafka's ids)

    @classmethod
    def from_code(cls, code: int) -> TxnState:
        for state in cls:
            if state.code == code:
                return state
        raise ValueError(f"unknown transaction state {code}")

    @classmethod
    def from_label(cls, label: str) -> TxnState | None:
        for state in cls:
            if state.label == label:
                return state
        return None

    def can_become(self, target: TxnState) -> bool:
        return self in _PREVIOUS[target]

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


S = TxnState
_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class IllegalTxnTransition(RuntimeError):
    """A bug: the coordinator asked for a transition Kafka's state machine forbids."""


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps Short.MAX for fencing: from MAX-1 on, a producer needs a new producer id."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One persisted state of a transactional id (the value of a __transaction_state record)."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_timestamp: int  # -1 when no transaction is open
    last_update_timestamp: int
    # transactions v2: the producer id the ending transaction rolls to (its epoch is exhausted)
    next_producer_id: int = NO_PRODUCER_ID
    # the transaction version of the last EndTxn (2: epochs bump per transaction), Kafka's
    # clientTransactionVersion
    client_version: int = 0


@dataclass(eq=False)
class TransactionMetadata:
    """The current state of one transactional id; `pending` is set while a transition is being written."""

    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp: int = -1
    last_update_timestamp: int = -1
    next_producer_id: int = NO_PRODUCER_ID
    client_version: int = 0
    pending: TxnState | None = None

    def record(self) -> TxnRecord:
        return TxnRecord(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_timestamp,
            self.last_update_timestamp,
            self.next_producer_id,
            self.client_version,
        )

    @classmethod
    def from_record(cls, transactional_id: str, record: TxnRecord) -> TransactionMetadata:
        metadata = cls(transactional_id, record.producer_id)
        metadata.apply(record)
        return metadata

    def apply(self, record: TxnRecord) -> None:
        """Adopt a written (or replayed) record."""
        self.producer_id = record.producer_id
        self.last_producer_id = record.last_producer_id
        self.producer_epoch = record.producer_epoch
        self.last_producer_epoch = record.last_producer_epoch
        self.timeout_ms = record.timeout_ms
        self.state = record.state
        self.partitions = set(record.partitions)
        self.start_timestamp = record.start_timestamp
        self.last_update_timestamp = record.last_update_timestamp
        self.next_producer_id = record.next_producer_id
        self.client_version = record.client_version

    # -- transitions: each returns the record to write; `apply` it once written --------------
    def _next(self, state: TxnState, **changes: object) -> TxnRecord:
        if not self.state.can_become(state):
            raise IllegalTxnTransition(f"{self.transactional_id}: {self.state.label} -> {state.label}")
        changes.setdefault("last_producer_id", self.producer_id)
        return replace(self.record(), state=state, **changes)  # type: ignore[arg-type]

    def _init(self, **changes: object) -> TxnRecord:
        """An InitProducerId transition: back to Empty, as a transaction version 0 client (Kafka's TV_0)."""
        return self._next(S.EMPTY, next_producer_id=NO_PRODUCER_ID, client_version=0, **changes)

    def prepare_epoch_bump(self, timeout_ms: int, now: int, last_epoch: int = NO_PRODUCER_EPOCH) -> TxnRecord:
        """InitProducerId: the next epoch, an empty transaction."""
        return self._init(
            producer_epoch=self.producer_epoch + 1,
            last_producer_epoch=last_epoch,
            last_producer_id=self.producer_id,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_timestamp=-1,
            last_update_timestamp=now,
        )

    def prepare_retry_epoch(self, timeout_ms: int, now: int) -> TxnRecord:
        """InitProducerId retried after a bump whose answer was lost: the same epoch again."""
        return self._init(timeout_ms=timeout_ms, partitions=frozenset(), start_timestamp=-1, last_update_timestamp=now)

    def prepare_producer_id_rotation(self, producer_id: int, timeout_ms: int, now: int, keep_last: bool) -> TxnRecord:
        """InitProducerId with an exhausted epoch: a new producer id at epoch 0."""
        return self._init(
            producer_id=producer_id,
            last_producer_id=self.producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if keep_last else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_timestamp=-1,
            last_update_timestamp=now,
        )

    def prepare_add_partitions(self, partitions: set[TopicPartition], now: int) -> TxnRecord:
        start = now if self.state.is_complete else self.start_timestamp
        return self._next(
            S.ONGOING,
            partitions=frozenset(self.partitions | partitions),
            start_timestamp=start,
            last_update_timestamp=now,
        )

    def prepare_end(
        self, commit: bool, now: int, *, fence: bool = False, client_version: int = 0, next_producer_id: int = -1
    ) -> TxnRecord:
        """EndTxn (or an abort by the coordinator): PrepareCommit/PrepareAbort.

        `fence` (timeouts, InitProducerId during a transaction): the abort bumps the epoch,
        so the current producer is fenced, and forgets the last epoch.
        `client_version` 2 (transactions v2, KIP-890): the epoch is bumped as the transaction
        ends (a fence bumps it once, whatever the version: Kafka 4.3 does the same), so no
        write of the finished transaction can land afterwards; the markers carry the new
        epoch. A producer whose epoch is exhausted names `next_producer_id`, its id once the
        transaction is complete.
        """
        if fence:
            if self.state is not S.ONGOING or commit:
                raise IllegalTxnTransition(f"{self.transactional_id}: cannot fence from {self.state.label}")
            return replace(
                self.record(),
                state=S.PREPARE_ABORT,
                last_producer_id=self.producer_id,
                producer_epoch=min(self.producer_epoch + 1, MAX_EPOCH),
                last_producer_epoch=NO_PRODUCER_EPOCH,
                next_producer_id=NO_PRODUCER_ID,
                client_version=0,
                last_update_timestamp=now,
            )
        state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if client_version >= 2:
            return self._next(
                state,
                producer_epoch=self.producer_epoch + 1,
                last_producer_epoch=self.producer_epoch,
                next_producer_id=next_producer_id,
                client_version=client_version,
                last_update_timestamp=now,
            )
        return self._next(
            state, next_producer_id=NO_PRODUCER_ID, client_version=client_version, last_update_timestamp=now
        )

    def prepare_complete(self, now: int) -> TxnRecord:
        """CompleteCommit/CompleteAbort once the markers are written; a v2 transaction with a
        `next_producer_id` moves to it, at epoch 0."""
        state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_version >= 2:
            rotate = self.next_producer_id != NO_PRODUCER_ID
            return self._next(
                state,
                producer_id=self.next_producer_id if rotate else self.producer_id,
                producer_epoch=0 if rotate else self.producer_epoch,
                last_producer_epoch=self.producer_epoch,
                next_producer_id=NO_PRODUCER_ID,
                partitions=frozenset(),
                last_update_timestamp=now,
            )
        return self._next(state, partitions=frozenset(), last_update_timestamp=now)

    def has_expired(self, now: int, expiration_ms: int) -> bool:
        """transactional.id.expiration.ms: no transaction open and idle that long."""
        return self.state.is_complete and self.pending is None and now - self.last_update_timestamp >= expiration_ms

    def has_timed_out(self, now: int) -> bool:
        return self.state is S.ONGOING and self.pending is None and now > self.start_timestamp + self.timeout_ms
