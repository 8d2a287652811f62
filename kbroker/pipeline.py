"""One connection's request pipeline, sans-io: bytes in, requests dispatched, response chunks out.

The pipeline frames what arrives (protocol.framing), decodes each request's header and body with
the schema codec and hands the body to the API's handler. Handlers may be plain functions
(answered at once) or return awaitables (a long-poll fetch, an fsync before an acks=all ack),
which the owner runs; either way responses leave in the order the requests came, as clients
pipeline and expect.

It owns the decisions, not the I/O: whether reading should pause (too many requests waiting,
output blocked, request memory spent), when a frame that started to arrive is overdue
(slowloris), when a connection is idle, what to say about a frame that is not Kafka at all.
Its owner (kbroker.connection's asyncio adapter, or a test) supplies four callbacks through
`PipelineOwner`: write chunks, run an awaitable, pause/resume reading, close.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

from kbroker.memory import MemoryPool
from kbroker.sendfile import has_file_chunks, materialize
from protocol.api_keys import ApiKey, api_name
from protocol.codec import decode, encode_into
from protocol.errors import ErrorCode, KafkaProtocolError
from protocol.framing import Frame, FrameError, FrameReader, MapRecycler, frame_prefix
from protocol.headers import (
    RequestHeader,
    encode_response_header,
    read_request_header_prefix,
    response_header_is_flexible,
    skip_tagged_fields,
)
from protocol.primitives import DecodeError, Writer

if TYPE_CHECKING:
    from kbroker.context import RequestContext
    from kbroker.handlers.registry import Handler
    from kbroker.sasl import SaslSession

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

# Stop reading from a client that has this many requests awaiting their turn.
MAX_IN_FLIGHT = 256

# (api key, version) -> whether the response header is v1 (flexible)
_flexible_header: dict[tuple[int, int], bool] = {}

_HTTP_STARTS = (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN", b"TRAC", b"HTTP", b"PRI ")


class PipelineOwner(Protocol):
    def write(self, chunks: list[Any]) -> None:
        """Send one response's chunks (bytes and FileChunks), in order, now."""

    def spawn(self, awaitable: Awaitable[Any], done: Callable[[Any, BaseException | None], None]) -> None:
        """Run `awaitable`; call done(result, None) or done(None, error) when it ends (not when cancelled)."""

    def set_reading(self, reading: bool) -> None:
        """Pause or resume receiving."""

    def close(self, reason: str, level: str, fields: dict[str, Any]) -> None:
        """Log why and close the connection."""

    def close_after_failed_authentication(self, reason: str) -> None:
        """Log the failed authentication; close once the answer is out and the failure delay has passed."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        """Call `callback` after `delay` seconds (a quota throttle's end), unless the connection closed."""


class _Slot:
    """A response position in the connection's output order, with the request (and its memory) it holds."""

    __slots__ = ("chunks", "done", "held", "frame", "started", "handling")

    def __init__(self, held: int, frame: Frame | None = None) -> None:
        self.chunks: list[Any] | None = None
        self.done = False
        self.held = held
        self.frame = frame
        self.started = 0.0
        self.handling = 0.0  # seconds the handler ran before answering or handing over an awaitable


def describe_bad_frame(error: FrameError, first_frame: bool) -> str:
    """Why a frame length was refused, naming HTTP or TLS spoken to a Kafka listener."""
    start = error.first_bytes
    if first_frame and start[:4] in _HTTP_STARTS:
        return f"this looks like HTTP ({start!r}...), not the Kafka protocol; point an HTTP client elsewhere"
    if first_frame and start[:1] == b"\x16" and start[1:2] == b"\x03":
        return "this looks like a TLS handshake on a PLAINTEXT listener; the client needs security.protocol=PLAINTEXT"
    return f"bad frame: {error}"


class RequestPipeline:
    def __init__(
        self,
        handlers: Mapping[int, Handler],
        new_context: Callable[[RequestHeader], RequestContext],
        owner: PipelineOwner,
        *,
        max_frame_size: int,
        memory: MemoryPool,
        staging: bytearray | None = None,
        maps: MapRecycler | None = None,
        frame_timeout_ms: int = -1,
        now: float = 0.0,
        observe: Callable[[int, float, Any], None] | None = None,
        sasl: SaslSession | None = None,
    ) -> None:
        self.handlers = handlers
        self.observe = observe  # (api key, seconds, answer) per answered request: the metrics hook, None when off
        self.new_context = new_context
        self.owner = owner
        self.memory = memory
        self.max_frame_size = max_frame_size
        self.sasl = sasl
        if sasl is not None:  # until the client authenticates, its frames stay small
            max_frame_size = min(max_frame_size, sasl.settings.max_receive_size)
        self.reader = FrameReader(max_frame_size, staging, memory, maps=maps)
        self.frame_timeout = frame_timeout_ms / 1000 if frame_timeout_ms >= 0 else -1.0
        self.client_id: str | None = None
        self.last_active = now
        self.frame_started: float | None = None  # when the unfinished frame's first byte came
        self.closing = False
        self._order: deque[_Slot] = deque()
        self._output_blocked = False
        self._reading = True
        self._receiving = False  # inside buffer_updated: answered frames are recycled at its end
        self._answered: list[Frame] = []  # frames whose requests are answered, for their maps' reuse
        self._throttles = 0  # quota throttles in progress (reading stays paused while any is)

    # ----- bytes in

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int, now: float) -> None:
        self.last_active = now
        reader = self.reader
        try:
            frames = reader.buffer_updated(nbytes)
        except FrameError as error:
            self._close(describe_bad_frame(error, reader.frames_read == 0), "warning", {})
            return
        self._receiving = True
        for frame in frames:
            if self.closing:
                self.memory.release(len(frame))
            else:
                self._on_frame(frame)
        self._receiving = False
        if self._answered:
            del frames  # the frames' maps may be reused once nothing references their bytes
            self._recycle()
        if reader.pending_bytes:
            if self.frame_started is None:
                self.frame_started = now
        else:
            self.frame_started = None
        if reader.starved:
            self.memory.wait(self, self._memory_freed)
        self._update_reading()

    def feed(self, data: bytes, now: float = 0.0) -> None:
        """Receive `data` as a transport would (tests)."""
        view = memoryview(data)
        while view and not self.closing:
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            del target
            view = view[n:]
            self.buffer_updated(n, now)

    # ----- state the owner asks about

    @property
    def reading(self) -> bool:
        return self._reading

    @property
    def idle(self) -> bool:
        """Nothing received, waiting or being answered."""
        return not self._order and not self._output_blocked and self.reader.pending_bytes == 0

    @property
    def in_flight(self) -> int:
        return len(self._order)

    def set_output_blocked(self, blocked: bool) -> None:
        """The owner's output is full (transport paused writing, or a response still going out)."""
        if blocked != self._output_blocked:
            self._output_blocked = blocked
            self._update_reading()

    def check_deadline(self, now: float) -> bool:
        """Close the connection if a frame has been arriving for too long (slowloris); True if closed."""
        started = self.frame_started
        if self.closing or started is None or self.frame_timeout < 0 or now - started < self.frame_timeout:
            return False
        self._close(
            "request not received in time",
            "warning",
            {"received_bytes": self.reader.pending_bytes, "timeout_ms": int(self.frame_timeout * 1000)},
        )
        return True

    def connection_lost(self) -> None:
        """Release everything the connection holds (its tasks are the owner's to cancel)."""
        self.closing = True
        self.memory.forget(self)
        self.reader.release()
        while self._order:
            self.memory.release(self._order.popleft().held)

    # ----- requests

    def _on_frame(self, frame: Frame) -> None:
        held = len(frame)
        if self.sasl is not None and self.sasl.awaiting_raw_token:
            self._on_raw_sasl_token(frame, self.sasl)
            return
        try:
            header, pos = read_request_header_prefix(frame)
        except DecodeError as exc:
            self.memory.release(held)
            self._close(f"malformed request header: {exc}", "warning", {})
            return
        self.client_id = header.client_id
        sasl = self.sasl
        if sasl is not None and header.api_key not in SASL_APIS:
            if not sasl.allows(header.api_key):
                self.memory.release(held)
                self._close("request before SASL authentication", "warning", _request_fields(header))
                return
            if sasl.expired(self.last_active):
                self.memory.release(held)
                self._close("SASL session expired (connections.max.reauth.ms)", "info", _request_fields(header))
                return
        handler = self.handlers.get(header.api_key)
        if handler is None:  # its API's first request (the registry loads handler modules on first use)
            handler = self._first_use(header.api_key)
        if handler is None or not handler.supports(header.api_version):
            self.memory.release(held)
            if header.api_key == ApiKey.API_VERSIONS:
                self._respond_unsupported_api_versions(header)
            else:
                self._close("unsupported API or version", "warning", _request_fields(header))
            return
        try:
            if handler.request.is_flexible(header.api_version):
                pos = skip_tagged_fields(frame, pos)
            body = decode(handler.request, header.api_version, frame, pos)
        except DecodeError as exc:
            self.memory.release(held)
            self._close(f"malformed request: {exc}", "warning", _request_fields(header))
            return
        self._dispatch(handler, header, body, held, frame)
        if sasl is not None and header.api_key in SASL_APIS:
            self._after_sasl_step(sasl)

    def _first_use(self, api_key: int) -> Handler | None:
        """The handler of an API not loaded yet, when the handlers are the broker's registry (which loads it)."""
        load = getattr(self.handlers, "load", None)
        return None if load is None else load(api_key)  # type: ignore[no-any-return]

    def _on_raw_sasl_token(self, frame: Frame, sasl: SaslSession) -> None:
        """A bare SASL token after a SaslHandshake v0: answered with a bare size-prefixed frame (empty
        when the mechanism has nothing to say); a failure closes the connection, as Kafka does."""
        token = bytes(frame)
        self.memory.release(len(frame))
        outcome = sasl.authenticate(token)
        if outcome.error is not ErrorCode.NONE:
            self._after_sasl_step(sasl)
            return
        slot = _Slot(0)
        slot.chunks = [frame_prefix(len(outcome.auth_bytes)), bytes(outcome.auth_bytes)]
        slot.done = True
        self._order.append(slot)
        if sasl.authenticated:
            sasl.raw_tokens = False
        self._after_sasl_step(sasl)
        self._flush()

    def _after_sasl_step(self, sasl: SaslSession) -> None:
        if sasl.authenticated:
            self.reader.max_frame_size = self.max_frame_size
        elif sasl.failed and not self.closing:
            self.closing = True
            self.owner.close_after_failed_authentication(f"SASL {sasl.mechanism or 'handshake'} failed")

    def _dispatch(self, handler: Handler, header: RequestHeader, body: dict[str, Any], held: int, frame: Frame) -> None:
        ctx = self.new_context(header)
        ctx.request_size = held
        slot = _Slot(held, frame if type(frame) is memoryview else None)  # only maps are worth reusing
        metered = self.observe is not None or _quotas_active(ctx)
        if metered:
            slot.started = perf_counter()
        self._order.append(slot)
        if handler.is_async:
            self._spawn(handler, ctx, handler.func(ctx, body), slot)
            return
        try:
            result = handler.func(ctx, body)
        except Exception as exc:  # noqa: BLE001 - a handler bug must not take the broker down
            result = self._error_response(handler, ctx, exc)
        if metered:
            slot.handling = perf_counter() - slot.started
        if type(result) is not dict and result is not None and inspect.isawaitable(result):
            self._spawn(handler, ctx, result, slot)  # a plain handler that has to wait after all (long poll, fsync)
            return
        self._complete(slot, handler, ctx, result)

    def _spawn(self, handler: Handler, ctx: RequestContext, awaitable: Awaitable[Any], slot: _Slot) -> None:
        def done(result: Any, error: BaseException | None) -> None:
            if error is not None:
                result = self._error_response(handler, ctx, error)
            self._complete(slot, handler, ctx, result)

        self.owner.spawn(awaitable, done)
        self._update_reading()

    def _error_response(self, handler: Handler, ctx: RequestContext, exc: BaseException) -> dict[str, Any] | None:
        """A top-level error answer where the API has one; otherwise the connection is closed."""
        code: int
        if isinstance(exc, KafkaProtocolError):
            code, message = exc.code, str(exc)
        else:
            ctx.log.error("handler_failed", exc_info=exc)
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR.value, "unexpected broker error"
        names = {f.name for f in handler.response.fields}
        if "error_code" not in names:
            self._close("handler failed and the API has no top-level error code", "warning", {"error": message})
            return None
        response: dict[str, Any] = {"error_code": code}
        if "error_message" in names:
            response["error_message"] = message
        return response

    def _complete(self, slot: _Slot, handler: Handler, ctx: RequestContext, result: dict[str, Any] | None) -> None:
        if self.observe is not None:
            self.observe(handler.api_key, perf_counter() - slot.started, result)
        if self.closing:
            return  # connection_lost released the slot
        throttle_ms = self._quota_throttle(handler, ctx, result, slot) if _quotas_active(ctx) else 0
        if result is not None:
            version = ctx.api_version
            key = (handler.api_key, version)
            flexible = _flexible_header.get(key)
            if flexible is None:
                flexible = _flexible_header[key] = response_header_is_flexible(
                    handler.api_key, handler.response.is_flexible(version)
                )
            writer = Writer()
            writer.write(encode_response_header(ctx.correlation_id, flexible))
            encode_into(writer, handler.response, version, result)
            chunks = [frame_prefix(len(writer)), *writer.finish()]
            if self._order[0] is not slot and has_file_chunks(chunks):
                slot.chunks = self._materialize(chunks)  # file ranges must not outlive this callback
            else:
                slot.chunks = chunks
        slot.done = True
        self._flush()
        if throttle_ms > 0:
            self._mute_for_throttle(throttle_ms)

    # ----- client quotas (KIP-219): answer at once, with throttle_time_ms; then stop reading for that long

    def _quota_throttle(self, handler: Handler, ctx: RequestContext, result: dict[str, Any] | None, slot: _Slot) -> int:
        """Record the request against its client's quotas (kbroker.quota); the throttle time, also put
        in the response's throttle_time_ms."""
        quotas = ctx.broker.quotas
        assert quotas is not None
        throttle_ms = quotas.after_request(ctx, slot.handling, acks_zero=result is None)
        if throttle_ms > 0 and result is not None and "throttle_time_ms" in _response_fields(handler):
            result["throttle_time_ms"] = max(throttle_ms, result.get("throttle_time_ms") or 0)
        return throttle_ms

    def _mute_for_throttle(self, throttle_ms: int) -> None:
        """Stop reading from this client for `throttle_ms`; overlapping throttles each hold the mute."""
        if self.closing:
            return
        self._throttles += 1
        self._update_reading()
        self.owner.call_later(throttle_ms / 1000, self._throttle_ended)

    def _throttle_ended(self) -> None:
        self._throttles -= 1
        self._update_reading()

    @property
    def throttled(self) -> bool:
        return self._throttles > 0

    def _materialize(self, chunks: list[Any]) -> list[Any] | None:
        try:
            return materialize(chunks)
        except OSError as exc:
            self._close(f"could not read the response's record batches: {exc}", "warning", {})
            return None

    def _flush(self) -> None:
        order = self._order
        while order and order[0].done and not self.closing:
            slot = order.popleft()
            self.memory.release(slot.held)
            if slot.frame is not None:
                self._answered.append(slot.frame)
                slot.frame = None
            if slot.chunks is not None:
                self.owner.write(slot.chunks)
        if self._answered and not self._receiving:
            self._recycle()
        self._update_reading()

    def _recycle(self) -> None:
        answered, self._answered = self._answered, []
        give = self.reader.maps.give
        for frame in answered:
            give(frame)

    def _respond_unsupported_api_versions(self, header: RequestHeader) -> None:
        """A too-new ApiVersions request is answered in the v0 layout with UNSUPPORTED_VERSION,
        listing only ApiVersions' own range, so the client can retry with a version we speak."""
        own = self.handlers.get(ApiKey.API_VERSIONS) or self._first_use(ApiKey.API_VERSIONS)
        assert own is not None
        body = {
            "error_code": int(ErrorCode.UNSUPPORTED_VERSION),
            "api_keys": [{"api_key": own.api_key, "min_version": own.min_version, "max_version": own.max_version}],
        }
        slot = _Slot(0)
        self._order.append(slot)
        writer = Writer()
        writer.write(encode_response_header(header.correlation_id, False))
        encode_into(writer, own.response, 0, body)
        slot.chunks = [frame_prefix(len(writer)), *writer.finish()]
        slot.done = True
        self._flush()

    # ----- flow control and closing

    def _memory_freed(self) -> None:
        if not self.closing and not self.reader.retry_memory():
            self.memory.wait(self, self._memory_freed)
        self._update_reading()

    def _update_reading(self) -> None:
        if self.closing:
            return
        reading = not (
            self._output_blocked or self.reader.starved or len(self._order) >= MAX_IN_FLIGHT or self._throttles
        )
        if reading != self._reading:
            self._reading = reading
            self.owner.set_reading(reading)

    def close(self, reason: str, level: str = "warning", **fields: Any) -> None:
        self._close(reason, level, fields)

    def _close(self, reason: str, level: str, fields: dict[str, Any]) -> None:
        if self.closing:
            return
        self.closing = True
        self.owner.close(reason, level, fields)


def _quotas_active(ctx: RequestContext) -> bool:
    quotas = getattr(ctx.broker, "quotas", None)  # a pipeline tested without a broker has none
    return quotas is not None and bool(quotas.store.quotas)


_response_field_names: dict[int, frozenset[str]] = {}


def _response_fields(handler: Handler) -> frozenset[str]:
    names = _response_field_names.get(handler.api_key)
    if names is None:
        names = _response_field_names[handler.api_key] = frozenset(f.name for f in handler.response.fields)
    return names


def _request_fields(header: RequestHeader) -> dict[str, Any]:
    return {
        "api": api_name(header.api_key),
        "api_version": header.api_version,
        "correlation_id": header.correlation_id,
    }
