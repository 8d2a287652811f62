"""One client connection on the event loop: the thin asyncio adapter around a RequestPipeline.

The protocol object receives straight into the pipeline's frame buffers
(asyncio.BufferedProtocol: a shared staging buffer between frames, the frame's own buffer
once one is under way), runs the awaitables handlers return as tasks, writes responses
through a ResponseWriter (sendfile for fetched batches) and turns the pipeline's
decisions into pause_reading / resume_reading / close. Everything else (framing,
decoding, dispatch, ordering, backpressure, memory accounting, deadlines) is the
pipeline's, in kbroker.pipeline, and is tested without sockets.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.context import RequestContext
from kbroker.memory import MemoryPool
from kbroker.pipeline import RequestPipeline
from kbroker.sendfile import ResponseWriter, has_file_chunks, materialize
from kbroker.tls import ANONYMOUS, TlsSession
from protocol.api_keys import api_name
from protocol.framing import DEFAULT_STAGING_SIZE, MapRecycler
from protocol.headers import RequestHeader

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.config import Listener
    from kbroker.handlers.registry import Handler
    from kbroker.limits import ConnectionLimits
    from kbroker.sasl import SaslSettings

log = structlog.get_logger("kbroker.connection")

_ids = itertools.count(1)

TLS_HANDSHAKE_TIMEOUT = 10.0


class _RequestLog:
    """A request's logger, bound (connection fields + api, version, correlation id) only when first used:
    most requests log nothing, and binding a structlog logger per request costs a dict copy and an object."""

    __slots__ = ("_conn", "_header", "_bound")

    def __init__(self, conn: Connection, header: RequestHeader) -> None:
        self._conn = conn
        self._header = header
        self._bound: Any = None

    def __getattr__(self, name: str) -> Any:
        bound = self._bound
        if bound is None:
            header = self._header
            bound = self._bound = self._conn.log.bind(
                client_id=header.client_id,
                api=api_name(header.api_key),
                api_version=header.api_version,
                correlation_id=header.correlation_id,
            )
        return getattr(bound, name)


@dataclass(eq=False)
class ListenerRuntime:
    """What the connections accepted on one listener share: its name, settings, the broker's
    request memory and staging buffer, and the registry enforcing connection limits."""

    broker: Broker
    handlers: Mapping[int, Handler]  # the registry (kbroker.handlers.registry)
    limits: ConnectionLimits
    name: str = "PLAINTEXT"
    listener: Listener | None = None
    memory: MemoryPool = field(default_factory=lambda: MemoryPool(-1))
    staging: bytearray = field(default_factory=lambda: bytearray(DEFAULT_STAGING_SIZE))
    maps: MapRecycler = field(default_factory=MapRecycler)
    max_frame_size: int = 104857600
    frame_timeout_ms: int = -1
    observe: Callable[[int, float, Any], None] | None = None  # request metrics (kbroker.http), None when off
    tls: ssl.SSLContext | None = None  # an SSL listener (kbroker.tls.TlsSession per connection)
    cipher_staging: bytearray = field(default_factory=lambda: bytearray(DEFAULT_STAGING_SIZE))
    failed_authentication_delay_ms: int = 100
    sasl: SaslSettings | None = None  # a SASL_PLAINTEXT or SASL_SSL listener


class Connection(asyncio.BufferedProtocol):
    __slots__ = (
        "runtime",
        "id",
        "pipeline",
        "transport",
        "writer",
        "peer",
        "principal",
        "tls",
        "opened_at",
        "_log",
        "_tasks",
        "_write_paused",
    )

    def __init__(self, runtime: ListenerRuntime) -> None:
        self.runtime = runtime
        self.id = next(_ids)
        self.transport: asyncio.Transport | None = None
        self.writer: ResponseWriter | None = None
        self.peer = "?"
        self.principal = ANONYMOUS
        self.tls = TlsSession(runtime.tls) if runtime.tls is not None else None
        self.opened_at = time.monotonic()
        self._log: Any = None
        self._tasks: set[asyncio.Task[Any]] | None = None
        self._write_paused = False
        sasl = None
        if runtime.sasl is not None:
            from kbroker.sasl import SaslSession  # late: only SASL listeners load the SASL code (start-up time)

            sasl = SaslSession(runtime.sasl, time.monotonic)
        self.pipeline = RequestPipeline(
            runtime.handlers,
            self._new_context,
            self,
            max_frame_size=runtime.max_frame_size,
            memory=runtime.memory,
            staging=runtime.staging,
            maps=runtime.maps,
            frame_timeout_ms=runtime.frame_timeout_ms,
            now=time.monotonic(),
            observe=runtime.observe,
            sasl=sasl,
        )

    @property
    def log(self) -> Any:
        if self._log is None:
            self._log = log.bind(connection_id=self.id, peer=self.peer, listener=self.runtime.name)
        return self._log

    @property
    def host(self) -> str:
        return self.peer.rsplit(":", 1)[0].strip("[]")

    # -- asyncio.BufferedProtocol ---------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.runtime.limits.admit(self, time.monotonic(), self.runtime.name):
            self.pipeline.closing = True
            transport.close()
            return
        if self._connection_throttled(transport):
            return
        if self.tls is None:
            self.writer = ResponseWriter(transport, self._writer_drained)

    def _connection_throttled(self, transport: asyncio.BaseTransport) -> bool:
        """Over its ip's connection_creation_rate quota: held unread, then closed once the throttle
        time has passed (Kafka's ConnectionQuotas); True when so."""
        quotas = self.runtime.broker.quotas
        throttle_ms = quotas.connection_throttle(self.host) if quotas is not None else 0
        if throttle_ms <= 0:
            return False
        self.pipeline.closing = True
        transport.pause_reading()  # type: ignore[attr-defined]
        self.log.info("connection_throttled", throttle_ms=throttle_ms, quota="connection_creation_rate")
        asyncio.get_running_loop().call_later(throttle_ms / 1000, self._close_now)
        return True

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.tls is not None:
            return memoryview(self.runtime.cipher_staging)
        return self.pipeline.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        if self.tls is not None:
            self._tls_received(nbytes)
            return
        self.pipeline.buffer_updated(nbytes, time.monotonic())

    def _tls_received(self, nbytes: int) -> None:
        tls, pipeline, transport = self.tls, self.pipeline, self.transport
        assert tls is not None and transport is not None
        try:
            if tls.receive(memoryview(self.runtime.cipher_staging)[:nbytes]):
                self.principal = tls.principal
                self.log.debug("tls_established", principal=self.principal)
            out = tls.outgoing()
            if out:
                transport.write(out)
            now = time.monotonic()
            while not pipeline.closing:
                target = pipeline.get_buffer()
                n = tls.read_into(target)
                del target
                if n == 0:
                    break
                pipeline.buffer_updated(n, now)
            if tls.closed_by_peer and not pipeline.closing:
                # the client's close_notify: answer with ours at once (asyncio clients wait for it)
                pipeline.close("client closed the TLS session", "debug")
        except ssl.SSLError as error:
            self._tls_failed(error)

    def _tls_failed(self, error: ssl.SSLError) -> None:
        tls, transport = self.tls, self.transport
        assert tls is not None and transport is not None
        self.pipeline.closing = True
        alert = tls.outgoing()  # the client hears why (unknown CA, certificate required)
        if alert:
            transport.write(alert)
        if tls.established:
            self.close(f"TLS record failed: {error.reason or error}", "info")
            return
        self.close_after_failed_authentication(f"TLS handshake failed: {error.reason or error}")

    def close_after_failed_authentication(self, reason: str) -> None:
        """Kafka's way: the answer goes out, the failure is logged, the connection closes after
        connection.failed.authentication.delay.ms (so a client cannot retry in a tight loop)."""
        transport = self.transport
        if transport is None:
            return
        transport.pause_reading()
        self.log.info("authentication_failed", reason=reason, client_id=self.pipeline.client_id)
        delay = self.runtime.failed_authentication_delay_ms / 1000
        asyncio.get_running_loop().call_later(delay, self._close_now)

    def _close_now(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def eof_received(self) -> bool:
        self.pipeline.close("client closed the connection", "debug")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        pipeline = self.pipeline
        closing = pipeline.closing
        pipeline.connection_lost()
        self.runtime.limits.discard(self)
        if self.writer is not None:
            self.writer.close()
        if self._tasks:
            for task in self._tasks:
                task.cancel()
        if not closing:
            self.log.debug("connection_lost", reason=str(exc) if exc else "peer closed")

    def pause_writing(self) -> None:
        self._write_paused = True
        self._output_changed()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._output_changed()

    # -- PipelineOwner ---------------------------------------------------
    def write(self, chunks: list[Any]) -> None:
        if self.tls is not None:
            self._tls_write(chunks)
            return
        writer = self.writer
        if writer is None:
            return
        try:
            writer.write(chunks)
        except OSError as exc:
            self.pipeline.close(f"could not read the response's record batches: {exc}")
            return
        if writer.busy:
            self._output_changed()

    def _tls_write(self, chunks: list[Any]) -> None:
        """Fetched batches cannot go by sendfile under TLS: one pread each, then encrypted."""
        assert self.tls is not None and self.transport is not None
        try:
            data = self.tls.encrypt(materialize(chunks) if has_file_chunks(chunks) else chunks)
        except OSError as exc:
            self.pipeline.close(f"could not read the response's record batches: {exc}")
            return
        self.transport.write(data)

    def spawn(self, awaitable: Awaitable[Any], done: Callable[[Any, BaseException | None], None]) -> None:
        task = asyncio.get_running_loop().create_task(_run(awaitable, done))
        tasks = self._tasks
        if tasks is None:
            tasks = self._tasks = set()
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(delay, callback)

    def set_reading(self, reading: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if reading:
            transport.resume_reading()
        else:
            transport.pause_reading()

    def close(self, reason: str, level: str = "warning", fields: dict[str, Any] | None = None) -> None:
        fields = fields or {}
        if self.pipeline.client_id is not None:
            fields.setdefault("client_id", self.pipeline.client_id)
        getattr(self.log, level)("connection_closed", reason=reason, **fields)
        if self.transport is not None:
            if self.tls is not None and self.tls.established and not self.transport.is_closing():
                self.transport.write(self.tls.close_notify())
            self.transport.close()

    # -- helpers ---------------------------------------------------------
    def _new_context(self, header: RequestHeader) -> RequestContext:
        sasl = self.pipeline.sasl
        principal = sasl.principal if sasl is not None and sasl.principal is not None else self.principal
        runtime = self.runtime
        return RequestContext(
            runtime.broker,
            header.api_key,
            header.api_version,
            header.correlation_id,
            header.client_id,
            self.id,
            self.peer,
            _RequestLog(self, header),
            runtime.name,
            principal,
            sasl,
        )

    def _writer_drained(self) -> None:
        self._output_changed()

    def _output_changed(self) -> None:
        self.pipeline.set_output_blocked(self._write_paused or (self.writer is not None and self.writer.busy))

    @property
    def idle(self) -> bool:
        return self.pipeline.idle

    @property
    def last_active(self) -> float:
        return self.pipeline.last_active

    def check_deadline(self, now: float) -> bool:
        tls = self.tls
        if tls is not None and not tls.established and now - self.opened_at > TLS_HANDSHAKE_TIMEOUT:
            self.pipeline.close("TLS handshake not completed in time", "info", timeout_s=TLS_HANDSHAKE_TIMEOUT)
            return True
        return self.pipeline.check_deadline(now)

    async def drain(self, timeout: float) -> None:
        """Wait for in-flight requests to finish (for graceful shutdown)."""
        deadline = time.monotonic() + timeout
        while self.pipeline.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def shut(self, reason: str, level: str = "debug", **fields: Any) -> None:
        self.pipeline.close(reason, level, **fields)


async def _run(awaitable: Awaitable[Any], done: Callable[[Any, BaseException | None], None]) -> None:
    try:
        result = await awaitable
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the pipeline, which answers or closes
        done(None, exc)
        return
    done(result, None)
