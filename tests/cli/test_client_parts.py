"""Pure parts of the command-line client: the partitioner hash, templates, assignments, stdin chunks, parsing."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

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


def test_stdin_chunks_stay_under_the_record_and_byte_limits() -> None:
    from kbroker.cli import produce

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # a writer, so the pipe may hold more than its buffer
        os.close(read_fd)
        os.write(write_fd, b"x\n" * 2500 + (b"y" * 200_000 + b"\n") * 6)
        os._exit(0)
    os.close(write_fd)
    try:
        chunks = list(stdin_chunks(read_fd))
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    assert sum(len(c) for c in chunks) == 2506
    assert all(len(c) <= produce.MAX_BATCH_RECORDS for c in chunks)
    assert all(sum(map(len, c)) <= produce.MAX_BATCH_BYTES or len(c) == 1 for c in chunks)


def test_bootstrap_lists_and_datetimes_parse() -> None:
    assert parse_bootstrap("h1:1, h2 ,[::1]:3") == [("h1", 1), ("h2", 9092), ("::1", 3)]
    with pytest.raises(ValueError):
        parse_bootstrap("h:x")
    assert parse_datetime_ms("2026-11-23T12:00:00.000Z") == 1795435200000
    assert parse_datetime_ms("2026-11-23T13:00:00+01:00") == 1795435200000


_IMPORT_PROBE = """
import sys
from kbroker.cli import build_parser
args = build_parser().parse_args(sys.argv[1:])
if args.command == "serve":
    from kbroker.cli.serve import load_config
    load_config(args)
else:
    import kbroker.client.admin, kbroker.client.groups, kbroker.client.produce  # what client commands run on
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in ("asyncio", "structlog", "uvloop", "kbroker"))))
"""


def _loaded(*argv: str) -> set[str]:
    from tests.process import REPO

    environ = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, *argv], capture_output=True, text=True, env=environ)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_client_commands_do_not_load_the_broker_and_serve_does_not_load_the_client() -> None:
    client = _loaded("topic", "list")
    assert not {m for m in client if m.split(".")[0] in ("asyncio", "structlog", "uvloop")}, client
    assert not {"kbroker.server", "kbroker.config", "kbroker.logs", "kbroker.broker"} & client
    serve = _loaded("serve")
    assert "kbroker.config" in serve and not {m for m in serve if m.startswith("kbroker.client")}, serve


def test_range_assignment_as_kafkas_range_assignor() -> None:
    from kbroker.client.membership import range_assign

    subscriptions = {"m-b": ["t", "u"], "m-a": ["t"], "m-c": ["t", "u"]}
    assert range_assign(subscriptions, {"t": 7, "u": 1}) == {
        "m-a": {"t": [0, 1, 2]},
        "m-b": {"t": [3, 4], "u": [0]},
        "m-c": {"t": [5, 6], "u": []},
    }


def test_consumer_protocol_subscription_and_assignment_round_trip() -> None:
    from kbroker.client.membership import decode_subscription, encode_assignment, encode_subscription

    assert decode_subscription(encode_subscription(["a", "bb"])) == ["a", "bb"]
    assert decode_assignment(encode_assignment({"a": [2, 0], "b": []})) == {"a": [0, 2], "b": []}
