"""Look at what a broker stores, below the clients: a hand-encoded Fetch v4 returning the raw record batches."""

from __future__ import annotations

import socket
import struct
import time

from tests.compat.clients.apiversions import API_KEYS, _read_exactly

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _fetch_request(topic: str, partition: int, offset: int, max_wait_ms: int) -> bytes:
    header = struct.pack(">hhi", API_KEYS["Fetch"], 4, 7) + _string("kbroker-compat-wire")
    # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, then one topic with one partition.
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, 8 << 20, 0) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">iiqi", 1, partition, offset, 8 << 20)
    return header + body


class FetchError(Exception):
    """The partition's error code in a Fetch answer."""

    def __init__(self, code: int) -> None:
        super().__init__(f"Fetch error {code}")
        self.code = code


# Errors a client retries after refreshing metadata: a topic just created may not have its leader everywhere yet.
RETRIABLE = {3, 5, 6}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER


def fetch_batches(
    bootstrap: str, topic: str, partition: int = 0, offset: int = 0, max_wait_ms: int = 500
) -> list[tuple[int, int, int]]:
    """(base offset, record count, codec id) of each record batch a Fetch v4 returns from ``offset``.

    Retries for up to 10 s on the errors a client would retry."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return _fetch_once(bootstrap, topic, partition, offset, max_wait_ms)
        except FetchError as failure:
            if failure.code not in RETRIABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _fetch_once(
    bootstrap: str, topic: str, partition: int, offset: int, max_wait_ms: int
) -> list[tuple[int, int, int]]:
    return _batches(_fetch_records(bootstrap, topic, partition, offset, max_wait_ms))


def batch_producers(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[int, int, int, int]]:
    """(base offset, record count, producer id, base sequence) of the batches a Fetch v4 returns from offset 0."""
    records = _fetch_records(bootstrap, topic, partition, 0, 500)
    out = []
    pos = 0
    while pos + 61 <= len(records):
        base_offset, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break
        producer_id, _, base_sequence, count = struct.unpack_from(">qhii", records, pos + 43)
        out.append((base_offset, count, producer_id, base_sequence))
        pos += 12 + length
    return out


def _fetch_records(bootstrap: str, topic: str, partition: int, offset: int, max_wait_ms: int) -> bytes:
    host, port = bootstrap.rsplit(":", 1)
    request = _fetch_request(topic, partition, offset, max_wait_ms)
    with socket.create_connection((host, int(port)), timeout=10 + max_wait_ms / 1000) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        body = _read_exactly(sock, size)
    pos = 4 + 4  # correlation id, throttle time
    (topics,) = struct.unpack_from(">i", body, pos)
    assert topics == 1, f"expected one topic in the Fetch answer, got {topics}"
    (name_len,) = struct.unpack_from(">h", body, pos + 4)
    pos += 4 + 2 + name_len + 4  # topic name, partition count (one)
    _, error, _, _ = struct.unpack_from(">ihqq", body, pos)
    if error != 0:
        raise FetchError(error)
    pos += 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", body, pos)
    pos += 4 + max(aborted, 0) * 16
    (records_len,) = struct.unpack_from(">i", body, pos)
    pos += 4
    return body[pos : pos + max(records_len, 0)]


def _batches(records: bytes) -> list[tuple[int, int, int]]:
    out = []
    pos = 0
    while pos + 61 <= len(records):
        base_offset, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break  # a truncated last batch is allowed
        (attributes,) = struct.unpack_from(">h", records, pos + 21)
        (count,) = struct.unpack_from(">i", records, pos + 57)
        out.append((base_offset, count, attributes & 0x7))
        pos += 12 + length
    return out
