"""ZooKeeper for the event loop: kazoo's client, its results and events handed to asyncio.

kazoo (a maintained, pure-Python ZooKeeper client: sessions, reconnection across a server list, watches,
multi-op transactions) runs its connection and its callbacks on its own threads. Nothing here blocks the
loop: every operation is kazoo's `*_async` call, whose completion (on kazoo's completion thread) resolves an
asyncio future through `loop.call_soon_threadsafe`; watch callbacks and session state changes are handed to
the loop the same way, so the rest of the cluster layer runs on the loop and never sees a thread.

Paths are relative to the chroot of `zookeeper.connect` (`host:port,host:port/chroot`); the chroot is created
when missing, as Kafka's brokers do.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.protocol.states import WatchedEvent, ZnodeStat

log = structlog.get_logger(__name__)

__all__ = [
    "BadVersionError",
    "ConnectionLoss",
    "KazooException",
    "NodeExistsError",
    "NoNodeError",
    "NotEmptyError",
    "SessionExpiredError",
    "SessionState",
    "TransactionFailed",
    "ZkClient",
    "ZkOp",
    "ZnodeStat",
    "split_connect",
]


class SessionState(enum.Enum):
    CONNECTED = "connected"  # connected, the session (and its ephemeral znodes and watches) is alive
    SUSPENDED = "suspended"  # connection lost; the session may still be alive on the server
    LOST = "lost"  # the session expired (or the client closed): its ephemeral znodes are gone


@dataclass(frozen=True)
class ZkOp:
    """One operation of a multi-op transaction: all apply or none."""

    kind: str  # "create", "set", "delete", "check"
    path: str
    data: bytes = b""
    version: int = -1  # expected znode version for set/delete/check; -1: any
    ephemeral: bool = False


class TransactionFailed(KazooException):
    """A multi-op transaction failed at operation `index` (its error in `error`); nothing was applied."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(f"operation {index} failed: {type(error).__name__}")
        self.index = index
        self.error = error


def split_connect(connect: str) -> tuple[str, str]:
    """`host:port,host:port/chroot` -> (hosts, chroot) with chroot "" or "/a/b" (no trailing slash)."""
    hosts, slash, chroot = connect.partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect has no host: {connect!r}")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    return hosts, chroot


