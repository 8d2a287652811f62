import os

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.index import OffsetIndex, TimeIndex
from kbroker.log.scan import InvalidBatchError, find_batch_from, iter_headers, last_batch_end, scan_and_index
from kbroker.log.segment import AppendedBatch, LogSegment
from protocol.records import RecordBatch
from tests.log.batches import make_batch, some

CONFIG = LogConfig(index_interval_bytes=500)


def append(segment, records, value_size, timestamp):
    buffer = make_batch(records, value_size, timestamp)
    batch = RecordBatch(buffer)
    batch.set_base_offset(segment.next_offset)
    segment.append(buffer, [AppendedBatch(0, batch.size, batch.base_offset, batch.last_offset, batch.max_timestamp)])
    return batch


@pytest.fixture
def segment(tmp_path):
    segment = LogSegment.create(tmp_path, 100, CONFIG)
    yield segment
    segment.close()


def fill(segment, count=40):
    # batch i: offsets 100 + 2i, 100 + 2i + 1; timestamps 1000 + 10i, +1
    return [append(segment, 2, 60 + i, 1000 + 10 * i) for i in range(count)]


def test_append_tracks_offsets_and_indexes(segment):
    batches = fill(segment)
    assert segment.next_offset == 180 and segment.size == sum(b.size for b in batches)
    assert len(segment.offset_index) > 5 and segment.max_timestamp == 1391
    assert segment.log_path.name == "00000000000000000100.log"
    assert os.path.getsize(segment.log_path) == segment.size


def test_find_batch_and_read(segment):
    batches = fill(segment)
    positions = [0]
    for b in batches:
        positions.append(positions[-1] + b.size)
    for i, b in enumerate(batches):
        for offset in (b.base_offset, b.last_offset):
            header = segment.find_batch(offset)
            assert (header.position, header.base_offset) == (positions[i], b.base_offset)
    assert segment.find_batch(180) is None
    first, size = segment.read(103, positions[5] - positions[1], segment.size, True)
    assert (first.position, size) == (positions[1], positions[5] - positions[1])
    first, size = segment.read(103, positions[5] - positions[1] - 1, segment.size, True)
    assert size == positions[4] - positions[1]
    assert segment.read(100, 10**9, positions[3], True)[1] == positions[3]
    assert segment.read(100, 1, segment.size, False) is None


def test_find_by_timestamp(segment):
    fill(segment)
    assert segment.find_by_timestamp(1005, 100).base_offset == 102
    assert segment.find_by_timestamp(1000, 101).base_offset == 100
    assert segment.find_by_timestamp(1391, 100).base_offset == 178
    assert segment.find_by_timestamp(1392, 100) is None


def test_reopen_loads_indexes_lazily(segment, tmp_path):
    fill(segment)
    segment.on_become_inactive()
    segment.close()
    reopened = LogSegment.open(tmp_path, 100, CONFIG)
    assert not reopened.indexes_loaded
    assert some(reopened.find_batch(150)).base_offset == 150
    assert reopened.indexes_loaded and reopened.next_offset == 180 and reopened.max_timestamp == 1391
    reopened.close()


def test_recover_cuts_a_torn_tail(segment, tmp_path):
    batches = fill(segment, 10)
    segment.close()
    os.truncate(segment.log_path, segment.size - 3)
    reopened = LogSegment.open(tmp_path, 100, CONFIG)
    result = reopened.recover()
    assert result.bytes_truncated == batches[-1].size - 3 and result.reason == "batch extends past the end of the file"
    assert reopened.next_offset == 118 and reopened.size == sum(b.size for b in batches[:-1])
    reopened.close()


def test_mark_deleted_then_destroy(segment, tmp_path):
    fill(segment, 3)
    segment.write_indexes(fsync=False)
    segment.mark_deleted()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000100.index.deleted",
        "00000000000000000100.log.deleted",
        "00000000000000000100.timeindex.deleted",
    ]
    assert os.pread(segment.fd, 8, 0) != b""  # still readable
    segment.destroy()
    assert list(tmp_path.iterdir()) == []


def test_scans_agree(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG)
    fill(segment, 50)
    headers = list(iter_headers(segment.fd, 0, segment.size))
    offsets, times = OffsetIndex(tmp_path / "x", 0, 4096), TimeIndex(tmp_path / "y", 0, 4096)
    result = scan_and_index(segment.fd, segment.size, 0, 500, offsets, times, chunk_size=1000)
    assert result.error is None and result.valid_end == segment.size and result.next_offset == 100
    assert list(offsets.offsets) == list(segment.offset_index.offsets)
    assert list(times.timestamps) == list(segment.time_index.timestamps)
    assert some(find_batch_from(segment.fd, 0, segment.size, 51)).base_offset == 50
    middle = headers[10].position
    assert some(find_batch_from(segment.fd, middle, segment.size, 0)).position == middle
    with pytest.raises(InvalidBatchError):
        find_batch_from(segment.fd, middle, segment.size, 0, start_base=7)
    assert last_batch_end(segment.fd, 0, segment.size, headers[5].end + 10) == headers[5].end
    assert last_batch_end(segment.fd, 0, segment.size, 10**9) == segment.size
    with pytest.raises(InvalidBatchError):
        last_batch_end(segment.fd, 1, segment.size, 10**9)
    segment.close()


def test_scan_stops_at_a_bad_crc_and_an_offset_gap(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG)
    fill(segment, 5)
    headers = list(iter_headers(segment.fd, 0, segment.size))
    data = bytearray(os.pread(segment.fd, segment.size, 0))
    data[headers[3].position + 70] ^= 1
    os.pwrite(segment.fd, data, 0)
    result = scan_and_index(
        segment.fd, segment.size, 0, 500, OffsetIndex(tmp_path / "x", 0, 99), TimeIndex(tmp_path / "y", 0, 99)
    )
    assert (result.valid_end, result.next_offset, some(result.error).reason) == (
        headers[3].position,
        6,
        "CRC-32C mismatch",
    )
    result = scan_and_index(
        segment.fd, segment.size, 1, 500, OffsetIndex(tmp_path / "x", 1, 99), TimeIndex(tmp_path / "y", 1, 99)
    )
    assert result.valid_end == 0 and "expected 1" in some(result.error).reason
    segment.close()
