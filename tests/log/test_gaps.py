"""Logs whose offsets have gaps (compaction, a follower's truncation, lost segments).

The segment files are written directly, with chosen base offsets, so no append path
is involved: recovery, clean loads, index lookups, reads and timestamp lookups must
all take any strictly increasing base offsets.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, PartitionLog
from kbroker.log.segment import segment_name
from protocol.records import RecordBatch, iter_batches
from tests.log.batches import make_batch

CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=200)


class Written:
    """What a test wrote: (base offset, last offset, first timestamp, bytes) of every batch."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int, int, bytes]] = []

    def holder_of(self, offset: int) -> tuple[int, int, int, bytes] | None:
        """The batch a read at `offset` must start with: the first whose last offset is >= it."""
        return next((b for b in self.batches if b[1] >= offset), None)


def write_segment(directory: Path, segment_base: int, batch_bases: list[tuple[int, int]], written: Written) -> None:
    """A .log file named `segment_base` holding batches of (base offset, record count)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    for base, count in batch_bases:
        timestamp = 10_000 + 10 * base
        batch = make_batch(count, 40, timestamp, seed=base)
        RecordBatch(batch).set_base_offset(base)
        written.batches.append((base, base + count - 1, timestamp, bytes(batch)))
        data += batch
    (directory / (segment_name(segment_base) + ".log")).write_bytes(data)


def gappy_log(directory: Path, seed: int, segments: int = 4) -> Written:
    """Segments whose batches leave random gaps, inside segments, between them, and before
    a segment's first batch (a segment's base offset below its first batch's)."""
    rng = random.Random(seed)
    written = Written()
    offset = rng.randrange(0, 5)
    for _ in range(segments):
        segment_base = offset
        offset += rng.choice([0, 0, rng.randrange(1, 50)])  # first batch above the base offset
        bases = []
        for _ in range(rng.randrange(1, 40)):
            count = rng.randrange(1, 5)
            bases.append((offset, count))
            offset += count + rng.choice([0, 0, 1, rng.randrange(2, 100)])
        write_segment(directory, segment_base, bases, written)
        offset += rng.choice([0, rng.randrange(1, 30)])  # a gap before the next segment
    return written


def open_log(directory: Path, clean: bool) -> PartitionLog:
    return PartitionLog.open(directory, CONFIG, clean_shutdown=clean, recovery_point=10**9 if clean else 0)


def all_batches(log: PartitionLog) -> list[bytes]:
    return [bytes(b.view()) for b in log.batches()]


