#!/usr/bin/env python3
"""Storage engine benchmark (not a test): append, fsync-before-ack, recovery scan, reads.

Compares appends of 1 MiB batches with the sequential-write ceiling of the
same disk measured by dd (conv=fdatasync: one sync at the end; oflag=dsync:
a sync per 1 MiB write). Page cache is warm for the recovery and read
figures (dropping caches would disturb other users of the machine).

    .venv/bin/python scripts/bench/storage.py [--dir DIR] [--mib 512]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import structlog

from kbroker.log import flush as flush_module
from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from protocol.record_builder import SimpleRecord, build_record_batch

MIB = 1024 * 1024
BENCH_CONFIG = LogConfig(segment_bytes=256 * MIB, max_message_bytes=2 * MIB)


def batch_of(size: int) -> bytearray:
    """One batch of about `size` bytes (one record, incompressible-ish value)."""
    value = os.urandom(max(0, size - 100))
    return bytearray(build_record_batch([SimpleRecord(key=b"k", value=value, timestamp=int(time.time() * 1000))]))


def mb_per_s(nbytes: int, seconds: float) -> float:
    return nbytes / MIB / seconds


def dd(directory: Path, mib: int, flags: list[str]) -> float:
    target = directory / "dd.bin"
    started = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mib}", *flags],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - started
    target.unlink()
    return mb_per_s(mib * MIB, elapsed)


def append_no_fsync(directory: Path, mib: int) -> tuple[float, float]:
    """(page-cache MB/s, MB/s including one final fsync) for 1 MiB batches."""
    log = PartitionLog.open(directory / "nofsync-0", BENCH_CONFIG)
    batch = batch_of(MIB)
    started = time.perf_counter()
    for _ in range(mib):
        log.append(batch)
    appended = time.perf_counter() - started
    log.flush_sync()
    total = time.perf_counter() - started
    size = log.size_in_bytes
    log.close()
    return mb_per_s(size, appended), mb_per_s(size, total)


def append_fsync_before_ack(directory: Path, mib: int, producers: int, batch_size: int) -> tuple[float, int, int]:
    """(MB/s, acknowledged batches, fsyncs) with `producers` concurrent acks=all producers."""
    config = LogConfig(segment_bytes=256 * MIB, max_message_bytes=2 * MIB, fsync_before_ack=True)
    log = PartitionLog.open(directory / f"fsync{producers}-{batch_size}-0", config)
    count = mib * MIB // batch_size
    flushes = 0
    real_run = flush_module.FlushPlan.run

    def counted(plan: flush_module.FlushPlan) -> None:
        nonlocal flushes
        flushes += 1
        real_run(plan)

    flush_module.FlushPlan.run = counted  # type: ignore[method-assign, assignment]

    async def producer(share: int) -> None:
        batch = batch_of(batch_size)
        for _ in range(max(1, share)):
            info = log.append(batch)
            await log.wait_for_ack(info, acks=-1)

    async def run() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(producer(count // producers) for _ in range(producers)))
        return time.perf_counter() - started

    try:
        elapsed = asyncio.run(run())
    finally:
        flush_module.FlushPlan.run = real_run  # type: ignore[method-assign]
    size = log.size_in_bytes
    log.close()
    return mb_per_s(size, elapsed), max(1, count // producers) * producers, flushes


def write_log(directory: Path, mib: int, batch_size: int) -> Path:
    path = directory / f"scan{batch_size}-0"
    log = PartitionLog.open(path, BENCH_CONFIG)
    batch = batch_of(batch_size)
    for _ in range(mib * MIB // batch_size):
        log.append(batch)
    log.flush_sync()
    log.close()
    return path


def recovery_scan(path: Path) -> tuple[float, int]:
    """(MB/s, bytes) of a full recovery scan (no clean-shutdown marker, recovery point 0)."""
    started = time.perf_counter()
    log = PartitionLog.open(path, BENCH_CONFIG, recovery_point=0)
    elapsed = time.perf_counter() - started
    scanned = log.recovery.bytes_scanned
    assert log.recovery.bytes_truncated == 0
    log.close()
    return mb_per_s(scanned, elapsed), scanned


class SocketSink:
    """A TCP connection on 127.0.0.1 whose far end a thread drains: where a fetch response goes."""

    def __init__(self) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.out = socket.create_connection(listener.getsockname())
        self._in, _ = listener.accept()
        listener.close()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        buffer = bytearray(4 * MIB)
        while self._in.recv_into(buffer):
            pass

    def close(self) -> None:
        self.out.close()
        self._thread.join()
        self._in.close()


def read_throughput(path: Path, fetch_bytes: int, sendfile: bool) -> tuple[float, float]:
    """(MB/s, reads/s) reading the whole log from offset 0 with `fetch_bytes` per read, into TCP.

    Every batch holds one record and all have the same size, so the next fetch
    offset follows from the byte count (a consumer would parse what it got).
    """
    log = PartitionLog.open(path, BENCH_CONFIG, clean_shutdown=True, recovery_point=1 << 62)
    batch_size = log.read(0, 1).size
    sink = SocketSink()
    total = reads = 0
    offset = 0
    started = time.perf_counter()
    while offset < log.log_end_offset:
        result = log.read(offset, fetch_bytes)
        region = result.region
        assert region is not None
        if sendfile:
            sent = 0
            while sent < region.size:
                sent += os.sendfile(sink.out.fileno(), region.fd, region.position + sent, region.size - sent)
        else:
            sink.out.sendall(region.read())
        total += region.size
        reads += 1
        offset = result.first_offset + region.size // batch_size
    elapsed = time.perf_counter() - started
    sink.close()
    log.close()
    return mb_per_s(total, elapsed), reads / elapsed


def read_lookups(path: Path, fetch_bytes: int, count: int = 20000) -> float:
    """log.read() calls per second at random offsets (index lookup + header walks, no data moved)."""
    log = PartitionLog.open(path, BENCH_CONFIG, clean_shutdown=True, recovery_point=1 << 62)
    rng = random.Random(1)
    offsets = [rng.randrange(log.log_end_offset) for _ in range(count)]
    started = time.perf_counter()
    for offset in offsets:
        log.read(offset, fetch_bytes)
    elapsed = time.perf_counter() - started
    log.close()
    return count / elapsed


def measure(root: Path, mib: int) -> Iterator[dict[str, float]]:
    """One round of every measurement (MB/s), as samples; comparisons alternate inside it."""
    out: dict[str, float] = {}
    # A, B, A, B: the disk's speed drifts (ext4 with discard: the first write after deletes is slower)
    for _ in range(2):
        out[f"dd bs=1M count={mib} conv=fdatasync"] = dd(root, mib, ["conv=fdatasync"])
        cached, synced = append_no_fsync(root, mib)
        shutil.rmtree(root / "nofsync-0")
        out["append 1 MiB batches, no fsync (page cache)"] = cached
        out["append 1 MiB batches + one final fsync"] = synced
        yield out
        out = {}
    for _ in range(2):
        out[f"dd bs=1M count={mib // 4} oflag=dsync"] = dd(root, mib // 4, ["oflag=dsync"])
        for producers in (1, 8):
            rate, acks, flushes = append_fsync_before_ack(root, mib // 4, producers, MIB)
            out[f"fsync-before-ack, 1 MiB batches, {producers} producers"] = rate
            out[f"  acks per fsync of the above ({producers} producers, {acks} acks)"] = acks / flushes
        for path in root.glob("fsync*"):
            shutil.rmtree(path)
        yield out
        out = {}
    rate, acks, flushes = append_fsync_before_ack(root, 16, 8, 16 * 1024)
    out["fsync-before-ack, 16 KiB batches, 8 producers"] = rate
    out[f"  acks per fsync of the above (16 KiB, {acks} acks)"] = acks / flushes
    for path in root.glob("fsync*"):
        shutil.rmtree(path)
    for batch_size, share in ((MIB, 1), (16 * 1024, 4), (1024, 16)):
        kib = batch_size // 1024
        path = write_log(root, max(1, mib // share), batch_size)
        rate, scanned = recovery_scan(path)
        out[f"recovery scan, {kib} KiB batches ({scanned // MIB} MiB, warm cache)"] = rate
        out[f"log.read() calls/s, {kib} KiB batches, random offsets, 1 MiB limit"] = read_lookups(path, MIB)
        for fetch, sendfile in ((MIB, False), (MIB, True), (50 * MIB, True)) if batch_size > 1024 else ():
            rate, reads = read_throughput(path, fetch, sendfile)
            how = "sendfile" if sendfile else "pread+send"
            out[f"read {kib} KiB batches, fetch {fetch // 1024} KiB, {how} to TCP"] = rate
            out[f"  reads/s of the above ({kib} KiB, {fetch // 1024} KiB, {how})"] = reads
        shutil.rmtree(path)
    yield out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", help="a directory on the disk to measure (default: a temp dir)")
    parser.add_argument("--mib", type=int, default=512, help="MiB written per phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians are reported")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    root = Path(tempfile.mkdtemp(prefix="kbroker-bench-", dir=args.dir))
    try:
        print(f"# kbroker log benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, dir {root}")
        print(f"# {args.rounds} rounds of {args.mib} MiB; median (all samples), MB/s unless noted")
        samples: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for sample in measure(root, args.mib):
                for name, value in sample.items():
                    samples.setdefault(name, []).append(value)
        for name, values in samples.items():
            listed = ", ".join(f"{v:.1f}" if v < 100 else f"{v:.0f}" for v in values)
            median = statistics.median(values)
            print(
                f"{name:<70} {median:8.1f}   ({listed})" if median < 100 else f"{name:<70} {median:8.0f}   ({listed})"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
