"""Fault injection: answers a test asks for instead of (or around) the handlers' own.

`Faults.wrap(registry)` returns the handler registry with every handler's function behind one
check (`faults.active`): with no fault set, the handler is called as it is. The server wraps the
registry only when testing is enabled (kbroker.testing, or `kbroker.testing.admin.enable=true`);
a production broker runs the registry unwrapped.

Faults, each for one API (by key or name) until its count is spent or `clear()`:
- fail:        the next N requests are answered with an error code and not handled (Produce
               appends nothing): per partition for Produce, Fetch, ListOffsets and Metadata (per
               topic), the top-level error code for APIs that have one.
- delay:       the next N answers leave `seconds` (real time) later than the handler gives them.
- disconnect:  the connection of the next N requests is closed, before they are handled or, with
               `after=True`, once handled (the client never sees the answer: an idempotent
               producer resends and the broker answers the duplicate with its first offsets).
A partition made unavailable answers NOT_LEADER_OR_FOLLOWER to Produce and Fetch (nothing
appended or read) and LEADER_NOT_AVAILABLE with no leader in Metadata, until restored.
All of it runs on the broker's event loop; callers on other threads go through kbroker.testing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.context import RequestContext
    from kbroker.handlers.registry import Handler

log = structlog.get_logger(__name__)

FAIL, DELAY, DISCONNECT = "fail", "delay", "disconnect"
TopicPartition = tuple[str, int]


def api_key_of(api: int | str) -> int:
    """An API by key (0) or by name ("Produce", "PRODUCE", "produce")."""
    if isinstance(api, int):
        return int(ApiKey(api))
    wanted = api.replace("_", "").replace("-", "").lower()
    for key in ApiKey:
        if key.name.replace("_", "").lower() == wanted:
            return int(key)
    raise ValueError(f"unknown API {api!r}")


def error_code_of(error: int | str) -> int:
    """An error by code (6) or by Kafka's name ("NOT_LEADER_OR_FOLLOWER")."""
    if isinstance(error, int):
        return int(ErrorCode(error))
    try:
        return int(ErrorCode[error.upper()])
    except KeyError:
        raise ValueError(f"unknown error code {error!r}") from None


@dataclass
class Fault:
    api_key: int
    kind: str
    remaining: int | None  # None: until cleared
    error_code: int = 0
    seconds: float = 0.0
    after: bool = False  # disconnect once handled

    def describe(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        fields["api"] = ApiKey(self.api_key).name
        return fields


class Faults:
    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.unavailable: dict[TopicPartition, bool] = {}
        self.active = False  # any fault set: the one check every wrapped handler makes
        self.injected = 0  # how many requests a fault changed
        self.close_connection: Callable[[int, str], None] = lambda connection_id, reason: None
        self.close_all: Callable[[str], int] = lambda reason: 0

    # -- controls ------------------------------------------------------------------
    def fail(self, api: int | str, error: int | str, count: int | None = 1) -> Fault:
        return self._add(Fault(api_key_of(api), FAIL, count, error_code=error_code_of(error)))

    def delay(self, api: int | str, seconds: float, count: int | None = None) -> Fault:
        if seconds < 0:
            raise ValueError("a delay is not negative")
        return self._add(Fault(api_key_of(api), DELAY, count, seconds=seconds))

    def disconnect(self, api: int | str, count: int | None = 1, after: bool = False) -> Fault:
        return self._add(Fault(api_key_of(api), DISCONNECT, count, after=after))

    def make_unavailable(self, topic: str, partition: int) -> None:
        self.unavailable[(topic, partition)] = True
        self._update()

    def make_available(self, topic: str, partition: int) -> None:
        self.unavailable.pop((topic, partition), None)
        self._update()

    def clear(self) -> None:
        self.faults.clear()
        self.unavailable.clear()
        self._update()

    def describe(self) -> dict[str, Any]:
        return {
            "faults": [f.describe() for f in self.faults],
            "unavailable": [{"topic": t, "partition": p} for t, p in self.unavailable],
            "injected": self.injected,
        }

    def _add(self, fault: Fault) -> Fault:
        if fault.remaining is not None and fault.remaining <= 0:
            raise ValueError("count must be positive (or None: until cleared)")
        self.faults.append(fault)
        self._update()
        log.info("fault_set", **fault.describe())
        return fault

    def _update(self) -> None:
        self.active = bool(self.faults or self.unavailable)

    def _take(self, api_key: int) -> Fault | None:
        for fault in self.faults:
            if fault.api_key == api_key:
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self.faults.remove(fault)
                        self._update()
                return fault
        return None

    # -- the registry ----------------------------------------------------------------
    def wrap(self, handlers: Mapping[int, Handler]) -> dict[int, Handler]:
        return {key: dataclasses.replace(h, func=self._wrapped(h), is_async=False) for key, h in handlers.items()}

    def _wrapped(self, handler: Handler) -> Callable[[RequestContext, dict[str, Any]], Any]:
        func = handler.func

        def call(ctx: RequestContext, request: dict[str, Any]) -> Any:
            if not self.active:
                return func(ctx, request)
            return self._intercept(handler, ctx, request)

        return call

    def _intercept(self, handler: Handler, ctx: RequestContext, request: dict[str, Any]) -> Any:
        api_key = handler.api_key
        fault = self._take(api_key)
        if fault is None:
            return self._with_unavailable(handler, ctx, request)
        self.injected += 1
        log.info("fault_injected", kind=fault.kind, api=ApiKey(api_key).name, connection_id=ctx.connection_id)
        if fault.kind == FAIL:
            if api_key == ApiKey.METADATA:  # the brokers as they are, every topic failed (none created)
                answer = handler.func(ctx, {**request, "allow_auto_topic_creation": False})
                return _then(answer, lambda a: _fail_topics(a, fault.error_code))
            answer = error_answer(handler, ctx.api_version, request, fault.error_code)
            if answer is None:
                self.close_connection(ctx.connection_id, "injected failure with no answer to carry it")
            return answer
        if fault.kind == DISCONNECT and not fault.after:
            self.close_connection(ctx.connection_id, "injected disconnect")
            return None
        return self._around(fault, self._with_unavailable(handler, ctx, request), ctx)

    async def _around(self, fault: Fault, result: Any, ctx: RequestContext) -> Any:
        if inspect.isawaitable(result):
            result = await result
        if fault.kind == DELAY:
            await asyncio.sleep(fault.seconds)
            return result
        self.close_connection(ctx.connection_id, "injected disconnect after handling")
        return None

    def _with_unavailable(self, handler: Handler, ctx: RequestContext, request: dict[str, Any]) -> Any:
        api_key = handler.api_key
        if not self.unavailable or api_key not in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA):
            return handler.func(ctx, request)
        if api_key == ApiKey.METADATA:
            return _then(handler.func(ctx, request), self._leaderless_metadata)
        topics_key, name_key, parts_key, index_key = _PARTITION_LAYOUT[api_key]
        refused: list[tuple[str, int]] = []
        kept = []
        for topic in request[topics_key]:
            parts = []
            for p in topic[parts_key]:
                if (topic[name_key], p[index_key]) in self.unavailable:
                    refused.append((topic[name_key], p[index_key]))
                else:
                    parts.append(p)
            if parts:
                kept.append({**topic, parts_key: parts})
        if not refused:
            return handler.func(ctx, request)
        result = handler.func(ctx, {**request, topics_key: kept})
        code = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return _then(result, lambda answer: _add_partition_errors(api_key, answer, refused, code))

    def _leaderless_metadata(self, answer: dict[str, Any] | None) -> dict[str, Any] | None:
        for topic in (answer or {}).get("topics", ()):
            for p in topic.get("partitions", ()):
                if (topic["name"], p["partition_index"]) in self.unavailable:
                    # as Kafka answers for a partition whose leader is offline: no leader, its replicas offline
                    p.update(
                        error_code=int(ErrorCode.LEADER_NOT_AVAILABLE),
                        leader_id=-1,
                        offline_replicas=list(p.get("replica_nodes", ())),
                    )
        return answer


