"""PartitionState from the broker's producer states and transaction indexes (kbroker/txn)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbroker.cleaner.record_filter import LastRecord
from kbroker.cleaner.txn_metadata import AbortedTxnLike
from kbroker.log.partition_log import PartitionLog
from kbroker.txn.entry import NO_OFFSET
from kbroker.txn.states import ProducerStates
from kbroker.txn.txn_indexes import TransactionIndexes


class TxnPartitionState:
    def __init__(self, producer_states: ProducerStates, transaction_indexes: TransactionIndexes) -> None:
        self.producer_states = producer_states
        self.transaction_indexes = transaction_indexes

    def last_stable_offset(self, partition_log: PartitionLog) -> int:
        return self.transaction_indexes.for_log(partition_log).last_stable_offset()

    def aborted_transactions(self, partition_log: PartitionLog, upper_bound: int) -> Sequence[AbortedTxnLike]:
        index = self.transaction_indexes.for_log(partition_log)
        return index.collect_aborted(partition_log.segments[0].base_offset, upper_bound)

    def active_producers(self, partition_log: PartitionLog) -> Mapping[int, LastRecord]:
        manager = self.producer_states.for_log(partition_log)
        return {
            pid: LastRecord(None if entry.last_offset == NO_OFFSET else entry.last_offset, entry.producer_epoch)
            for pid, entry in manager.producers.items()
        }
