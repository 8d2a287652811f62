"""An I/O rate limit for the cleaner thread (Kafka's Throttler, `log.cleaner.io.max.bytes.per.second`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CHECK_INTERVAL_S = 0.3


class CleaningAbortedError(Exception):
    """The round stopped (shutdown, the partition went away); nothing was swapped in."""


class Throttler:
    """Sleeps the calling thread so that the bytes it reports stay under `bytes_per_second`."""

    def __init__(
        self,
        bytes_per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        stop: threading.Event | None = None,
    ) -> None:
        self.bytes_per_second = bytes_per_second
        self.stop = stop
        self.clock = clock
        self.sleep = sleep
        self._period_start = clock()
        self._observed = 0.0
        self.slept_s = 0.0

    def maybe_throttle(self, size: int) -> None:
        """Account `size` bytes; sleep when over the rate; raise CleaningAbortedError once stopped."""
        if self.stop is not None and self.stop.is_set():
            raise CleaningAbortedError("the cleaner is stopping")
        if self.bytes_per_second <= 0 or self.bytes_per_second >= 1e300:
            return
        self._observed += size
        elapsed = self.clock() - self._period_start
        wanted = self._observed / self.bytes_per_second
        if wanted > elapsed:
            if self.stop is not None:
                if self.stop.wait(wanted - elapsed):  # a shutdown does not wait for the throttle
                    raise CleaningAbortedError("the cleaner is stopping")
            else:
                self.sleep(wanted - elapsed)
            self.slept_s += wanted - elapsed
        if elapsed >= CHECK_INTERVAL_S:
            self._period_start = self.clock()
            self._observed = 0.0
