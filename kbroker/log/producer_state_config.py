"""The broker's producer-state settings (Kafka's ProducerStateManagerConfig), apart from the partition classes:
the log manager holds them from its construction, before any partition is loaded or created."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

DEFAULT_EXPIRATION_MS = 86_400_000
DEFAULT_EXPIRATION_CHECK_INTERVAL_MS = 600_000
SNAPSHOT_INTERVAL_MS = 60_000


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ProducerStateConfig(NamedTuple):
    """A NamedTuple, as the configuration tables' records (kbroker/config_defs.py): made at every start."""

    expiration_ms: int = DEFAULT_EXPIRATION_MS  # producer.id.expiration.ms
    expiration_check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS
    snapshot_interval_ms: int = SNAPSHOT_INTERVAL_MS  # how often LogManager's duty calls tick()
    clock: Callable[[], int] = wall_clock_ms
