#!/usr/bin/env python3
"""Startup and idle memory (not a test): time from process start to the first ApiVersions
answer on an empty data dir (S1), the process's CPU time (user + system) up to that answer, and
resident memory once idle (S2). Median of runs.

    .venv/bin/python scripts/bench/startup.py [--runs 5]              # this checkout (editable install)
    .venv/bin/python scripts/bench/startup.py --installed --runs 30   # a wheel of it, installed
    .venv/bin/python scripts/bench/startup.py --python VENV/bin/python  # the kbroker another venv has

--installed builds a wheel of this checkout and installs it into its own venv, as
scripts/bench/run does (brokers.install_kbroker). With --installed or --python, kbroker runs from a
temporary directory so the checkout is not on its path. Bytecode is cached as for an
installed program (pip writes .pyc files at install; for the checkout they go to
~/.cache/kbroker/pycache, as in scripts/bench/brokers.py).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PYCACHE = Path.home() / ".cache" / "kbroker" / "pycache"
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


def cpu_ms(pid: int) -> float:
    """The process's time on a CPU so far (user + system), from the scheduler, in ns resolution."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6


def one_run(python: str, installed: bool) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        cmd = [python, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", f"{tmp}/data"]
        env = dict(os.environ)
        if not installed:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=tmp if installed else REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            first_answer(port, start + 20)
            elapsed_ms = (time.monotonic() - start) * 1000
            cpu = cpu_ms(proc.pid)
            time.sleep(1.0)
            return elapsed_ms, cpu, rss_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)


def summary(label: str, values: list[float], unit: str, scale: float = 1.0) -> str:
    ordered = sorted(v / scale for v in values)
    return f"{label}: median {statistics.median(ordered):.1f} {unit} (min {ordered[0]:.1f}, max {ordered[-1]:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", help="an interpreter with kbroker installed (default: this checkout)")
    parser.add_argument("--installed", action="store_true", help="install a wheel of this checkout and run it")
    args = parser.parse_args()
    if args.installed:
        from brokers import install_kbroker

        args.python = str(install_kbroker().parent / "python")
    python = args.python or sys.executable
    # one untimed start first: the checkout's bytecode cache is written then
    one_run(python, args.python is not None)
    results = [one_run(python, args.python is not None) for _ in range(args.runs)]
    print(summary("S1 start to first ApiVersions answer", [r[0] for r in results], "ms"))
    print(summary("   CPU time (user + system) to that answer", [r[1] for r in results], "ms"))
    print(summary("S2 idle RSS", [r[2] for r in results], "MiB", 1024))
    print(f"   load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
