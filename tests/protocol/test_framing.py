"""FrameReader: frames split and joined at any boundary, large frames received in place, bad lengths rejected."""

from __future__ import annotations

import itertools
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


def test_large_frame_is_received_into_its_own_growing_buffer() -> None:
    reader = FrameReader(max_frame_size=10_000_000, staging_size=1024, initial_frame_buffer=4096)
    payload = bytes(range(256)) * 4000
    data = framed([payload])
    assert reader.feed(data[:100]) == []
    assert reader.held_bytes == 4096  # what arrived, rounded up to the initial buffer, not the announced size
    target = reader.get_buffer()
    assert len(target) == 4096 - 96  # received in place, after what came first
    del target
    pos, capacities = 100, []
    while True:
        target = reader.get_buffer()
        n = len(target)
        target[:n] = data[pos : pos + n]
        del target
        pos += n
        frames = reader.buffer_updated(n)
        capacities.append(reader.held_bytes)
        if frames:
            break
    assert len(frames) == 1 and frames[0] == payload and not frames[0].readonly
    assert all(b <= 2 * a for a, b in itertools.pairwise(capacities[:-1]))  # doubling, never more
    assert reader.held_bytes == 0 and pos == len(data)


class Pool:
    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def reserve(self, wanted: int, minimum: int) -> int:
        if minimum and self.limit - self.used < minimum:
            return 0
        granted = min(wanted, self.limit - self.used) if minimum else wanted
        self.used += granted
        return granted

    def release(self, size: int) -> None:
        self.used -= size


def test_announced_size_is_not_allocated_up_front() -> None:
    pool = Pool(10**12)
    reader = FrameReader(max_frame_size=200 * 2**20, memory=pool)
    assert reader.feed(struct.pack(">i", 100 * 2**20) + b"abcd") == []
    assert reader.pending_bytes == 4
    assert pool.used == reader.held_bytes <= 16 * 1024
    reader.release()
    assert pool.used == 0


def receive_until_starved(reader: FrameReader, data: bytes) -> tuple[int, list[bytearray]]:
    """Receive as a transport that honours pausing does: stop once the reader is starved."""
    pos, frames = 0, []
    while pos < len(data) and not reader.starved:
        target = reader.get_buffer()
        n = min(len(target), len(data) - pos)
        target[:n] = data[pos : pos + n]
        del target
        pos += n
        frames.extend(reader.buffer_updated(n))
    return pos, frames


def test_reader_starves_when_memory_is_spent_and_resumes_after_release() -> None:
    pool = Pool(20_000)
    reader = FrameReader(max_frame_size=100_000, memory=pool, staging_size=4096, initial_frame_buffer=8192)
    payload = b"x" * 50_000
    data = framed([payload])
    pos, frames = receive_until_starved(reader, data)
    assert reader.starved and frames == []
    assert pool.used == reader.held_bytes == 20_000 and pos == 4 + 20_000  # stopped at the budget
    assert not reader.retry_memory()
    pool.limit = 200_000
    assert reader.retry_memory()
    rest, frames = receive_until_starved(reader, data[pos:])
    assert frames == [payload] and pos + rest == len(data)
    assert pool.used == len(payload)  # the frame's bytes stay reserved for its user to release


def test_readers_share_one_staging_buffer() -> None:
    staging = bytearray(64)
    first, second = FrameReader(1000, staging), FrameReader(1000, staging)
    a, b = framed([b"a" * 10, b"b" * 20]), framed([b"c" * 5])
    assert first.feed(a[:17]) == [bytearray(b"a" * 10)]  # 3 bytes of the next length kept aside
    assert second.feed(b[:6]) == []
    assert first.feed(a[17:]) == [bytearray(b"b" * 20)]
    assert second.feed(b[6:]) == [bytearray(b"c" * 5)]


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
