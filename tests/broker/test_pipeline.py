"""The request pipeline without sockets or an event loop: ordering, backpressure, memory, deadlines, bad input."""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator
from typing import Any

import pytest
import structlog

from kbroker.context import RequestContext
from kbroker.handlers.registry import Handler
from kbroker.memory import MemoryPool
from kbroker.pipeline import MAX_IN_FLIGHT, RequestPipeline
from protocol.api_keys import ApiKey
from protocol.codec import decode
from protocol.errors import ErrorCode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, read_response_header
from protocol.schema import REQUESTS, RESPONSES
from tests.process import RawClient


class Later:
    """An awaitable the test completes by hand (the owner records it instead of running it)."""

    def __await__(self) -> Generator[Any, None, Any]:
        raise AssertionError("never awaited in these tests")
        yield


class Owner:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.pending: list[Callable[[Any, BaseException | None], None]] = []
        self.reading_changes: list[bool] = []
        self.closed: tuple[str, dict[str, Any]] | None = None

    def write(self, chunks: list[Any]) -> None:
        self.written.append(b"".join(bytes(c) for c in chunks))

    def spawn(self, awaitable: Any, done: Callable[[Any, BaseException | None], None]) -> None:
        assert isinstance(awaitable, Later)
        self.pending.append(done)

    def set_reading(self, reading: bool) -> None:
        self.reading_changes.append(reading)

    def close(self, reason: str, level: str, fields: dict[str, Any]) -> None:
        self.closed = (reason, fields)

    def correlation_ids(self) -> list[int]:
        return [read_response_header(frame[4:], False)[0] for frame in self.written]


VERSIONS_ANSWER = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}


def handler(api_key: int, func: Callable[[RequestContext, dict[str, Any]], Any], high: int = 3) -> Handler:
    return Handler(api_key, 0, high, 0, func, False, REQUESTS[api_key], RESPONSES[api_key])


def context(header: RequestHeader) -> RequestContext:
    return RequestContext(
        None,  # type: ignore[arg-type]  # these handlers never look at the broker
        header.api_key,
        header.api_version,
        header.correlation_id,
        header.client_id,
        1,
        "test:1",
        structlog.get_logger(),
    )


def pipeline(
    handlers: dict[int, Handler], *, memory: MemoryPool | None = None, timeout_ms: int = -1, max_frame: int = 10**6
) -> tuple[RequestPipeline, Owner]:
    owner = Owner()
    pipe = RequestPipeline(
        handlers,
        context,
        owner,
        max_frame_size=max_frame,
        memory=memory or MemoryPool(-1),
        frame_timeout_ms=timeout_ms,
    )
    return pipe, owner


def request(api_key: int, correlation_id: int, version: int = 0, body: dict[str, Any] | None = None) -> bytes:
    raw = RawClient.__new__(RawClient)
    raw.client_id = "pipe"
    return raw.request_bytes(api_key, version, body or {}, correlation_id=correlation_id)


def test_responses_leave_in_request_order_when_handlers_finish_out_of_order() -> None:
    pipe, owner = pipeline({ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, lambda ctx, body: Later())})
    pipe.feed(b"".join(request(ApiKey.API_VERSIONS, i) for i in (1, 2, 3)))
    assert len(owner.pending) == 3 and owner.written == []
    third, first, second = owner.pending[2], owner.pending[0], owner.pending[1]
    third(VERSIONS_ANSWER, None)
    assert owner.written == []  # 1 and 2 are still running
    first(VERSIONS_ANSWER, None)
    assert owner.correlation_ids() == [1]
    second(VERSIONS_ANSWER, None)
    assert owner.correlation_ids() == [1, 2, 3]
    assert pipe.idle


