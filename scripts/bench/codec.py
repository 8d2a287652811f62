#!/usr/bin/env python3
"""Codec overhead per request (not a test): decode a Produce request carrying one 1 MiB batch,
and encode a Fetch response carrying 1 MiB of batches. Records are never touched, so the
time should not depend on the batch size. Prints microseconds per operation (median of runs).

    .venv/bin/python scripts/bench/codec.py [--runs 7] [--iterations 20000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from protocol.codec import decode, encode, encode_into
from protocol.headers import RequestHeader, encode_request_header, read_request_header_prefix, skip_tagged_fields
from protocol.primitives import Writer
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.schema import REQUESTS, RESPONSES


def produce_frame(batch: bytes, version: int) -> bytearray:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "bench", "partition_data": [{"index": 0, "records": batch}]}],
    }
    header = encode_request_header(RequestHeader(0, version, 7, "bench"), REQUESTS[0].is_flexible(version))
    return bytearray(header + encode(REQUESTS[0], version, body))


def decode_produce(frame: bytearray, version: int) -> None:
    header, pos = read_request_header_prefix(frame)
    if REQUESTS[0].is_flexible(version):
        pos = skip_tagged_fields(frame, pos)
    decode(REQUESTS[0], header.api_version, frame, pos)


def fetch_response(batches: list[bytes]) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "bench",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 1000,
                        "last_stable_offset": 1000,
                        "log_start_offset": 0,
                        "aborted_transactions": [],
                        "preferred_read_replica": -1,
                        "records": batches,
                    }
                ],
            }
        ],
    }


def encode_fetch(response: dict, version: int) -> None:
    writer = Writer()
    encode_into(writer, RESPONSES[1], version, response)
    writer.finish()


def per_op_us(fn, iterations: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        samples.append((time.perf_counter() - start) / iterations * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()
    sizes = {"1 KiB": 1024, "1 MiB": 1024 * 1024}
    print(f"{'operation':44} {'size':>6} {'us/op':>8}")
    for label, size in sizes.items():
        batch = build_record_batch([SimpleRecord(value=b"x" * size, timestamp=1)])
        for version in (7, 9):
            frame = produce_frame(batch, version)
            us = per_op_us(lambda f=frame, v=version: decode_produce(f, v), args.iterations, args.runs)
            name = f"decode Produce v{version} (header + body)"
            print(f"{name:44} {label:>6} {us:8.2f}")
        chunks = [batch[i : i + 64 * 1024] for i in range(0, len(batch), 64 * 1024)] if size > 64 * 1024 else [batch]
        for version in (11, 12):
            response = fetch_response(chunks)
            us = per_op_us(lambda r=response, v=version: encode_fetch(r, v), args.iterations, args.runs)
            name = f"encode Fetch v{version} response"
            print(f"{name:44} {label:>6} {us:8.2f}")


if __name__ == "__main__":
    main()
