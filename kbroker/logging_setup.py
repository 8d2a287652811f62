"""structlog set-up: one event per line on stderr, as key=value (console) or JSON.

A call below the lowest level any logger has returns at once, so `log.debug(...)` on a hot path
costs a call and one comparison when debug is off. Each logger is named by its module
(`structlog.get_logger(__name__)`), and its level can change at run time (Kafka's BROKER_LOGGER
resource, kbroker/handlers/_broker_loggers.py): `set_logger_level("kbroker.group", DEBUG)`; a logger
without a level of its own takes its nearest dotted parent's, then the root's (`--log-level`).
Records from the standard library (asyncio, uvloop) go through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

LEVELS = ("debug", "info", "warning", "error", "critical")
ROOT_LOGGER = "root"
TRACE = 5  # Kafka's TRACE, below DEBUG; kbroker logs nothing at it
# Kafka's (log4j's) level names, as BROKER_LOGGER reports and accepts them
KAFKA_LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
FORMATS = ("console", "json")
_KEY_ORDER = ["timestamp", "level", "event"]


def configure_logging(
    level: str = "info",
    fmt: str = "console",
    stream: TextIO | None = None,
    *,
    cache: bool = True,
    stdlib: bool = True,
) -> None:
    """Send structlog and stdlib logging to `stream` (stderr) at `level`, rendered as `fmt`.

    `cache=False` lets tests reconfigure loggers that were already used. `stdlib=False` leaves the
    standard library's logging as it is (a broker inside another program: kbroker.testing).
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
    _levels.root = numeric
    _levels.explicit.clear()
    _levels.threshold = numeric
    structlog.configure(
        processors=[*shared, _drop_below_logger_level, *_finishing(fmt)],
        wrapper_class=LevelledLogger,
        logger_factory=_NamedWriteLoggerFactory(out),
        cache_logger_on_first_use=cache,
    )
    if stdlib:
        _route_stdlib(numeric, fmt, out, shared)


# --------------------------------------------------------------------------- levels per logger


class _Levels:
    def __init__(self) -> None:
        self.root = logging.INFO
        self.explicit: dict[str, int] = {}  # logger name -> its own level
        self.threshold = logging.INFO  # the lowest level of all: below it nothing is logged


_levels = _Levels()


def set_logger_level(name: str, level: int | None) -> None:
    """Give logger `name` (ROOT_LOGGER: the root) its own level; None: take its parent's again."""
    if name == ROOT_LOGGER:
        if level is None:
            raise ValueError("the root logger always has a level")
        _levels.root = level
        logging.getLogger().setLevel(level)
    elif level is None:
        _levels.explicit.pop(name, None)
        logging.getLogger(name).setLevel(logging.NOTSET)
    else:
        _levels.explicit[name] = level
        logging.getLogger(name).setLevel(level)
    _levels.threshold = min([_levels.root, *_levels.explicit.values()])


def effective_level(name: str) -> int:
    """The level logger `name` logs at: its own, its nearest dotted parent's, or the root's."""
    explicit = _levels.explicit
    while name:
        if name in explicit:
            return explicit[name]
        name = name.rpartition(".")[0]
    return _levels.root


def known_loggers() -> list[str]:
    """The root, every imported kbroker module (each has a logger named after it) and every logger
    given a level."""
    modules = (name for name in sys.modules if name == "kbroker" or name.startswith("kbroker."))
    return [ROOT_LOGGER, *sorted(set(modules) | _levels.explicit.keys())]


def _drop_below_logger_level(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """With levels per logger, drop the events below their logger's level (the wrapper only knows the lowest)."""
    if _levels.explicit:
        level = _METHOD_LEVELS.get(method_name, logging.INFO)
        if level < effective_level(getattr(logger, "name", "")):
            raise structlog.DropEvent
    return event_dict


_METHOD_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "msg": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.CRITICAL,
}


class _NamedWriteLogger(structlog.WriteLogger):
    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


class _NamedWriteLoggerFactory:
    """structlog.WriteLoggerFactory, keeping the name given to get_logger for the level filter."""

    def __init__(self, file: TextIO) -> None:
        self._file = file

    def __call__(self, *args: Any) -> _NamedWriteLogger:
        return _NamedWriteLogger(self._file, str(args[0]) if args else "")


class LevelledLogger(structlog.BoundLoggerBase):
    """A bound logger whose methods return at once below the lowest configured level (one comparison)."""

    def _emit(self, method: str, event: str | None, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        return self._proxy_to_logger(method, event % args if args and event is not None else event, **kw)

    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.DEBUG:
            return None
        return self._emit("debug", event, args, kw)

    def info(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.INFO:
            return None
        return self._emit("info", event, args, kw)

    msg = info

    def warning(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.WARNING:
            return None
        return self._emit("warning", event, args, kw)

    warn = warning

    def error(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.ERROR:
            return None
        return self._emit("error", event, args, kw)

    def exception(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.ERROR:
            return None
        kw.setdefault("exc_info", True)
        return self._emit("error", event, args, kw)

    def critical(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if _levels.threshold > logging.CRITICAL:
            return None
        return self._emit("critical", event, args, kw)

    fatal = critical


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
