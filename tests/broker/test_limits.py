"""Connection limits without sockets: per broker, per address with overrides, per listener; idle and deadlines."""

from __future__ import annotations

from typing import Any

import pytest

from kbroker.limits import ConnectionLimits, parse_overrides
from tests.logs import captured_logs


class Conn:
    def __init__(self, host: str, last_active: float = 0.0, idle: bool = True, overdue: bool = False) -> None:
        self.host, self.last_active, self.idle, self.overdue = host, last_active, idle, overdue
        self.shut_reason: str | None = None

    def check_deadline(self, now: float) -> bool:
        if self.overdue:
            self.shut_reason = "deadline"
        return self.overdue

    def shut(self, reason: str, level: str = "debug", **fields: Any) -> None:
        self.shut_reason = reason


def test_max_connections_refuses_counts_and_logs_a_summary() -> None:
    limits = ConnectionLimits(max_connections=2, max_per_ip=100)
    assert limits.admit(Conn("a"), 0.0) and limits.admit(Conn("b"), 0.0)
    with captured_logs() as logs:
        assert not limits.admit(Conn("c"), 0.0)
        assert not limits.admit(Conn("c"), 1.0)
        assert not limits.admit(Conn("c"), 11.0)
    assert limits.refused_total == 3
    assert [(e["event"], e["refused"], e["refused_total"]) for e in logs] == [
        ("connection_refused", 1, 1),
        ("connection_refused", 2, 3),
    ]


def test_per_ip_limit_with_overrides_and_release() -> None:
    limits = ConnectionLimits(max_connections=100, max_per_ip=1, per_ip_overrides=parse_overrides("10.0.0.9:3"))
    first = Conn("10.0.0.1")
    assert limits.admit(first, 0.0)
    assert not limits.admit(Conn("10.0.0.1"), 0.0)
    assert all(limits.admit(Conn("10.0.0.9"), 0.0) for _ in range(3))
    assert not limits.admit(Conn("10.0.0.9"), 0.0)
    limits.discard(first)
    assert limits.admit(Conn("10.0.0.1"), 0.0)


def test_per_listener_limit() -> None:
    limits = ConnectionLimits(max_connections=100, max_per_ip=100, listener_max={"EXTERNAL": 1})
    assert limits.admit(Conn("h"), 0.0, "EXTERNAL")
    assert not limits.admit(Conn("h"), 0.0, "EXTERNAL")
    assert limits.admit(Conn("h"), 0.0, "PLAINTEXT")


def test_sweep_closes_idle_and_overdue_connections_only() -> None:
    limits = ConnectionLimits(max_connections=100, max_per_ip=100, idle_ms=10_000)
    idle, busy, recent, overdue = Conn("h", 0.0), Conn("h", 0.0, idle=False), Conn("h", 95.0), Conn("h", overdue=True)
    for conn in (idle, busy, recent, overdue):
        limits.admit(conn, 0.0)
    limits.sweep(100.0)
    assert (idle.shut_reason, busy.shut_reason, recent.shut_reason, overdue.shut_reason) == (
        "idle",
        None,
        None,
        "deadline",
    )


@pytest.mark.parametrize("text", ["h", "h:", ":3", "h:x"])
def test_bad_overrides(text: str) -> None:
    with pytest.raises(ValueError, match="HOST:COUNT"):
        parse_overrides(text)