class ZkClient:
    """One ZooKeeper session with asyncio operations; `on_state` callbacks run on the loop."""

    def __init__(self, connect: str, *, session_timeout_ms: int = 18000, client_id: tuple[int, bytes] | None = None):
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self._client_id = client_id
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state_listeners: list[Callable[[SessionState], None]] = []
        self._watchers: dict[Callable[[WatchedEvent], None], Callable[[WatchedEvent], None]] = {}

    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise RuntimeError("ZkClient not started")
        return self._client

    @property
    def session_id(self) -> int:
        return int(self.client.client_id[0]) if self.client.client_id else 0

    @property
    def session(self) -> tuple[int, bytes]:
        """(session id, password): another client made with it and closed expires this session."""
        session_id, password = self.client.client_id
        return int(session_id), bytes(password)

    def on_state(self, listener: Callable[[SessionState], None]) -> None:
        self._state_listeners.append(listener)

    async def start(self, timeout_s: float = 15.0) -> None:
        self._loop = asyncio.get_running_loop()
        if self.chroot:
            await self._ensure_chroot(timeout_s)
        client = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=self.session_timeout_ms / 1000,
            client_id=self._client_id,
            connection_retry={"max_tries": -1, "max_delay": 1.0},
        )
        client.add_listener(self._kazoo_state)
        self._client = client
        await self._wait_connected(client, timeout_s)

    async def _ensure_chroot(self, timeout_s: float) -> None:
        bootstrap = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
        try:
            await self._wait_connected(bootstrap, timeout_s)
            await asyncio.get_running_loop().run_in_executor(None, bootstrap.ensure_path, self.chroot)
        finally:
            await self._close(bootstrap)

    async def _wait_connected(self, client: KazooClient, timeout_s: float) -> None:
        event = client.start_async()
        loop = asyncio.get_running_loop()
        connected = await loop.run_in_executor(None, event.wait, timeout_s)
        if not connected or not client.connected:
            await self._close(client)
            raise TimeoutError(f"no ZooKeeper session with {self.hosts} after {timeout_s}s")

    async def stop(self) -> None:
        """Close the session (its ephemeral znodes go at once) and the client's threads."""
        client, self._client = self._client, None
        if client is not None:
            await self._close(client)

    @staticmethod
    async def _close(client: KazooClient) -> None:
        def close() -> None:
            client.stop()
            client.close()

        await asyncio.get_running_loop().run_in_executor(None, close)

    def _kazoo_state(self, state: str) -> None:  # kazoo's connection thread: never block here
        mapped = {
            KazooState.CONNECTED: SessionState.CONNECTED,
            KazooState.SUSPENDED: SessionState.SUSPENDED,
            KazooState.LOST: SessionState.LOST,
        }[state]
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._deliver_state, mapped)

    def _deliver_state(self, state: SessionState) -> None:
        log.info("zookeeper_session_state", state=state.value, hosts=self.hosts, chroot=self.chroot)
        for listener in list(self._state_listeners):
            listener(state)

    def _watcher(self, callback: Callable[[WatchedEvent], None] | None) -> Callable[[WatchedEvent], None] | None:
        """A kazoo watch function that runs `callback` on the loop."""
        if callback is None:
            return None
        known = self._watchers.get(callback)  # one function per callback: kazoo keeps a set of them per path
        if known is not None:
            return known
        loop = self._loop
        assert loop is not None

        def watch(event: WatchedEvent) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(callback, event)

        self._watchers[callback] = watch
        return watch

    async def _await(self, async_result: Any) -> Any:
        """An asyncio future resolved from a kazoo IAsyncResult (completed on kazoo's thread)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any) -> None:
            if future.done():
                return
            try:
                future.set_result(result.get_nowait())
            except Exception as exc:  # kazoo's errors (NoNodeError, BadVersionError, ...) reach the caller
                future.set_exception(exc)

        def completed(result: Any) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, result)

        async_result.rawlink(completed)
        return await future

    async def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False, makepath: bool = False
    ) -> str:
        return str(
            await self._await(
                self.client.create_async(path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath)
            )
        )

    async def ensure_path(self, path: str) -> None:
        await self._await(self.client.ensure_path_async(path))

    async def get(self, path: str, watch: Callable[[WatchedEvent], None] | None = None) -> tuple[bytes, ZnodeStat]:
        data, stat = await self._await(self.client.get_async(path, watch=self._watcher(watch)))
        return bytes(data or b""), stat

    async def get_children(self, path: str, watch: Callable[[WatchedEvent], None] | None = None) -> list[str]:
        return list(await self._await(self.client.get_children_async(path, watch=self._watcher(watch))))

    async def exists(self, path: str, watch: Callable[[WatchedEvent], None] | None = None) -> ZnodeStat | None:
        stat: ZnodeStat | None = await self._await(self.client.exists_async(path, watch=self._watcher(watch)))
        return stat

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        """Write `data` if the znode is at `version` (-1: any), else BadVersionError: ZooKeeper's compare-and-set."""
        stat: ZnodeStat = await self._await(self.client.set_async(path, data, version))
        return stat

    async def delete(self, path: str, version: int = -1) -> None:
        await self._await(self.client.delete_async(path, version))

    async def multi(self, ops: Sequence[ZkOp]) -> list[Any]:
        """Apply `ops` atomically, or raise TransactionFailed naming the operation that failed (none applied)."""
        transaction = self.client.transaction()
        for op in ops:
            if op.kind == "create":
                transaction.create(op.path, op.data, ephemeral=op.ephemeral)
            elif op.kind == "set":
                transaction.set_data(op.path, op.data, op.version)
            elif op.kind == "delete":
                transaction.delete(op.path, op.version)
            elif op.kind == "check":
                transaction.check(op.path, op.version)
            else:
                raise ValueError(f"unknown ZooKeeper operation {op.kind!r}")
        results = list(await self._await(transaction.commit_async()))
        for index, result in enumerate(results):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise TransactionFailed(index, result)
        return results
