"""Child process of the crash test: appends with fsync-before-ack until killed.

Prints "ACK <base offset> <last offset> <crc>" only after the append's fsync
completed, i.e. exactly the batches a broker would have acknowledged.
Usage: python -m tests.log.crash_writer <data-dir> <seed>
"""

from __future__ import annotations

import asyncio
import random
import sys

import structlog

from kbroker.log.manager import LogManager
from protocol.records import RecordBatch
from tests.log.batches import make_batch

TOPIC = "crash"
CONFIGS = {"kbroker.fsync.before.ack": "true", "segment.bytes": str(256 * 1024), "index.interval.bytes": "1024"}


async def producer(log, rng: random.Random, seed: int) -> None:
    while True:
        buffer = make_batch(rng.randint(1, 20), rng.choice([10, 100, 1000, 8000]), seed=seed)
        info = log.append(buffer)
        await log.wait_for_ack(info, acks=-1)
        crc = RecordBatch(buffer).crc
        sys.stdout.write(f"ACK {info.base_offset} {info.last_offset} {crc}\n")
        sys.stdout.flush()


async def main(data_dir: str, seed: int) -> None:
    manager = LogManager(data_dir, checkpoint_interval_ms=30, flush_check_interval_ms=10)
    manager.startup()
    if manager.topic(TOPIC) is None:
        manager.create_topic(TOPIC, 1, configs=CONFIGS)
    log = manager.get_log(TOPIC, 0)
    assert log is not None
    sys.stdout.write(f"READY {log.log_end_offset}\n")
    sys.stdout.flush()
    tasks = [asyncio.create_task(producer(log, random.Random(seed * 100 + i), seed + i)) for i in range(8)]
    await asyncio.gather(manager.run(), *tasks)


if __name__ == "__main__":
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
