"""One client connection: frames in, handlers run, responses out in request order.

The protocol object receives straight into frame buffers (asyncio.BufferedProtocol),
decodes each request's header and body with the schema codec, and hands the body
to the API's handler. Handlers may be plain functions (answered at once) or
coroutines (a long-poll fetch, an fsync before an acks=all ack); either way the
responses leave in the order the requests came, as clients pipeline and expect.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.context import RequestContext
from kbroker.sendfile import ResponseWriter, has_file_chunks, materialize
from protocol.api_keys import ApiKey, api_name
from protocol.codec import decode, encode_into
from protocol.errors import ErrorCode, KafkaProtocolError
from protocol.framing import FrameError, FrameReader, frame_prefix
from protocol.headers import (
    RequestHeader,
    encode_response_header,
    read_request_header_prefix,
    response_header_is_flexible,
    skip_tagged_fields,
)
from protocol.primitives import DecodeError, Writer

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.handlers.registry import Handler

log = structlog.get_logger("kbroker.connection")

_ids = itertools.count(1)

# (api key, version) -> whether the response header is v1 (flexible)
_flexible_header: dict[tuple[int, int], bool] = {}

# Stop reading from a client that has this many requests awaiting their turn.
MAX_IN_FLIGHT = 256


class _RequestLog:
    """A request's logger, bound (connection fields + api, version, correlation id) only when first used:
    most requests log nothing, and binding a structlog logger per request costs a dict copy and an object."""

    __slots__ = ("_parent", "_header", "_bound")

    def __init__(self, parent: Any, header: RequestHeader) -> None:
        self._parent = parent
        self._header = header
        self._bound: Any = None

    def __getattr__(self, name: str) -> Any:
        bound = self._bound
        if bound is None:
            header = self._header
            bound = self._bound = self._parent.bind(
                api=api_name(header.api_key), api_version=header.api_version, correlation_id=header.correlation_id
            )
        return getattr(bound, name)


class _Slot:
    """A response position in the connection's output order."""

    __slots__ = ("chunks", "done")

    def __init__(self) -> None:
        self.chunks: list[Any] | None = None
        self.done = False


