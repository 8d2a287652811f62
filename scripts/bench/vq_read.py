#!/usr/bin/env python3
"""Virtual-queue read path benchmark (not a test): VirtualQueues.read on a real LogManager, no HTTP.

`--queues` queues of one record each are appended as a Kafka producer packs them (lz4 batches of up to
`--batch` records per partition, queues in name order, murmur2 partitions), then each queue is read once
in name order, as tests/http/test_vq_many.py reads them. Prints reads/s (stopping after `--seconds` when
slower), the cache's entries and bytes, and the process's resident memory growth during the reads.

  .venv/bin/python scripts/bench/vq_read.py [--queues 100000] [--partitions 8] [--batch 10000] [--seconds 20]
                                            [--cache-bytes N]  (another bound: 1 makes every read a miss)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from pathlib import Path

from kbroker.log import AppendOrigin, LogManager
from kbroker.vq import VirtualQueues, VqConfig
from protocol import compression
from protocol.partitioner import partition_for_key
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch


def rss_kib() -> int:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text())
    return int(match.group(1)) if match else 0


async def run(args: argparse.Namespace, data: Path) -> None:
    logs = LogManager(data)
    logs.startup()
    config = VqConfig(topic="vq", partitions=args.partitions, checkpoint_interval_ms=3_600_000)
    queues = VirtualQueues(logs, config)
    queues.start()
    queues.ensure_topic()
    if args.cache_bytes is not None:
        from kbroker.vq.batch_cache import BatchCache

        queues.batches = BatchCache(args.cache_bytes)
    names = [f"tenant-{i:06d}" for i in range(args.queues)]
    pending: list[list[SimpleRecord]] = [[] for _ in range(args.partitions)]

    def flush(partition: int) -> None:
        unified = logs.get_partition("vq", partition)
        assert unified is not None
        batch = build_record_batch(pending[partition], partition_leader_epoch=0, compression_type=compression.LZ4)
        unified.append_as_leader(RecordBatch(bytearray(batch)), AppendOrigin.CLIENT)
        pending[partition] = []

    begin = time.monotonic()
    for i, name in enumerate(names):
        partition = partition_for_key(name.encode(), args.partitions)
        pending[partition].append(SimpleRecord(name.encode(), f"job for {i}".encode(), (), 1_700_000_000_000))
        if len(pending[partition]) >= args.batch:
            flush(partition)
    for partition in range(args.partitions):
        if pending[partition]:
            flush(partition)
    appended_s = time.monotonic() - begin

    rss_before = rss_kib()
    begin = time.monotonic()
    read = 0
    for i, name in enumerate(names):
        result = queues.read(name, 0, 100)
        if [r.value for r in result.records] != [f"job for {i}".encode()]:
            raise AssertionError(f"{name}: {result}")
        read += 1
        if read % 500 == 0 and time.monotonic() - begin > args.seconds:
            break
    read_s = time.monotonic() - begin
    print(
        f"{args.queues} queues, {args.partitions} partitions, lz4 batches of up to {args.batch}: appended in "
        f"{appended_s:.1f} s; read {read} in {read_s:.1f} s: {read / read_s:,.0f} reads/s; "
        f"cache {len(getattr(queues.batches, '_batches', ()))} batches, "
        f"{getattr(queues.batches, 'bytes', 0) / 2**20:.1f} MiB; "
        f"RSS +{(rss_kib() - rss_before) / 1024:.1f} MiB during the reads"
    )
    await queues.stop()
    await logs.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cache-bytes", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        asyncio.run(run(args, Path(data)))


if __name__ == "__main__":
    main()
