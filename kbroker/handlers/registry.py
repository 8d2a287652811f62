"""Where handlers declare which API and versions they implement.

Each module in kbroker.handlers, named after its API (ApiKey.PRODUCE: produce.py), decorates one
function with @handles(key, "min-max"). DECLARED repeats those ranges so that the broker can answer
ApiVersions and route a request before the handler's module is loaded: a module is imported at its
API's first request (start-up time), and @handles refuses a range that differs from DECLARED, so the
two cannot drift apart unnoticed (loading every module, as the tests do, checks them all).
ApiVersions is derived from DECLARED, so kbroker never advertises an API or a version that has no
handler.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from protocol.api_keys import ApiKey
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


class Declared(NamedTuple):
    """What a handler module declares with @handles."""

    versions: str
    advertise_min: int | None = None  # the lowest version advertised when not the lowest handled (Produce: 0)
    cluster_only: bool = False  # an API of a cluster: neither advertised nor served by a broker alone


DECLARED: dict[int, Declared] = {
    ApiKey.PRODUCE: Declared("3-12", advertise_min=0),
    ApiKey.FETCH: Declared("4-12"),
    ApiKey.LIST_OFFSETS: Declared("1-11"),
    ApiKey.METADATA: Declared("0-12"),
    ApiKey.OFFSET_COMMIT: Declared("2-10"),
    ApiKey.OFFSET_FETCH: Declared("1-10"),
    ApiKey.FIND_COORDINATOR: Declared("0-4"),
    ApiKey.JOIN_GROUP: Declared("0-9"),
    ApiKey.HEARTBEAT: Declared("0-4"),
    ApiKey.LEAVE_GROUP: Declared("0-5"),
    ApiKey.SYNC_GROUP: Declared("0-5"),
    ApiKey.DESCRIBE_GROUPS: Declared("0-5"),
    ApiKey.LIST_GROUPS: Declared("0-5"),
    ApiKey.SASL_HANDSHAKE: Declared("0-1"),
    ApiKey.API_VERSIONS: Declared("0-4"),
    ApiKey.CREATE_TOPICS: Declared("2-7"),
    ApiKey.DELETE_TOPICS: Declared("1-6"),
    ApiKey.DELETE_RECORDS: Declared("0-2"),
    ApiKey.INIT_PRODUCER_ID: Declared("0-5"),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Declared("2-4"),
    ApiKey.ADD_PARTITIONS_TO_TXN: Declared("0-5"),
    ApiKey.ADD_OFFSETS_TO_TXN: Declared("0-3"),
    ApiKey.END_TXN: Declared("0-5"),
    ApiKey.WRITE_TXN_MARKERS: Declared("1-2"),
    ApiKey.TXN_OFFSET_COMMIT: Declared("0-5"),
    ApiKey.DESCRIBE_ACLS: Declared("1-3"),
    ApiKey.CREATE_ACLS: Declared("1-3"),
    ApiKey.DELETE_ACLS: Declared("1-3"),
    ApiKey.DESCRIBE_CONFIGS: Declared("1-4"),
    ApiKey.ALTER_CONFIGS: Declared("0-2"),
    ApiKey.DESCRIBE_LOG_DIRS: Declared("1-5"),
    ApiKey.SASL_AUTHENTICATE: Declared("0-2"),
    ApiKey.CREATE_PARTITIONS: Declared("0-3"),
    ApiKey.DELETE_GROUPS: Declared("0-2"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Declared("0-1"),
    ApiKey.OFFSET_DELETE: Declared("0"),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Declared("0-1"),
    ApiKey.ALTER_CLIENT_QUOTAS: Declared("0-1"),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Declared("0"),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Declared("0"),
    ApiKey.DESCRIBE_CLUSTER: Declared("0-2"),
    ApiKey.DESCRIBE_PRODUCERS: Declared("0"),
    ApiKey.DESCRIBE_TRANSACTIONS: Declared("0"),
    ApiKey.LIST_TRANSACTIONS: Declared("0-2"),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Declared("0-1"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Declared("0-1"),
    ApiKey.LIST_CONFIG_RESOURCES: Declared("0-1"),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: Declared("0"),
    ApiKey.SHARE_GROUP_HEARTBEAT: Declared("1"),
    ApiKey.SHARE_GROUP_DESCRIBE: Declared("1"),
    ApiKey.SHARE_FETCH: Declared("1-2"),
    ApiKey.SHARE_ACKNOWLEDGE: Declared("1-2"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: Declared("0-1"),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: Declared("0"),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: Declared("0"),
    ApiKey.ELECT_LEADERS: Declared("0-2", cluster_only=True),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Declared("0-1", cluster_only=True),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Declared("0", cluster_only=True),
}


def advertised(cluster: bool) -> list[tuple[int, int, int]]:
    """(API key, lowest advertised version, highest version) of every API a broker offers (`cluster`: in
    cluster mode), by key, from DECLARED."""
    result = []
    for key, declared in sorted(DECLARED.items()):
        if declared.cluster_only and not cluster:
            continue
        span = parse_versions(declared.versions)
        low = declared.advertise_min
        result.append((key, span.low if low is None else low, span.high))
    return result


HANDLERS: dict[int, Handler] = {}  # every handler whose module is loaded (the process's)


class Registry(dict[int, Handler]):
    """One broker's handlers loaded so far, by API key. A lookup of a loaded one is a plain dict lookup;
    `load` imports the module of a declared API not loaded yet (what a connection calls on a miss).
    `cluster`: the APIs of a cluster are served too."""

    def __init__(self, cluster: bool) -> None:
        super().__init__()
        self.cluster = cluster

    def load(self, api_key: int) -> Handler | None:
        handler = self.get(api_key)
        declared = DECLARED.get(api_key)
        if handler is None and declared is not None and (self.cluster or not declared.cluster_only):
            importlib.import_module(f"kbroker.handlers.{ApiKey(api_key).name.lower()}")
            handler = self[api_key] = HANDLERS[api_key]
        return handler


def handles(
    api_key: int, versions: str, *, advertise_min: int | None = None, cluster_only: bool = False
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register `func` as the handler of `api_key` for `versions` ("min-max"), as DECLARED says;
    `cluster_only`: an API that means something only among several brokers (neither advertised nor
    served by a broker alone)."""
    span = parse_versions(versions)

    def register(func: HandlerFunc) -> HandlerFunc:
        if DECLARED.get(api_key) != Declared(versions, advertise_min, cluster_only):
            raise RuntimeError(
                f"{func.__module__}: @handles({api_key}, {versions!r}, advertise_min={advertise_min}, "
                f"cluster_only={cluster_only}) differs from DECLARED in {__name__} ({DECLARED.get(api_key)}): "
                "the two must agree"
            )
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
    """Import every handler module once; returns them all (cluster-only ones included)."""
    package = importlib.import_module("kbroker.handlers")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in ("registry",) and not info.name.startswith("_"):
            importlib.import_module(f"kbroker.handlers.{info.name}")
    return HANDLERS


def lazy_handlers(cluster: bool) -> Registry:
    """A broker's registry, no handler module loaded: each loads at its API's first request."""
    return Registry(cluster)
