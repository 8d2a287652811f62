"""What the read side gets from producer state: open transactions' first offsets and completed transactions,
live and after a rebuild from the log (the marker type comes from the control record's key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from kbroker.txn.producer_state import CompletedTxn, ProducerStateManager
from kbroker.txn.scan import control_record_type, log_headers
from kbroker.txn.states import ProducerStates
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import ControlRecordType, RecordBatch

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)
NOW = 1_000_000


def txn_batch(pid: int, epoch: int, seq: int, records: int = 2) -> bytearray:
    return bytearray(
        build_record_batch(
            [SimpleRecord(b"k", b"v%d" % i, (), NOW) for i in range(records)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
    )


def write(log: PartitionLog, state: ProducerStateManager, data: bytearray) -> int:
    info = log.append(data)
    state.record(RecordBatch(data), info.base_offset, info.max_timestamp)
    return info.base_offset


def marker(log: PartitionLog, state: ProducerStateManager, pid: int, epoch: int, commit: bool) -> int:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    data = bytearray(
        build_control_batch(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0, timestamp=NOW)
    )
    info = log.append(data)
    state.record_marker(pid, epoch, info.base_offset, NOW, commit=commit, coordinator_epoch=0)
    return info.base_offset


@pytest.fixture
def log(tmp_path: Path):
    partition_log = PartitionLog.open(tmp_path / "orders-0", SMALL)
    yield partition_log
    partition_log.close()


def test_open_transactions_and_completed_ones(log: PartitionLog) -> None:
    states = ProducerStates(clock=lambda: NOW)
    seen: list[CompletedTxn] = []
    states.txn_listeners.append(lambda _log, completed: seen.append(completed))
    state = states.for_log(log)
    first_a = write(log, state, txn_batch(1, 0, 0))
    first_b = write(log, state, txn_batch(2, 0, 0))
    write(log, state, txn_batch(1, 0, 2))
    assert state.ongoing_transactions() == {1: first_a, 2: first_b}
    assert state.first_unstable_offset() == first_a
    abort_at = marker(log, state, 1, 0, commit=False)
    assert state.ongoing_transactions() == {2: first_b} and state.first_unstable_offset() == first_b
    commit_at = marker(log, state, 2, 0, commit=True)
    empty_at = marker(log, state, 3, 0, commit=False)  # a transaction that wrote nothing here
    assert state.first_unstable_offset() is None
    assert seen == [
        CompletedTxn(1, first_a, abort_at, True),
        CompletedTxn(2, first_b, commit_at, False),
        CompletedTxn(3, empty_at, empty_at, True),
    ]
    assert state.entry(2).coordinator_epoch == 0  # type: ignore[union-attr]


def test_rebuild_reports_the_same_completed_transactions(log: PartitionLog) -> None:
    live = ProducerStates(clock=lambda: NOW)
    state = live.for_log(log)
    first = write(log, state, txn_batch(5, 0, 0, records=3))
    abort_at = marker(log, state, 5, 0, commit=False)
    open_at = write(log, state, txn_batch(5, 0, 3))
    for snapshot in log.directory.glob("*.snapshot"):
        snapshot.unlink()
    rebuilt = ProducerStates(clock=lambda: NOW)
    seen: list[CompletedTxn] = []
    rebuilt.txn_listeners.append(lambda _log, completed: seen.append(completed))
    again = rebuilt.for_log(log)
    assert seen == [CompletedTxn(5, first, abort_at, True)]
    assert again.ongoing_transactions() == {5: open_at}


def test_scan_reads_the_marker_type(log: PartitionLog) -> None:
    state = ProducerStates(clock=lambda: NOW).for_log(log)
    write(log, state, txn_batch(1, 0, 0))
    marker(log, state, 1, 0, commit=True)
    marker(log, state, 1, 0, commit=False)
    types = [h.control_type for h in log_headers(log, 0)]
    assert types == [-1, ControlRecordType.COMMIT, ControlRecordType.ABORT]
    assert control_record_type(b"\x01") == -1  # truncated: unknown, never a guess
