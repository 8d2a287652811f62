"""structlog set-up: one event per line on stderr, as key=value (console) or JSON.

Loggers are filtering bound loggers: a call below the configured level is a no-op method, so
`log.debug(...)` on a hot path costs one attribute lookup and a call when debug is off.
Records from the standard library (asyncio, uvloop) go through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("console", "json")
_KEY_ORDER = ["timestamp", "level", "event"]


def configure_logging(
    level: str = "info", fmt: str = "console", stream: TextIO | None = None, *, cache: bool = True
) -> None:
    """Send structlog and stdlib logging to `stream` (stderr) at `level`, rendered as `fmt`.

    `cache=False` lets tests reconfigure loggers that were already used.
    """
    if level.lower() not in LEVELS:
        raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}: use one of {', '.join(FORMATS)}")
    numeric = logging.getLevelName(level.upper())
    out = stream if stream is not None else sys.stderr
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, *_finishing(fmt)],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=cache,
    )
    _route_stdlib(numeric, fmt, out, shared)


def _finishing(fmt: str) -> list[Any]:
    """Processors that turn an event dict into its one line."""
    if fmt == "json":
        renderer: Any = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.processors.LogfmtRenderer(key_order=_KEY_ORDER, drop_missing=True, bool_as_flag=False)
    return [structlog.processors.format_exc_info, renderer]


def _route_stdlib(numeric: int, fmt: str, out: TextIO, shared: list[Any]) -> None:
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *_finishing(fmt)],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
