"""InProcessBroker: a whole kbroker in this process, on a thread of its own, for tests.

It runs `kbroker.server.serve` on a background thread with its own event loop, listening on
127.0.0.1 port 0 (a free port) with a temporary data directory, and tells its address as
`bootstrap` ("127.0.0.1:PORT"). Its own thread and loop serve synchronous and asyncio tests
alike: clients connect over a real socket, whatever loop they run on. Every control (`reset`,
`advance`, faults) runs on the broker's loop and returns once done; each takes milliseconds,
so calling one from an async test blocks that test's loop only that long.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import structlog

from kbroker.testing.controls import TestControls
from kbroker.testing.faults import Fault

T = TypeVar("T")

# Settings a test broker starts with unless the test gives its own: one partition per topic, no
# waiting before the first rebalance, retention and transaction timers that look every second
# (of virtual time: advance() makes them look at once), small internal topics that create fast.
TEST_DEFAULTS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "1000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "log.segment.delete.delay.ms": "0",
}


class InProcessBroker:
    """A kbroker on a background thread. Use as a context manager, or start() and stop()."""

    __test__ = False

    def __init__(
        self,
        config: Mapping[str, object] | None = None,
        *,
        data_dir: str | Path | None = None,
        http: bool = False,
        port: int = 0,
        log_level: str = "warning",
    ) -> None:
        """`config`: broker properties (Kafka's names) over TEST_DEFAULTS. `http`: also an HTTP listener
        on a free port (`http_url`); with `kbroker.testing.admin.enable=true` in `config` it serves the
        test controls at /v1/testing/*. `data_dir`: kept after stop (default: a temporary directory,
        removed). `port`: 0 for a free one, or the port of a broker stopped before (a restart on
        the same data directory and address). `log_level`: the broker's own log (structlog, to stderr) if nothing in the process configured
        structlog; the standard library's logging is left alone."""
        self.properties = {**TEST_DEFAULTS, **{k: _text(v) for k, v in (config or {}).items()}}
        if http:
            self.properties.setdefault("kbroker.http.listeners", "http://127.0.0.1:0")
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kbroker-test-"))
        self.log_level = log_level
        self.requested_port = port
        self.controls = TestControls()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._exit_code: int | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> InProcessBroker:
        from kbroker.config import BrokerConfig

        if self._thread is not None:
            return self
        if not structlog.is_configured():
            from kbroker.logging_setup import configure_logging

            # cache=False: tests in the same process may configure structlog again (capture their logs)
            configure_logging(self.log_level, cache=False, stdlib=False)
        config = BrokerConfig.build(self.properties, listen=f"127.0.0.1:{self.requested_port}", data_dir=self.data_dir)
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(config, ready), name="kbroker", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"kbroker did not start within {timeout}s")
        if self._failure is not None or self.controls.broker is None:
            self._thread.join(timeout)
            self._thread = None
            if self._own_dir:
                shutil.rmtree(self.data_dir, ignore_errors=True)
            raise RuntimeError(f"kbroker failed to start: {self._failure}") from self._failure
        return self

    def _run(self, config: Any, ready: threading.Event) -> None:
        try:
            self._serve(config, ready)
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            self._failure = exc
        finally:
            ready.set()

    def _serve(self, config: Any, ready: threading.Event) -> None:
        from kbroker.server import serve

        try:
            import uvloop

            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is a dependency
            loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)

        async def main() -> int:
            self._stop = asyncio.Event()
            started = asyncio.Event()
            task = asyncio.ensure_future(serve(config, started, controls=self.controls, stop=self._stop))
            waiter = asyncio.ensure_future(started.wait())
            await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
            if task.done():  # it failed to start: the failure is recorded before `ready` is set
                waiter.cancel()
                return task.result()
            ready.set()
            return await task

        try:
            self._exit_code = loop.run_until_complete(main())
        finally:
            loop.close()

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the broker down as SIGTERM would (connections closed, logs flushed) and join its thread."""
        if self._thread is None:
            return
        loop, stop = self.loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        self._thread.join(timeout)
        self._thread = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> InProcessBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        broker = self.controls.broker
        if broker is None:
            raise RuntimeError("the broker is not running")
        return broker.config.advertised.port

    @property
    def bootstrap(self) -> str:
        """host:port for bootstrap.servers."""
        return f"127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """http://127.0.0.1:PORT of the HTTP listener (http=True)."""
        if not self.controls.http_addresses:
            raise RuntimeError("no HTTP listener: start the broker with http=True")
        return self.controls.http_addresses[0]

    # -- controls (each runs on the broker's loop) -----------------------------------------
    def call(self, func: Callable[[], T]) -> T:
        """Run `func()` on the broker's event loop and return its result."""

        async def run() -> T:
            return func()

        return self.run(run())

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run `coroutine` on the broker's event loop and return its result."""
        if self.loop is None or self._thread is None:
            coroutine.close()
            raise RuntimeError("the broker is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def reset(self) -> dict[str, int]:
        """Delete every topic, group, share group and transaction, clear faults, close connections."""
        return self.call(self.controls.reset)

    def advance(self, seconds: float) -> int:
        """Move the broker's clock forward: session, transaction and lock timeouts and retention due by
        then happen now. Returns once the broker's timers have done their work."""
        return self.run(self.controls.advance(seconds))

    @property
    def now_ms(self) -> int:
        """The broker's wall clock (real time plus every advance), in ms."""
        return self.controls.clock.wall_ms()

    def fail(self, api: int | str, error: int | str, count: int | None = 1) -> Fault:
        """Answer the next `count` requests of `api` (None: every one until cleared) with `error`, unhandled."""
        return self.call(lambda: self.controls.faults.fail(api, error, count))

    def delay(self, api: int | str, seconds: float, count: int | None = None) -> Fault:
        """Hold the answers of `api` for `seconds` (real time), for `count` requests (None: until cleared)."""
        return self.call(lambda: self.controls.faults.delay(api, seconds, count))

    def disconnect(self, api: int | str, count: int | None = 1, after: bool = False) -> Fault:
        """Close the connection of the next `count` requests of `api`: before handling them, or once
        handled with `after=True` (the answer is lost)."""
        return self.call(lambda: self.controls.faults.disconnect(api, count, after))

    def close_connections(self) -> int:
        """Close every client connection now."""
        return self.call(self.controls.close_connections)

    def make_unavailable(self, topic: str, partition: int = 0) -> None:
        """The partition has no leader until make_available: Produce and Fetch get NOT_LEADER_OR_FOLLOWER,
        Metadata LEADER_NOT_AVAILABLE."""
        self.call(lambda: self.controls.faults.make_unavailable(topic, partition))

    def make_available(self, topic: str, partition: int = 0) -> None:
        self.call(lambda: self.controls.faults.make_available(topic, partition))

    def clear_faults(self) -> None:
        self.call(self.controls.faults.clear)

    @property
    def faults(self) -> dict[str, Any]:
        """The faults set now and how many requests faults changed so far."""
        return self.call(self.controls.faults.describe)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