class Connection(asyncio.BufferedProtocol):
    def __init__(self, broker: Broker, registry: ConnectionRegistry, handlers: dict[int, Handler]) -> None:
        self.broker = broker
        self.handlers = handlers
        self.registry = registry
        self.id = next(_ids)
        self.reader = FrameReader(broker.config.get_int("socket.request.max.bytes"))
        self.transport: asyncio.Transport | None = None
        self.writer: ResponseWriter | None = None
        self.peer = "?"
        self.client_id: str | None = None
        self.log = log.bind(connection_id=self.id)
        self.last_active = time.monotonic()
        self._order: deque[_Slot] = deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._write_paused = False
        self._read_paused = False
        self.closing = False

    # -- asyncio.BufferedProtocol ---------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses
        self.writer = ResponseWriter(transport, self._update_reading)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.log = self.log.bind(peer=self.peer)
        self.registry.add(self)
        self.log.debug("connection_opened")

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self.reader.buffer_updated(nbytes)
        except FrameError as exc:
            self.close(f"bad frame: {exc}")
            return
        for frame in frames:
            if self.closing:
                return
            self._on_frame(frame)

    def eof_received(self) -> bool:
        self.close("client closed the connection", level="debug")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.registry.discard(self)
        if self.writer is not None:
            self.writer.close()
        for task in self._tasks:
            task.cancel()
        if not self.closing:
            self.closing = True
            self.log.debug("connection_lost", reason=str(exc) if exc else "peer closed")

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    # -- requests --------------------------------------------------------
    def _on_frame(self, frame: bytearray) -> None:
        try:
            header, pos = read_request_header_prefix(frame)
        except DecodeError as exc:
            self.close(f"malformed request header: {exc}")
            return
        if header.client_id != self.client_id:
            self.client_id = header.client_id
            self.log = self.log.bind(client_id=header.client_id)
        handler = self.handlers.get(header.api_key)
        if handler is None or not handler.supports(header.api_version):
            if header.api_key == ApiKey.API_VERSIONS:
                self._respond_unsupported_api_versions(header)
            else:
                self.close(
                    "unsupported API or version",
                    api=api_name(header.api_key),
                    api_version=header.api_version,
                    correlation_id=header.correlation_id,
                )
            return
        flexible = handler.request.is_flexible(header.api_version)
        try:
            if flexible:
                pos = skip_tagged_fields(frame, pos)
            body = decode(handler.request, header.api_version, frame, pos)
        except DecodeError as exc:
            self.close(
                f"malformed request: {exc}",
                api=api_name(header.api_key),
                api_version=header.api_version,
                correlation_id=header.correlation_id,
            )
            return
        self._dispatch(handler, header, body)

    def _dispatch(self, handler: Handler, header: RequestHeader, body: dict[str, Any]) -> None:
        ctx = RequestContext(
            broker=self.broker,
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            connection_id=self.id,
            client_host=self.peer,
            log=_RequestLog(self.log, header),
        )
        slot = _Slot()
        self._order.append(slot)
        if handler.is_async:
            self._start_task(handler, ctx, handler.func(ctx, body), slot)
            return
        try:
            result = handler.func(ctx, body)
        except Exception as exc:  # noqa: BLE001 - a handler bug must not take the broker down
            result = self._error_response(handler, ctx, exc)
            if result is None:
                return
        if (
            type(result) is not dict and result is not None and inspect.isawaitable(result)
        ):  # a plain handler that has to wait after all (long poll, fsync)
            self._start_task(handler, ctx, result, slot)
            return
        self._complete(slot, handler, ctx, result)

    def _start_task(self, handler: Handler, ctx: RequestContext, awaitable: Awaitable[Any], slot: _Slot) -> None:
        task = asyncio.get_running_loop().create_task(self._run_async(handler, ctx, awaitable, slot))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._update_reading()

    async def _run_async(self, handler: Handler, ctx: RequestContext, awaitable: Awaitable[Any], slot: _Slot) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            result = self._error_response(handler, ctx, exc)
            if result is None:
                return
        self._complete(slot, handler, ctx, result)

    def _error_response(self, handler: Handler, ctx: RequestContext, exc: Exception) -> dict[str, Any] | None:
        """A top-level error answer where the API has one; otherwise the connection is closed."""
        code: int
        if isinstance(exc, KafkaProtocolError):
            code, message = exc.code, str(exc)
        else:
            ctx.log.exception("handler_failed")
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR.value, "unexpected broker error"
        names = {f.name for f in handler.response.fields}
        if "error_code" not in names:
            self.close("handler failed and the API has no top-level error code", error=message)
            return None
        response: dict[str, Any] = {"error_code": code}
        if "error_message" in names:
            response["error_message"] = message
        return response

    def _complete(self, slot: _Slot, handler: Handler, ctx: RequestContext, result: dict[str, Any] | None) -> None:
        if result is not None and not self.closing:
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

    def _materialize(self, chunks: list[Any]) -> list[Any] | None:
        try:
            return materialize(chunks)
        except OSError as exc:
            self.close(f"could not read the response's record batches: {exc}")
            return None

    def _flush(self) -> None:
        order = self._order
        writer = self.writer
        while order and order[0].done:
            slot = order.popleft()
            if slot.chunks is not None and writer is not None and not self.closing:
                try:
                    writer.write(slot.chunks)
                except OSError as exc:
                    self.close(f"could not read the response's record batches: {exc}")
        self._update_reading()

    def _respond_unsupported_api_versions(self, header: RequestHeader) -> None:
        """A too-new ApiVersions request is answered in the v0 layout with UNSUPPORTED_VERSION,
        listing only ApiVersions' own range, so the client can retry with a version we speak."""
        own = self.handlers[ApiKey.API_VERSIONS]
        body = {
            "error_code": int(ErrorCode.UNSUPPORTED_VERSION),
            "api_keys": [{"api_key": own.api_key, "min_version": own.min_version, "max_version": own.max_version}],
        }
        self.log.info("api_versions_unsupported", requested=header.api_version, correlation_id=header.correlation_id)
        slot = _Slot()
        self._order.append(slot)
        writer = Writer()
        writer.write(encode_response_header(header.correlation_id, False))
        encode_into(writer, own.response, 0, body)
        slot.chunks = [frame_prefix(len(writer)), *writer.finish()]
        slot.done = True
        self._flush()

    # -- flow control and closing ----------------------------------------
    def _update_reading(self) -> None:
        if self.transport is None or self.closing:
            return
        sending = self.writer is not None and self.writer.busy
        should_pause = self._write_paused or sending or len(self._order) >= MAX_IN_FLIGHT
        if should_pause and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()

    def close(self, reason: str, *, level: str = "warning", **fields: Any) -> None:
        if self.closing:
            return
        self.closing = True
        getattr(self.log, level)("connection_closed", reason=reason, **fields)
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self._order and not (self.writer is not None and self.writer.busy)

    async def drain(self, timeout: float) -> None:
        """Wait for in-flight requests to finish (for graceful shutdown)."""
        deadline = time.monotonic() + timeout
        while not self.idle and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


class ConnectionRegistry:
    """All open connections, with the broker's connection limits."""

    def __init__(self, max_connections: int, idle_ms: int) -> None:
        self.max_connections = max_connections
        self.idle_ms = idle_ms
        self.connections: set[Connection] = set()

    def add(self, conn: Connection) -> None:
        self.connections.add(conn)
        if len(self.connections) > self.max_connections:
            conn.close("too many connections", limit=self.max_connections)

    def discard(self, conn: Connection) -> None:
        self.connections.discard(conn)

    def close_idle(self) -> None:
        if self.idle_ms < 0:
            return
        cutoff = time.monotonic() - self.idle_ms / 1000
        for conn in list(self.connections):
            if conn.idle and conn.last_active < cutoff:
                conn.close("idle", level="info", idle_ms=self.idle_ms)
