"""The record walk (protocol/record_walk.py) against the full record decoder, on good and broken records.

The walk must reach the decoder's verdict on every input (both follow Kafka's DefaultRecord rules), and
its summary must describe the records the decoder returns: the run path (records of one shape, checked
with strided slices) and the loop path alike.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import record_walk
from protocol.errors import InvalidRecordError
from protocol.primitives import write_varint
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.record_walk import RUN_MIN, walk_records
from protocol.records import RecordBatch
from tests.protocol.records_helpers import raw_record, zigzag

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _records_section(records: list[SimpleRecord]) -> tuple[bytes, int]:
    batch = RecordBatch(build_record_batch(records))
    return bytes(batch.records_view()), batch.records_count


def _decoded(data: bytes, count: int) -> list[tuple[int, int, bool]] | None:
    """(offset delta, timestamp delta, key is null) of each record as the decoder reads them, or None."""
    body = bytearray(61) + data  # a header the decoder ignores apart from counts and timestamps
    body[16] = 2
    body[8:12] = (len(body) - 12).to_bytes(4, "big")
    body[57:61] = count.to_bytes(4, "big", signed=True)
    try:
        return [(r.offset, r.timestamp, r.key is None) for r in RecordBatch(bytes(body)).records()]
    except InvalidRecordError:
        return None


def _check_agrees(data: bytes, count: int) -> None:
    expected = _decoded(data, count)
    in_place = memoryview(bytearray(b"\xff" + data + b"\x00\xff"))[1 : 1 + len(data)]  # as in a request frame
    try:
        summary = walk_records(data, count)
    except InvalidRecordError:
        assert expected is None, "the walk refused records the decoder reads"
        with pytest.raises(InvalidRecordError):
            walk_records(in_place, count)
        return
    assert walk_records(in_place, count) == summary
    assert expected is not None, "the walk accepted records the decoder refuses"
    assert summary.records == count == len(expected)
    assert summary.null_keys == sum(null for _, _, null in expected)
    assert summary.offsets_in_order == all(offset == i for i, (offset, _, _) in enumerate(expected))
    for _, delta, _ in expected:
        assert summary.min_timestamp_delta <= delta <= summary.max_timestamp_delta


record_strategy = st.builds(
    SimpleRecord,
    key=st.one_of(st.none(), st.binary(max_size=70)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
    timestamp=st.integers(-(2**40), 2**40),
)


@SETTINGS
@given(st.lists(record_strategy, min_size=1, max_size=40))
def test_varied_records_agree_with_the_decoder(records: list[SimpleRecord]) -> None:
    data, count = _records_section(records)
    _check_agrees(data, count)


@SETTINGS
@given(
    count=st.integers(1, 400),
    key_size=st.integers(-1, 200),
    value_size=st.integers(-1, 9000),
    step=st.sampled_from([0, 1, 7, 100]),
    odd=st.lists(st.integers(0, 399), max_size=3),
)
def test_uniform_records_agree_with_the_decoder(
    count: int, key_size: int, value_size: int, step: int, odd: list[int]
) -> None:
    """Records of one shape (the run path), with a few of another size or with headers among them."""
    key = None if key_size < 0 else b"k" * key_size
    value = None if value_size < 0 else b"v" * value_size
    records = [SimpleRecord(key, value, (), 1_000_000 + i * step) for i in range(count)]
    for i in odd:
        if i < count:
            records[i] = SimpleRecord(key, (value or b"") + b"x", (("h", b"1"),) if i % 2 else (), records[i].timestamp)
    data, count = _records_section(records)
    _check_agrees(data, count)


@SETTINGS
@given(
    count=st.integers(RUN_MIN, 300),
    value_size=st.integers(0, 300),
    position=st.integers(0, 10**9),
    byte=st.integers(0, 255),
    cut=st.integers(0, 3),
)
def test_broken_uniform_records_agree_with_the_decoder(
    count: int, value_size: int, position: int, byte: int, cut: int
) -> None:
    data, count = _records_section([SimpleRecord(None, b"v" * value_size, (), 5 + i) for i in range(count)])
    broken = bytearray(data)
    broken[position % len(broken)] = byte
    _check_agrees(bytes(broken[: len(broken) - cut]), count)
    _check_agrees(data, count + (cut - 1))  # a count that lies (or does not)


@SETTINGS
@given(st.lists(record_strategy, min_size=1, max_size=12), st.binary(min_size=1, max_size=8), st.integers(0, 10**9))
def test_spliced_bytes_agree_with_the_decoder(records: list[SimpleRecord], junk: bytes, position: int) -> None:
    data, count = _records_section(records)
    at = position % (len(data) + 1)
    _check_agrees(data[:at] + junk + data[at:], count)
    _check_agrees(data[:at] + data[at + len(junk) :], count)


def test_offset_delta_tables_match_the_encoder() -> None:
    for width, (first, end) in record_walk._OFFSET_CLASSES.items():
        for byte in range(width):
            table = record_walk._offset_delta_bytes(width, byte)
            assert len(table) == end - first
            for index in (first, first + 1, (first + end) // 2, end - 1):
                out = bytearray()
                write_varint(out, index)
                assert len(out) == width and out[byte] == table[index - first]


def test_runs_cover_uniform_records() -> None:
    """A batch of equal records goes through runs (the loop would walk only the last few)."""
    data, count = _records_section([SimpleRecord(None, b"v" * 100, (), 7) for _ in range(9000)])
    walked = []
    loop = record_walk._walk_loop

    def spy(data: bytes, pos: int, first: int, stop: int) -> tuple[int, int, int, int, bool]:
        walked.append(stop - first)
        return loop(data, pos, first, stop)

    record_walk._walk_loop = spy  # type: ignore[assignment]
    try:
        summary = walk_records(data, count)
    finally:
        record_walk._walk_loop = loop  # type: ignore[assignment]
    assert summary.null_keys == 9000 and summary.offsets_in_order
    assert sum(walked) == 0


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (raw_record() + raw_record(offset_delta=1), 3),  # count says more
        (raw_record() + raw_record(offset_delta=1), 1),  # count says fewer
        (zigzag(9) + b"\x00\x00" + b"\xff" * 6 + b"\x00", 1),  # a varint of 6 bytes
        (zigzag(8) + b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(-1) + b"\x01", 1),  # negative header key size
        (zigzag(6) + b"\x00\x00\x00\x01\x01" + zigzag(-1), 1),  # negative header count
    ],
)
def test_malformed_records_are_refused(body: bytes, count: int) -> None:
    with pytest.raises(InvalidRecordError):
        walk_records(body, count)


def test_kafka_reads_negative_lengths_as_null() -> None:
    body = zigzag(6) + b"\x00\x00\x00" + zigzag(-5) + zigzag(-9) + b"\x00"
    assert walk_records(body, 1).null_keys == 1
