"""Record batch v2: decoding third-party batches, our builder, CRC, rewrites, malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from protocol.compression import CompressionError, DecompressedSizeError
from protocol.errors import CorruptRecordError, InvalidRecordError
from protocol.primitives import write_varint
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import (
    CRC_START,
    HEADER_SIZE,
    ControlRecordType,
    EndTransactionMarker,
    RecordBatch,
    TimestampAndOffset,
    iter_batches,
    parse_control_record_key,
    parse_end_transaction_value,
)
from tests.protocol.records_helpers import (
    CODECS,
    SAMPLES,
    as_tuples,
    batch_with_body,
    build_with,
    expected,
    raw_record,
    require_kafka_python_codec,
    zigzag,
)

PRODUCER = {"producer_id": 4242, "producer_epoch": 3, "base_sequence": 17}


def _aiokafka_builders() -> list[tuple[str, type]]:
    try:
        from aiokafka.record import default_records
    except ImportError:
        return []
    builders = [("aiokafka-py", default_records._DefaultRecordBatchBuilderPy)]
    if default_records.DefaultRecordBatchBuilder is not default_records._DefaultRecordBatchBuilderPy:
        builders.append(("aiokafka-c", default_records.DefaultRecordBatchBuilder))
    return builders


THIRD_PARTY_BUILDERS = [("kafka-python", KafkaPythonBuilder), *_aiokafka_builders()]


def _our_batch(codec: int, **kwargs: object) -> bytes:
    records = [SimpleRecord(s.key, s.value, s.headers, s.timestamp, s.offset_delta) for s in SAMPLES]
    return build_record_batch(records, compression_type=codec, **kwargs)  # type: ignore[arg-type]


# -- decoding batches built by other clients -------------------------------------


@pytest.mark.parametrize("codec_name", list(CODECS))
@pytest.mark.parametrize(("builder_name", "builder"), THIRD_PARTY_BUILDERS, ids=[n for n, _ in THIRD_PARTY_BUILDERS])
def test_decodes_third_party_batch(builder_name: str, builder: type, codec_name: str) -> None:
    if builder is KafkaPythonBuilder:
        require_kafka_python_codec(codec_name)
    codec = CODECS[codec_name]
    data = build_with(builder, codec, SAMPLES, **PRODUCER)
    batch = RecordBatch(data)
    batch.verify()
    assert batch.size == len(data)
    assert batch.compression == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 17)
    assert batch.records_count == len(SAMPLES)
    assert batch.last_offset_delta == SAMPLES[-1].offset_delta
    assert batch.base_timestamp == SAMPLES[0].timestamp
    assert batch.max_timestamp == max(s.timestamp for s in SAMPLES)
    assert not batch.is_transactional and not batch.is_control and not batch.is_log_append_time
    assert as_tuples(batch.records()) == expected(SAMPLES, 0)


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_base_offset_and_leader_epoch_rewrite_keep_crc(codec_name: str) -> None:
    require_kafka_python_codec(codec_name)
    buffer = bytearray(build_with(KafkaPythonBuilder, CODECS[codec_name], SAMPLES))
    batch = RecordBatch(buffer)
    batch.set_base_offset(1_000_000_007)
    batch.set_partition_leader_epoch(12)
    reread = RecordBatch(buffer)
    reread.verify()
    assert (reread.base_offset, reread.partition_leader_epoch) == (1_000_000_007, 12)
    assert reread.last_offset == 1_000_000_007 + SAMPLES[-1].offset_delta
    assert as_tuples(reread.records()) == expected(SAMPLES, 1_000_000_007)


# -- our builder, checked by other clients' decoders --------------------------


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_our_batches_decode_in_kafka_python(codec_name: str) -> None:
    require_kafka_python_codec(codec_name)
    data = _our_batch(CODECS[codec_name], base_offset=50, is_transactional=True, **PRODUCER)
    theirs = KafkaPythonBatch(bytearray(data))
    assert theirs.validate_crc()
    assert theirs.is_transactional and theirs.producer_id == 4242 and theirs.base_sequence == 17
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert decoded == expected(SAMPLES, 50)


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_our_batches_decode_in_aiokafka(codec_name: str) -> None:
    default_records = pytest.importorskip("aiokafka.record.default_records")
    data = _our_batch(CODECS[codec_name], base_offset=7)
    theirs = default_records.DefaultRecordBatch(bytearray(data))
    assert theirs.validate_crc()
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert decoded == expected(SAMPLES, 7)


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_our_batches_round_trip(codec_name: str) -> None:
    data = _our_batch(CODECS[codec_name], base_offset=3, partition_leader_epoch=9, **PRODUCER)
    batch = RecordBatch(data)
    batch.verify()
    assert batch.partition_leader_epoch == 9
    assert batch.last_sequence == 17 + SAMPLES[-1].offset_delta
    assert as_tuples(batch.records()) == expected(SAMPLES, 3)


def test_empty_batch() -> None:
    batch = RecordBatch(build_record_batch([]))
    batch.verify()
    assert batch.records_count == 0 and list(batch.records()) == []


def test_iter_batches_over_concatenation() -> None:
    first = _our_batch(0, base_offset=0)
    second = _our_batch(CODECS["zstd"], base_offset=6)
    batches = list(iter_batches(first + second))
    assert [b.base_offset for b in batches] == [0, 6]
    assert as_tuples(batches[1].records()) == expected(SAMPLES, 6)


@pytest.mark.parametrize(
    ("value", "encoded"), [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")]
)
def test_zigzag_varint_encoding(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded == zigzag(value)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_timestamp_deltas_round_trip(delta: int) -> None:
    base = 0 if delta >= 0 else 2**62  # keep both timestamps in int64
    records = [SimpleRecord(b"a", b"b", (), base), SimpleRecord(b"c", None, (), base + delta // 2)]
    batch = RecordBatch(build_record_batch(records))
    assert [r.timestamp for r in batch.records()] == [base, base + delta // 2]


# -- CRC --------------------------------------------------------------------------


@pytest.mark.parametrize("codec_name", ["none", "gzip", "lz4"])
def test_any_flipped_byte_in_crc_region_fails_verify(codec_name: str) -> None:
    require_kafka_python_codec(codec_name)
    samples = SAMPLES[:3]
    data = build_with(KafkaPythonBuilder, CODECS[codec_name], samples)
    RecordBatch(data).verify()
    for position in range(CRC_START, len(data)):
        for flip in (0x01, 0x80):
            corrupt = bytearray(data)
            corrupt[position] ^= flip
            batch = RecordBatch(corrupt)
            assert not batch.is_valid(), position
            with pytest.raises(CorruptRecordError):
                batch.verify()


def test_flipped_crc_field_fails_verify() -> None:
    data = bytearray(_our_batch(0))
    data[17] ^= 0x10
    with pytest.raises(CorruptRecordError):
        RecordBatch(data).verify()


# -- LogAppendTime -------------------------------------------------------------


@pytest.mark.parametrize("codec_name", ["none", "snappy"])
def test_set_log_append_time_rewrites_crc(codec_name: str) -> None:
    require_kafka_python_codec(codec_name)
    buffer = bytearray(b"\xaa" * 5 + build_with(KafkaPythonBuilder, CODECS[codec_name], SAMPLES, **PRODUCER))
    batch = RecordBatch(buffer, 5)
    batch.set_log_append_time(1_800_000_000_123)
    assert batch.is_log_append_time and batch.compression == CODECS[codec_name]
    assert buffer[:5] == b"\xaa" * 5
    reread = RecordBatch(buffer, 5)
    reread.verify()
    assert reread.max_timestamp == 1_800_000_000_123 and reread.is_log_append_time
    assert reread.base_timestamp == SAMPLES[0].timestamp
    assert all(r.timestamp == 1_800_000_000_123 for r in reread.records())
    theirs = KafkaPythonBatch(buffer[5:])
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert {r.timestamp for r in theirs} == {1_800_000_000_123}


def test_builder_log_append_time() -> None:
    data = build_record_batch([SimpleRecord(b"k", b"v", (), 5)], log_append_time=99)
    batch = RecordBatch(data)
    batch.verify()
    assert batch.is_log_append_time and batch.max_timestamp == 99
    assert [r.timestamp for r in batch.records()] == [99]


# -- ListOffsets by timestamp -------------------------------------------------------


@pytest.mark.parametrize("codec_name", ["none", "zstd"])
@pytest.mark.parametrize(
    ("target", "found"),
    [(0, (100, 10)), (100, (100, 10)), (101, (200, 12)), (150, (200, 12)), (200, (200, 12)), (201, None)],
)
def test_find_offset_by_timestamp(codec_name: str, target: int, found: tuple[int, int] | None) -> None:
    timestamps = [100, 50, 200, 150]
    records = [SimpleRecord(b"k", b"v", (), ts) for ts in timestamps]
    batch = RecordBatch(build_record_batch(records, base_offset=10, compression_type=CODECS[codec_name]))
    result = batch.find_offset_by_timestamp(target)
    assert result == (TimestampAndOffset(*found) if found else None)


def test_find_offset_by_timestamp_log_append_time() -> None:
    records = [SimpleRecord(b"k", b"v", (), 1, offset_delta=2), SimpleRecord(b"k", b"v", (), 2, offset_delta=3)]
    batch = RecordBatch(build_record_batch(records, base_offset=40, log_append_time=500))
    assert batch.find_offset_by_timestamp(300) == TimestampAndOffset(500, 42)
    assert batch.find_offset_by_timestamp(501) is None


# -- control batches --------------------------------------------------------------


@pytest.mark.parametrize("marker", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(marker: ControlRecordType) -> None:
    data = build_control_batch(
        marker, producer_id=77, producer_epoch=4, coordinator_epoch=6, timestamp=1234, base_offset=90
    )
    batch = RecordBatch(data)
    batch.verify()
    assert batch.is_control and batch.is_transactional and batch.compression == 0
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 4, -1)
    assert batch.end_transaction_marker() == EndTransactionMarker(marker, 6, 90)
    (record,) = batch.records()
    assert parse_control_record_key(record.key) == (0, int(marker))
    assert parse_end_transaction_value(record.value) == (0, 6)
    # kafka-python's own reader agrees
    theirs = KafkaPythonBatch(bytearray(data))
    assert theirs.validate_crc() and theirs.is_control_batch
    (control,) = list(theirs)
    assert control.type == int(marker) and control.offset == 90


def test_end_transaction_marker_accepts_newer_value_versions() -> None:
    key = struct.pack(">hh", 1, 0)
    value = struct.pack(">hi", 1, 8) + b"\x00"  # trailing bytes of a later version
    data = build_record_batch([SimpleRecord(key, value, (), 1)], is_control=True, is_transactional=True)
    assert RecordBatch(data).end_transaction_marker() == EndTransactionMarker(ControlRecordType.ABORT, 8, 0)


@pytest.mark.parametrize(
    ("key", "value"),
    [(None, b"\x00\x00\x00\x00\x00\x01"), (b"\x00", b"\x00\x00\x00\x00\x00\x01"), (b"\x00\x00\x00\x01", b"\x00\x00")],
)
def test_malformed_control_records(key: bytes | None, value: bytes) -> None:
    data = build_record_batch([SimpleRecord(key, value, (), 1)], is_control=True, is_transactional=True)
    with pytest.raises(InvalidRecordError):
        RecordBatch(data).end_transaction_marker()


def test_end_transaction_marker_rejects_other_batches() -> None:
    with pytest.raises(InvalidRecordError):
        RecordBatch(_our_batch(0)).end_transaction_marker()
    leader_change = build_record_batch([SimpleRecord(struct.pack(">hh", 0, 2), b"\x00" * 8, (), 1)], is_control=True)
    with pytest.raises(InvalidRecordError):
        RecordBatch(leader_change).end_transaction_marker()


# -- malformed records ------------------------------------------------------------


MALFORMED = {
    "truncated record": (raw_record()[:-1], 1),
    "record length past the end": (zigzag(50) + raw_record()[1:], 1),
    "zero record length": (zigzag(0), 1),
    "negative record length": (zigzag(-5) + b"\x00" * 8, 1),
    "fewer records than counted": (raw_record(), 2),
    "huge record count": (raw_record(), 2**31 - 1),
    "negative record count": (raw_record(), -1),
    "bytes after the last record": (raw_record() + b"\x00", 1),
    "key length past record": (zigzag(5) + b"\x00\x00\x00" + zigzag(40) + b"\x00", 1),
    "varint too long": (zigzag(9) + b"\x00\x00" + b"\xff" * 6 + b"\x00", 1),
    "varlong too long": (zigzag(14) + b"\x00" + b"\xff" * 11 + b"\x00\x00", 1),
    "huge header count": (zigzag(10) + b"\x00\x00\x00\x01\x01" + zigzag(2**30), 1),
    "negative header key length": (zigzag(8) + b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(-1) + b"\x01", 1),
    "fields end before record length": (zigzag(7) + b"\x00\x00\x00\x01\x01\x00\x00", 1),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_records_raise(name: str) -> None:
    body, count = MALFORMED[name]
    batch = RecordBatch(batch_with_body(body, count))
    batch.verify()  # the CRC is fine: only the records are broken
    with pytest.raises(InvalidRecordError):
        list(batch.records())


def test_records_read_as_kafka_reads_them() -> None:
    """Java's DefaultRecord: any negative key or value length is null, header keys are not checked for UTF-8
    (Java's String replaces malformed bytes), a five-byte varint wraps to 32 bits."""
    negative = zigzag(6) + b"\x00\x00\x00" + zigzag(-2) + zigzag(-7) + b"\x00"
    (record,) = RecordBatch(batch_with_body(negative, 1)).records()
    assert (record.key, record.value) == (None, None)
    header = b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(2) + b"\xff\xfe" + zigzag(-1)
    (record,) = RecordBatch(batch_with_body(zigzag(len(header)) + header, 1)).records()
    assert record.headers == [("\ufffd\ufffd", None)]
    wrapped = b"\x00\x00" + b"\xfe\xff\xff\xff\x7f" + b"\x01\x01\x00"  # offset delta: Java keeps 32 bits, 2**31 - 1
    (record,) = RecordBatch(batch_with_body(zigzag(len(wrapped)) + wrapped, 1, base_offset=100)).records()
    assert record.offset == 100 + 2147483647


def test_hand_written_record_decodes() -> None:
    body = raw_record(timestamp_delta=-5, offset_delta=3, key=None, value=b"x")
    batch = RecordBatch(batch_with_body(body, 1, base_offset=10, base_timestamp=100))
    assert as_tuples(batch.records()) == [(13, 95, None, b"x", [])]


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_raises(codec: int) -> None:
    batch = RecordBatch(batch_with_body(raw_record(), 1, attributes=codec))
    with pytest.raises(CompressionError):
        list(batch.records())


def test_corrupt_compressed_records_raise() -> None:
    batch = RecordBatch(batch_with_body(b"\x1f\x8b\x08\x00garbage", 1, attributes=1))
    with pytest.raises(CompressionError):
        list(batch.records())


def test_records_decompression_is_capped() -> None:
    records = [SimpleRecord(None, b"\x00" * 100_000, (), 1) for _ in range(20)]
    batch = RecordBatch(build_record_batch(records, compression_type=CODECS["gzip"]))
    assert len(batch.records_data()) > 2_000_000
    with pytest.raises(DecompressedSizeError):
        list(batch.records(max_decompressed_size=1_000_000))


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00" * 60, bytes(HEADER_SIZE), b"\x00" * 8 + struct.pack(">i", 10) + b"\x00" * 60],
)
def test_malformed_headers_raise(data: bytes) -> None:
    with pytest.raises(InvalidRecordError):
        RecordBatch(data)


