"""TransactionCoordinator state machine (Kafka TV1 semantics) with a fake clock and in-memory I/O."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from kbroker.txn.coordinator import TransactionCoordinator, client_error
from kbroker.txn.transaction import MAX_EPOCH, IllegalTxnTransition, TransactionMetadata, TxnState
from protocol.errors import ErrorCode as E
from tests.txn.fakes import new_coordinator

S = TxnState
T = TypeVar("T")
TP = ("orders", 0)
TP2 = ("orders", 1)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def init(
    coordinator: TransactionCoordinator, tid: str = "app", timeout: int = 60_000, expected=None
) -> tuple[int, int]:
    result = run(coordinator.init_producer_id(tid, timeout, expected))
    assert result.error is E.NONE, result
    return result.producer_id, result.producer_epoch


def state(coordinator: TransactionCoordinator, tid: str = "app") -> TxnState:
    return coordinator.transactions[tid].state


def test_init_creates_producer_id_with_epoch_0_and_persists_empty() -> None:
    coordinator, log, _, _ = new_coordinator()
    assert init(coordinator) == (1000, 0)
    assert state(coordinator) is S.EMPTY
    assert [(tid, r.state, r.producer_epoch) for tid, r in log.records if r] == [("app", S.EMPTY, 0)]


def test_init_again_bumps_the_epoch_and_keeps_the_producer_id() -> None:
    coordinator, _, _, _ = new_coordinator()
    init(coordinator)
    assert init(coordinator) == (1000, 1)
    assert init(coordinator, "other") == (1001, 0)


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_timeout_outside_range_is_invalid(timeout: int) -> None:
    coordinator, log, _, _ = new_coordinator()
    result = run(coordinator.init_producer_id("app", timeout))
    assert result.error is E.INVALID_TRANSACTION_TIMEOUT and result.producer_id == -1
    assert log.records == []


def test_commit_goes_through_prepare_markers_complete() -> None:
    coordinator, log, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert run(coordinator.add_partitions("app", pid, epoch, {TP, TP2})) is E.NONE
    assert state(coordinator) is S.ONGOING
    assert coordinator.verify_partition(pid, epoch, TP) is E.NONE
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.NONE
    assert [r.state for _, r in log.records if r] == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    assert markers.calls == [(pid, epoch, [TP, TP2], True)]
    metadata = coordinator.transactions["app"]
    assert metadata.state is S.COMPLETE_COMMIT and metadata.partitions == set()
    assert coordinator.verify_partition(pid, epoch, TP) is E.INVALID_TXN_STATE


def test_abort_writes_abort_markers() -> None:
    coordinator, _, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    assert run(coordinator.end_txn("app", pid, epoch, False)).error is E.NONE
    assert state(coordinator) is S.COMPLETE_ABORT
    assert markers.calls == [(pid, epoch, [TP], False)]


def test_add_partitions_already_in_the_transaction_writes_nothing() -> None:
    coordinator, log, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    count = len(log.records)
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.NONE
    assert len(log.records) == count
    run(coordinator.add_partitions("app", pid, epoch, {TP2}))
    assert coordinator.transactions["app"].partitions == {TP, TP2}


def test_start_timestamp_is_set_by_the_first_add_only() -> None:
    coordinator, _, _, clock = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    started = coordinator.transactions["app"].start_timestamp
    clock.now += 500
    run(coordinator.add_partitions("app", pid, epoch, {TP2}))
    assert coordinator.transactions["app"].start_timestamp == started == clock.now - 500


def test_producer_id_and_epoch_checks() -> None:
    coordinator, _, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert run(coordinator.add_partitions("nope", pid, epoch, {TP})) is E.INVALID_PRODUCER_ID_MAPPING
    assert run(coordinator.add_partitions("app", pid + 1, epoch, {TP})) is E.INVALID_PRODUCER_ID_MAPPING
    assert run(coordinator.add_partitions("app", pid, epoch + 1, {TP})) is E.PRODUCER_FENCED
    assert run(coordinator.end_txn("app", pid + 1, epoch, True)).error is E.INVALID_PRODUCER_ID_MAPPING
    assert run(coordinator.end_txn("app", pid, epoch - 1, True)).error is E.PRODUCER_FENCED


def test_end_txn_state_table() -> None:
    coordinator, _, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.INVALID_TXN_STATE  # Empty
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    run(coordinator.end_txn("app", pid, epoch, True))
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.NONE  # a retried commit
    assert run(coordinator.end_txn("app", pid, epoch, False)).error is E.INVALID_TXN_STATE
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    run(coordinator.end_txn("app", pid, epoch, False))
    assert run(coordinator.end_txn("app", pid, epoch, False)).error is E.NONE
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.INVALID_TXN_STATE


def test_prepare_states_answer_concurrent_transactions() -> None:
    coordinator, _, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    markers.fail = True
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.NONE  # decided: PrepareCommit is written
    assert state(coordinator) is S.PREPARE_COMMIT
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.CONCURRENT_TRANSACTIONS
    assert run(coordinator.end_txn("app", pid, epoch, False)).error is E.INVALID_TXN_STATE
    assert run(coordinator.add_partitions("app", pid, epoch, {TP2})) is E.CONCURRENT_TRANSACTIONS
    assert run(coordinator.init_producer_id("app", 60_000)).error is E.CONCURRENT_TRANSACTIONS
    markers.fail = False
    assert run(coordinator.complete_prepared()) == 1
    assert state(coordinator) is S.COMPLETE_COMMIT
    assert markers.calls == [(pid, epoch, [TP], True)]


def test_pending_write_blocks_other_requests() -> None:
    coordinator, log, _, _ = new_coordinator()
    pid, epoch = init(coordinator)

    async def scenario() -> tuple[E, E]:
        gate = asyncio.Event()
        original = log.write

        async def slow_write(tid: str, record: Any) -> None:
            await gate.wait()
            await original(tid, record)

        log.write = slow_write  # type: ignore[method-assign,assignment]
        first = asyncio.create_task(coordinator.add_partitions("app", pid, epoch, {TP}))
        await asyncio.sleep(0)
        second = await coordinator.add_partitions("app", pid, epoch, {TP2})
        gate.set()
        return await first, second

    first, second = run(scenario())
    assert (first, second) == (E.NONE, E.CONCURRENT_TRANSACTIONS)


def test_new_instance_fences_an_ongoing_transaction() -> None:
    coordinator, log, markers, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    result = run(coordinator.init_producer_id("app", 60_000))
    assert result.error is E.CONCURRENT_TRANSACTIONS  # the client retries once the abort is done
    assert markers.calls == [(pid, epoch + 1, [TP], False)]  # ABORT with the bumped epoch
    assert state(coordinator) is S.COMPLETE_ABORT
    assert init(coordinator) == (pid, epoch + 2)
    # the old instance is fenced everywhere
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.PRODUCER_FENCED
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.PRODUCER_FENCED
    assert coordinator.verify_partition(pid, epoch, TP) is E.INVALID_PRODUCER_EPOCH
    assert [r.state for _, r in log.records if r][-3:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT, S.EMPTY]


def test_expected_producer_id_and_epoch_v3() -> None:
    coordinator, _, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    assert init(coordinator, expected=(pid, epoch)) == (pid, epoch + 1)
    # a retry of that call (its answer lost) gets the same epoch again
    assert init(coordinator, expected=(pid, epoch)) == (pid, epoch + 1)
    assert run(coordinator.init_producer_id("app", 60_000, (pid + 7, 0))).error is E.PRODUCER_FENCED
    init(coordinator)  # another instance: last epoch forgotten
    assert run(coordinator.init_producer_id("app", 60_000, (pid, epoch + 1))).error is E.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    coordinator, _, _, _ = new_coordinator()
    pid, _ = init(coordinator)
    coordinator.transactions["app"].producer_epoch = MAX_EPOCH - 1
    new_pid, epoch = init(coordinator)
    assert new_pid != pid and epoch == 0
    assert coordinator.by_producer_id(new_pid) is coordinator.transactions["app"]
    assert coordinator.by_producer_id(pid) is None


def test_timed_out_transaction_is_aborted_and_the_producer_fenced() -> None:
    coordinator, _, markers, clock = new_coordinator()
    pid, epoch = init(coordinator, timeout=10_000)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    clock.now += 10_000
    assert run(coordinator.abort_timed_out()) == 0
    clock.now += 1
    assert run(coordinator.abort_timed_out()) == 1
    assert state(coordinator) is S.COMPLETE_ABORT
    assert markers.calls == [(pid, epoch + 1, [TP], False)]
    assert run(coordinator.end_txn("app", pid, epoch, True)).error is E.PRODUCER_FENCED
    assert run(coordinator.end_txn("app", pid, epoch, False, client_version=2)).error is E.PRODUCER_FENCED
    assert run(coordinator.abort_timed_out()) == 0


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    coordinator, log, _, clock = new_coordinator(expiration_ms=1_000)
    pid, epoch = init(coordinator)
    init(coordinator, "busy")
    busy_pid, busy_epoch = coordinator.transactions["busy"].producer_id, coordinator.transactions["busy"].producer_epoch
    run(coordinator.add_partitions("busy", busy_pid, busy_epoch, {TP}))
    clock.now += 1_000
    assert run(coordinator.expire_transactional_ids()) == 1
    assert "app" not in coordinator.transactions and "busy" in coordinator.transactions
    assert log.records[-1] == ("app", None)
    assert coordinator.by_producer_id(pid) is None
    assert init(coordinator) == (1002, 0)  # a new producer id


def test_failed_state_write_changes_nothing() -> None:
    coordinator, log, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    log.fail = True
    assert run(coordinator.add_partitions("app", pid, epoch, {TP})) is E.COORDINATOR_NOT_AVAILABLE
    assert state(coordinator) is S.EMPTY and coordinator.transactions["app"].pending is None


def test_load_replays_the_last_record_and_completes_prepared() -> None:
    coordinator, log, _, _ = new_coordinator()
    pid, epoch = init(coordinator)
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    init(coordinator, "gone")
    prepared = coordinator.transactions["app"].prepare_end(True, 5)
    records = [*log.records, ("app", prepared), ("gone", None)]
    restarted, _, markers, _ = new_coordinator()
    restarted.load(records)
    assert set(restarted.transactions) == {"app"} and state(restarted) is S.PREPARE_COMMIT
    assert run(restarted.complete_prepared()) == 1
    assert markers.calls == [(pid, epoch, [TP], True)] and state(restarted) is S.COMPLETE_COMMIT


def test_list_and_describe() -> None:
    coordinator, _, _, clock = new_coordinator()
    pid, epoch = init(coordinator)
    init(coordinator, "idle")
    run(coordinator.add_partitions("app", pid, epoch, {TP}))
    assert [m.transactional_id for m in coordinator.list({S.ONGOING}, set())] == ["app"]
    assert {m.transactional_id for m in coordinator.list(None, set())} == {"app", "idle"}
    assert [m.transactional_id for m in coordinator.list(None, {pid})] == ["app"]
    clock.now += 100
    assert coordinator.list(None, set(), 101) == [] and len(coordinator.list(None, set(), 100)) == 1
    assert coordinator.describe("") is E.INVALID_REQUEST
    assert coordinator.describe("unknown") is E.TRANSACTIONAL_ID_NOT_FOUND
    found = coordinator.describe("app")
    assert isinstance(found, TransactionMetadata) and found.partitions == {TP}


def test_illegal_transitions_raise() -> None:
    metadata = TransactionMetadata("x", 1, producer_epoch=0)
    with pytest.raises(IllegalTxnTransition):
        metadata.prepare_end(True, 0)  # Empty -> PrepareCommit
    with pytest.raises(IllegalTxnTransition):
        metadata.prepare_complete(0)
    assert S.PREPARE_ABORT.can_become(S.COMPLETE_ABORT) and not S.PREPARE_ABORT.can_become(S.COMPLETE_COMMIT)
    assert S.COMPLETE_COMMIT.can_become(S.DEAD) and not S.ONGOING.can_become(S.DEAD)


@pytest.mark.parametrize(
    ("version", "first", "expected"), [(1, 2, E.INVALID_PRODUCER_EPOCH), (2, 2, E.PRODUCER_FENCED)]
)
def test_fencing_error_by_version(version: int, first: int, expected: E) -> None:
    assert client_error(E.PRODUCER_FENCED, version, first) is expected
    assert client_error(E.CONCURRENT_TRANSACTIONS, version, first) is E.CONCURRENT_TRANSACTIONS
