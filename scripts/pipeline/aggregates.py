"""The job's per-minute metrics, computed directly from events in plain Python (the checker's expectation).

Semantics follow the Spark job: tumbling one-minute event-time windows per path; a window is emitted (append
mode) once the watermark, max event time seen minus the delay, reaches the window's end. Latency percentiles
follow ``percentile_approx``: the smallest value whose rank is at least ``ceil(q * n)``; exact for groups
smaller than accuracy / 2, within ``n / accuracy`` ranks above that.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from scripts.pipeline.events import AccessEvent, iso_millis

WINDOW_MS = 60_000
QUANTILES = (0.5, 0.95, 0.99)
ACCURACY = 10_000
ERROR_STATUS = 500


@dataclass(frozen=True)
class MinuteStats:
    """The metrics of one path in one minute, as the job writes them (value of the output topic)."""

    window_start: str
    window_end: str
    path: str
    requests: int
    errors: int
    error_rate: float
    bytes: int
    latency_p50: int
    latency_p95: int
    latency_p99: int

    @property
    def key(self) -> str:
        return f"{self.window_start}|{self.path}"


@dataclass(frozen=True)
class Expected:
    """What a run must emit: the stats of closed windows, and the latencies behind them for percentile slack."""

    closed: dict[str, MinuteStats]
    still_open: int
    watermark_ms: int
    latencies: dict[str, list[int]]


def percentile_rank(q: float, n: int) -> int:
    """1-based rank of the q-quantile among n sorted values, as Spark's quantile summaries pick it."""
    return min(n, max(1, math.ceil(q * n)))


def percentile_choices(sorted_values: list[int], q: float, accuracy: int = ACCURACY) -> set[int]:
    """The values percentile_approx may return for q: one when exact, a small band of ranks otherwise."""
    n = len(sorted_values)
    rank = percentile_rank(q, n)
    slack = 0 if 2 * n < accuracy else math.ceil(n / accuracy)
    low, high = max(1, rank - slack), min(n, rank + slack)
    return set(sorted_values[low - 1 : high])


def window_start(timestamp_ms: int) -> int:
    return timestamp_ms - timestamp_ms % WINDOW_MS


def expected_stats(events: Iterable[AccessEvent], watermark_delay_s: int) -> Expected:
    """Group events per (minute, path), then keep the windows the final watermark closed."""
    groups: dict[tuple[int, str], list[AccessEvent]] = defaultdict(list)
    max_ts = None
    for event in events:
        groups[(window_start(event.timestamp), event.path)].append(event)
        max_ts = event.timestamp if max_ts is None else max(max_ts, event.timestamp)
    watermark = (max_ts or 0) - watermark_delay_s * 1000
    closed, latencies, still_open = {}, {}, 0
    for (start, path), members in sorted(groups.items()):
        if start + WINDOW_MS > watermark:
            still_open += 1
            continue
        stats = _stats(start, path, members)
        closed[stats.key] = stats
        latencies[stats.key] = sorted(e.latency_ms for e in members)
    return Expected(closed=closed, still_open=still_open, watermark_ms=watermark, latencies=latencies)


def _stats(start: int, path: str, members: list[AccessEvent]) -> MinuteStats:
    latencies = sorted(e.latency_ms for e in members)
    errors = sum(1 for e in members if e.status >= ERROR_STATUS)
    p50, p95, p99 = (latencies[percentile_rank(q, len(latencies)) - 1] for q in QUANTILES)
    return MinuteStats(
        window_start=iso_millis(start),
        window_end=iso_millis(start + WINDOW_MS),
        path=path,
        requests=len(members),
        errors=errors,
        error_rate=errors / len(members),
        bytes=sum(e.bytes for e in members),
        latency_p50=p50,
        latency_p95=p95,
        latency_p99=p99,
    )
