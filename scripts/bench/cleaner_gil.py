#!/usr/bin/env python3
"""How long the event loop's thread waits for the GIL while the log cleaner's thread works (not a test).

The cleaner decodes records in Python in a thread of the broker process, holding the GIL; the event
loop's thread releases the GIL at every system call (recv, send, pwrite, epoll) and must get it back
after each. This runs the cleaner's key-map pass over a log of small batches in a thread, again and
again, while the main thread does what a loop does between events: sleep 1 ms, then a send and a recv
on a socket pair (two system calls). Printed: how many such turns the main thread made and how long
each took (without the 1 ms sleep). Without the cleaner a turn takes some microseconds.

    .venv/bin/python scripts/bench/cleaner_gil.py [--seconds 3] [--batch-records 50] [--batches 1500]
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[2])  # the checkout's modules, not scripts/bench's

from kbroker.cleaner.offset_map import OffsetMap, build_offset_map  # noqa: E402
from protocol.record_builder import SimpleRecord, build_record_batch  # noqa: E402
from protocol.records import RecordBatch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch-records", type=int, default=50, help="records per batch (a producer's linger)")
    parser.add_argument("--batches", type=int, default=1500)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--no-cleaner", action="store_true", help="the main thread alone, for comparison")
    args = parser.parse_args()
    batches, offset = [], 0
    for _ in range(args.batches):
        records = [
            SimpleRecord(b"k%05d" % ((offset + i) % args.keys), b"v" * 90, (), 1_000) for i in range(args.batch_records)
        ]
        batches.append(RecordBatch(build_record_batch(records, base_offset=offset)))
        offset += args.batch_records
    stop = threading.Event()
    rounds = 0

    def clean() -> None:
        nonlocal rounds
        offset_map = OffsetMap(1 << 24)
        while not stop.is_set():
            build_offset_map(offset_map, [(batches, offset)], 0, [])
            rounds += 1

    cleaner = threading.Thread(target=clean, daemon=True)
    ours, theirs = socket.socketpair()
    turns: list[float] = []
    if not args.no_cleaner:
        cleaner.start()
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        time.sleep(0.001)
        started = time.perf_counter()
        ours.send(b"x")
        theirs.recv(1)
        turns.append((time.perf_counter() - started) * 1000)
    stop.set()
    if not args.no_cleaner:
        cleaner.join()
    turns.sort()

    def q(p: float) -> float:
        return turns[int(p * (len(turns) - 1))]

    print(
        f"{len(turns):,} turns in {args.seconds:.0f} s (at most {args.seconds * 1000:,.0f}); a turn's send+recv:"
        f" p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, max {turns[-1]:.2f} ms;"
        f" cleaner: {rounds * offset / args.seconds:,.0f} records/s over batches of {args.batch_records}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
