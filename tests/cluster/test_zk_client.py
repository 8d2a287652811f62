"""The asyncio bridge over kazoo, against a real ZooKeeper: results, compare-and-set, watches and session
state arrive on the event loop; ephemeral znodes go with their session."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kbroker.cluster.zk import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    SessionState,
    TransactionFailed,
    ZkClient,
    ZkOp,
    split_connect,
)
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.conftest import async_test
from tests.ports import free_port


def test_split_connect() -> None:
    assert split_connect("a:1,b:2/kafka/one") == ("a:1,b:2", "/kafka/one")
    assert split_connect("a:1/") == ("a:1", "")
    assert split_connect("a:1") == ("a:1", "")
    with pytest.raises(ValueError):
        split_connect("/chroot")


async def _client(zookeeper: ZooKeeperServer, chroot: str, **kwargs: object) -> ZkClient:
    client = ZkClient(zookeeper.connect_string + chroot, session_timeout_ms=4000, **kwargs)  # type: ignore[arg-type]
    await client.start()
    return client


@async_test
async def test_operations_and_compare_and_set(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    client = await _client(zookeeper, zk_chroot)
    try:
        assert await client.create("/a/b", b"one", makepath=True) == "/a/b"  # chroot-relative
        with pytest.raises(NodeExistsError):
            await client.create("/a/b", b"two")
        data, stat = await client.get("/a/b")
        assert (data, stat.version) == (b"one", 0)
        stat = await client.set("/a/b", b"two", version=0)
        assert stat.version == 1
        with pytest.raises(BadVersionError):  # a writer that read version 0 loses the race
            await client.set("/a/b", b"stale", version=0)
        assert (await client.get("/a/b"))[0] == b"two"
        assert await client.get_children("/a") == ["b"]
        with pytest.raises(NoNodeError):
            await client.get("/missing")
        assert await client.exists("/missing") is None
        # a transaction: the check fails, so the create is rolled back too
        with pytest.raises(TransactionFailed) as failed:
            await client.multi([ZkOp("check", "/a/b", version=0), ZkOp("create", "/a/c", b"x")])
        assert failed.value.index == 0 and isinstance(failed.value.error, BadVersionError)
        assert await client.exists("/a/c") is None
        await client.multi([ZkOp("check", "/a/b", version=1), ZkOp("create", "/a/c", b"x")])
        assert (await client.get("/a/c"))[0] == b"x"
    finally:
        await client.stop()
    # the chroot was created by the client and holds everything
    root = await _client(zookeeper, "")
    try:
        assert await root.get_children(zk_chroot) == ["a"]
    finally:
        await root.stop()


@async_test
async def test_watches_run_on_the_loop_and_ephemerals_go_with_the_session(
    zookeeper: ZooKeeperServer, zk_chroot: str
) -> None:
    watcher = await _client(zookeeper, zk_chroot)
    owner = await _client(zookeeper, zk_chroot)
    try:
        await watcher.ensure_path("/brokers/ids")
        fired: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()
        loop_thread = threading.get_ident()

        def on_children(event: object) -> None:
            fired.put_nowait((getattr(event, "path", ""), threading.get_ident() == loop_thread))

        assert await watcher.get_children("/brokers/ids", watch=on_children) == []
        await owner.create("/brokers/ids/1", b"{}", ephemeral=True)
        assert await asyncio.wait_for(fired.get(), 10) == ("/brokers/ids", True)
        assert await watcher.get_children("/brokers/ids", watch=on_children) == ["1"]
        await owner.stop()  # closing the session removes its ephemeral znode at once
        assert await asyncio.wait_for(fired.get(), 10) == ("/brokers/ids", True)
        assert await watcher.get_children("/brokers/ids") == []
    finally:
        await owner.stop()
        await watcher.stop()


@async_test
async def test_session_expiry_is_reported_as_lost(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    client = await _client(zookeeper, zk_chroot)
    states: asyncio.Queue[SessionState] = asyncio.Queue()
    client.on_state(states.put_nowait)
    try:
        await client.create("/controller", b"{}", ephemeral=True)
        # ZooKeeper's way to expire a session on purpose: a second client joins it, then closes it
        twin = await _client(zookeeper, zk_chroot, client_id=client.session)
        await twin.stop()
        seen = []
        while SessionState.LOST not in seen:
            seen.append(await asyncio.wait_for(states.get(), 20))
        assert await asyncio.wait_for(states.get(), 20) == SessionState.CONNECTED  # kazoo opens a new session
        assert await client.exists("/controller") is None
    finally:
        await client.stop()


@async_test
async def test_server_down_suspends_and_restart_resumes_the_session(zk_chroot: str) -> None:
    with ZooKeeperServer(free_port()) as server:
        client = await _client(server, zk_chroot)
        states: asyncio.Queue[SessionState] = asyncio.Queue()
        client.on_state(states.put_nowait)
        try:
            await client.create("/brokers/ids/7", b"{}", ephemeral=True, makepath=True)
            session = client.session_id
            await asyncio.get_running_loop().run_in_executor(None, server.stop)
            assert await asyncio.wait_for(states.get(), 20) == SessionState.SUSPENDED
            await asyncio.get_running_loop().run_in_executor(None, server.start)
            assert await asyncio.wait_for(states.get(), 30) == SessionState.CONNECTED
            assert client.session_id == session  # back within the session timeout: same session, znode kept
            assert await client.exists("/brokers/ids/7") is not None
        finally:
            await client.stop()
