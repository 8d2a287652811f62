"""Kafka's quota arithmetic, pure: a windowed rate, a token bucket, and the throttle time.

`WindowedRate` is Kafka's `Rate` over a `WindowedSum` (org.apache.kafka.common.metrics.stats): values
are summed into `samples + 1` windows of `window_ms` each (the extra one overlaps the oldest), windows
with no event for `samples * window_ms` are reset, and the rate is the sum divided by the time the
retained windows span, never less than `(samples - 1) * window_ms`, so a new client is measured as if
it had been quiet before (its first burst is spread over the whole window, not punished at once).

`TokenBucket` is KIP-599's controller mutation quota: refilled at the quota rate up to a burst of
`samples * window_seconds * quota`, drained by each mutation, allowed to go negative once.

Times are milliseconds from any fixed origin; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    value: float
    start_ms: float
    last_event_ms: float

    def reset(self, now_ms: float) -> None:
        self.value = 0.0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class WindowedRate:
    """Units per second over the last `samples` windows (Kafka's Rate with WindowedSum)."""

    __slots__ = ("samples", "window_ms", "_windows", "_current")

    def __init__(self, samples: int, window_ms: float) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._windows: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: float) -> float:
        """The rate now, per second."""
        window = self.window_size(now_ms)  # purges obsolete samples first
        return sum(s.value for s in self._windows) / (window / 1000)

    def window_size(self, now_ms: float) -> float:
        """The time the rate is measured over, in ms (Kafka's Rate.windowSize)."""
        self._purge(now_ms)
        elapsed = now_ms - min(s.start_ms for s in self._windows) if self._windows else 0.0
        full_windows = int(elapsed // self.window_ms)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1.0)

    def _current_sample(self, now_ms: float) -> _Sample:
        if not self._windows:
            self._windows.append(_Sample(0.0, now_ms, now_ms))
        return self._windows[self._current]

    def _advance(self, now_ms: float) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._windows):
            sample = _Sample(0.0, now_ms, now_ms)
            self._windows.append(sample)
            return sample
        sample = self._windows[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        for sample in self._windows:
            if now_ms - sample.last_event_ms >= expire:
                sample.reset(now_ms)


def throttle_time_ms(observed: float, bound: float, window_ms: float) -> int:
    """How long to delay a client whose rate `observed` exceeds `bound`, measured over `window_ms`:
    X such that observed * W / (W + X) = bound (Kafka's QuotaUtils.throttleTime)."""
    return round((observed - bound) / bound * window_ms)


class TokenBucket:
    """KIP-599's bucket: `tokens` never above the burst; a mutation may take it below zero."""

    __slots__ = ("quota", "burst", "tokens", "_last_ms")

    def __init__(self, quota: float, samples: int, window_ms: float) -> None:
        self.quota = quota
        self.burst = samples * (window_ms / 1000) * quota
        self.tokens = self.burst  # Kafka's bucket starts empty at time 0, so it is full by any real clock
        self._last_ms: float | None = None

    def set_quota(self, quota: float, samples: int, window_ms: float) -> None:
        self.quota = quota
        self.burst = samples * (window_ms / 1000) * quota

    def measure(self, now_ms: float) -> float:
        self._refill(now_ms)
        return self.tokens

    def record(self, value: float, now_ms: float) -> None:
        self._refill(now_ms)
        self.tokens = min(self.burst, self.tokens - value)

    def throttle_time_ms(self, now_ms: float) -> int:
        """0 while tokens remain; else the time to refill the deficit (ControllerMutationQuotaManager)."""
        tokens = self.measure(now_ms)
        return 0 if tokens >= 0 else round(-tokens / self.quota * 1000)

    def _refill(self, now_ms: float) -> None:
        if self._last_ms is not None:
            self.tokens = min(self.burst, self.tokens + self.quota * (now_ms - self._last_ms) / 1000)
        self._last_ms = now_ms
