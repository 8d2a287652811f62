"""tests/ports.py: the ports the tests' servers get come from a block of the worker's own, below the
kernel's ephemeral range, and are free when handed out."""

from __future__ import annotations

import socket

from tests import ports


def test_each_worker_has_its_own_block_below_the_ephemeral_range() -> None:
    assert [ports.worker_index(name) for name in ("", "gw0", "gw1", "gw7", "master")] == [0, 0, 1, 7, 0]
    low = ports.ephemeral_range()[0]
    first, second = ports.block(0, low), ports.block(1, low)
    assert first is not None and second is not None
    assert set(first).isdisjoint(second)
    assert max(second) < low
    assert ports.block(100, low) is None  # a block that would reach the ephemeral range is not used


def test_ports_handed_out_are_free_and_not_repeated() -> None:
    picked = [ports.free_port() for _ in range(50)]
    assert len(set(picked)) == 50
    low = ports.ephemeral_range()[0]
    assert all(port < low for port in picked)
    for port in picked:
        with socket.socket() as sock:
            sock.bind((ports.HOST, port))


def test_a_port_in_use_is_skipped_and_runs_are_consecutive() -> None:
    with socket.socket() as taken:
        taken.bind((ports.HOST, ports.free_port() + 1))  # the next pick's port
        taken.listen()
        busy = taken.getsockname()[1]
        assert ports.free_port() != busy
    start = ports.free_ports(3)
    for port in range(start, start + 3):
        assert ports.is_free(port)
    assert ports.free_port() not in range(start, start + 3)  # the next pick starts after the run