@pytest.mark.parametrize("clean", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_reads_and_lookups_across_gaps(tmp_path, seed, clean):
    written = gappy_log(tmp_path / "t-0", seed)
    log = open_log(tmp_path / "t-0", clean)
    assert log.recovery.bytes_truncated == 0 and log.recovery.reason is None
    assert log.log_end_offset == written.batches[-1][1] + 1
    # a full scan returns every batch, unchanged, in order
    assert all_batches(log) == [b[3] for b in written.batches]
    # a read at any offset starts with the batch holding it, or the next one after a gap
    for offset in range(log.log_start_offset, log.log_end_offset):
        expected = written.holder_of(offset)
        assert expected is not None
        result = log.read(offset, 1)
        assert result.first_offset == expected[0], offset
        assert next(iter_batches(result.read())).view().tobytes() == expected[3]
        # the batch's own segment is the one read (never a later one past the gap)
        segment = log.segments[log._segment_for(expected[0])]
        assert segment.find_batch(offset) is None or segment.find_batch(offset).base_offset == expected[0]
    assert log.read(log.log_end_offset, 1).region is None
    log.close()


@pytest.mark.parametrize("clean", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_timestamp_lookups_across_gaps(tmp_path, seed, clean):
    written = gappy_log(tmp_path / "t-0", seed)
    log = open_log(tmp_path / "t-0", clean)
    records = [(base + i, ts + i) for base, last, ts, _ in written.batches for i in range(last - base + 1)]
    for target in range(9_000, records[-1][1] + 20, 7):
        found = log.fetch_offset_by_timestamp(target)
        expected = next(((ts, off) for off, ts in records if ts >= target), None)
        if expected is None:
            assert found is None, target
        else:
            assert found is not None and (found.timestamp, found.offset) == expected, target
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == log.log_start_offset
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == log.log_end_offset
    top = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert top is not None and (top.timestamp, top.offset) == (records[-1][1], records[-1][0])
    log.close()


def test_indexes_of_a_gappy_segment_survive_a_clean_restart(tmp_path):
    written = gappy_log(tmp_path / "t-0", seed=11, segments=2)
    log = open_log(tmp_path / "t-0", clean=False)  # recovery builds the index files
    assert len(log.segments[0].offset_index) > 2
    log.close()
    log = open_log(tmp_path / "t-0", clean=True)
    for segment in log.segments:
        segment.ensure_indexes()
        assert segment.indexes_durable  # loaded from the files, not rebuilt
    for base, _last, _ts, data in written.batches:
        assert log.read(base, 1).read() == data
    log.close()


def test_appends_after_a_gap_continue_at_the_log_end(tmp_path):
    written = Written()
    write_segment(tmp_path / "t-0", 0, [(0, 2), (10, 3)], written)
    write_segment(tmp_path / "t-0", 100, [(150, 1)], written)
    log = open_log(tmp_path / "t-0", clean=False)
    assert log.log_end_offset == 151
    assert log.append(make_batch(2)).base_offset == 151
    assert [b.base_offset for b in log.batches()] == [0, 10, 150, 151]
    assert log.read(13, 1).first_offset == 150  # a fetch inside the gap between segments
    assert log.read(3, 1).first_offset == 10  # a fetch inside a gap within a segment
    log.close()


def test_offsets_going_backwards_are_cut_as_damage(tmp_path):
    written = Written()
    write_segment(tmp_path / "t-0", 0, [(0, 2), (10, 3), (11, 1)], written)
    log = open_log(tmp_path / "t-0", clean=False)
    assert [b.base_offset for b in log.batches()] == [0, 10]
    assert log.recovery.reason is not None and "base offset 11" in log.recovery.reason
    log.close()


def test_a_batch_below_its_segment_base_is_damage(tmp_path):
    written = Written()
    write_segment(tmp_path / "t-0", 0, [(0, 2)], written)
    write_segment(tmp_path / "t-0", 50, [(40, 2), (60, 1)], written)
    log = open_log(tmp_path / "t-0", clean=False)
    # the batch at 40 is cut; the one at 60 after it is intact and moves to a segment of its own
    assert [b.base_offset for b in log.batches()] == [0, 60]
    assert [s.base_offset for s in log.segments] == [0, 60] and log.log_end_offset == 61
    log.close()


def _write_raw(directory: Path, segment_base: int, batches: list[tuple[int, bytearray]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    for base, batch in batches:
        RecordBatch(batch).set_base_offset(base)
        data += batch
    (directory / (segment_name(segment_base) + ".log")).write_bytes(data)


@pytest.mark.parametrize("clean", [False, True])
def test_transactions_across_gaps(tmp_path, clean):
    from kbroker.log import UnifiedLog
    from kbroker.log.txn_index_file import AbortedTxn
    from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
    from protocol.records import ControlRecordType

    def txn(producer_id: int, records: int = 2) -> bytearray:
        rows = [SimpleRecord(b"k", b"v%d" % i, (), 1_000 + i) for i in range(records)]
        return bytearray(
            build_record_batch(rows, producer_id=producer_id, producer_epoch=0, base_sequence=0, is_transactional=True)
        )

    def marker(producer_id: int, commit: bool) -> bytearray:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        return bytearray(
            build_control_batch(kind, producer_id=producer_id, producer_epoch=0, coordinator_epoch=0, timestamp=2_000)
        )

    directory = tmp_path / "t-0"
    # producer 7 aborts across a gap; producer 8 commits in the next segment, which starts in a gap
    _write_raw(directory, 0, [(10, txn(7)), (30, txn(8)), (50, marker(7, commit=False))])
    _write_raw(directory, 60, [(75, marker(8, commit=True)), (90, txn(9))])
    log = UnifiedLog(open_log(directory, clean))
    try:
        assert log.log_end_offset == 92
        assert log.last_stable_offset() == 90  # producer 9's open transaction
        assert log.collect_aborted(0, 92) == [AbortedTxn(7, 10, 50, 30)]  # producer 8 still open then
        assert log.collect_aborted(51, 92) == []
        # a read_committed fetch from inside the gap before the abort marker stops at the LSO
        result = log.read(40, 1 << 20, max_offset=log.last_stable_offset())
        assert [b.base_offset for b in iter_batches(result.read())] == [50]
        assert log.read(60, 1 << 20, max_offset=90).first_offset == 75
    finally:
        log.local.close()
