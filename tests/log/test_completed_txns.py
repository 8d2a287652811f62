"""What the read side gets from producer state: open transactions' first offsets and completed transactions,
live and after a rebuild from the log (the marker type comes from the control record's key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from kbroker.log.producer_scan import control_record_type, log_headers
from kbroker.log.producer_state import CompletedTxn
from kbroker.log.unified_log import AppendOrigin, ProducerStateConfig, UnifiedLog
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import ControlRecordType

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


def write(log: UnifiedLog, data: bytearray) -> int:
    return log.append_as_leader(data, AppendOrigin.COORDINATOR).base_offset


def marker(log: UnifiedLog, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> int:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    data = bytearray(
        build_control_batch(
            kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch, timestamp=NOW
        )
    )
    return log.append_as_leader(data, AppendOrigin.MARKER, coordinator_epoch=coordinator_epoch).base_offset


def open_log(directory: Path, seen: list[CompletedTxn] | None = None) -> UnifiedLog:
    log = UnifiedLog(PartitionLog.open(directory, SMALL), ProducerStateConfig(clock=lambda: NOW))
    if seen is not None:  # listen from now on, as the aborted index does
        state = log.producer_state()
        index_abort = state.on_txn_completed

        def listen(completed: CompletedTxn) -> None:
            seen.append(completed)
            if index_abort is not None:
                index_abort(completed)

        state.on_txn_completed = listen
    return log


@pytest.fixture
def log(tmp_path: Path):
    unified = open_log(tmp_path / "orders-0")
    yield unified
    unified.local.close()


def test_open_transactions_and_completed_ones(tmp_path: Path) -> None:
    seen: list[CompletedTxn] = []
    log = open_log(tmp_path / "orders-0", seen)
    state = log.producer_state()
    first_a = write(log, txn_batch(1, 0, 0))
    first_b = write(log, txn_batch(2, 0, 0))
    write(log, txn_batch(1, 0, 2))
    assert state.ongoing_transactions() == {1: first_a, 2: first_b}
    assert state.first_unstable_offset() == first_a == log.last_stable_offset()
    abort_at = marker(log, 1, 0, commit=False)
    assert state.ongoing_transactions() == {2: first_b} and state.first_unstable_offset() == first_b
    commit_at = marker(log, 2, 0, commit=True, coordinator_epoch=4)
    empty_at = marker(log, 3, 0, commit=False)  # a transaction that wrote nothing here
    assert state.first_unstable_offset() is None
    assert seen == [
        CompletedTxn(1, first_a, abort_at, True),
        CompletedTxn(2, first_b, commit_at, False),
        CompletedTxn(3, empty_at, empty_at, True),
    ]
    assert state.entry(2).coordinator_epoch == 4  # type: ignore[union-attr]
    assert [(a.producer_id, a.first_offset) for a in log.transaction_index().aborted] == [(1, first_a), (3, empty_at)]
    log.local.close()


def test_rebuild_reports_the_same_completed_transactions(log: UnifiedLog) -> None:
    first = write(log, txn_batch(5, 0, 0, records=3))
    abort_at = marker(log, 5, 0, commit=False)
    open_at = write(log, txn_batch(5, 0, 3))
    directory = log.local.directory
    log.local.close()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    again = open_log(directory)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in again.transaction_index().aborted] == [
        (5, first, abort_at)
    ]
    assert again.producer_state().ongoing_transactions() == {5: open_at}
    again.local.close()


def test_scan_reads_the_marker_type(log: UnifiedLog) -> None:
    write(log, txn_batch(1, 0, 0))
    marker(log, 1, 0, commit=True)
    marker(log, 1, 0, commit=False)
    types = [h.control_type for h in log_headers(log.local, 0)]
    assert types == [-1, ControlRecordType.COMMIT, ControlRecordType.ABORT]
    assert control_record_type(b"\x01") == -1  # truncated: unknown, never a guess
