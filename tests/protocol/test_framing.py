"""FrameReader: frames split and joined at any boundary, large frames received in place, bad lengths rejected."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.framing import FrameError, FrameReader, frame_prefix
from protocol.headers import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    read_request_header_prefix,
    read_response_header,
    response_header_is_flexible,
    skip_tagged_fields,
)
from protocol.primitives import DecodeError


def framed(payloads: list[bytes]) -> bytes:
    return b"".join(frame_prefix(len(p)) + p for p in payloads)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(max_size=300), max_size=8),
    st.lists(st.integers(1, 97), min_size=1, max_size=20),
)
def test_frames_survive_any_split(payloads: list[bytes], cuts: list[int]) -> None:
    reader = FrameReader(max_frame_size=1024, staging_size=128)
    data = framed(payloads)
    out: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        i += 1
        buf = reader.get_buffer()
        n = min(step, len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in reader.buffer_updated(n))
    assert out == payloads


def test_large_frame_is_received_into_its_own_buffer() -> None:
    reader = FrameReader(max_frame_size=10_000_000, staging_size=1024)
    payload = bytes(range(256)) * 4000
    data = framed([payload])
    assert reader.feed(data[:100]) == []
    target = reader.get_buffer()
    assert len(target) == len(payload) - 96  # the rest of this frame only
    frames = reader.feed(data[100:])
    assert len(frames) == 1 and frames[0] == payload and isinstance(frames[0], bytearray)


@pytest.mark.parametrize("size", [-1, -(2**31), 1025, 2**31 - 1])
def test_bad_lengths_are_rejected_before_allocation(size: int) -> None:
    reader = FrameReader(max_frame_size=1024)
    with pytest.raises(FrameError):
        reader.feed(struct.pack(">i", size))


def test_request_header_round_trip() -> None:
    header = RequestHeader(api_key=3, api_version=12, correlation_id=77, client_id="me")
    data = encode_request_header(header, flexible=True) + b"body"
    parsed, pos = read_request_header_prefix(data)
    assert parsed == header
    pos = skip_tagged_fields(data, pos)
    assert data[pos:] == b"body"


def test_null_client_id() -> None:
    header = RequestHeader(18, 0, 1, None)
    parsed, _ = read_request_header_prefix(encode_request_header(header, flexible=False))
    assert parsed.client_id is None


@pytest.mark.parametrize(
    "data", [b"", b"\x00\x03\x00", b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x09ab", b"\x00" * 8 + b"\xff\xfe"]
)
def test_truncated_or_bad_headers(data: bytes) -> None:
    with pytest.raises(DecodeError):
        read_request_header_prefix(data)


def test_api_versions_response_header_is_never_flexible() -> None:
    assert not response_header_is_flexible(18, True)
    assert response_header_is_flexible(3, True)
    assert not response_header_is_flexible(3, False)
    assert read_response_header(encode_response_header(5, True), True) == (5, 5)
    assert read_response_header(encode_response_header(5, False), False) == (5, 4)
