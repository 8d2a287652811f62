"""Build the broker's log cleaner from its configuration (None when `log.cleaner.enable=false`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbroker.cleaner.log_cleaner import CleanerConfig, LogCleaner
from kbroker.config import BrokerConfig
from kbroker.log.manager import LogManager


def new_log_cleaner(config: Callable[[], BrokerConfig], logs: LogManager) -> LogCleaner | None:
    """`config` gives the broker's configuration as it is now (dynamic broker configs replace it)."""
    cleaner_config = CleanerConfig.from_broker(config())
    if not cleaner_config.enable:
        return None

    def topic_config(name: str) -> Mapping[str, Any]:
        metadata = logs.topic(name)
        return config().topic_config(metadata.configs if metadata is not None else {})

    return LogCleaner(logs, cleaner_config, topic_config=topic_config)
