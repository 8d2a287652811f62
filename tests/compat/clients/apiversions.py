"""Ask a broker which APIs it advertises, with a hand-encoded ApiVersions v0 request."""

from __future__ import annotations

import socket
import struct

# Kafka's API keys by name, for the APIs the compatibility suite's clients use.
API_KEYS: dict[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "CreatePartitions": 37,
    "IncrementalAlterConfigs": 44,
    "DescribeCluster": 60,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
}


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("broker closed the connection during ApiVersions")
        data += chunk
    return bytes(data)


def advertised_apis(bootstrap: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version as the broker at host:port advertises them."""
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"kbroker-compat"
    header = struct.pack(">hhih", API_KEYS["ApiVersions"], 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        body = _read_exactly(sock, size)
    correlation_id, error_code, count = struct.unpack_from(">ihi", body, 0)
    if correlation_id != 1 or error_code != 0:
        raise ConnectionError(f"ApiVersions failed: correlation {correlation_id}, error {error_code}")
    apis = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", body, 10 + 6 * index)
        apis[key] = (low, high)
    return apis


def missing_apis(advertised: dict[int, tuple[int, int]], names: set[str]) -> list[str]:
    """The names among ``names`` that the broker does not advertise, sorted."""
    return sorted(name for name in names if API_KEYS[name] not in advertised)
