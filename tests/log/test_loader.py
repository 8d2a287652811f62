"""Startup: clean loads, recovery after an unclean stop, and corrupted files."""

import os
import random

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from protocol.records import iter_batches
from tests.log.batches import make_batch

CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=300)


def build(directory, batches=60, seed=0):
    """A closed log of `batches` batches of 1-4 records; returns the bytes of each batch."""
    rng = random.Random(seed)
    log = PartitionLog.open(directory, CONFIG)
    for i in range(batches):
        log.append(make_batch(rng.randint(1, 4), rng.randint(10, 200), 1000 + 10 * i, seed=i))
    stored = _all_batches(log)
    log.flush_sync()
    log.close()
    return stored


def _all_batches(log):
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30).read()
        batches = [bytes(b.view()) for b in iter_batches(data)]
        out += batches
        offset = list(iter_batches(data))[-1].next_offset
    return out


def reopen(directory, clean=False, recovery_point=0):
    return PartitionLog.open(directory, CONFIG, clean_shutdown=clean, recovery_point=recovery_point)


def check_prefix(log, expected):
    """The log holds exactly a prefix of `expected`, every batch intact, offsets dense."""
    actual = _all_batches(log)
    assert actual == expected[: len(actual)]
    next_offset = 0
    for batch in iter_batches(b"".join(actual)):
        assert batch.base_offset == next_offset and batch.is_valid()
        next_offset = batch.next_offset
    assert log.log_end_offset == next_offset
    return len(actual)


def segment_files(directory, suffix):
    return sorted(directory.glob(f"*{suffix}"))


def test_clean_load_scans_nothing(tmp_path):
    expected = build(tmp_path / "t-0")
    log = reopen(tmp_path / "t-0", clean=True, recovery_point=10**9)
    assert log.recovery.segments_scanned == 0 and len(log.segments) > 2
    assert check_prefix(log, expected) == len(expected)
    assert log.fetch_offset_by_timestamp(1205) is not None
    log.close()


def test_unclean_load_scans_from_the_recovery_point(tmp_path):
    expected = build(tmp_path / "t-0")
    log = reopen(tmp_path / "t-0", recovery_point=0)
    assert log.recovery.segments_scanned == len(log.segments)
    assert log.recovery.bytes_scanned == log.size_in_bytes and log.recovery.bytes_truncated == 0
    last_base = log.active_segment.base_offset
    log.close()
    log = reopen(tmp_path / "t-0", recovery_point=last_base + 1)
    assert log.recovery.segments_scanned == 1
    assert check_prefix(log, expected) == len(expected)
    log.close()


def test_appends_continue_after_recovery(tmp_path):
    expected = build(tmp_path / "t-0")
    log = reopen(tmp_path / "t-0")
    end = log.log_end_offset
    batch = make_batch(2)
    assert log.append(batch).base_offset == end
    log.close()
    log = reopen(tmp_path / "t-0")
    assert log.log_end_offset == end + 2
    assert check_prefix(log, [*expected, bytes(batch)]) == len(expected) + 1
    log.close()


@pytest.mark.parametrize("seed", range(8))
def test_truncated_active_segment(tmp_path, seed):
    expected = build(tmp_path / "t-0", seed=seed)
    active = segment_files(tmp_path / "t-0", ".log")[-1]
    size = active.stat().st_size
    cut = random.Random(seed).randrange(size)
    os.truncate(active, cut)
    log = reopen(tmp_path / "t-0", recovery_point=0)
    kept = check_prefix(log, expected)
    lost = b"".join(expected[kept:])
    assert len(lost) == size - cut + log.recovery.bytes_truncated
    assert len(lost) < size - cut + max(len(b) for b in expected)  # at most the torn batch is dropped
    log.close()


