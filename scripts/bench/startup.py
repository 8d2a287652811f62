#!/usr/bin/env python3
"""Startup and idle memory (not a test): time from process start to the first ApiVersions
answer on an empty data dir (S1), and resident memory once idle (S2). Median of runs.

    .venv/bin/python scripts/bench/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def first_answer(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
                if len(sock.recv(4)) == 4:
                    return
        except OSError:
            time.sleep(0.002)
    raise TimeoutError("no ApiVersions answer")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def one_run() -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        cmd = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", f"{tmp}/data"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            first_answer(port, start + 20)
            elapsed_ms = (time.monotonic() - start) * 1000
            time.sleep(1.0)
            return elapsed_ms, rss_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = [one_run() for _ in range(args.runs)]
    times = sorted(r[0] for r in results)
    rss = sorted(r[1] for r in results)
    print(
        f"S1 start to first ApiVersions answer: median {statistics.median(times):.0f} ms (min {times[0]:.0f}, max {times[-1]:.0f})"
    )
    print(
        f"S2 idle RSS: median {statistics.median(rss) / 1024:.1f} MiB (min {rss[0] / 1024:.1f}, max {rss[-1] / 1024:.1f})"
    )


if __name__ == "__main__":
    main()
