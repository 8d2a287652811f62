"""Ports for the servers the tests start (kbroker, Apache Kafka, ZooKeeper).

A port is picked, probed and released before the server binds it. Picked by the kernel (`bind(("", 0))`),
it would come from the ephemeral range, where every outgoing connection of every process also takes its
local port: another test's client could take it in between. So the ports come from below that range, in
chunks: each process that needs ports (a pytest-xdist worker, a pytest run beside it, a script) takes a
chunk of its own, held by an exclusive lock on a file until the process exits, and walks it. Two
processes never hand out the same port, and one process reuses a port only after walking its chunk.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import IO

HOST = "127.0.0.1"
FIRST = 20000  # the lowest port handed out, well below Linux's ephemeral range (32768 up)
CHUNK = 200  # ports per process
LOCKS = Path(tempfile.gettempdir()) / "kbroker-test-ports"


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (and of binds to port 0)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def chunks(ephemeral_low: int) -> list[range]:
    """The chunks between FIRST and the ephemeral range."""
    return [range(start, start + CHUNK) for start in range(FIRST, ephemeral_low - CHUNK + 1, CHUNK)]


def claim(candidates: list[range], locks: Path = LOCKS) -> tuple[range, IO[bytes]] | None:
    """The first chunk no other process holds, with the open lock file that holds it (None: all are taken)."""
    locks.mkdir(parents=True, exist_ok=True)
    for chunk in candidates:
        handle = open(locks / f"{chunk.start}.lock", "wb")  # noqa: SIM115 - held open: the lock lives with it
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return chunk, handle
    return None


class _Chunk:
    """This process's chunk, claimed at the first port asked for (after a fork: claimed again), and where in
    it the next pick starts."""

    def __init__(self) -> None:
        self.pid = -1
        self.claimed: tuple[range, IO[bytes]] | None = None
        self.cursor = 0

    def ports(self) -> range | None:
        if self.pid != os.getpid():
            self.pid, self.cursor = os.getpid(), 0
            self.claimed = claim(chunks(ephemeral_range()[0]))
        return None if self.claimed is None else self.claimed[0]


_CHUNK = _Chunk()


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
    ports = _CHUNK.ports()
    if ports is not None and count <= len(ports):
        for _ in range(len(ports)):
            if _CHUNK.cursor + count > len(ports):
                _CHUNK.cursor = 0  # walked the whole chunk: from its start again
            start = ports.start + _CHUNK.cursor
            if all(is_free(port) for port in range(start, start + count)):
                _CHUNK.cursor += count  # the next pick starts after these
                return start
            _CHUNK.cursor += 1
    while True:  # no chunk left (or a low ephemeral range): ask the kernel
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            start = int(sock.getsockname()[1])
        if start + count <= 65536 and all(is_free(port) for port in range(start + 1, start + count)):
            return start