# api key -> (topics field, topic name field, partitions field, partition index field) in the request
_PARTITION_LAYOUT: dict[int, tuple[str, str, str, str]] = {
    ApiKey.PRODUCE: ("topic_data", "name", "partition_data", "index"),
    ApiKey.FETCH: ("topics", "topic", "partitions", "partition"),
    ApiKey.LIST_OFFSETS: ("topics", "name", "partitions", "partition_index"),
}


def _then(result: Any, after: Callable[[Any], Any]) -> Any:
    if inspect.isawaitable(result):

        async def finish() -> Any:
            return after(await result)

        return finish()
    return after(result)


def _partition_error(api_key: int, index: int, code: int) -> dict[str, Any]:
    if api_key == ApiKey.PRODUCE:
        return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1}
    if api_key == ApiKey.FETCH:
        return {
            "partition_index": index,
            "error_code": code,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }
    return {"partition_index": index, "error_code": code, "timestamp": -1, "offset": -1, "leader_epoch": -1}


# api key -> (topics field, topic name field, partitions field) in the response
_ANSWER_LAYOUT: dict[int, tuple[str, str, str]] = {
    ApiKey.PRODUCE: ("responses", "name", "partition_responses"),
    ApiKey.FETCH: ("responses", "topic", "partitions"),
    ApiKey.LIST_OFFSETS: ("topics", "name", "partitions"),
}


def _add_partition_errors(
    api_key: int, answer: dict[str, Any] | None, refused: Iterable[tuple[str, int]], code: int
) -> dict[str, Any] | None:
    if answer is None:  # acks=0: no answer at all
        return None
    topics_key, name_key, parts_key = _ANSWER_LAYOUT[api_key]
    by_name = {t[name_key]: t for t in answer[topics_key]}
    for name, index in refused:
        topic = by_name.get(name)
        if topic is None:
            topic = by_name[name] = {name_key: name, parts_key: []}
            answer[topics_key].append(topic)
        topic[parts_key].append(_partition_error(api_key, index, code))
    return answer


def error_answer(handler: Handler, version: int, request: dict[str, Any], code: int) -> dict[str, Any] | None:
    """`request` answered with `code`: per partition (Produce, Fetch, ListOffsets), else the top-level
    error code; None for an API that has no error code to give (Metadata is failed per topic around
    its handler, in Faults)."""
    api_key = handler.api_key
    if api_key == ApiKey.PRODUCE and request.get("acks") == 0:
        return None
    if api_key in _PARTITION_LAYOUT:
        topics_key, name_key, parts_key, index_key = _PARTITION_LAYOUT[api_key]
        refused = [(t[name_key], p[index_key]) for t in request[topics_key] for p in t[parts_key]]
        empty = {topics_key: []} if api_key != ApiKey.FETCH else {"error_code": 0, "session_id": 0, "responses": []}
        answer = {"throttle_time_ms": 0, **{_ANSWER_LAYOUT[api_key][0]: []}, **empty}
        return _add_partition_errors(api_key, answer, refused, code)
    if "error_code" not in {f.name for f in handler.response.fields}:
        return None
    return {"error_code": code}


def _fail_topics(answer: dict[str, Any] | None, code: int) -> dict[str, Any] | None:
    for topic in (answer or {}).get("topics", ()):
        topic.update(error_code=code, partitions=[])
    return answer
