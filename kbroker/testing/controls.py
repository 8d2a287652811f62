"""What a test controls in a running broker: its virtual clock, its faults, and reset.

The server builds a `TestControls` only when testing is enabled (the in-process broker of
kbroker.testing, or `kbroker.testing.admin.enable=true`): then the broker runs on the virtual
clock and its handler registry goes through `Faults.wrap`. Everything here runs on the
broker's event loop.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog

from kbroker.clock import VirtualClock
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.testing.faults import Faults

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.limits import ConnectionLimits

log = structlog.get_logger(__name__)

# the broker's own topics: reset empties them instead of deleting them


class TestControls:
    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.faults = Faults()
        self.broker: Broker | None = None
        self.connections: ConnectionLimits | None = None
        self.http_addresses: list[str] = []  # http://HOST:PORT of each HTTP listener, once serving

    def attach(self, broker: Broker, connections: ConnectionLimits) -> None:
        """The running broker and its connection registry (the server calls this before serving)."""
        self.broker = broker
        self.connections = connections
        broker.test_controls = self
        self.faults.close_connection = self._close_connection
        self.faults.close_all = self.close_connections

    def _close_connection(self, connection_id: int, reason: str) -> None:
        for conn in list(self.connections.connections if self.connections else ()):
            if getattr(conn, "id", None) == connection_id:
                conn.shut(reason, "info")

    def close_connections(self, reason: str = "closed by the test") -> int:
        """Close every client connection now; returns how many."""
        conns = list(self.connections.connections if self.connections else ())
        for conn in conns:
            conn.shut(reason, "info")
        return len(conns)

    async def advance(self, seconds: float) -> int:
        return await self.clock.advance(seconds)

    def reset(self) -> dict[str, int]:
        """Back to an empty broker without a restart: faults cleared, client connections closed, every
        topic but the internal ones deleted, and the groups, share groups and transactions forgotten (the
        internal topics' records are deleted too, so a restart of the same data directory finds none).
        The virtual clock keeps its time: it never goes back.

        (The runtimes have no reset of their own yet: this clears their state where they keep it.)"""
        broker = self.broker
        assert broker is not None, "reset before the broker started"
        started = time.perf_counter()
        self.faults.clear()
        self.faults.injected = 0
        closed = self.close_connections("broker reset")
        groups = shares = transactions = 0
        if broker.groups is not None:
            runtime = broker.groups
            runtime.coordinator.unload()  # waiting joins and syncs answer NOT_COORDINATOR
            runtime._dispatch()
            groups = len(runtime.groups)
            runtime.groups.clear()
            runtime.coordinator.dirty.clear()
            runtime.pending_txn_offsets.clear()
            runtime._wake.set()  # the timer task looks at the (now empty) deadlines again
        if broker.shares is not None:
            share = broker.shares
            shares = len(share.coordinator.groups)
            share.coordinator.groups.clear()
            share.coordinator.removed.clear()
            share.partitions.clear()
            share.sessions.sessions.clear()
            share._dirty.clear()
            share._topic_ids.clear()
            share._wake.set()
        if broker.transactions is not None:
            transactions = len(broker.transactions.coordinator.transactions)
            broker.transactions.coordinator.transactions.clear()
        topics = [name for name in broker.logs.topics() if name not in INTERNAL_TOPICS]
        for name in topics:
            partitions = broker.logs.topic(name)
            broker.logs.delete_topic(name)
            for index in range(partitions.partitions if partitions else 0):
                broker.fetch_waiters.wake((name, index))
        for (topic, _), unified in broker.logs.partitions():
            if topic in INTERNAL_TOPICS:
                unified.local.delete_records(-1)
        summary = {
            "topics": len(topics),
            "groups": groups,
            "share_groups": shares,
            "transactions": transactions,
            "connections": closed,
        }
        log.info("broker_reset", duration_ms=round((time.perf_counter() - started) * 1000, 2), **summary)
        return summary
