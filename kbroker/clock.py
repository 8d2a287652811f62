"""The time the broker's timed behaviours read: one object per broker.

`Clock` is real time and what production runs on: `wall_ms` (timestamps, retention, group and
transaction timeouts, share-group lock expiry), `sleep` and `wait` (the coordinators' and the
log manager's timer tasks). Its methods are the plain calls they replace (`time.time_ns`,
`asyncio.sleep`, a `call_later` handle), so it costs nothing over them.

`VirtualClock` (kbroker.testing) is real time plus an offset that `advance(seconds)` moves
forward: every sleep or wait whose virtual deadline has passed ends at once, so a test can
make session timeouts, transaction timeouts, lock expiry and retention happen without waiting.
Connection deadlines (idle connections, slow frames) and Fetch long polls stay on real time:
advancing the clock must not cut the test's own clients off.

This module imports nothing of kbroker: every layer may use it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Any


class Clock:
    """Real time."""

    __slots__ = ()

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (Kafka's time.milliseconds())."""
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait(self, event: asyncio.Event, timeout: float | None) -> None:
        """Until `event` is set or `timeout` seconds have passed (None: no timeout).

        A timer handle sets the event instead of asyncio.wait_for, which could swallow a
        cancellation that comes together with the event (bpo-42130)."""
        alarm = None if timeout is None else asyncio.get_running_loop().call_later(max(0.0, timeout), event.set)
        try:
            await event.wait()
        finally:
            if alarm is not None:
                alarm.cancel()


REAL_CLOCK = Clock()


class VirtualClock(Clock):
    """Real time plus an offset that only grows. All methods run on the broker's event loop."""

    __slots__ = ("offset_ms", "_timers", "_seq", "_armed", "_generation")

    def __init__(self) -> None:
        self.offset_ms = 0
        # (virtual deadline ms, seq, fire, the waiting task)
        self._timers: list[tuple[int, int, Callable[[], None], asyncio.Task[Any] | None]] = []
        self._seq = itertools.count()
        self._armed: dict[asyncio.Task[Any], int] = {}  # task -> the generation it last waited on the clock in
        self._generation = 0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    def monotonic(self) -> float:
        return time.monotonic() + self.offset_ms / 1000

    async def sleep(self, seconds: float) -> None:
        await self.wait(asyncio.Event(), seconds)

    async def wait(self, event: asyncio.Event, timeout: float | None) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._armed[task] = self._generation
        if timeout is None:
            await event.wait()
            return
        timeout = max(0.0, timeout)
        alarm = asyncio.get_running_loop().call_later(timeout, event.set)
        entry = (self.wall_ms() + int(timeout * 1000), next(self._seq), event.set, task)
        heapq.heappush(self._timers, entry)
        try:
            await event.wait()
        finally:
            alarm.cancel()
            try:
                self._timers.remove(entry)
                heapq.heapify(self._timers)
            except ValueError:  # fired by advance()
                pass

    async def advance(self, seconds: float, settle: float = 1.0) -> int:
        """Move time forward; end every wait whose deadline has now passed, then let the tasks that
        woke do their work until they wait on the clock again (or end), for at most `settle` seconds
        of real time. Returns how many waits ended."""
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._generation += 1
        generation = self._generation
        self.offset_ms += round(seconds * 1000)
        now = self.wall_ms()
        woken: list[asyncio.Task[Any]] = []
        while self._timers and self._timers[0][0] <= now:
            _, _, fire, task = heapq.heappop(self._timers)
            fire()
            if task is not None:
                woken.append(task)
        # a task that woke waits on the clock again (in this generation) once its round of work is done
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            await asyncio.sleep(0)
            if all(t.done() or self._armed.get(t, generation) >= generation for t in woken):
                break
        for task in [t for t in self._armed if t.done()]:
            del self._armed[task]
        return len(woken)
