"""Capturing structlog events in a test, whatever configured structlog before it in this process (an
in-process broker of kbroker.testing configures it with a level threshold of its own)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from structlog.testing import capture_logs


@contextmanager
def captured_logs() -> Iterator[list[dict[str, Any]]]:
    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**saved)
