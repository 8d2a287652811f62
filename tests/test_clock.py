"""The virtual clock: waits end when advance() passes their deadline, and advance() returns once the
tasks it woke are back waiting on the clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from kbroker.clock import REAL_CLOCK, VirtualClock


def test_real_clock_is_wall_time() -> None:
    assert abs(REAL_CLOCK.wall_ms() - time.time() * 1000) < 50


def test_advance_ends_due_sleeps_only() -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        woke: list[str] = []

        async def sleeper(name: str, seconds: float) -> None:
            await clock.sleep(seconds)
            woke.append(name)

        tasks = [asyncio.ensure_future(sleeper("short", 30)), asyncio.ensure_future(sleeper("long", 90))]
        await asyncio.sleep(0)
        start = clock.wall_ms()
        assert await clock.advance(60) == 1
        assert woke == ["short"]
        assert clock.wall_ms() - start >= 60_000
        assert await clock.advance(60) == 1
        assert woke == ["short", "long"]
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_wait_ends_on_event_or_deadline() -> None:
    async def scenario() -> None:
        clock = VirtualClock()
        event = asyncio.Event()
        waiter = asyncio.ensure_future(clock.wait(event, 10))
        await asyncio.sleep(0)
        event.set()
        await asyncio.wait_for(waiter, 1)
        assert clock._timers == []  # a wait that ended leaves no timer behind
        quiet = asyncio.ensure_future(clock.wait(asyncio.Event(), 0.05))  # real time still passes
        await asyncio.wait_for(quiet, 1)

    asyncio.run(scenario())


def test_advance_waits_for_the_woken_round_of_work() -> None:
    """A timer loop that does slow work after waking has finished that round when advance() returns."""

    async def scenario() -> None:
        clock = VirtualClock()
        rounds: list[int] = []

        async def timer_loop() -> None:
            while True:
                await clock.sleep(10)
                await asyncio.sleep(0.05)  # the round's work (a write, an fsync)
                rounds.append(clock.wall_ms())

        task = asyncio.ensure_future(timer_loop())
        await asyncio.sleep(0)
        await clock.advance(11)
        assert len(rounds) == 1
        await clock.advance(5)
        assert len(rounds) == 1
        task.cancel()

    asyncio.run(scenario())


def test_time_does_not_go_back() -> None:
    with pytest.raises(ValueError):
        asyncio.run(VirtualClock().advance(-1))
