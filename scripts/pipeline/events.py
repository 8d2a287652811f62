"""Web-access-log events: a deterministic generator and the JSON form they travel in."""

from __future__ import annotations

import builtins
import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

HOSTS = ("web-1", "web-2", "web-3", "web-4")
# path -> (typical response bytes, typical latency ms, share of 5xx answers)
PATHS = {
    "/": (5_200, 12, 0.002),
    "/login": (1_800, 45, 0.01),
    "/api/items": (12_000, 30, 0.02),
    "/api/cart": (2_400, 25, 0.03),
    "/checkout": (3_100, 120, 0.08),
    "/static/app.js": (240_000, 4, 0.0),
}


@dataclass(frozen=True)
class AccessEvent:
    """One request as a web server logs it; ``timestamp`` is event time in epoch milliseconds."""

    timestamp: int
    host: str
    path: str
    status: int
    bytes: int
    latency_ms: int

    def to_json(self) -> builtins.bytes:
        fields = asdict(self)
        fields["timestamp"] = iso_millis(self.timestamp)
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: builtins.bytes | str) -> AccessEvent:
        fields = json.loads(data)
        fields["timestamp"] = parse_iso_millis(fields["timestamp"])
        return cls(**fields)


def iso_millis(epoch_ms: int) -> str:
    """2026-11-22T08:00:01.123Z"""
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def parse_iso_millis(text: str) -> int:
    moment = datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return int(moment.timestamp() * 1000 + 0.5)


def _status(rng: random.Random, error_share: float) -> int:
    roll = rng.random()
    if roll < error_share:
        return rng.choice((500, 502, 503))
    if roll < error_share + 0.04:
        return 404
    if roll < error_share + 0.06:
        return rng.choice((301, 304))
    return 200


def generate_events(
    count: int, start_ms: int, span_s: int, lateness_s: int = 20, seed: int = 7
) -> Iterator[AccessEvent]:
    """``count`` events spread evenly over ``span_s`` seconds of event time from ``start_ms``.

    Each event is up to ``lateness_s`` seconds late (its timestamp is earlier than its place in the stream), as
    when several servers ship logs with some delay; keep it under the job's watermark delay.
    """
    rng = random.Random(seed)
    paths = list(PATHS)
    weights = (30, 8, 25, 12, 5, 20)
    step_ms = span_s * 1000 / max(count, 1)
    for i in range(count):
        path = rng.choices(paths, weights)[0]
        size, latency, error_share = PATHS[path]
        status = _status(rng, error_share)
        slow = 3.0 if status >= 500 else 1.0
        yield AccessEvent(
            timestamp=int(start_ms + i * step_ms) - rng.randrange(lateness_s * 1000 + 1),
            host=rng.choice(HOSTS),
            path=path,
            status=status,
            bytes=0 if status in (304, 500, 502, 503) else max(1, int(rng.gauss(size, size / 5))),
            latency_ms=max(1, int(rng.lognormvariate(0, 0.6) * latency * slow)),
        )