def test_immediate_answers_wait_behind_a_slow_one() -> None:
    slow = handler(ApiKey.API_VERSIONS, lambda ctx, body: Later())
    fast = handler(ApiKey.FIND_COORDINATOR, lambda ctx, body: {"error_code": 0, "node_id": 1, "host": "h", "port": 1})
    pipe, owner = pipeline({ApiKey.API_VERSIONS: slow, ApiKey.FIND_COORDINATOR: fast})
    pipe.feed(request(ApiKey.API_VERSIONS, 7) + request(ApiKey.FIND_COORDINATOR, 8, body={"key": "g"}))
    assert owner.written == []
    owner.pending[0](VERSIONS_ANSWER, None)
    assert owner.correlation_ids() == [7, 8]


def test_reading_pauses_with_too_many_requests_waiting_and_resumes() -> None:
    pipe, owner = pipeline({ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, lambda ctx, body: Later())})
    pipe.feed(b"".join(request(ApiKey.API_VERSIONS, i) for i in range(MAX_IN_FLIGHT)))
    assert owner.reading_changes == [False] and not pipe.reading
    owner.pending[0](VERSIONS_ANSWER, None)
    assert owner.reading_changes == [False, True]


def test_blocked_output_pauses_reading() -> None:
    pipe, owner = pipeline({})
    pipe.set_output_blocked(True)
    pipe.set_output_blocked(False)
    assert owner.reading_changes == [False, True]


def test_handler_error_becomes_the_apis_error_code() -> None:
    def broken(ctx: RequestContext, body: dict[str, Any]) -> Any:
        raise RuntimeError("bug")

    pipe, owner = pipeline({ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, broken)})
    pipe.feed(request(ApiKey.API_VERSIONS, 5))
    frame = owner.written[0][4:]
    correlation_id, pos = read_response_header(frame, False)
    answer = decode(RESPONSES[ApiKey.API_VERSIONS], 0, frame, pos)
    assert correlation_id == 5 and answer["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert owner.closed is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (struct.pack(">i", 10**6 + 1), "frame length 1000001 is outside"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "this looks like HTTP"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "looks like a TLS handshake"),
        (frame_prefix(6) + b"\x00\x03\x00\x01\x00\x00", "malformed request header"),
        (frame_prefix(10) + struct.pack(">hhih", 9999, 0, 1, 0), "unsupported API or version"),
    ],
    ids=["oversized", "http", "tls", "truncated-header", "unknown-api"],
)
def test_bad_input_closes_with_a_reason(data: bytes, reason: str) -> None:
    memory = MemoryPool(-1)
    pipe, owner = pipeline({}, memory=memory)
    pipe.feed(data)
    assert owner.closed is not None and reason in owner.closed[0]
    pipe.connection_lost()
    assert memory.used == 0


def test_too_new_api_versions_is_answered_in_v0() -> None:
    pipe, owner = pipeline({ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, lambda ctx, body: VERSIONS_ANSWER)})
    pipe.feed(frame_prefix(10) + struct.pack(">hhih", ApiKey.API_VERSIONS, 9, 4, 0))
    frame = owner.written[0][4:]
    correlation_id, pos = read_response_header(frame, False)
    assert correlation_id == 4
    assert decode(RESPONSES[ApiKey.API_VERSIONS], 0, frame, pos)["error_code"] == ErrorCode.UNSUPPORTED_VERSION


def test_request_memory_is_held_until_answered_and_spent_memory_pauses_reading() -> None:
    memory = MemoryPool(100_000)
    slow = handler(ApiKey.API_VERSIONS, lambda ctx, body: Later())
    holder, holder_owner = pipeline({ApiKey.API_VERSIONS: slow}, memory=memory)
    one = request(ApiKey.API_VERSIONS, 1)
    holder.feed(one)
    assert memory.used == len(one) - 4
    big, big_owner = pipeline({}, memory=memory)
    big.feed(frame_prefix(500_000))  # a large request announced: it may grow only as memory allows
    stalled = b"x" * 200_000
    sent = 0
    while big.reading and sent < len(stalled):
        target = big.get_buffer()
        n = min(len(target), len(stalled) - sent)
        target[:n] = stalled[sent : sent + n]
        del target
        sent += n
        big.buffer_updated(n, 0.0)
    assert not big.reading and big_owner.reading_changes == [False]
    assert memory.used == 100_000 and sent < 100_000  # never beyond the budget
    holder_owner.pending[0](VERSIONS_ANSWER, None)  # the answer releases the first request's bytes
    assert big.reading and big_owner.reading_changes == [False, True]
    big.connection_lost()
    assert memory.used == 0


