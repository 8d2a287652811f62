"""The broker-wide budget for request bytes being read (Kafka's `queued.max.request.bytes`).

Sans-io: frame readers reserve what they are about to hold and release it when the request is
done; when the budget is spent a reader waits, and `release` wakes the waiters in arrival order.
A limit of -1 never refuses (Kafka's default) but still counts.
"""

from __future__ import annotations

from collections.abc import Callable


class MemoryPool:
    __slots__ = ("limit", "used", "peak", "_waiters")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._waiters: dict[object, Callable[[], None]] = {}  # insertion ordered

    @property
    def available(self) -> int:
        return (1 << 62) if self.limit < 0 else max(0, self.limit - self.used)

    def reserve(self, wanted: int, minimum: int) -> int:
        """Grant up to `wanted` bytes (at least `minimum`), or 0. A `minimum` of 0 always grants `wanted`:
        bytes that have already arrived are counted even beyond the limit."""
        if minimum > 0:
            free = self.available
            if free < minimum:
                return 0
            wanted = min(wanted, free)
        self.used += wanted
        if self.used > self.peak:
            self.peak = self.used
        return wanted

    def release(self, size: int) -> None:
        self.used -= size
        assert self.used >= 0, "released more request memory than was reserved"
        while self._waiters and self.available > 0:
            key = next(iter(self._waiters))
            self._waiters.pop(key)()

    def wait(self, key: object, wake: Callable[[], None]) -> None:
        """Call `wake` once memory is released (once per registration)."""
        self._waiters[key] = wake

    def forget(self, key: object) -> None:
        self._waiters.pop(key, None)
