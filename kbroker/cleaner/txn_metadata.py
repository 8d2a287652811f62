"""Transaction state while cleaning (Kafka's CleanedTransactionMetadata).

Walking the log in offset order, it knows which data batches belong to an aborted
transaction (they are dropped) and which markers may go: an ABORT marker stays while any
batch of its transaction is still in the log; a COMMIT marker stays while data of its
transaction was seen in this walk. A marker that may go is not dropped at once: it gets a
delete horizon first and goes in a later round (see record_filter.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Protocol

from protocol.errors import InvalidRecordError
from protocol.records import ControlRecordType, RecordBatch, parse_control_record_key


class AbortedTxnLike(Protocol):
    """An entry of a partition's aborted-transaction index."""

    @property
    def producer_id(self) -> int: ...

    @property
    def first_offset(self) -> int: ...

    @property
    def last_offset(self) -> int: ...


class _AbortedTxnState:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxnLike) -> None:
        self.txn = txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Committed and aborted transactions open at the cleaner's current position."""

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTxnState] = {}
        self._pending: list[tuple[int, int, AbortedTxnLike]] = []  # heap by first offset
        self._sequence = 0
        self.retained_aborted: list[AbortedTxnLike] = []  # the cleaned segment's transaction index

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxnLike]) -> None:
        for txn in aborted:
            self._sequence += 1
            heapq.heappush(self._pending, (txn.first_offset, self._sequence, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, _, txn = heapq.heappop(self._pending)
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedTxnState(txn))

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """True when this control batch may be discarded (its delete horizon still applies)."""
        self._consume_aborted_up_to(batch.last_offset)
        if batch.records_count == 0:
            return True  # an empty control batch was cleaned already
        record = next(batch.records())
        try:
            _, control_type = parse_control_record_key(record.key)
        except InvalidRecordError:
            return False
        producer_id = batch.producer_id
        if control_type == ControlRecordType.ABORT:
            state = self._ongoing_aborted.pop(producer_id, None)
            if state is not None and state.last_observed_batch_offset is not None:
                self.retained_aborted.append(state.txn)
                return False  # data of the transaction is still there: keep its marker
            return True
        if control_type == ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """True when this data batch belongs to an aborted transaction (it may be discarded)."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        state = self._ongoing_aborted.get(batch.producer_id)
        if state is not None:
            state.last_observed_batch_offset = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False
