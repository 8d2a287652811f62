"""TransactionCoordinator: Kafka's transaction coordinator (transaction versions 0-2) on one node.

Runs on the event loop thread. Its I/O is injected, so unit tests drive it with a
fake clock and in-memory writers:
  state_log.write(transactional_id, record | None)   persist a state change (None: tombstone)
  markers.write_markers(producer_id, epoch, partitions, commit)   COMMIT/ABORT into each partition
Every state change is written first and applied in memory after; while a write is
in flight the id has a `pending` state and other requests for it get
CONCURRENT_TRANSACTIONS (retriable), as in Kafka.

EndTxn: PrepareCommit/PrepareAbort is written, then the markers, then
CompleteCommit/CompleteAbort; the client is answered once all of it is done (Kafka
answers after the Prepare record; answering later is only slower, never different).
A transaction found in a Prepare state (a crash, a failed marker write) is completed
by `complete_prepared()`, which the runtime calls at startup and periodically, so its
outcome is the one the Prepare record decided.

Fencing errors are returned as PRODUCER_FENCED; handlers of older versions turn them
into INVALID_PRODUCER_EPOCH (see kbroker/handlers/*_txn.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import structlog

from kbroker.log import LogError, NotCoordinatorError
from kbroker.txn.transaction import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TxnRecord,
    TxnState,
    is_epoch_exhausted,
)
from protocol.errors import ErrorCode

log = structlog.get_logger(__name__)

E = ErrorCode
S = TxnState
COORDINATOR_EPOCH = 0  # one node, never a new leader of the transaction log


class StateLog(Protocol):
    async def write(self, transactional_id: str, record: TxnRecord | None) -> None: ...


class MarkerWriter(Protocol):
    async def write_markers(
        self, producer_id: int, producer_epoch: int, partitions: list[TopicPartition], commit: bool
    ) -> None: ...


@dataclass(frozen=True)
class TxnConfig:
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000


@dataclass(frozen=True)
class EndResult:
    """EndTxn's answer; v5+ (transactions v2) returns the producer id and epoch to use next."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class InitResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        state_log: StateLog,
        markers: MarkerWriter,
        generate_producer_id: Callable[[], int],
        clock: Callable[[], int],
    ) -> None:
        self.config = config
        self.state_log = state_log
        self.markers = markers
        self.generate_producer_id = generate_producer_id
        self.clock = clock
        self.transactions: dict[str, TransactionMetadata] = {}
        self.owns: Callable[[str], bool] = lambda transactional_id: True  # cluster mode: its partition is led here
        self._by_producer_id: dict[int, TransactionMetadata] = {}

    # -- loading ---------------------------------------------------------------------
    def load(self, records: Iterable[tuple[str, TxnRecord | None]]) -> None:
        """Replay of the state log: the last record of an id wins, None removes it."""
        for transactional_id, record in records:
            old = self.transactions.pop(transactional_id, None)
            if old is not None:
                self._by_producer_id.pop(old.producer_id, None)
            if record is not None and record.state is not S.DEAD:
                metadata = TransactionMetadata.from_record(transactional_id, record)
                self.transactions[transactional_id] = metadata
                self._by_producer_id[metadata.producer_id] = metadata

    def unload(self, transactional_ids: Iterable[str]) -> None:
        """Another broker coordinates these ids now (cluster mode): forget them. A write still in flight for
        one of them fails (its partition is no longer this broker's) and is not applied."""
        for transactional_id in transactional_ids:
            metadata = self.transactions.pop(transactional_id, None)
            if metadata is not None and self._by_producer_id.get(metadata.producer_id) is metadata:
                del self._by_producer_id[metadata.producer_id]

    def _forget_if_unloaded(self, metadata: TransactionMetadata) -> None:
        if not self.owns(metadata.transactional_id) and self.transactions.get(metadata.transactional_id) is metadata:
            self.unload([metadata.transactional_id])

    def by_producer_id(self, producer_id: int) -> TransactionMetadata | None:
        return self._by_producer_id.get(producer_id)

    # -- writing state ---------------------------------------------------------------------
    async def _transition(self, metadata: TransactionMetadata, record: TxnRecord) -> ErrorCode:
        metadata.pending = record.state
        try:
            await self.state_log.write(metadata.transactional_id, record)
        except NotCoordinatorError:
            self._forget_if_unloaded(metadata)
            return E.NOT_COORDINATOR
        except (LogError, OSError) as error:
            log.error("transaction_state_write_failed", transactional_id=metadata.transactional_id, error=str(error))
            return E.COORDINATOR_NOT_AVAILABLE
        finally:
            metadata.pending = None
        if not self.owns(metadata.transactional_id):  # unloaded while the write was in flight
            self._forget_if_unloaded(metadata)
            return E.NOT_COORDINATOR
        old_producer_id = metadata.producer_id
        metadata.apply(record)
        if old_producer_id != metadata.producer_id:
            self._by_producer_id.pop(old_producer_id, None)
        self._by_producer_id[metadata.producer_id] = metadata
        if self.transactions.get(metadata.transactional_id) is not metadata:
            self.transactions[metadata.transactional_id] = metadata
        log.debug(
            "transaction_state_changed",
            transactional_id=metadata.transactional_id,
            state=metadata.state.label,
            producer_id=metadata.producer_id,
            epoch=metadata.producer_epoch,
        )
        return E.NONE

    # -- InitProducerId ------------------------------------------------------------------------
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> InitResult:
        """Kafka's handleInitProducerId for a transactional id; `expected`: (producer id, epoch) of v3+."""
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(E.INVALID_TRANSACTION_TIMEOUT)
        now = self.clock()
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(
                transactional_id, self.generate_producer_id(), timeout_ms=timeout_ms, last_update_timestamp=now
            )
            self.transactions[transactional_id] = metadata  # as Kafka's putIfNotExists: before any await
        if metadata.pending is not None:
            return InitResult(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _valid_expected_producer(metadata, expected):
            return InitResult(E.PRODUCER_FENCED)
        if metadata.state.is_preparing:
            return InitResult(E.CONCURRENT_TRANSACTIONS)
        if metadata.state is S.ONGOING:
            # fence the current producer: abort its transaction with a bumped epoch, let the client retry
            error = await self._end(metadata, commit=False, fence=True)
            return InitResult(error if error is not E.NONE else E.CONCURRENT_TRANSACTIONS)
        expected_epoch = None if expected is None else expected[1]
        if is_epoch_exhausted(metadata.producer_epoch) and expected_epoch in (None, metadata.producer_epoch):
            record = metadata.prepare_producer_id_rotation(
                self.generate_producer_id(), timeout_ms, now, keep_last=expected is not None
            )
        elif expected_epoch is None:
            record = metadata.prepare_epoch_bump(timeout_ms, now)
        elif metadata.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == metadata.producer_epoch:
            record = metadata.prepare_epoch_bump(timeout_ms, now, last_epoch=metadata.producer_epoch)
        elif expected_epoch == metadata.last_producer_epoch:
            record = metadata.prepare_retry_epoch(timeout_ms, now)
        else:
            return InitResult(E.PRODUCER_FENCED)
        error = await self._transition(metadata, record)
        if error is not E.NONE:
            return InitResult(error)
        log.info(
            "transactional_producer_initialized",
            transactional_id=transactional_id,
            producer_id=metadata.producer_id,
            epoch=metadata.producer_epoch,
        )
        return InitResult(E.NONE, metadata.producer_id, metadata.producer_epoch)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------
    def _check_producer(self, transactional_id: str, producer_id: int, epoch: int) -> TransactionMetadata | ErrorCode:
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != epoch:
            return E.PRODUCER_FENCED
        if metadata.pending is not None or metadata.state.is_preparing:
            return E.CONCURRENT_TRANSACTIONS
        return metadata

    async def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> ErrorCode:
        checked = self._check_producer(transactional_id, producer_id, epoch)
        if isinstance(checked, ErrorCode):
            return checked
        if checked.state is S.ONGOING and partitions <= checked.partitions:
            return E.NONE
        return await self._transition(checked, checked.prepare_add_partitions(partitions, self.clock()))

    # -- EndTxn -----------------------------------------------------------------------------------
    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, client_version: int = 0
    ) -> EndResult:
        """Kafka's endTransaction; `client_version` 2 for EndTxn v5+ (transactions v2: the epoch is
        bumped as the transaction ends and the answer names the producer's next id and epoch)."""
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            return EndResult(E.INVALID_PRODUCER_ID_MAPPING)
        state = metadata.state
        if metadata.client_version >= 2:
            # the stored epoch was bumped by this producer's last EndTxn: the same epoch is the next
            # transaction's, one less is a retry of the EndTxn that bumped it
            retry_bump = metadata.producer_epoch == epoch + 1
            retry_overflow = (
                metadata.last_producer_id == producer_id and epoch == MAX_EPOCH - 1 and metadata.producer_epoch == 0
            )
            if state.is_preparing:
                valid = retry_bump
            elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                valid = retry_bump or retry_overflow
            else:
                valid = epoch == metadata.producer_epoch
        else:
            retry_overflow = False
            valid = epoch == metadata.producer_epoch
        if metadata.producer_id != producer_id and not retry_overflow:
            return EndResult(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid:
            return EndResult(E.PRODUCER_FENCED)
        if metadata.pending is not None:
            return EndResult(E.CONCURRENT_TRANSACTIONS)
        if state is S.ONGOING:
            next_producer_id = NO_PRODUCER_ID
            if client_version >= 2 and is_epoch_exhausted(metadata.producer_epoch):
                next_producer_id = self.generate_producer_id()
            error = await self._end(metadata, commit, client_version=client_version, next_producer_id=next_producer_id)
            if error is not E.NONE:
                return EndResult(error)
            return EndResult(E.NONE, metadata.producer_id, metadata.producer_epoch)
        if (state is S.COMPLETE_COMMIT and commit) or (state is S.COMPLETE_ABORT and not commit):
            return EndResult(E.NONE, metadata.producer_id, metadata.producer_epoch)  # a retry of a completed end
        if (state is S.PREPARE_COMMIT and commit) or (state is S.PREPARE_ABORT and not commit):
            return EndResult(E.CONCURRENT_TRANSACTIONS)
        return EndResult(E.INVALID_TXN_STATE)  # Empty, or the other outcome than the one decided

    async def _end(
        self,
        metadata: TransactionMetadata,
        commit: bool,
        *,
        fence: bool = False,
        client_version: int = 0,
        next_producer_id: int = NO_PRODUCER_ID,
    ) -> ErrorCode:
        record = metadata.prepare_end(
            commit, self.clock(), fence=fence, client_version=client_version, next_producer_id=next_producer_id
        )
        error = await self._transition(metadata, record)
        if error is not E.NONE:
            return error
        log.info(
            "transaction_ending",
            transactional_id=metadata.transactional_id,
            result="commit" if commit else "abort",
            fenced=fence,
            partitions=len(metadata.partitions),
            epoch=metadata.producer_epoch,
        )
        await self._complete(metadata)
        return E.NONE  # the outcome is decided; a failed completion is retried by complete_prepared

    async def _complete(self, metadata: TransactionMetadata) -> bool:
        """Write the markers of a Prepare state (with its epoch, bumped in v2), then its Complete state."""
        commit = metadata.state is S.PREPARE_COMMIT
        metadata.pending = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        try:
            await self.markers.write_markers(
                metadata.producer_id, metadata.producer_epoch, sorted(metadata.partitions), commit
            )
        except (LogError, OSError) as error:
            log.error("transaction_markers_failed", transactional_id=metadata.transactional_id, error=str(error))
            return False
        finally:
            metadata.pending = None
        return await self._transition(metadata, metadata.prepare_complete(self.clock())) is E.NONE

    async def complete_prepared(self) -> int:
        """Finish every transaction left in PrepareCommit/PrepareAbort; returns how many completed."""
        done = 0
        for metadata in list(self.transactions.values()):
            if metadata.state.is_preparing and metadata.pending is None:
                log.info(
                    "transaction_completing", transactional_id=metadata.transactional_id, state=metadata.state.label
                )
                done += await self._complete(metadata)
        return done

    # -- timeouts and expiry ---------------------------------------------------------------------
    async def abort_timed_out(self) -> int:
        """Abort (fencing the producer) every Ongoing transaction older than its timeout."""
        now = self.clock()
        aborted = 0
        for metadata in list(self.transactions.values()):
            if metadata.has_timed_out(now):
                log.info(
                    "transaction_timed_out",
                    transactional_id=metadata.transactional_id,
                    producer_id=metadata.producer_id,
                    timeout_ms=metadata.timeout_ms,
                )
                aborted += await self._end(metadata, commit=False, fence=True) is E.NONE
        return aborted

    async def expire_transactional_ids(self) -> int:
        """Forget ids idle for transactional.id.expiration.ms with no open transaction (tombstones)."""
        now = self.clock()
        expired = 0
        for metadata in list(self.transactions.values()):
            if not metadata.has_expired(now, self.config.id_expiration_ms):
                continue
            metadata.pending = S.DEAD
            try:
                await self.state_log.write(metadata.transactional_id, None)
            except (LogError, OSError) as error:
                log.error(
                    "transactional_id_expiry_failed", transactional_id=metadata.transactional_id, error=str(error)
                )
                continue
            finally:
                metadata.pending = None
            if self.transactions.get(metadata.transactional_id) is metadata and metadata.state.is_complete:
                del self.transactions[metadata.transactional_id]
                self._by_producer_id.pop(metadata.producer_id, None)
                expired += 1
                log.info("transactional_id_expired", transactional_id=metadata.transactional_id)
        return expired

    # -- Produce and TxnOffsetCommit -----------------------------------------------------------------
    def verify_partition(self, producer_id: int, epoch: int, tp: TopicPartition) -> ErrorCode:
        """Whether a transactional write of (producer_id, epoch) to `tp` belongs to its ongoing transaction.

        INVALID_PRODUCER_EPOCH for an older epoch (what Produce answers), INVALID_TXN_STATE when the
        partition was not added to an ongoing transaction of this producer.
        """
        metadata = self._by_producer_id.get(producer_id)
        if metadata is None:
            return E.INVALID_TXN_STATE
        if epoch < metadata.producer_epoch:
            return E.INVALID_PRODUCER_EPOCH
        if epoch != metadata.producer_epoch or metadata.state is not S.ONGOING or tp not in metadata.partitions:
            return E.INVALID_TXN_STATE
        if metadata.pending is not None and metadata.pending.is_preparing:
            return E.INVALID_TXN_STATE  # EndTxn is being written: nothing may join the transaction now
        return E.NONE

    # -- tooling -------------------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> TransactionMetadata | ErrorCode:
        if not transactional_id:
            return E.INVALID_REQUEST
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND
        return metadata

    def list(
        self, states: set[TxnState] | None, producer_ids: set[int], min_duration_ms: int = -1
    ) -> list[TransactionMetadata]:
        now = self.clock()
        found = []
        for metadata in self.transactions.values():
            if states is not None and metadata.state not in states:
                continue
            if producer_ids and metadata.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (
                metadata.start_timestamp < 0 or now - metadata.start_timestamp < min_duration_ms
            ):
                continue
            found.append(metadata)
        return found


def _valid_expected_producer(metadata: TransactionMetadata, expected: tuple[int, int]) -> bool:
    """Kafka's isValidProducerId: a v3+ InitProducerId naming an id/epoch is fenced unless one holds."""
    producer_id, epoch = expected
    return (
        metadata.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == metadata.producer_id
        or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch))
    )


def client_error(error: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """PRODUCER_FENCED (90) as the request version knows it: INVALID_PRODUCER_EPOCH (47) before
    `first_fenced_version` (KIP-588: InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2)."""
    if error is E.PRODUCER_FENCED and version < first_fenced_version:
        return E.INVALID_PRODUCER_EPOCH
    return error
