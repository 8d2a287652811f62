"""The broker's transaction indexes: one PartitionTxnIndex per partition log, loaded on first use.

`transaction_indexes(broker).for_log(log)` gives the partition's open transactions, last
stable offset and aborted transactions (transaction_index.py); Fetch and ListOffsets use it.
Optional wiring (server.py): `preload(logs)` before serving, so that no fetch pays for a
partition's first load, and `checkpoint_all()` before the logs shut down, so that the next
start scans nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

import structlog

from kbroker.log import KafkaStorageError, PartitionLog
from kbroker.txn.transaction_index import PartitionTxnIndex, load_transaction_index

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

EXTENSION = "transaction_indexes"


class TransactionIndexes:
    """Every partition's transaction index, keyed by the PartitionLog object (a deleted topic's goes with it)."""

    def __init__(self) -> None:
        self._indexes: weakref.WeakKeyDictionary[PartitionLog, PartitionTxnIndex] = weakref.WeakKeyDictionary()

    def for_log(self, partition_log: PartitionLog) -> PartitionTxnIndex:
        """The partition's index, loaded on first use or after it went stale (KafkaStorageError if unreadable)."""
        index = self._indexes.get(partition_log)
        if index is None or index.stale:
            if index is not None:
                index.detach()
            index = self._indexes[partition_log] = load_transaction_index(partition_log)
        return index

    def preload(self, logs: Iterable[PartitionLog]) -> None:
        for partition_log in logs:
            try:
                self.for_log(partition_log)
            except KafkaStorageError as error:
                log.error(
                    "transaction_index_load_failed",
                    topic=partition_log.topic,
                    partition=partition_log.partition,
                    error=str(error),
                )

    def checkpoint_all(self) -> None:
        for index in list(self._indexes.values()):
            if not index.stale:
                index.checkpoint()


def transaction_indexes(broker: Broker) -> TransactionIndexes:
    """The broker's TransactionIndexes (created on first use)."""
    indexes = broker.extensions.get(EXTENSION)
    if indexes is None:
        indexes = broker.extensions[EXTENSION] = TransactionIndexes()
    assert isinstance(indexes, TransactionIndexes)
    return indexes
