"""Idempotent producers and transactions: producer ids, per-partition producer state, the coordinator.

Producer ids (producer_ids.py): `producer_id_manager(broker).generate()` hands out
ids from blocks of 1000 persisted in `<data-dir>/producer-id-block`, never reused.

Producer state (producer_state.py, states.py): per partition and producer id, the
epoch and the last 5 batches. The Produce handler, for a batch with a producer id:

    state = producer_states(ctx.broker).for_log(log)   # loads snapshot + log tail on first use
    duplicate = state.check(batch)     # raises ProducerStateError (a KafkaProtocolError):
                                       #   INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER
    if duplicate is not None:          # answer success with duplicate.base_offset, append nothing
        ...
    info = log.append(...)
    state.record(batch, info.base_offset, info.max_timestamp)

check and record must run with no await between them and the append.
State survives restarts: `<offset>.snapshot` files in the partition directory
(snapshot.py) plus a header-only scan of the log after the newest usable one
(recovery.py, scan.py).

Transactions (docs/architecture.md, "Transactions"): transaction.py (states, metadata),
coordinator.py (TransactionCoordinator, Kafka TV1), txn_log.py + txn_store.py
(__transaction_state), markers.py (COMMIT/ABORT control batches), runtime.py (wiring:
`transaction_coordinator(broker)`, timers, startup recovery).

For the read side (LSO, aborted transactions), per partition:
    state.ongoing_transactions()   # {producer id: first offset of its open transaction}
    state.first_unstable_offset()  # min of those, or None; LSO = min(this, high watermark)
    producer_states(broker).txn_listeners.append(fn)   # fn(log, CompletedTxn) for every marker,
        # live or replayed while a partition's state is rebuilt (register before preload);
        # a rebuild starts at the newest snapshot: markers below it are not reported again
    CompletedTxn(producer_id, first_offset, last_offset=marker offset, is_aborted)
"""

from kbroker.txn.producer_ids import ProducerIdManager, producer_id_manager
from kbroker.txn.producer_state import CompletedTxn, DuplicateBatch, ProducerStateError, ProducerStateManager
from kbroker.txn.states import ProducerStates, producer_states

__all__ = [
    "CompletedTxn",
    "DuplicateBatch",
    "ProducerIdManager",
    "ProducerStateError",
    "ProducerStateManager",
    "ProducerStates",
    "producer_id_manager",
    "producer_states",
]
