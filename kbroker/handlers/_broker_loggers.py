"""The BROKER_LOGGER config resource: each logger's level, read and changed at run time, as Kafka's.

A logger is "root" or a kbroker module (kbroker/logging_setup.py); levels use Kafka's names (TRACE, DEBUG,
INFO, WARN, ERROR, FATAL). Only IncrementalAlterConfigs changes them: SET gives a logger its own
level, DELETE makes it take its parent's again (never for root), APPEND and SUBTRACT are refused.
Levels are not persisted: a restart goes back to --log-level, as Kafka goes back to its log4j file.
"""

from __future__ import annotations

from typing import Any

from kbroker import logging_setup as logs
from kbroker.config import ConfigEntry, ConfigSource
from kbroker.config_defs import ConfigType
from kbroker.context import RequestContext
from kbroker.handlers._topic_admin import fail
from protocol.errors import ErrorCode

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
_LEVEL_NAMES = {number: name for name, number in logs.KAFKA_LEVELS.items()}


def logger_entries(ctx: RequestContext, name: str, wanted: list[str] | None) -> list[ConfigEntry]:
    if not name:
        raise fail(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    _check_node(ctx, name, "but")
    known = logs.known_loggers()
    names = known if wanted is None else [n for n in dict.fromkeys(wanted) if n in known]
    return [
        ConfigEntry(
            n,
            _LEVEL_NAMES.get(logs.effective_level(n) if n != logs.ROOT_LOGGER else logs.effective_level(""), "INFO"),
            ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
            ConfigType.STRING,
            "",
            False,
            (),
        )
        for n in names
    ]


def alter_loggers(ctx: RequestContext, name: str, configs: list[dict[str, Any]], validate_only: bool) -> None:
    _check_node(ctx, name, "but it is:")
    known = set(logs.known_loggers())
    changes: list[tuple[str, int | None]] = []
    for entry in configs:
        logger, op, value = entry["name"], entry["config_operation"], entry["value"]
        if op in _OPERATION_NAMES:
            raise fail(
                ErrorCode.INVALID_REQUEST,
                f"{_OPERATION_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource",
            )
        if op not in (SET, DELETE):
            raise fail(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op} (config {logger})")
        if logger not in known:
            raise fail(ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!")
        if op == DELETE:
            if logger == logs.ROOT_LOGGER:
                raise fail(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
            changes.append((logger, None))
            continue
        level = logs.KAFKA_LEVELS.get(value or "")
        if level is None:
            valid = ", ".join(sorted(logs.KAFKA_LEVELS))
            raise fail(
                ErrorCode.INVALID_CONFIG,
                f"Cannot set the log level of {logger} to {value} as it is not a supported log level. "
                f"Valid log levels are {valid}",
            )
        changes.append((logger, level))
    if validate_only:
        return
    for logger, level in changes:
        logs.set_logger_level(logger, level)
    ctx.log.info("logger_levels_changed", loggers={n: _LEVEL_NAMES.get(v) if v else None for n, v in changes})


def _check_node(ctx: RequestContext, name: str, wording: str) -> None:
    try:
        node = int(name)
    except ValueError:
        if wording == "but":
            raise fail(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        raise fail(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.broker.node_id:
        raise fail(
            ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.broker.node_id} but received {name}"
        )
