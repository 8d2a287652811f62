"""The per-partition transaction index: open transactions, LSO, aborted index, rebuild, retention."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbroker.log import LogConfig, PartitionLog
from kbroker.txn import transaction_index as ti
from kbroker.txn.transaction_index import PartitionTxnIndex, load_transaction_index
from kbroker.txn.txn_checkpoint import list_checkpoints, read_checkpoint, write_checkpoint
from kbroker.txn.txn_index_file import ENTRY_SIZE, AbortedTxn, list_index_files
from kbroker.txn.txn_indexes import TransactionIndexes
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
def partition_log(tmp_path: Path) -> Iterator[PartitionLog]:
    opened = PartitionLog.open(tmp_path / "t-0", LogConfig())
    yield opened
    opened.close()


def append(log_: PartitionLog, data: bytearray) -> int:
    return log_.append(data).base_offset


def reopen(log_: PartitionLog, config: LogConfig | None = None) -> PartitionLog:
    log_.close()
    return PartitionLog.open(log_.directory, config or log_.config, log_start_offset=log_.log_start_offset)


def test_a_transaction_holds_the_lso_until_it_commits(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
    append(partition_log, plain_batch(2))
    assert index.last_stable_offset() == 2
    first = append(partition_log, txn_batch(7, 3))
    append(partition_log, txn_batch(7, 2, sequence=3))
    append(partition_log, plain_batch())
    assert index.ongoing == {7: first}
    assert index.last_stable_offset() == first == 2
    append(partition_log, marker(7, commit=True))
    assert index.ongoing == {}
    assert index.last_stable_offset() == partition_log.high_watermark == 9
    assert index.aborted == []


def test_an_abort_is_indexed_with_its_range_and_lso(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
    first = append(partition_log, txn_batch(7, 3))
    at = append(partition_log, marker(7, commit=False))
    assert index.aborted == [AbortedTxn(7, first, at, at + 1)]
    assert index.collect_aborted(0, partition_log.high_watermark) == index.aborted
    [(base, path)] = list_index_files(partition_log.directory)
    assert base == 0 and path.stat().st_size == ENTRY_SIZE


def test_interleaved_producers(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
    a = append(partition_log, txn_batch(1))  # 0
    b = append(partition_log, txn_batch(2))  # 1
    append(partition_log, txn_batch(1, sequence=1))  # 2: already open at 0
    append(partition_log, plain_batch())  # 3
    assert index.last_stable_offset() == a
    abort_a = append(partition_log, marker(1, commit=False))  # 4
    assert index.last_stable_offset() == b  # producer 2 still open
    assert index.aborted == [AbortedTxn(1, a, abort_a, b)]  # LSO after the marker: producer 2's first offset
    c = append(partition_log, txn_batch(1, sequence=2))  # 5: a new transaction of producer 1
    append(partition_log, marker(2, commit=True))  # 6
    assert index.ongoing == {1: c}
    assert index.last_stable_offset() == c
    abort_c = append(partition_log, marker(1, commit=False))  # 7
    assert index.last_stable_offset() == 8
    assert index.aborted[-1] == AbortedTxn(1, c, abort_c, abort_c + 1)


def test_collect_aborted_follows_kafkas_bounds(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
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


def test_an_abort_without_data_here_covers_only_its_marker(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
    append(partition_log, plain_batch())
    at = append(partition_log, marker(9, commit=False))
    assert index.aborted == [AbortedTxn(9, at, at, at + 1)]


def test_the_lso_is_never_below_the_log_start(partition_log: PartitionLog) -> None:
    index = load_transaction_index(partition_log)
    append(partition_log, txn_batch(1))
    append(partition_log, plain_batch(4))
    partition_log.delete_records(3)
    assert index.last_stable_offset() == 3


def _history(log_: PartitionLog) -> None:
    """Commits, aborts and one transaction left open, over several segments."""
    for round_ in range(6):
        append(log_, txn_batch(1, 3, sequence=round_ * 3))
        append(log_, plain_batch(2))
        append(log_, txn_batch(2, 2, sequence=round_ * 2))
        append(log_, marker(1, commit=round_ % 2 == 0))
        append(log_, marker(2, commit=round_ % 3 == 0))
    append(log_, txn_batch(3, 4))


def _state(index: PartitionTxnIndex) -> tuple[dict[int, int], list[AbortedTxn], int]:
    return dict(index.ongoing), list(index.aborted), index.last_stable_offset()


def test_rebuild_after_restart_matches_the_live_state(tmp_path: Path) -> None:
    log_ = PartitionLog.open(tmp_path / "t-0", SMALL)
    live = load_transaction_index(log_)
    _history(log_)
    assert len(log_.segments) > 2 and live.ongoing
    expected = _state(live)
    log_ = reopen(log_)
    reloaded = load_transaction_index(log_)
    assert _state(reloaded) == expected
    # from the last checkpoint (written at the last roll), not the whole log
    assert 0 < reloaded.batches_scanned < 31
    log_.close()


def test_rebuild_without_any_file_scans_the_log(tmp_path: Path) -> None:
    log_ = PartitionLog.open(tmp_path / "t-0", SMALL)
    live = load_transaction_index(log_)
    _history(log_)
    expected = _state(live)
    log_ = reopen(log_)
    for name in os.listdir(log_.directory):
        if name.endswith((".txnindex", ".txncheckpoint")):
            os.unlink(log_.directory / name)
    reloaded = load_transaction_index(log_)
    assert _state(reloaded) == expected
    assert reloaded.batches_scanned == 31
    log_.close()


def test_a_checkpoint_that_does_not_match_the_log_is_discarded(tmp_path: Path) -> None:
    log_ = PartitionLog.open(tmp_path / "t-0", SMALL)
    live = load_transaction_index(log_)
    _history(log_)
    expected = _state(live)
    newest = read_checkpoint(list_checkpoints(log_.directory)[0][1])
    forged = type(newest)(log_.log_end_offset, newest.anchor_base, newest.anchor_crc ^ 1, {})  # wrong anchor
    write_checkpoint(log_.directory, forged)
    log_ = reopen(log_)
    reloaded = load_transaction_index(log_)
    assert _state(reloaded) == expected  # no aborted entry lost or doubled
    assert all(offset != forged.offset for offset, _ in list_checkpoints(log_.directory))
    log_.close()


def test_index_entries_past_the_checkpoint_are_rebuilt_once(tmp_path: Path) -> None:
    log_ = PartitionLog.open(tmp_path / "t-0", LogConfig())  # one segment: the only checkpoint is the load's
    index = load_transaction_index(log_)
    append(log_, txn_batch(1))
    append(log_, marker(1, commit=False))
    index.checkpoint()
    append(log_, txn_batch(2))
    append(log_, marker(2, commit=False))  # in the index file, past the checkpoint
    expected = _state(index)
    log_ = reopen(log_)
    reloaded = load_transaction_index(log_)
    assert reloaded.batches_scanned == 2
    assert _state(reloaded) == expected
    [(_, path)] = list_index_files(log_.directory)
    assert path.stat().st_size == 2 * ENTRY_SIZE
    log_.close()


def test_retention_drops_the_entries_of_deleted_segments(tmp_path: Path) -> None:
    log_ = PartitionLog.open(tmp_path / "t-0", SMALL)
    index = load_transaction_index(log_)
    _history(log_)
    bases = [s.base_offset for s in log_.segments]
    assert len({b for b, _ in list_index_files(log_.directory)}) > 1
    cut = bases[2]
    log_.delete_records(cut)
    log_.delete_old_segments()
    assert log_.segments[0].base_offset == cut
    found = index.collect_aborted(0, log_.high_watermark)
    assert found and all(e.last_offset >= cut for e in found)
    assert index.aborted == found
    assert all(base >= cut for base, _ in list_index_files(log_.directory))
    log_.close()


def test_a_failed_append_marks_the_index_stale_and_the_registry_reloads(
    partition_log: PartitionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexes = TransactionIndexes()
    index = indexes.for_log(partition_log)
    first = append(partition_log, txn_batch(1))

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(ti, "append_entries", fail)
    at = append(partition_log, marker(1, commit=False))  # the append itself succeeds
    assert index.stale
    monkeypatch.undo()
    reloaded = indexes.for_log(partition_log)
    assert reloaded is not index and not reloaded.stale
    assert reloaded.aborted == [AbortedTxn(1, first, at, at + 1)]
    assert partition_log.append_listeners == [reloaded.on_append]


# -- against a brute-force model ---------------------------------------------------------------
Op = tuple[str, int, int]  # ("txn" | "plain" | "commit" | "abort", producer id, records)

ops_strategy = st.lists(
    st.tuples(st.sampled_from(["txn", "txn", "plain", "commit", "abort"]), st.integers(1, 3), st.integers(1, 3)),
    max_size=30,
)


def _model(ops: list[Op]) -> tuple[dict[int, int], list[tuple[int, int, int]], int]:
    """Open transactions, aborted (pid, first, marker) and the log end, computed from scratch."""
    offset = 0
    ongoing: dict[int, int] = {}
    aborted = []
    for kind, pid, records in ops:
        if kind == "txn":
            ongoing.setdefault(pid, offset)
        elif kind in ("commit", "abort"):
            first = ongoing.pop(pid, offset)
            if kind == "abort":
                aborted.append((pid, first, offset))
            records = 1
        offset += records
    return ongoing, aborted, offset


def _append_ops(log_: PartitionLog, ops: list[Op]) -> None:
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
    ongoing, model_aborted, end = _model(ops)
    with tempfile.TemporaryDirectory() as directory:
        log_ = PartitionLog.open(Path(directory) / "t-0", LogConfig(segment_bytes=400))
        index = load_transaction_index(log_)
        _append_ops(log_, ops[:split])
        index.checkpoint()
        _append_ops(log_, ops[split:])
        for candidate in (index, None):
            if candidate is None:
                log_ = reopen(log_)
                if not reload_files:
                    for name in os.listdir(log_.directory):
                        if name.endswith((".txnindex", ".txncheckpoint")):
                            os.unlink(log_.directory / name)
                candidate = load_transaction_index(log_)
            assert candidate.ongoing == ongoing
            assert candidate.last_stable_offset() == min([*ongoing.values(), end])
            assert [(e.producer_id, e.first_offset, e.last_offset) for e in candidate.aborted] == model_aborted
            for fetch_offset in range(0, end + 1, 3):
                for upper in range(fetch_offset + 1, end + 2, 4):
                    found = [
                        (e.producer_id, e.first_offset, e.last_offset)
                        for e in candidate.collect_aborted(fetch_offset, upper)
                    ]
                    expected = [a for a in model_aborted if a[2] >= fetch_offset and a[1] < upper]
                    assert found == expected
        log_.close()
