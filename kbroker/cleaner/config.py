"""The `log.cleaner.*` broker settings the cleaner acts on (Kafka's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The `log.cleaner.*` broker settings the cleaner acts on (Kafka's names and defaults)."""

    enable: bool = True
    io_max_bytes_per_second: float = 1.7976931348623157e308
    dedupe_buffer_size: int = 134217728
    io_buffer_load_factor: float = 0.9
    backoff_ms: int = 15000

    @classmethod
    def from_broker(cls, config: Any) -> CleanerConfig:
        return cls(
            enable=config.get_bool("log.cleaner.enable") and config.get_int("log.cleaner.threads") > 0,
            io_max_bytes_per_second=config.get_float("log.cleaner.io.max.bytes.per.second"),
            dedupe_buffer_size=config.get_int("log.cleaner.dedupe.buffer.size"),
            io_buffer_load_factor=config.get_float("log.cleaner.io.buffer.load.factor"),
            backoff_ms=config.get_int("log.cleaner.backoff.ms"),
        )
