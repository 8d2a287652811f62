"""Sample records and third-party batch builders for the record batch tests."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c
import pytest
from kafka import codec as kafka_python_codec

from protocol.records import HEADER, HEADER_SIZE, LOG_OVERHEAD

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True)
class Sample:
    """One record as a test writes it: offset delta, timestamp, key, value, headers."""

    offset_delta: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


BASE_TIMESTAMP = 1_700_000_000_000

SAMPLES = [
    Sample(0, BASE_TIMESTAMP, b"key-0", b"value-0", []),
    Sample(1, BASE_TIMESTAMP + 5, None, b"no key", [("trace", b"abc")]),
    Sample(2, BASE_TIMESTAMP - 3, b"no value", None, [("null", None), ("", b"")]),
    Sample(3, BASE_TIMESTAMP + 1_000_000, b"", b"", [("h\u00e9", b"\x00\xff" * 3), ("dup", b"1"), ("dup", b"2")]),
    Sample(4, BASE_TIMESTAMP + 7, None, None, []),
    Sample(5, BASE_TIMESTAMP + 8, b"k" * 300, bytes(range(256)) * 400, [("big", b"v" * 200)]),
]


def require_kafka_python_codec(codec_name: str) -> None:
    """Skip when kafka-python lacks the optional library for a codec (lz4, zstandard, python-snappy)."""
    available = {
        "none": True,
        "gzip": kafka_python_codec.has_gzip(),
        "snappy": kafka_python_codec.has_snappy(),
        "lz4": kafka_python_codec.has_lz4(),
        "zstd": kafka_python_codec.has_zstd(),
    }
    if not available[codec_name]:
        pytest.skip(f"kafka-python has no {codec_name} library installed")


def expected(samples: list[Sample], base_offset: int) -> list[tuple[int, int, bytes | None, bytes | None, list]]:
    return [(base_offset + s.offset_delta, s.timestamp, s.key, s.value, s.headers) for s in samples]


def as_tuples(records: object) -> list[tuple[int, int, bytes | None, bytes | None, list]]:
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]  # type: ignore[attr-defined]


def build_with(builder_class: type, codec: int, samples: list[Sample], **producer: int) -> bytes:
    """Build a batch with a kafka-python/aiokafka style DefaultRecordBatchBuilder."""
    builder = builder_class(
        magic=2,
        compression_type=codec,
        is_transactional=producer.get("is_transactional", 0),
        producer_id=producer.get("producer_id", -1),
        producer_epoch=producer.get("producer_epoch", -1),
        base_sequence=producer.get("base_sequence", -1),
        batch_size=1 << 30,
    )
    for sample in samples:
        metadata = builder.append(sample.offset_delta, sample.timestamp, sample.key, sample.value, sample.headers)
        assert metadata is not None
    return bytes(builder.build())


def batch_with_body(
    body: bytes, records_count: int, attributes: int = 0, base_offset: int = 0, base_timestamp: int = 0
) -> bytearray:
    """A batch around a hand-made records section, with a correct CRC."""
    batch = bytearray(HEADER_SIZE) + body
    HEADER.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        0,
        2,
        0,
        attributes,
        max(records_count - 1, 0),
        base_timestamp,
        base_timestamp,
        -1,
        -1,
        -1,
        records_count,
    )
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def zigzag(value: int) -> bytes:
    """Encode a zigzag varint independently of the builder under test."""
    raw = (value << 1) if value >= 0 else ((-value) << 1) - 1
    out = bytearray()
    while True:
        if raw < 0x80:
            out.append(raw)
            return bytes(out)
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7


def raw_record(
    *, timestamp_delta: int = 0, offset_delta: int = 0, key: bytes | None = b"k", value: bytes | None = b"v"
) -> bytes:
    """A record's bytes written field by field, for malformed-input tests."""
    body = b"\x00" + zigzag(timestamp_delta) + zigzag(offset_delta)
    body += zigzag(-1) if key is None else zigzag(len(key)) + key
    body += zigzag(-1) if value is None else zigzag(len(value)) + value
    body += zigzag(0)
    return zigzag(len(body)) + body
