"""One request to one broker, over the project's codec: what a given broker believes (Metadata) and whether
it acknowledges a write (Produce), which a client library, spreading its requests over the cluster, cannot
ask of one broker in particular."""

from __future__ import annotations

import socket
from typing import Any

from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, encode_request_header, read_response_header, response_header_is_flexible
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.schema import REQUESTS, RESPONSES

METADATA_VERSION = 12
PRODUCE_VERSION = 9
DESCRIBE_LOG_DIRS_VERSION = 4


def call(address: str, api_key: int, version: int, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send one request to address (host:port) and return its decoded answer; OSError on a socket failure."""
    host, port = address.rsplit(":", 1)
    request = REQUESTS[api_key]
    header = encode_request_header(RequestHeader(api_key, version, 1, "fault-probe"), request.is_flexible(version))
    payload = header + encode(request, version, body)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(frame_prefix(len(payload)) + payload)
        size = int.from_bytes(_read(sock, 4), "big", signed=True)
        frame = _read(sock, size)
    response = RESPONSES[api_key]
    _, position = read_response_header(frame, response_header_is_flexible(api_key, response.is_flexible(version)))
    return dict(decode(response, version, frame, position, exact=True))


def _read(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks += chunk
    return bytes(chunks)


def partitions(address: str, topic: str, timeout: float = 5.0) -> dict[int, dict[str, Any]]:
    """The broker's view of topic: partition -> {leader_id, leader_epoch, isr_nodes, error_code, ...}."""
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    answer = call(address, ApiKey.METADATA, METADATA_VERSION, body, timeout)
    (entry,) = answer["topics"]
    return {p["partition_index"]: p for p in entry["partitions"]}


def produce(address: str, topic: str, partition: int, value: bytes, timeout_ms: int) -> int:
    """One record with acks=all (not idempotent) to this broker; the answer's error code."""
    batch = build_record_batch([SimpleRecord(value=value)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }
    answer = call(address, ApiKey.PRODUCE, PRODUCE_VERSION, body, timeout_ms / 1000 + 5)
    return int(answer["responses"][0]["partition_responses"][0]["error_code"])


def log_sizes(address: str, topic: str, partitions: list[int], timeout: float = 5.0) -> dict[int, int]:
    """The bytes of topic's partitions on this broker's disks (DescribeLogDirs), whatever its role."""
    body = {"topics": [{"topic": topic, "partitions": partitions}]}
    answer = call(address, ApiKey.DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION, body, timeout)
    sizes: dict[int, int] = {}
    for result in answer["results"]:
        for entry in result["topics"]:
            if entry["name"] == topic:
                for part in entry["partitions"]:
                    sizes[part["partition_index"]] = sizes.get(part["partition_index"], 0) + part["partition_size"]
    return sizes
