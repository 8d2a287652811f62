"""Access to kafka-python 3's message classes, our second implementation of the protocol."""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from functools import cache
from typing import Any

from protocol.schema.types import Message


@cache
def _classes() -> dict[tuple[int, str], Any]:
    from kafka.protocol import api_message

    for pkg_name in ("producer", "consumer", "metadata", "admin"):
        pkg = importlib.import_module(f"kafka.protocol.{pkg_name}")
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"kafka.protocol.{pkg_name}.{info.name}")
    found: dict[tuple[int, str], Any] = {}
    todo = list(api_message.ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None) is not None:
            found[(cls.API_KEY, cls.type)] = cls
    return found


def kafka_python_class(message: Message) -> Any | None:
    return _classes().get((message.api_key, message.kind))


def kafka_python_supports(message: Message, version: int) -> bool:
    cls = kafka_python_class(message)
    if cls is None:
        return False
    low, high = cls._valid_versions
    return low <= version <= high


def normalise(value: Any) -> Any:
    """Make values from either implementation comparable."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value
