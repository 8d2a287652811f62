"""Pure parts of the command-line client: the partitioner hash, templates, assignments, stdin chunks, parsing."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kbroker.cli.consume import as_json, render
from kbroker.cli.group import parse_datetime_ms
from kbroker.cli.produce import stdin_chunks
from kbroker.client.cluster import parse_bootstrap
from kbroker.client.consume import Consumed, complete_batches
from kbroker.client.groups import decode_assignment
from kbroker.client.produce import murmur2, partition_for_key
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import Header, Record


@given(st.binary(max_size=64))
def test_murmur2_is_kafkas(data: bytes) -> None:
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF  # ours is signed, as Java's


def test_known_partitions_of_kafkas_default_partitioner() -> None:
    # Values from Kafka's Java client (Utils.toPositive(Utils.murmur2(key)) % 3), also asserted by kafka-python.
    assert [partition_for_key(k, 3) for k in (b"a", b"b", b"c", b"key-1")] == [
        (kafka_python_murmur2(k) & 0x7FFFFFFF) % 3 for k in (b"a", b"b", b"c", b"key-1")
    ]


def _consumed(**fields: object) -> Consumed:
    record = Record(
        offset=7,
        timestamp=1700000000123,
        key=b"k",
        value=b"v\xff",
        headers=[Header("h1", b"x"), Header("h2", None)],
    )
    return Consumed("orders", 2, record)


def test_template_placeholders_and_escapes() -> None:
    out = render(b"%t|%p|%o|%k|%v|%T|%h|%%|\\t|\\\\\\n", _consumed())
    assert out == b"orders|2|7|k|v\xff|1700000000123|h1=x,h2=|%|\t|\\\n"


def test_json_output_marks_bytes_that_are_not_text() -> None:
    import json

    doc = json.loads(as_json(_consumed()))
    assert doc["key"] == "k" and doc["value_base64"] == "dv8=" and "value" not in doc
    assert doc["headers"] == [{"key": "h1", "value": "x"}, {"key": "h2", "value": None}]
    assert (doc["topic"], doc["partition"], doc["offset"], doc["timestamp"]) == ("orders", 2, 7, 1700000000123)


def test_consumer_protocol_assignment_decodes() -> None:
    def string(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    data = struct.pack(">hi", 1, 2) + string("a") + struct.pack(">iii", 2, 3, 1) + string("b") + struct.pack(">i", 0)
    assert decode_assignment(data + struct.pack(">i", -1)) == {"a": [1, 3], "b": []}
    assert decode_assignment(b"") == {}


def test_a_fetch_answer_cut_inside_its_last_batch_yields_the_whole_ones() -> None:
    first = build_record_batch([SimpleRecord(b"k", b"v")], base_offset=0)
    second = build_record_batch([SimpleRecord(b"k", b"w")], base_offset=1)
    batches = list(complete_batches(first + second[:-5]))
    assert [b.base_offset for b in batches] == [0]


def test_stdin_is_read_in_chunks_of_available_lines() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"a\r\nb\n\nc")
    os.close(write_fd)
    try:
        assert [line for chunk in stdin_chunks(read_fd) for line in chunk] == [b"a", b"b", b"", b"c"]
    finally:
        os.close(read_fd)


def test_bootstrap_lists_and_datetimes_parse() -> None:
    assert parse_bootstrap("h1:1, h2 ,[::1]:3") == [("h1", 1), ("h2", 9092), ("::1", 3)]
    with pytest.raises(ValueError):
        parse_bootstrap("h:x")
    assert parse_datetime_ms("2026-11-23T12:00:00.000Z") == 1795435200000
    assert parse_datetime_ms("2026-11-23T13:00:00+01:00") == 1795435200000
