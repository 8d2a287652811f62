"""BatchRecords (one record of a batch, decoding only it) and BatchCache (least recently used out
first, bounded by bytes), on batches encoded as producers write them."""

from __future__ import annotations

import pytest

from kbroker.vq.batch_cache import CACHE_MIN_RECORDS, ENTRY_OVERHEAD, BatchCache, BatchRecords
from protocol import compression
from protocol.errors import InvalidRecordError
from protocol.record_builder import SimpleRecord, build_record_batch, encode_record
from protocol.records import Record, RecordBatch, read_record, record_positions


def encoded(base: int, count: int, codec: int = compression.NONE, **options: object) -> RecordBatch:
    records = [
        SimpleRecord(f"q{i}".encode(), b"v" * (i % 90) + f"-{i}".encode(), [("h", str(i).encode())], 1000 + i)
        for i in range(count)
    ]  # values from 2 to 94 bytes: one- and two-byte length prefixes
    return RecordBatch(build_record_batch(records, base_offset=base, compression_type=codec, **options))  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4, compression.ZSTD, compression.GZIP])
def test_each_record_read_alone_equals_the_whole_batch_decoded(codec: int) -> None:
    batch = encoded(500, 300, codec)
    records = BatchRecords(batch)
    assert records.count == 300 and records.offsets is None
    expected: dict[int, Record] = {r.offset: r for r in batch.records()}
    for offset in (*range(500, 800, 7), 799, 500):
        assert records.get(offset) == expected[offset]
    assert records.get(499) is None and records.get(800) is None


def test_log_append_time_gives_every_record_the_batch_time() -> None:
    records = BatchRecords(encoded(0, 20, log_append_time=77_777))
    record = records.get(13)
    assert record is not None and record.timestamp == 77_777 and record.value == b"v" * 13 + b"-13"


def test_a_batch_with_offset_gaps_is_looked_up_by_offset() -> None:
    # as the log cleaner leaves a batch: records 0, 2, 4 ... kept, last_offset_delta still the original's
    kept = [SimpleRecord(f"q{i}".encode(), f"v{i}".encode(), (), 1) for i in range(0, 40, 2)]
    raw = bytearray(build_record_batch(kept, base_offset=100))
    batch = RecordBatch(raw)
    records = BatchRecords(batch)  # count 20, deltas 0..19: dense as built
    assert records.get(119) is not None and records.get(120) is None
    # the same records with offset deltas 0, 2, 4, ...
    body = bytearray()
    for i, record in enumerate(kept):
        encode_record(body, record, 2 * i, 0)
    gapped = bytearray(raw[:61]) + body
    gapped[8:12] = (len(gapped) - 12).to_bytes(4, "big")
    gapped[23:27] = (38).to_bytes(4, "big")  # last_offset_delta 38, 20 records
    sparse = BatchRecords(RecordBatch(gapped))
    assert sparse.offsets is not None and list(sparse.offsets) == list(range(100, 140, 2))
    found = sparse.get(124)
    assert found is not None and found.value == b"v24"
    assert sparse.get(125) is None and sparse.get(140) is None


def test_positions_frame_the_records_section_exactly() -> None:
    batch = encoded(0, 50)
    data = batch.records_data()
    positions = record_positions(data, 50)
    assert positions[0] == 0 and positions[50] == len(data)
    one = read_record(data, positions[7], positions[8], 0, batch.base_timestamp, None)
    assert one.offset == 7
    with pytest.raises(InvalidRecordError):
        record_positions(data, 51)  # the data ends before the 51st
    with pytest.raises(InvalidRecordError):
        record_positions(data, 49)  # bytes left over
    with pytest.raises(InvalidRecordError):
        record_positions(data[:-1], 50)  # the last record runs past the end
    with pytest.raises(InvalidRecordError):
        read_record(data, positions[7], positions[9], 0, 0, None)  # not where the record ends


def test_least_recently_used_goes_first_within_the_byte_bound() -> None:
    a, b, c = (BatchRecords(encoded(base, 40)) for base in (0, 1000, 2000))
    cache = BatchCache(max_bytes=a.size + b.size + 10)
    cache.put((b"t", 0, 0, 1, 1), a)
    cache.put((b"t", 0, 1000, 1, 1), b)
    assert cache.get((b"t", 0, 0, 1, 1)) is a  # now the most recently used
    cache.put((b"t", 0, 2000, 1, 1), c)  # over the bound: the least recently used goes
    assert cache.get((b"t", 0, 1000, 1, 1)) is None
    assert cache.get((b"t", 0, 0, 1, 1)) is a and cache.get((b"t", 0, 2000, 1, 1)) is c
    assert cache.bytes == a.size + c.size <= cache.max_bytes
    assert a.size > len(a.data) + 4 * 41 + ENTRY_OVERHEAD - 1


def test_small_batches_are_not_kept_a_large_one_alone_and_keys_differ_by_crc() -> None:
    small = BatchRecords(encoded(0, CACHE_MIN_RECORDS - 1))
    cache = BatchCache(max_bytes=10_000)
    cache.put((b"t", 0, 0, 1, 1), small)
    assert cache.get((b"t", 0, 0, 1, 1)) is None and len(cache) == 0
    cache.put((b"t", 0, 100, 1, 1), BatchRecords(encoded(100, 20)))
    large = BatchRecords(encoded(0, 400))
    assert large.size > 10_000
    cache.put((b"t", 1, 0, 1, 1), large)  # larger than the bound: kept alone
    assert len(cache) == 1 and cache.get((b"t", 1, 0, 1, 1)) is large
    assert cache.get((b"t", 1, 0, 1, 2)) is None  # another CRC at the same offset: another batch
