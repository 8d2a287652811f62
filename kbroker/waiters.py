"""Long-poll fetches: a waiting Fetch sleeps on a future that appends wake (Kafka's DelayedFetch).

A fetch that cannot be answered yet (fewer than min_bytes available) registers a
FetchWait on every partition it reads. FetchWaiters subscribes to every partition's
on_append event (LogManager.on_append, fired by UnifiedLog after each append, whoever
appends): the appended bytes are added to each waiter on the partition, and the ones
that reached min_bytes complete. A
timer completes the rest at max_wait_ms; ``wake`` completes them at once when a
partition's log start moves or the partition goes away. On a replicated partition (cluster mode) a
consumer's wait counts no appends, which land above the high watermark it reads below: it wakes when
the high watermark moves (`high_watermark_moved`, whatever min_bytes asked); a follower's wait counts
appends as before. The broker owns one
(`broker.fetch_waiters`). Nothing polls: a waiting fetch is a
dict entry, a future and a timer handle, and costs no CPU until one of them fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbroker.log import AppendInfo, UnifiedLog

TopicPartition = tuple[str, int]


class FetchWait:
    """One waiting fetch: how many bytes it still needs, and the future that wakes it."""

    __slots__ = ("future", "missing", "replica")

    def __init__(self, future: asyncio.Future[None], missing: int, replica: bool = False) -> None:
        self.future = future
        self.missing = missing
        self.replica = replica  # a follower's fetch: reads to the log end

    def add(self, size: int) -> None:
        self.missing -= size
        if self.missing <= 0 and not self.future.done():
            self.future.set_result(None)

    def wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class FetchWaiters:
    """Waiting fetches by partition."""

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, set[FetchWait]] = {}

    def __len__(self) -> int:
        return len({w for waits in self._by_partition.values() for w in waits})

    def on_append(self, log: UnifiedLog, _info: AppendInfo, size: int) -> None:
        """UnifiedLog's on_append listener."""
        waits = self._by_partition.get((log.topic, log.partition))
        if waits:
            replicated = log.local.replicated
            for wait in list(waits):
                if wait.replica or not replicated:
                    wait.add(size)

    def high_watermark_moved(self, key: TopicPartition) -> None:
        """A replicated partition's high watermark moved: its consumers' fetches have new data to read."""
        for wait in list(self._by_partition.get(key, ())):
            if not wait.replica:
                wait.wake()

    def notify(self, key: TopicPartition, size: int) -> None:
        waits = self._by_partition.get(key)
        if waits:
            for wait in list(waits):
                wait.add(size)

    def wake(self, key: TopicPartition) -> None:
        """Answer every fetch waiting on `key` now (its log start moved, or it went away)."""
        for wait in list(self._by_partition.get(key, ())):
            wait.wake()

    async def wait(
        self, keys: Iterable[TopicPartition], missing: int, timeout_ms: int, *, replica: bool = False
    ) -> None:
        """Return once `missing` more bytes were appended to `keys`, or after `timeout_ms`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        wait = FetchWait(future, missing, replica)
        keys = list(keys)
        for key in keys:
            self._by_partition.setdefault(key, set()).add(wait)
        timer = loop.call_later(timeout_ms / 1000, _wake, future)
        try:
            await future
        finally:
            timer.cancel()
            for key in keys:
                waits = self._by_partition.get(key)
                if waits is not None:
                    waits.discard(wait)
                    if not waits:
                        del self._by_partition[key]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
