"""Ports for the servers the tests start (kbroker, Apache Kafka, ZooKeeper).

A port is picked, probed and released before the server binds it. Picked by the kernel (`bind(("", 0))`),
it would come from the ephemeral range, where every outgoing connection of every process also takes its
local port: another test's client could take it in between. So the ports come from below that range, and
each pytest-xdist worker walks its own block of them: the two workers never pick the same port, and one
worker reuses a port only after it has walked its whole block.
"""

from __future__ import annotations

import itertools
import os
import socket
from pathlib import Path

HOST = "127.0.0.1"
FIRST = 20000  # the lowest port handed out, well below Linux's ephemeral range (32768 up)
BLOCK = 2000  # ports per worker


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (and of binds to port 0)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def worker_index(name: str | None = None) -> int:
    """0 for the main process and `gw0`, 1 for `gw1`, ...: pytest-xdist names its workers so."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "") if name is None else name
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def block(index: int, ephemeral_low: int) -> range | None:
    """The worker's block, or None when it would reach into the ephemeral range."""
    start = FIRST + index * BLOCK
    return range(start, start + BLOCK) if start + BLOCK <= ephemeral_low else None


_BLOCK = block(worker_index(), ephemeral_range()[0])
_turn = itertools.count()


def is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (or lingers on) right now."""
    return free_ports(1)


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports (for servers numbered from a base port)."""
    if _BLOCK is not None:
        for _ in range(len(_BLOCK)):
            start = _BLOCK.start + (next(_turn) % (len(_BLOCK) - count + 1))
            if all(is_free(port) for port in range(start, start + count)):
                for _ in range(count - 1):
                    next(_turn)  # the next pick starts after this run
                return start
    while True:  # no block of our own (many workers, or a low ephemeral range): ask the kernel
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            start = int(sock.getsockname()[1])
        if start + count <= 65536 and all(is_free(port) for port in range(start + 1, start + count)):
            return start