def test_announced_size_costs_nothing_until_bytes_arrive() -> None:
    memory = MemoryPool(-1)
    pipes = [pipeline({}, memory=memory, max_frame=200 * 2**20)[0] for _ in range(50)]
    for pipe in pipes:
        pipe.feed(frame_prefix(100 * 2**20) + b"abcd")
    assert memory.used <= 50 * 16 * 1024


def test_frame_deadline_closes_a_slow_sender_only() -> None:
    pipe, owner = pipeline({ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, lambda ctx, body: VERSIONS_ANSWER)})
    pipe.frame_timeout = 30.0
    data = request(ApiKey.API_VERSIONS, 1)
    pipe.feed(data, now=100.0)  # a whole request: nothing pending
    assert not pipe.check_deadline(1000.0)
    pipe.feed(data[:5], now=1000.0)
    pipe.feed(data[5:6], now=1020.0)  # trickling keeps the connection active but not the request in time
    assert not pipe.check_deadline(1029.9)
    assert pipe.check_deadline(1030.0)
    assert owner.closed is not None and owner.closed[0] == "request not received in time"


def test_large_frames_maps_are_reused_once_nothing_holds_them() -> None:
    kept: list[Any] = []
    pipe, owner = pipeline(
        {ApiKey.PRODUCE: handler(ApiKey.PRODUCE, lambda ctx, body: kept.append(body) or Later(), high=9)}
    )
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"r" * 300_000}]}],
    }
    pipe.feed(request(ApiKey.PRODUCE, 1, version=9, body=body))
    maps = pipe.reader.maps
    kept.clear()  # the handler is done with the request
    owner.pending[0]({"responses": []}, None)
    assert maps.kept_bytes >= 300_000  # its map was taken back
    pipe.feed(request(ApiKey.PRODUCE, 2, version=9, body=body))
    assert maps.kept_bytes == 0  # and reused for the next large request
    owner.pending[1]({"responses": []}, None)
    assert owner.correlation_ids() == [1, 2]


def test_a_map_still_referenced_is_not_reused() -> None:
    kept: list[Any] = []
    pipe, owner = pipeline(
        {ApiKey.PRODUCE: handler(ApiKey.PRODUCE, lambda ctx, body: kept.append(body) or Later(), high=9)}
    )
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"r" * 300_000}]}],
    }
    pipe.feed(request(ApiKey.PRODUCE, 1, version=9, body=body))
    owner.pending[0]({"responses": []}, None)  # answered, but the records are still referenced
    assert pipe.reader.maps.kept_bytes == 0
    assert bytes(kept[0]["topic_data"][0]["partition_data"][0]["records"]) == b"r" * 300_000


def test_a_request_answered_at_once_gives_its_map_back_too() -> None:
    pipe, owner = pipeline({ApiKey.PRODUCE: handler(ApiKey.PRODUCE, lambda ctx, body: {"responses": []}, high=9)})
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"r" * 300_000}]}],
    }
    pipe.feed(request(ApiKey.PRODUCE, 1, version=9, body=body))
    assert owner.correlation_ids() == [1] and pipe.reader.maps.kept_bytes >= 300_000


# ----- client quotas (KIP-219): the answer goes out at once with throttle_time_ms, then reading stops


class ThrottleOwner(Owner):
    def __init__(self) -> None:
        super().__init__()
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.timers.append((delay, callback))


