"""What the cleaner needs to know of a partition beyond its segments: its transactions and producers.

One narrow view, so that the cleaner does not depend on where producer state and the
transaction index live.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from kbroker.cleaner.record_filter import LastRecord
from kbroker.cleaner.txn_metadata import AbortedTxnLike
from kbroker.log.partition_log import PartitionLog


class PartitionState(Protocol):
    def last_stable_offset(self, partition_log: PartitionLog) -> int:
        """No cleaning at or above it (an open transaction's data may still abort)."""
        ...

    def aborted_transactions(self, partition_log: PartitionLog, upper_bound: int) -> Sequence[AbortedTxnLike]:
        """Aborted transactions with data below `upper_bound`."""
        ...

    def active_producers(self, partition_log: PartitionLog) -> Mapping[int, LastRecord]:
        """Producer id -> its last data offset (None if only markers) and epoch."""
        ...


class NoTransactions:
    """A partition without producer state (unit tests, tools): LSO = high watermark."""

    def last_stable_offset(self, partition_log: PartitionLog) -> int:
        return partition_log.high_watermark

    def aborted_transactions(self, partition_log: PartitionLog, upper_bound: int) -> Sequence[AbortedTxnLike]:
        return ()

    def active_producers(self, partition_log: PartitionLog) -> Mapping[int, LastRecord]:
        return {}
