"""Transactions: the coordinator side (Kafka TV1). Partition-side state lives in kbroker/log.

  producer_ids.py    producer ids from blocks of 1000 persisted in <data-dir>/producer-id-block (broker.producer_ids)
  transaction.py     a transactional id's states and metadata
  coordinator.py     TransactionCoordinator: InitProducerId, AddPartitions/AddOffsets, EndTxn, timeouts (pure)
  txn_log.py, txn_store.py   the __transaction_state records and their store
  markers.py         COMMIT/ABORT control batches, appended through each partition's UnifiedLog
  runtime.py         the asyncio shell (broker.transactions): `transaction_coordinator(broker)`, timers, startup

Each partition's producer state (idempotence, open transactions), its aborted-transaction index
and their snapshots are the partition's own (kbroker/log/unified_log.py, producer_state.py,
txn_index.py): Produce, the group and transaction stores and the marker writer all append
through `UnifiedLog.append_as_leader`, which keeps them current.
"""

from kbroker.txn.producer_ids import ProducerIdManager

__all__ = ["ProducerIdManager"]
