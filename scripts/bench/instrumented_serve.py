#!/usr/bin/env python3
"""`kbroker serve` with measurements of the event loop and the garbage collector (for scripts/bench/profile_w7).

    python scripts/bench/instrumented_serve.py serve --listen ... (kbroker's own arguments)

Environment:
- KBROKER_BENCH_STATS=FILE: at shutdown, write JSON there: every garbage collection's pause (by generation),
  and the event loop's lag (how late a 2 ms timer fires: how long a ready callback waited for the loop);
- KBROKER_BENCH_GC_FREEZE=0: the broker does not freeze its start-up objects (gc.freeze), to compare;
- KBROKER_BENCH_FULL_GC_S=N: run a full collection on the loop every N seconds (its pause is recorded like
  the others): what the collector's own full collections cost, without waiting minutes for one;
- KBROKER_BENCH_GC_THRESHOLD=A,B,C: gc.set_threshold(A, B, C) once started, to compare;
- KBROKER_BENCH_SLOW_MS=N: also run the loop in asyncio debug mode and keep every callback that held it for
  more than N ms (the loop's own slow-callback report). Debug mode costs CPU: its latencies are not figures.

Nothing here changes what the broker does; the measurements cost a timer every 2 ms and two clock reads
per collection.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[0] = str(REPO)  # not scripts/bench: the broker's modules come from the checkout

LAG_INTERVAL = 0.002


class Stats:
    def __init__(self) -> None:
        self.gc_pauses: list[tuple[float, int, float, int]] = []  # (Unix ms, generation, pause ms, freed)
        self.lags: list[tuple[float, float]] = []  # (Unix ms, lag ms)
        self.slow: list[str] = []
        self._gc_started = 0.0

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            pause = (time.perf_counter() - self._gc_started) * 1000
            self.gc_pauses.append((time.time() * 1000, int(info["generation"]), pause, int(info["collected"])))

    async def probe_lag(self) -> None:
        """uvloop's clock has millisecond steps: the lag is taken with perf_counter."""
        while True:
            planned = time.perf_counter() + LAG_INTERVAL
            await asyncio.sleep(LAG_INTERVAL)
            self.lags.append((time.time() * 1000, max(0.0, (time.perf_counter() - planned) * 1000)))

    def write(self, path: str) -> None:
        data = {
            "gc_pauses": self.gc_pauses,
            "gc_frozen": gc.get_freeze_count(),
            "loop_lag_ms": self.lags,
            "slow_callbacks": self.slow,
        }
        Path(path).write_text(json.dumps(data))


class SlowCallbacks(logging.Handler):
    def __init__(self, stats: Stats) -> None:
        super().__init__(logging.WARNING)
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        self.stats.slow.append(record.getMessage())


async def full_collections(every: float) -> None:
    while True:
        await asyncio.sleep(every)
        gc.collect()


def main() -> int:
    from kbroker import server
    from kbroker.cli import main as kbroker_main

    stats = Stats()
    gc.callbacks.append(stats.on_gc)
    original = server.serve

    async def serve(config: Any, started: asyncio.Event | None = None, **options: Any) -> int:
        loop = asyncio.get_running_loop()
        slow_ms = os.environ.get("KBROKER_BENCH_SLOW_MS")
        if slow_ms:
            loop.set_debug(True)
            loop.slow_callback_duration = float(slow_ms) / 1000
            asyncio_log = logging.getLogger("asyncio")
            asyncio_log.addHandler(SlowCallbacks(stats))
            asyncio_log.propagate = False
            asyncio_log.setLevel(logging.WARNING)
        if os.environ.get("KBROKER_BENCH_GC_THRESHOLD"):
            gc.set_threshold(*(int(x) for x in os.environ["KBROKER_BENCH_GC_THRESHOLD"].split(",")))
        probe = loop.create_task(stats.probe_lag())
        full_every = float(os.environ.get("KBROKER_BENCH_FULL_GC_S", "0"))
        collector = loop.create_task(full_collections(full_every)) if full_every > 0 else None
        try:
            if os.environ.get("KBROKER_BENCH_GC_FREEZE") == "0":
                options["freeze_gc"] = False  # compare with the collector as it was
            return await original(config, started, **options)
        finally:
            probe.cancel()
            if collector is not None:
                collector.cancel()
            if os.environ.get("KBROKER_BENCH_STATS"):
                stats.write(os.environ["KBROKER_BENCH_STATS"])

    server.serve = serve  # type: ignore[assignment]
    return kbroker_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