# -- fuzzing -----------------------------------------------------------------------------


def _decode_everything(data: bytes | bytearray) -> None:
    try:
        for batch in iter_batches(data):
            batch.is_valid()
            list(batch.records(max_decompressed_size=1 << 20))
            batch.find_offset_by_timestamp(0)
            if batch.is_control:
                batch.end_transaction_marker()
    except InvalidRecordError:
        pass


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _decode_everything(data)


@FUZZ
@given(
    body=st.binary(max_size=300),
    count=st.integers(-3, 2**31 - 1) | st.integers(0, 5),
    attributes=st.integers(0, 0x7F),
)
def test_fuzz_valid_header_arbitrary_records(body: bytes, count: int, attributes: int) -> None:
    _decode_everything(batch_with_body(body, count, attributes=attributes))


_SEEDS = [_our_batch(codec) for codec in range(5)] + [
    build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=0)
]


@FUZZ
@given(
    seed=st.sampled_from(_SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 2**20),
)
def test_fuzz_mutated_batches(seed: bytes, edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(seed)
    for position, value in edits:
        # Skip the magic byte (16) so mutations reach the records; now and then
        # hit the length and leader epoch (8..15) instead.
        index = 17 + position % (len(data) - 17) if position % 3 else 8 + position % 8
        data[index] = value
    if cut % 4 == 0:
        del data[cut % len(data) :]
    _decode_everything(data)
