"""The cleaner's I/O throttle with a fake clock."""

from __future__ import annotations

import threading

import pytest

from kbroker.cleaner.throttle import CleaningAbortedError, Throttler


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_rate_holds_over_many_small_reports() -> None:
    clock = FakeClock()
    throttler = Throttler(1000.0, clock=clock, sleep=clock.sleep)
    for _ in range(100):
        throttler.maybe_throttle(100)  # 10 000 bytes at 1000 B/s: about 10 s
    assert 9.5 <= clock.now <= 10.5


def test_no_limit_never_sleeps() -> None:
    clock = FakeClock()
    throttler = Throttler(1.7976931348623157e308, clock=clock, sleep=clock.sleep)
    throttler.maybe_throttle(1 << 30)
    assert clock.now == 0.0


def test_a_stop_ends_a_throttled_wait() -> None:
    stop = threading.Event()
    throttler = Throttler(1.0, stop=stop)
    stop.set()
    with pytest.raises(CleaningAbortedError):
        throttler.maybe_throttle(1000)
