"""Where handlers declare which API and versions they implement.

Each module in kbroker.handlers decorates one function with @handles(key, "min-max").
ApiVersions is derived from this registry, so kbroker never advertises an API or
a version that has no handler.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.schema import REQUESTS, RESPONSES
from protocol.schema.types import Message, parse_versions

if TYPE_CHECKING:
    from kbroker.context import RequestContext

HandlerFunc = Callable[["RequestContext", dict[str, Any]], Any]


@dataclass(frozen=True, eq=False)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    advertised_min: int  # usually min_version; Produce advertises 0 (see handlers/produce.py)
    func: HandlerFunc
    is_async: bool
    request: Message
    response: Message
    cluster_only: bool = False  # offered in cluster mode (zookeeper.connect) only

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


HANDLERS: dict[int, Handler] = {}


def handles(
    api_key: int, versions: str, *, advertise_min: int | None = None, cluster_only: bool = False
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register `func` as the handler of `api_key` for `versions` ("min-max"); `cluster_only`: an API that
    means something only among several brokers (neither advertised nor served by a broker alone)."""
    span = parse_versions(versions)

    def register(func: HandlerFunc) -> HandlerFunc:
        request, response = REQUESTS[api_key], RESPONSES[api_key]
        for message in (request, response):
            if span.low not in message.valid or span.high not in message.valid:
                raise RuntimeError(f"{func.__module__}: versions {versions} exceed the {message.name} schema")
        if api_key in HANDLERS:
            raise RuntimeError(f"api key {api_key} registered twice ({func.__module__})")
        HANDLERS[api_key] = Handler(
            api_key=api_key,
            min_version=span.low,
            max_version=span.high,
            advertised_min=span.low if advertise_min is None else advertise_min,
            func=func,
            is_async=inspect.iscoroutinefunction(func),
            request=request,
            response=response,
            cluster_only=cluster_only,
        )
        return func

    return register


def load_handlers() -> dict[int, Handler]:
    """Import every handler module once; returns the registry."""
    package = importlib.import_module("kbroker.handlers")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in ("registry",) and not info.name.startswith("_"):
            importlib.import_module(f"kbroker.handlers.{info.name}")
    return HANDLERS
