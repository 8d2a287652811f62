"""Every declared (API, version): encode then decode gives the value back; the decoder only ever raises DecodeError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codec import decode, default_value, encode
from protocol.primitives import DecodeError
from protocol.schema import REQUESTS, RESPONSES
from protocol.schema.types import Message
from tests.protocol.kp_compat import normalise
from tests.protocol.strategies import struct_value
from tests.protocol.test_schema_parity import assert_round_trip

CASES = [
    pytest.param(message, version, id=f"{message.name}-v{version}")
    for table in (REQUESTS, RESPONSES)
    for message in sorted(table.values(), key=lambda m: m.api_key)
    for version in range(message.valid.low, message.valid.high + 1)
]

FAST = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.parametrize(("message", "version"), CASES)
def test_round_trip(message: Message, version: int) -> None:
    flexible = message.is_flexible(version)

    @FAST
    @given(struct_value(message, version))
    def check(value: dict) -> None:
        data = encode(message, version, value)
        decoded = decode(message, version, data, exact=True)
        assert_round_trip(message.fields, version, flexible, value, decoded)
        assert encode(message, version, decoded) == data

    check()


@pytest.mark.parametrize(("message", "version"), CASES)
def test_decoder_only_raises_decode_error(message: Message, version: int) -> None:
    """Random bytes, and valid encodings cut short or with a byte changed, never escape as another exception."""

    @FAST
    @given(st.binary(max_size=64))
    def random_bytes(data: bytes) -> None:
        try:
            decode(message, version, data)
        except DecodeError:
            pass

    @FAST
    @given(struct_value(message, version), st.data())
    def damaged(value: dict, data: st.DataObject) -> None:
        encoded = bytearray(encode(message, version, value))
        if not encoded:
            return
        cut = data.draw(st.integers(0, len(encoded) - 1))
        flip_at = data.draw(st.integers(0, len(encoded) - 1))
        flipped = bytearray(encoded)
        flipped[flip_at] ^= data.draw(st.integers(1, 255))
        for candidate in (encoded[:cut], flipped):
            try:
                decode(message, version, bytes(candidate))
            except DecodeError:
                pass

    random_bytes()
    damaged()


def test_defaults_fill_every_field() -> None:
    message = RESPONSES[18]
    value = default_value(message, 3)
    assert value["finalized_features_epoch"] == -1
    assert value["api_keys"] == []
    assert decode(message, 3, encode(message, 3, value)) == value


def test_huge_array_count_fails_before_allocating() -> None:
    message = REQUESTS[3]  # Metadata v1: topics is int32-counted
    data = b"\x7f\xff\xff\xff"
    with pytest.raises(DecodeError, match="cannot fit"):
        decode(message, 1, data)


def test_huge_string_length_is_rejected() -> None:
    message = REQUESTS[3]
    data = b"\x00\x00\x00\x01" + b"\x7f\xff" + b"ab"
    with pytest.raises(DecodeError):
        decode(message, 1, data)


def test_over_long_varint_is_rejected() -> None:
    message = REQUESTS[18]  # ApiVersions v3: compact strings
    with pytest.raises(DecodeError, match="varint"):
        decode(message, 3, b"\xff\xff\xff\xff\xff\xff\x01")


def test_records_decode_as_views_into_the_frame() -> None:
    message = REQUESTS[0]
    value = {
        "acks": 1,
        "timeout_ms": 5,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x" * 40}]}],
    }
    frame = bytearray(encode(message, 9, value))
    decoded = decode(message, 9, frame)
    records = decoded["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview) and normalise(records) == b"x" * 40
    records[0] = ord("y")  # writable: the broker rewrites batch headers in place
    assert b"yxxx" in frame
