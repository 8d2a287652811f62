"""Connection limits, sans-io: how many connections, from which addresses, for how long.

`max.connections` (broker-wide, and per listener with `listener.name.NAME.max.connections`),
`max.connections.per.ip` with `max.connections.per.ip.overrides`: a connection over a limit is
closed as soon as it is accepted, counted, and logged (the first refusal at once, then one summary
line per interval, so a flood of connections cannot flood the log). `sweep(now)` closes connections
idle for `connections.max.idle.ms` and those whose request has been arriving for longer than the
frame deadline (slowloris).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import structlog

log = structlog.get_logger("kbroker.limits")

REFUSAL_LOG_INTERVAL = 10.0


class LimitedConnection(Protocol):
    @property
    def host(self) -> str: ...

    @property
    def idle(self) -> bool: ...

    @property
    def last_active(self) -> float: ...

    def check_deadline(self, now: float) -> bool: ...

    def shut(self, reason: str, level: str = "debug", **fields: Any) -> None: ...


def parse_overrides(text: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: "host:count,host:count" (the last colon splits, for IPv6)."""
    result: dict[str, int] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"invalid max.connections.per.ip.overrides entry {item!r}: expected HOST:COUNT")
        result[host.strip().strip("[]")] = int(count)
    return result


class ConnectionLimits:
    def __init__(
        self,
        max_connections: int,
        max_per_ip: int,
        per_ip_overrides: dict[str, int] | None = None,
        idle_ms: int = -1,
        listener_max: dict[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = per_ip_overrides or {}
        self.idle_ms = idle_ms
        self.listener_max = listener_max or {}
        self.connections: dict[Any, str] = {}  # connection -> listener name
        self._per_ip: Counter[str] = Counter()
        self._per_listener: Counter[str] = Counter()
        self.refused_total = 0
        self._refused_unlogged = 0
        self._last_refusal_log = float("-inf")

    def admit(self, conn: Any, now: float, listener: str = "PLAINTEXT") -> bool:
        """Register `conn`, or refuse it (counted and logged) when a limit is reached."""
        host = conn.host
        ip_limit = self.per_ip_overrides.get(host, self.max_per_ip)
        listener_limit = self.listener_max.get(listener)
        reason = None
        if len(self.connections) >= self.max_connections:
            reason, limit = "max.connections reached", self.max_connections
        elif listener_limit is not None and self._per_listener[listener] >= listener_limit:
            reason, limit = f"listener.name.{listener.lower()}.max.connections reached", listener_limit
        elif self._per_ip[host] >= ip_limit:
            reason, limit = "max.connections.per.ip reached", ip_limit
        if reason is not None:
            self._refused(now, reason, limit, host, listener)
            return False
        self.connections[conn] = listener
        self._per_ip[host] += 1
        self._per_listener[listener] += 1
        return True

    def discard(self, conn: Any) -> None:
        listener = self.connections.pop(conn, None)
        if listener is None:
            return
        host = conn.host
        self._per_ip[host] -= 1
        if self._per_ip[host] <= 0:
            del self._per_ip[host]
        self._per_listener[listener] -= 1

    def sweep(self, now: float) -> None:
        """Close connections idle too long and those whose request is overdue."""
        cutoff = now - self.idle_ms / 1000 if self.idle_ms >= 0 else None
        for conn in list(self.connections):
            if conn.check_deadline(now):
                continue
            if cutoff is not None and conn.idle and conn.last_active < cutoff:
                conn.shut("idle", "info", idle_ms=self.idle_ms)

    def _refused(self, now: float, reason: str, limit: int, host: str, listener: str) -> None:
        self.refused_total += 1
        self._refused_unlogged += 1
        if now - self._last_refusal_log < REFUSAL_LOG_INTERVAL:
            return
        log.warning(
            "connection_refused",
            reason=reason,
            limit=limit,
            peer_host=host,
            listener=listener,
            refused=self._refused_unlogged,
            refused_total=self.refused_total,
            connections=len(self.connections),
        )
        self._refused_unlogged = 0
        self._last_refusal_log = now
