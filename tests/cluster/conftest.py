"""A real standalone ZooKeeper for the cluster tests (scripts/zookeeper.py), one per test session.

Each test gets its own chroot (`zk_chroot`), so tests share the server without seeing each other's znodes.
Tests that stop or restart ZooKeeper start their own `ZooKeeperServer` instead.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from scripts.zookeeper import ZooKeeperServer
from tests.ports import free_port


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(free_port()) as server:
        yield server


@pytest.fixture
def zk_chroot() -> str:
    return f"/kbroker-test-{uuid.uuid4().hex[:12]}"


def async_test(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test function on a fresh event loop (its fixtures stay as pytest gives them)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run