def _quota_pipeline(handlers: dict[int, Handler]) -> tuple[RequestPipeline, ThrottleOwner, list[float]]:
    from kbroker.quota.manager import Quotas
    from kbroker.quota.store import ClientQuotaStore

    clock = [1_000_000.0]
    store = ClientQuotaStore()
    store.alter(
        [{"entity": [{"entity_type": "client-id", "entity_name": None}], "ops": [
            {"key": "producer_byte_rate", "value": 1000.0, "remove": False}]}],
        validate_only=False,
    )  # fmt: skip
    broker = type("FakeBroker", (), {"quotas": Quotas(store, clock=lambda: clock[0])})()

    def new_context(header: RequestHeader) -> RequestContext:
        ctx = context(header)
        ctx.broker = broker  # type: ignore[assignment]  # only its quotas are used
        return ctx

    owner = ThrottleOwner()
    pipe = RequestPipeline(handlers, new_context, owner, max_frame_size=10**6, memory=MemoryPool(-1))
    return pipe, owner, clock


def _coordinator_answer(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    ctx.throttle_ms = 250 if body["key"] == "throttle-me" else 0  # as Fetch and the topic admin APIs report theirs
    return {"throttle_time_ms": 0, "error_code": 0, "node_id": 1, "host": "h", "port": 1}


def test_a_throttled_answer_carries_its_throttle_time_and_mutes_the_connection_until_it_passes() -> None:
    find = handler(ApiKey.FIND_COORDINATOR, _coordinator_answer)
    pipe, owner, _ = _quota_pipeline({ApiKey.FIND_COORDINATOR: find})
    pipe.feed(request(ApiKey.FIND_COORDINATOR, 1, version=1, body={"key": "g", "key_type": 0}))
    assert owner.timers == [] and pipe.reading
    pipe.feed(request(ApiKey.FIND_COORDINATOR, 2, version=1, body={"key": "throttle-me", "key_type": 0}))
    assert owner.correlation_ids() == [1, 2]  # answered at once
    answer = decode(RESPONSES[ApiKey.FIND_COORDINATOR], 1, owner.written[1], 8)
    assert answer["throttle_time_ms"] == 250
    assert not pipe.reading and pipe.throttled and owner.reading_changes == [False]
    assert [delay for delay, _ in owner.timers] == [0.25]
    owner.timers[0][1]()
    assert pipe.reading and owner.reading_changes == [False, True]


def test_overlapping_throttles_keep_the_connection_muted_until_the_last_ends() -> None:
    find = handler(ApiKey.FIND_COORDINATOR, _coordinator_answer)
    pipe, owner, _ = _quota_pipeline({ApiKey.FIND_COORDINATOR: find})
    body = {"key": "throttle-me", "key_type": 0}
    pipe.feed(request(ApiKey.FIND_COORDINATOR, 1, 1, body) + request(ApiKey.FIND_COORDINATOR, 2, 1, body))
    assert len(owner.timers) == 2
    owner.timers[0][1]()
    assert not pipe.reading
    owner.timers[1][1]()
    assert pipe.reading


def test_produce_bytes_over_the_quota_throttle_even_with_acks_0() -> None:
    produced: list[int] = []

    def produce(ctx: RequestContext, body: dict[str, Any]) -> None:
        produced.append(ctx.request_size)
        return None  # acks=0: no answer

    pipe, owner, clock = _quota_pipeline({ApiKey.PRODUCE: handler(ApiKey.PRODUCE, produce, high=9)})
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 1000, "topic_data": []}
    pipe.feed(request(ApiKey.PRODUCE, 1, 3, body))
    assert owner.written == [] and owner.timers == []  # a few bytes: within 1000 bytes/s over a 10 s window
    for correlation_id in range(2, 400):
        pipe.feed(request(ApiKey.PRODUCE, correlation_id, 3, body))
        if owner.timers:
            break
    assert owner.timers, "10 s worth of the quota was sent without a throttle"
    assert sum(produced) > 10_000 and not pipe.reading
