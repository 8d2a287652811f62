"""The broker's log cleaner, from its configuration (None when `log.cleaner.enable=false`).

`LogCleaner` (log_cleaner.py) and the partition classes it works on load once the broker holds a partition:
with the broker when its data directory has one, else at the first `log.cleaner.backoff.ms` wake-up after a
topic is created, when LogCleaner would first have found a log to look at (start-up time: a broker on an
empty data directory starts without them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.cleaner import cleaner_enabled
from kbroker.config import BrokerConfig
from kbroker.log.manager import LogManager

if TYPE_CHECKING:
    from kbroker.cleaner.log_cleaner import LogCleaner

log = structlog.get_logger(__name__)


class LogCleanerRuntime:
    """Runs the LogCleaner, built once there is a partition to clean."""

    def __init__(self, logs: LogManager, config: Callable[[], BrokerConfig]) -> None:
        self.logs = logs
        self.config = config
        self.backoff_ms = config().get_int("log.cleaner.backoff.ms")
        self.cleaner = self._new_cleaner() if self._has_partitions() else None

    def _has_partitions(self) -> bool:
        return next(self.logs.partitions(), None) is not None

    def _new_cleaner(self) -> LogCleaner:
        from kbroker.cleaner.log_cleaner import CleanerConfig, LogCleaner  # late: see the module's docstring

        return LogCleaner(self.logs, CleanerConfig.from_broker(self.config()), topic_config=self._topic_config)

    def _topic_config(self, name: str) -> Mapping[str, Any]:
        metadata = self.logs.topic(name)
        return self.config().topic_config(metadata.configs if metadata is not None else {})

    async def run(self) -> None:
        """Until cancelled: wait for a first partition (checking every backoff), then clean due logs."""
        log.info("log_cleaner_started", backoff_ms=self.backoff_ms)
        while self.cleaner is None:
            await asyncio.sleep(self.backoff_ms / 1000)
            if self._has_partitions():
                self.cleaner = self._new_cleaner()
        await self.cleaner.run()

    async def shutdown(self) -> None:
        """Stop a round in progress and the cleaner's thread, if it ever started."""
        if self.cleaner is not None:
            await self.cleaner.shutdown()


def new_log_cleaner(config: Callable[[], BrokerConfig], logs: LogManager) -> LogCleanerRuntime | None:
    """`config` gives the broker's configuration as it is now (dynamic broker configs replace it)."""
    return LogCleanerRuntime(logs, config) if cleaner_enabled(config()) else None
