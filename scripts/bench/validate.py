#!/usr/bin/env python3
"""What record validation costs per produced batch (not a test; about 30 s).

For 100 B and 1 KiB records, uncompressed and with each codec, records of one size and of varying
sizes, in batches of ~16 KiB (Java's default batch.size) and ~1 MiB (the side-by-side benchmark's):

- before: what the produce path did per batch before records were validated (header checks and the
  CRC-32C: ``check_batch``);
- after: the same plus ``validate_records`` (decompression, the record walk, key and timestamp checks);
- walk: the record walk alone, on the already decompressed records.

Prints a Markdown table of the medians: microseconds per batch and nanoseconds per record.

    PYTHONPATH=. .venv/bin/python scripts/bench/validate.py [--budget 0.15]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from kbroker.handlers.produce import check_batch
from kbroker.log.config import LogConfig
from kbroker.log.validator import validate_records
from protocol import compression
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.record_walk import walk_records
from protocol.records import RecordBatch

CODECS = {"none": compression.NONE, "gzip": compression.GZIP, "snappy": compression.SNAPPY}
CODECS |= {"lz4": compression.LZ4, "zstd": compression.ZSTD}
ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789 {}:,"


def values(size: int, count: int, varying: bool, rng: random.Random) -> list[bytes]:
    """Text-like values (they compress about 2x), all ``size`` bytes or 50-150% of it."""
    sizes = [rng.randint(size // 2, size * 3 // 2) if varying else size for _ in range(count)]
    return [bytes(rng.choices(ALPHABET, k=n)) for n in sizes]


def build(size: int, batch_bytes: int, codec: int, varying: bool) -> bytes:
    rng = random.Random(size * 31 + batch_bytes + codec + varying)
    count = max(1, batch_bytes // (size + 10))
    now = int(time.time() * 1000)
    records = [
        SimpleRecord(b"key-%d" % (i % 10), v, (), now + i // 50)
        for i, v in enumerate(values(size, count, varying, rng))
    ]
    return build_record_batch(records, compression_type=codec)


def timed(action: Callable[[], object], budget: float) -> float:
    """Median seconds of one call, over repeats filling about ``budget`` seconds."""
    action()
    start = time.perf_counter()
    action()
    once = max(time.perf_counter() - start, 1e-7)
    loops = max(1, min(2000, int(budget / 5 / once)))
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(loops):
            action()
        samples.append((time.perf_counter() - start) / loops)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=0.15, help="seconds per measurement")
    args = parser.parse_args()
    config = LogConfig()
    print(
        "| records | batch | codec | sizes | records/batch | before µs/batch | after µs/batch | after ns/record | walk ns/record |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for size in (100, 1024):
        for batch_bytes, batch_name in ((16 * 1024, "16 KiB"), (1024 * 1024, "1 MiB")):
            for codec_name, codec in CODECS.items():
                for varying in (False, True):
                    data = build(size, batch_bytes, codec, varying)
                    batch = RecordBatch(bytearray(data))
                    count = batch.records_count
                    records = batch.records_data()
                    now = int(time.time() * 1000)

                    def before(data: bytes = data) -> None:
                        check_batch(data, 11, 1 << 30)

                    def after(data: bytes = data, now: int = now) -> None:
                        validate_records(check_batch(data, 11, 1 << 30), config, now, "bench-0")

                    def walk(records: bytes = records, count: int = count) -> None:
                        walk_records(records, count)

                    t_before = timed(before, args.budget)
                    t_after = timed(after, args.budget)
                    t_walk = timed(walk, args.budget)
                    print(
                        f"| {size} B | {batch_name} | {codec_name} | {'varying' if varying else 'one size'} | {count} "
                        f"| {t_before * 1e6:,.1f} | {t_after * 1e6:,.1f} | {t_after * 1e9 / count:,.0f} "
                        f"| {t_walk * 1e9 / count:,.0f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
