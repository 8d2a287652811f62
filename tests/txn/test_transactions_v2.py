"""Transactions v2 (KIP-890) in the coordinator's state machine: an epoch bump per transaction,
late writes of a finished transaction fenced, epoch exhaustion rolling to a new producer id."""

from __future__ import annotations

from kbroker.txn.coordinator import TransactionCoordinator
from kbroker.txn.transaction import MAX_EPOCH, TransactionMetadata, TxnState
from kbroker.txn.txn_log import parse_txn_value, txn_value
from protocol.errors import ErrorCode as E
from tests.txn.fakes import new_coordinator
from tests.txn.test_coordinator import init, run

S = TxnState
TP = ("orders", 0)
OFFSETS = ("__consumer_offsets", 3)
V2 = 2


def transaction(coordinator: TransactionCoordinator, pid: int, epoch: int, commit: bool = True) -> tuple[int, int]:
    """One v2 transaction: the partition joins implicitly (Produce v12), EndTxn v5 answers the next id and epoch."""
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.NONE
    assert coordinator.verify_partition(pid, epoch, TP) is E.NONE
    result = run(coordinator.end_txn("app", pid, epoch, commit, client_version=V2))
    assert result.error is E.NONE, result
    return result.producer_id, result.producer_epoch


def test_each_transaction_bumps_the_epoch_and_its_markers_carry_it() -> None:
    coordinator, log, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert transaction(coordinator, pid, epoch) == (pid, epoch + 1)
    assert transaction(coordinator, pid, epoch + 1, commit=False) == (pid, epoch + 2)
    assert markers.calls == [(pid, epoch + 1, [TP], True), (pid, epoch + 2, [TP], False)]
    metadata = coordinator.transactions["app"]
    assert (metadata.state, metadata.producer_epoch, metadata.last_producer_epoch) == (S.COMPLETE_ABORT, 2, 2)
    # the state log keeps the v2 fields: a restart sees the same transaction version
    last = log.records[-1][1]
    assert last is not None and parse_txn_value(txn_value(last)) == last and last.client_version == V2


def test_a_zombie_of_a_finished_transaction_is_fenced() -> None:
    coordinator, _, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    transaction(coordinator, pid, epoch)
    # a write of the committed transaction arriving late, with its old epoch
    assert coordinator.verify_partition(pid, epoch, TP) is E.INVALID_PRODUCER_EPOCH
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.PRODUCER_FENCED
    assert run(coordinator.add_partitions("app", pid, epoch, {OFFSETS})) is E.PRODUCER_FENCED
    # nor can it end a transaction with the old epoch once the next one is open
    run(coordinator.add_partitions("app", pid, epoch + 1, {TP}))
    assert run(coordinator.end_txn("app", pid, epoch, True, client_version=V2)).error is E.PRODUCER_FENCED
    assert coordinator.transactions["app"].state is S.ONGOING


def test_retried_end_txn_gets_the_same_answer() -> None:
    coordinator, _, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert transaction(coordinator, pid, epoch) == (pid, epoch + 1)
    # the answer was lost: the client retries with the epoch it sent
    retry = run(coordinator.end_txn("app", pid, epoch, True, client_version=V2))
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, pid, epoch + 1)
    assert run(coordinator.end_txn("app", pid, epoch, False, client_version=V2)).error is E.INVALID_TXN_STATE
    assert len(markers.calls) == 1
    # an epoch two behind is a zombie, not a retry
    transaction(coordinator, pid, epoch + 1)
    assert run(coordinator.end_txn("app", pid, epoch, True, client_version=V2)).error is E.PRODUCER_FENCED


def test_exhausted_epoch_rolls_to_a_new_producer_id_after_the_markers() -> None:
    coordinator, _, markers, _ = new_coordinator()
    pid, _ = init(coordinator)
    coordinator.transactions["app"].producer_epoch = MAX_EPOCH - 1
    new_pid, new_epoch = transaction(coordinator, pid, MAX_EPOCH - 1)
    assert new_pid != pid and new_epoch == 0
    # the markers close the old producer's transaction with the last epoch it can have
    assert markers.calls == [(pid, MAX_EPOCH, [TP], True)]
    assert coordinator.by_producer_id(new_pid) is coordinator.transactions["app"]
    assert coordinator.by_producer_id(pid) is None
    # a retry of that EndTxn (old id, old epoch) is answered with the new id
    retry = run(coordinator.end_txn("app", pid, MAX_EPOCH - 1, True, client_version=V2))
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, new_pid, 0)
    # the old producer id is gone for good
    assert coordinator.verify_partition(pid, MAX_EPOCH - 1, TP) is E.INVALID_TXN_STATE
    assert run(coordinator.add_partitions("app", pid, MAX_EPOCH, {TP})) is E.INVALID_PRODUCER_ID_MAPPING
    assert transaction(coordinator, new_pid, 0) == (new_pid, 1)


def test_a_v1_client_keeps_its_epoch() -> None:
    coordinator, _, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    result = run(coordinator.end_txn("app", pid, epoch, True))  # EndTxn v0-v4
    assert (result.error, result.producer_id, result.producer_epoch) == (E.NONE, pid, epoch)
    assert markers.calls == [(pid, epoch, [TP], True)]
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.NONE  # the next transaction


def test_v2_state_survives_a_reload() -> None:
    coordinator, log, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    coordinator.transactions["app"].producer_epoch = MAX_EPOCH - 1
    record = coordinator.transactions["app"].prepare_end(True, 5, client_version=V2, next_producer_id=4242)
    reloaded = TransactionMetadata.from_record("app", parse_txn_value(txn_value(record)))
    assert (reloaded.state, reloaded.producer_epoch, reloaded.next_producer_id) == (S.PREPARE_COMMIT, MAX_EPOCH, 4242)
    # completing it after a restart rolls to the id decided before
    assert reloaded.prepare_complete(6).producer_id == 4242
    assert log.records  # the coordinator wrote its states through the log