@pytest.mark.parametrize("seed", range(8))
def test_flipped_byte_in_last_batches(tmp_path, seed):
    expected = build(tmp_path / "t-0", seed=seed)
    rng = random.Random(seed)
    active = segment_files(tmp_path / "t-0", ".log")[-1]
    data = bytearray(active.read_bytes())
    starts = [b.position for b in iter_batches(data)]
    while True:  # not in the base offset or leader epoch (no check covers those: an offset may jump a gap)
        position = rng.randrange(max(0, len(data) - 600), len(data))
        within = position - max(s for s in starts if s <= position)
        if not (within < 8 or 12 <= within < 16):
            break
    data[position] ^= 1 << rng.randrange(8)
    active.write_bytes(data)
    damaged = len(expected) - len(starts) + starts.index(max(s for s in starts if s <= position))
    log = reopen(tmp_path / "t-0", recovery_point=0)
    assert log.recovery.reason is not None
    # exactly the damaged batch is gone: the intact ones after it were salvaged
    assert _all_batches(log) == expected[:damaged] + expected[damaged + 1 :]
    log.close()


def test_bad_middle_segment_keeps_everything_but_the_damaged_batch(tmp_path):
    expected = build(tmp_path / "t-0")
    logs = segment_files(tmp_path / "t-0", ".log")
    data = bytearray(logs[1].read_bytes())
    starts = [b.position for b in iter_batches(data)]
    data[starts[len(starts) // 2] + 30] ^= 0xFF  # inside a batch in the middle of the segment
    logs[1].write_bytes(data)
    log = reopen(tmp_path / "t-0", recovery_point=0)
    assert log.recovery.segments_damaged == 1 and log.recovery.segments_salvaged == 1
    assert log.recovery.segments_deleted == 0 and len(log.segments) == len(logs) + 1
    survivors = _all_batches(log)
    [lost] = [next(iter_batches(b)) for b in expected if b not in survivors]
    assert survivors == [b for b in expected if next(iter_batches(b)).base_offset != lost.base_offset]
    assert log.recovery.gaps == [(lost.base_offset, lost.next_offset)]
    assert log.log_end_offset == next(iter_batches(expected[-1])).next_offset
    assert log.read(lost.base_offset, 1).first_offset == lost.next_offset
    log.close()
    # the split is durable: a clean restart serves the same batches
    log = reopen(tmp_path / "t-0", clean=True, recovery_point=10**9)
    assert _all_batches(log) == survivors and log.recovery.gaps == [(lost.base_offset, lost.next_offset)]
    log.close()


@pytest.mark.parametrize("clean", [True, False])
def test_missing_middle_segment_leaves_a_gap(tmp_path, clean):
    expected = build(tmp_path / "t-0")
    logs = segment_files(tmp_path / "t-0", ".log")
    gone = int(logs[1].name[:20]), int(logs[2].name[:20])
    logs[1].unlink()
    log = reopen(tmp_path / "t-0", clean=clean, recovery_point=10**9 if clean else 0)
    assert len(log.segments) == len(logs) - 1 and log.recovery.gaps == [gone]
    survivors = _all_batches(log)
    assert survivors == [b for b in expected if not gone[0] <= next(iter_batches(b)).base_offset < gone[1]]
    assert log.read(gone[0], 1).first_offset == gone[1]
    log.close()


def test_base_offset_beyond_the_segment_range_is_damage(tmp_path):
    expected = build(tmp_path / "t-0")
    active = segment_files(tmp_path / "t-0", ".log")[-1]
    data = bytearray(active.read_bytes())
    last = list(iter_batches(data))[-1]
    data[last.position + 3] ^= 1  # base offset + 2^32: no segment can index that
    active.write_bytes(data)
    log = reopen(tmp_path / "t-0", recovery_point=0)
    assert check_prefix(log, expected) == len(expected) - 1
    log.close()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("damage", ["delete", "scribble", "truncate", "zero"])
@pytest.mark.parametrize("clean", [True, False])
def test_damaged_indexes_are_rebuilt(tmp_path, suffix, damage, clean):
    expected = build(tmp_path / "t-0")
    rng = random.Random(hash((suffix, damage)))
    for path in segment_files(tmp_path / "t-0", suffix):
        size = path.stat().st_size
        if damage == "delete":
            path.unlink()
        elif damage == "scribble":
            path.write_bytes(rng.randbytes(size))
        elif damage == "truncate":
            os.truncate(path, size // 2 + 1)
        else:
            path.write_bytes(bytes(size))
    log = reopen(tmp_path / "t-0", clean=clean, recovery_point=0 if not clean else 10**9)
    assert check_prefix(log, expected) == len(expected)
    # every offset and timestamp lookup agrees with a fresh log
    for offset in range(0, log.log_end_offset, 7):
        assert log.read(offset, 1).first_offset <= offset
    timestamps = [log.fetch_offset_by_timestamp(t) for t in range(900, 1700, 37)]
    log.close()
    for path in segment_files(tmp_path / "t-0", suffix):
        path.unlink()
    fresh = reopen(tmp_path / "t-0", clean=True, recovery_point=10**9)
    assert [fresh.fetch_offset_by_timestamp(t) for t in range(900, 1700, 37)] == timestamps
    fresh.close()


def test_wrong_but_plausible_index_entry_is_caught(tmp_path):
    expected = build(tmp_path / "t-0")
    first_index = segment_files(tmp_path / "t-0", ".index")[0]
    data = bytearray(first_index.read_bytes())
    data[7] += 1  # the first entry now points one byte into its batch
    first_index.write_bytes(data)
    log = reopen(tmp_path / "t-0", clean=True, recovery_point=10**9)
    assert check_prefix(log, expected) == len(expected)
    log.close()


def test_leftover_files_are_removed(tmp_path):
    build(tmp_path / "t-0")
    directory = tmp_path / "t-0"
    (directory / "00000000000000000999.log.deleted").write_bytes(b"x")
    (directory / "00000000000000000999.index").write_bytes(b"x")
    (directory / "00000000000000000000.log.swap").write_bytes(b"x")
    reopen(directory, clean=True, recovery_point=10**9).close()
    names = {p.name for p in directory.iterdir()}
    assert (
        not {"00000000000000000999.log.deleted", "00000000000000000999.index", "00000000000000000000.log.swap"} & names
    )


def test_clean_marker_with_a_torn_tail_still_recovers(tmp_path):
    expected = build(tmp_path / "t-0")
    active = segment_files(tmp_path / "t-0", ".log")[-1]
    os.truncate(active, active.stat().st_size - 5)
    log = reopen(tmp_path / "t-0", clean=True, recovery_point=10**9)
    assert check_prefix(log, expected) == len(expected) - 1
    log.close()


@pytest.mark.parametrize("clean", [True, False])
def test_rebuilt_index_files_match_the_originals(tmp_path, clean):
    build(tmp_path / "t-0")
    originals = {
        p.name: p.read_bytes() for suffix in (".index", ".timeindex") for p in segment_files(tmp_path / "t-0", suffix)
    }
    assert any(originals.values())
    for name in originals:
        (tmp_path / "t-0" / name).unlink()
    log = reopen(tmp_path / "t-0", clean=clean, recovery_point=0 if not clean else 10**9)
    for segment in log.segments:
        segment.ensure_indexes()
    log.release_files()  # no close: what recovery or the rebuild wrote by itself
    for name, original in originals.items():
        rebuilt = (tmp_path / "t-0" / name).read_bytes()
        if name.endswith(".index"):
            assert rebuilt == original, name
        else:  # a rebuild lacks only the final entry a roll adds
            assert original.startswith(rebuilt) and len(original) - len(rebuilt) in (0, 12), name


def test_log_start_beyond_the_recovered_end_starts_empty_there(tmp_path):
    build(tmp_path / "t-0")
    active = segment_files(tmp_path / "t-0", ".log")[-1]
    os.truncate(active, 0)  # the tail is lost
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, log_start_offset=10**4, recovery_point=0)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (10**4, 10**4, 1)
    assert log.append(make_batch()).base_offset == 10**4
    log.close()
