"""A partition's transactions (UnifiedLog): open transactions, LSO, aborted index, rebuild, retention."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kbroker.log.txn_index as ti
from kbroker.log import AppendOrigin, LogConfig, PartitionLog, UnifiedLog
from kbroker.log.txn_index_file import ENTRY_SIZE, AbortedTxn, list_index_files
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import ControlRecordType

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def txn_batch(producer_id: int, records: int = 1, *, sequence: int = 0) -> bytearray:
    return bytearray(
        build_record_batch(
            [SimpleRecord(b"k", b"v%d" % i, (), 1_000 + i) for i in range(records)],
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=sequence,
            is_transactional=True,
        )
    )


def plain_batch(records: int = 1) -> bytearray:
    return bytearray(build_record_batch([SimpleRecord(b"k", b"v", (), 1_000 + i) for i in range(records)]))


def marker(producer_id: int, commit: bool) -> bytearray:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytearray(
        build_control_batch(kind, producer_id=producer_id, producer_epoch=0, coordinator_epoch=0, timestamp=2_000)
    )


@pytest.fixture
def partition_log(tmp_path: Path) -> Iterator[UnifiedLog]:
    opened = UnifiedLog(PartitionLog.open(tmp_path / "t-0", LogConfig()))
    yield opened
    opened.local.close()


def append(log_: UnifiedLog, data: bytearray) -> int:
    origin = AppendOrigin.MARKER if data[22] & 0x20 else AppendOrigin.COORDINATOR  # no sequence checks
    return log_.append_as_leader(data, origin).base_offset


def reopen(log_: UnifiedLog, config: LogConfig | None = None, *, remove_derived: bool = False) -> UnifiedLog:
    local = log_.local
    local.close()
    if remove_derived:
        _remove_derived_files(local.directory)
    return UnifiedLog(
        PartitionLog.open(local.directory, config or local.config, log_start_offset=local.log_start_offset)
    )


def open_log(path: Path, config: LogConfig) -> UnifiedLog:
    return UnifiedLog(PartitionLog.open(path, config))


def aborted(log_: UnifiedLog) -> list[AbortedTxn]:
    return list(log_.transaction_index().aborted)


def ongoing(log_: UnifiedLog) -> dict[int, int]:
    return log_.producer_state().ongoing_transactions()


def scanned(log_: UnifiedLog) -> int:
    log_.producer_state()
    assert log_.last_load is not None
    return log_.last_load.batches_scanned


def test_a_transaction_holds_the_lso_until_it_commits(partition_log: UnifiedLog) -> None:
    index = partition_log
    append(partition_log, plain_batch(2))
    assert index.last_stable_offset() == 2
    first = append(partition_log, txn_batch(7, 3))
    append(partition_log, txn_batch(7, 2, sequence=3))
    append(partition_log, plain_batch())
    assert ongoing(index) == {7: first}
    assert index.last_stable_offset() == first == 2
    append(partition_log, marker(7, commit=True))
    assert ongoing(index) == {}
    assert index.last_stable_offset() == partition_log.high_watermark == 9
    assert aborted(index) == []


def test_an_abort_is_indexed_with_its_range_and_lso(partition_log: UnifiedLog) -> None:
    index = partition_log
    first = append(partition_log, txn_batch(7, 3))
    at = append(partition_log, marker(7, commit=False))
    assert aborted(index) == [AbortedTxn(7, first, at, at + 1)]
    assert index.collect_aborted(0, partition_log.high_watermark) == aborted(index)
    [(base, path)] = list_index_files(partition_log.local.directory)
    assert base == 0 and path.stat().st_size == ENTRY_SIZE


def test_interleaved_producers(partition_log: UnifiedLog) -> None:
    index = partition_log
    a = append(partition_log, txn_batch(1))  # 0
    b = append(partition_log, txn_batch(2))  # 1
    append(partition_log, txn_batch(1, sequence=1))  # 2: already open at 0
    append(partition_log, plain_batch())  # 3
    assert index.last_stable_offset() == a
    abort_a = append(partition_log, marker(1, commit=False))  # 4
    assert index.last_stable_offset() == b  # producer 2 still open
    assert aborted(index) == [AbortedTxn(1, a, abort_a, b)]  # LSO after the marker: producer 2's first offset
    c = append(partition_log, txn_batch(1, sequence=2))  # 5: a new transaction of producer 1
    append(partition_log, marker(2, commit=True))  # 6
    assert ongoing(index) == {1: c}
    assert index.last_stable_offset() == c
    abort_c = append(partition_log, marker(1, commit=False))  # 7
    assert index.last_stable_offset() == 8
    assert aborted(index)[-1] == AbortedTxn(1, c, abort_c, abort_c + 1)


def test_collect_aborted_follows_kafkas_bounds(partition_log: UnifiedLog) -> None:
    index = partition_log
    a = append(partition_log, txn_batch(1))  # 0
    abort_a = append(partition_log, marker(1, commit=False))  # 1
    b = append(partition_log, txn_batch(2, 3))  # 2..4
    abort_b = append(partition_log, marker(2, commit=False))  # 5
    end = partition_log.high_watermark
    first, second = AbortedTxn(1, a, abort_a, abort_a + 1), AbortedTxn(2, b, abort_b, abort_b + 1)
    assert index.collect_aborted(0, end) == [first, second]
    assert index.collect_aborted(abort_a + 1, end) == [second]  # its marker is before the fetch offset
    assert index.collect_aborted(0, b) == [first]  # the second starts at the upper bound: not included
    assert index.collect_aborted(abort_b + 1, end + 5) == []


def test_an_abort_without_data_here_covers_only_its_marker(partition_log: UnifiedLog) -> None:
    index = partition_log
    append(partition_log, plain_batch())
    at = append(partition_log, marker(9, commit=False))
    assert aborted(index) == [AbortedTxn(9, at, at, at + 1)]


def test_the_lso_is_never_below_the_log_start(partition_log: UnifiedLog) -> None:
    index = partition_log
    append(partition_log, txn_batch(1))
    append(partition_log, plain_batch(4))
    partition_log.local.delete_records(3)
    assert index.last_stable_offset() == 3


def _history(log_: UnifiedLog) -> None:
    """Commits, aborts and one transaction left open, over several segments."""
    for round_ in range(6):
        append(log_, txn_batch(1, 3, sequence=round_ * 3))
        append(log_, plain_batch(2))
        append(log_, txn_batch(2, 2, sequence=round_ * 2))
        append(log_, marker(1, commit=round_ % 2 == 0))
        append(log_, marker(2, commit=round_ % 3 == 0))
    append(log_, txn_batch(3, 4))


def _state(log_: UnifiedLog) -> tuple[dict[int, int], list[AbortedTxn], int]:
    return ongoing(log_), aborted(log_), log_.last_stable_offset()


def _remove_derived_files(directory: Path) -> None:
    for name in os.listdir(directory):
        if name.endswith((".txnindex", ".snapshot")):
            os.unlink(directory / name)


def test_rebuild_after_restart_matches_the_live_state(tmp_path: Path) -> None:
    log_ = open_log(tmp_path / "t-0", SMALL)
    _history(log_)
    assert len(log_.local.segments) > 2 and ongoing(log_)
    expected = _state(log_)
    log_ = reopen(log_)
    assert _state(log_) == expected
    # from the last snapshot (written at the last roll), not the whole log
    assert 0 < scanned(log_) < 31
    log_.local.close()


def test_rebuild_without_any_file_scans_the_log(tmp_path: Path) -> None:
    log_ = open_log(tmp_path / "t-0", SMALL)
    _history(log_)
    expected = _state(log_)
    log_ = reopen(log_, remove_derived=True)
    assert _state(log_) == expected
    assert scanned(log_) == 25  # every batch with a producer id (31 batches, 6 plain)
    log_.local.close()


def test_index_entries_past_the_snapshot_are_rebuilt_once(tmp_path: Path) -> None:
    log_ = open_log(tmp_path / "t-0", LogConfig())  # one segment: no roll takes a snapshot
    append(log_, txn_batch(1))
    append(log_, marker(1, commit=False))
    log_.take_snapshot()
    append(log_, txn_batch(2))
    append(log_, marker(2, commit=False))  # in the index file, past the snapshot
    expected = _state(log_)
    log_ = reopen(log_)
    assert scanned(log_) == 2
    assert _state(log_) == expected
    [(_, path)] = list_index_files(log_.local.directory)
    assert path.stat().st_size == 2 * ENTRY_SIZE
    log_.local.close()


def test_older_transaction_checkpoints_are_removed(tmp_path: Path) -> None:
    log_ = open_log(tmp_path / "t-0", LogConfig())
    append(log_, txn_batch(1))
    stale = log_.local.directory / f"{1:020d}.txncheckpoint"
    stale.write_bytes(b"KBTI")
    log_ = reopen(log_)
    assert ongoing(log_) == {1: 0} and not stale.exists()
    log_.local.close()


def test_retention_drops_the_entries_of_deleted_segments(tmp_path: Path) -> None:
    log_ = open_log(tmp_path / "t-0", SMALL)
    _history(log_)
    local = log_.local
    bases = [s.base_offset for s in local.segments]
    assert len({b for b, _ in list_index_files(local.directory)}) > 1
    cut = bases[2]
    local.delete_records(cut)
    local.delete_old_segments()
    assert local.segments[0].base_offset == cut
    found = log_.collect_aborted(0, local.high_watermark)
    assert found and all(e.last_offset >= cut for e in found)
    assert aborted(log_) == found
    assert all(base >= cut for base, _ in list_index_files(local.directory))
    local.close()


def test_a_failed_index_write_reloads_the_state_on_next_use(
    partition_log: UnifiedLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = append(partition_log, txn_batch(1))

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(ti, "append_entries", fail)
    at = append(partition_log, marker(1, commit=False))  # the append itself succeeds
    assert not partition_log.state_loaded
    monkeypatch.undo()
    assert aborted(partition_log) == [AbortedTxn(1, first, at, at + 1)]
    assert partition_log.local.append_listeners == [partition_log._follow_append]


# -- against a brute-force model ---------------------------------------------------------------
Op = tuple[str, int, int]  # ("txn" | "plain" | "commit" | "abort", producer id, records)

ops_strategy = st.lists(
    st.tuples(st.sampled_from(["txn", "txn", "plain", "commit", "abort"]), st.integers(1, 3), st.integers(1, 3)),
    max_size=30,
)


def _model(ops: list[Op]) -> tuple[dict[int, int], list[tuple[int, int, int]], int]:
    """Open transactions, aborted (pid, first, marker) and the log end, computed from scratch."""
    offset = 0
    open_: dict[int, int] = {}
    aborts = []
    for kind, pid, records in ops:
        if kind == "txn":
            open_.setdefault(pid, offset)
        elif kind in ("commit", "abort"):
            first = open_.pop(pid, offset)
            if kind == "abort":
                aborts.append((pid, first, offset))
            records = 1
        offset += records
    return open_, aborts, offset


def _append_ops(log_: UnifiedLog, ops: list[Op]) -> None:
    for kind, pid, records in ops:
        if kind == "txn":
            append(log_, txn_batch(pid, records))
        elif kind == "plain":
            append(log_, plain_batch(records))
        else:
            append(log_, marker(pid, commit=kind == "commit"))


@settings(max_examples=60, deadline=None)
@given(ops=ops_strategy, split=st.integers(0, 30), reload_files=st.booleans())
def test_the_index_matches_a_model_live_and_reloaded(ops: list[Op], split: int, reload_files: bool) -> None:
    model_ongoing, model_aborted, end = _model(ops)
    with tempfile.TemporaryDirectory() as directory:
        log_ = open_log(Path(directory) / "t-0", LogConfig(segment_bytes=400))
        _append_ops(log_, ops[:split])
        log_.take_snapshot()
        _append_ops(log_, ops[split:])
        for reload in (False, True):
            if reload:
                log_ = reopen(log_, remove_derived=not reload_files)
            assert ongoing(log_) == model_ongoing
            assert log_.last_stable_offset() == min([*model_ongoing.values(), end])
            assert [(e.producer_id, e.first_offset, e.last_offset) for e in aborted(log_)] == model_aborted
            for fetch_offset in range(0, end + 1, 3):
                for upper in range(fetch_offset + 1, end + 2, 4):
                    found = [
                        (e.producer_id, e.first_offset, e.last_offset)
                        for e in log_.collect_aborted(fetch_offset, upper)
                    ]
                    expected = [a for a in model_aborted if a[2] >= fetch_offset and a[1] < upper]
                    assert found == expected
        log_.local.close()
