"""tests/ports.py: the ports the tests' servers get come from a chunk of the process's own (held by a file
lock), below the kernel's ephemeral range, and are free when handed out."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests import ports
from tests.process import REPO


def test_chunks_lie_below_the_ephemeral_range_and_do_not_overlap() -> None:
    low = ports.ephemeral_range()[0]
    found = ports.chunks(low)
    assert len(found) >= 8 and found[0].start == ports.FIRST and max(found[-1]) < low
    assert all(a.stop <= b.start for a, b in zip(found, found[1:], strict=False))


def test_a_chunk_held_by_one_holder_is_not_claimed_by_another(tmp_path: Path) -> None:
    candidates = [range(30000, 30010), range(30010, 30020)]
    first = ports.claim(candidates, tmp_path)
    second = ports.claim(candidates, tmp_path)
    assert first is not None and second is not None and first[0] != second[0]
    assert ports.claim(candidates, tmp_path) is None  # both taken
    first[1].close()  # its holder is gone (as when a process exits): the chunk is free again
    again = ports.claim(candidates, tmp_path)
    assert again is not None and again[0] == first[0]


def test_ports_handed_out_are_free_and_not_repeated() -> None:
    picked = [ports.free_port() for _ in range(50)]
    assert len(set(picked)) == 50
    low = ports.ephemeral_range()[0]
    assert all(port < low for port in picked)
    for port in picked:
        assert ports.is_free(port)


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


def test_another_process_gets_ports_of_another_chunk() -> None:
    mine = ports.free_port()
    code = "from tests.ports import free_port; print(free_port())"
    theirs = int(
        subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    )
    assert (
        abs(theirs - mine) >= ports.CHUNK
        or (theirs - ports.FIRST) // ports.CHUNK != (mine - ports.FIRST) // ports.CHUNK
    )


def test_runs_and_single_ports_never_overlap_across_the_chunks_end() -> None:
    """Picks of runs and of single ports, many times round the chunk: a port handed out is never inside a
    run handed out just before it (a server numbered from a base port has not bound them yet)."""
    previous: range = range(0)
    for turn in range(3 * ports.CHUNK):
        count = 1 + turn % 3
        start = ports.free_ports(count)
        taken = range(start, start + count)
        assert not set(taken) & set(previous), (previous, taken)
        previous = taken
