"""kill -9 during fsync-before-ack appends: every acknowledged batch survives recovery."""

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from kbroker.log.manager import LogManager
from protocol.records import iter_batches

ROOT = Path(__file__).resolve().parents[2]


def run_and_kill(data_dir: Path, seed: int, run_seconds: float) -> list[tuple[int, int, int]]:
    """Start the writer, kill -9 it after `run_seconds` of appends; return the acknowledged batches."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.log.crash_writer", str(data_dir), str(seed)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    stdout = child.stdout
    output = b""
    deadline = None
    try:
        while True:
            ready, _, _ = select.select([stdout], [], [], 5)
            assert ready, "the crash writer is silent"
            chunk = os.read(stdout.fileno(), 65536)
            assert chunk, f"the crash writer exited with {child.wait()}"
            output += chunk
            if deadline is None and b"READY" in output:
                deadline = time.monotonic() + run_seconds
            if deadline is not None and time.monotonic() >= deadline:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    output += stdout.read()
    stdout.close()
    acks = []
    for line in output.split(b"\n"):
        if line.startswith(b"ACK "):
            base, last, crc = map(int, line.split()[1:])
            acks.append((base, last, crc))
    return acks


def tear_unacknowledged_tail(data_dir: Path, acked_end: int, rng: random.Random) -> None:
    """Power loss: cut the last segment at a random byte after the last acknowledged batch."""
    last = sorted((data_dir / "crash-0").glob("*.log"))[-1]
    data = last.read_bytes()
    keep = 0
    try:
        for batch in iter_batches(data):
            if batch.last_offset < acked_end:
                keep = batch.position + batch.size
    except ValueError:  # a torn batch at the end
        pass
    if keep < len(data):
        os.truncate(last, rng.randrange(keep, len(data) + 1))


def verify(data_dir: Path, acknowledged: dict[int, tuple[int, int]]) -> int:
    manager = LogManager(data_dir)
    manager.startup()
    assert not manager.had_clean_shutdown
    log = manager.get_log("crash", 0)
    assert log is not None
    found = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30).read()
        for batch in iter_batches(data):
            assert batch.base_offset == offset, "offsets are not dense"
            assert batch.is_valid(), "a batch with a bad CRC is served"
            found[batch.base_offset] = (batch.last_offset, batch.crc)
            offset = batch.next_offset
    missing = {base: value for base, value in acknowledged.items() if found.get(base) != value}
    assert not missing, f"{len(missing)} acknowledged batches lost, e.g. {sorted(missing.items())[:3]}"
    end = log.log_end_offset
    manager.abort()
    return end


def test_kill_9_loses_no_acknowledged_batch(tmp_path):
    rng = random.Random(7)
    acknowledged: dict[int, tuple[int, int]] = {}
    previous_end = 0
    for round_ in range(5):
        acks = run_and_kill(tmp_path, round_, rng.uniform(0.3, 0.8))
        assert acks, "nothing was acknowledged"
        tear_unacknowledged_tail(tmp_path, max(last for _, last, _ in acks) + 1, rng)
        for base, last, crc in acks:
            acknowledged[base] = (last, crc)
        end = verify(tmp_path, acknowledged)
        assert end >= previous_end and end >= max(last for _, last, _ in acks) + 1
        previous_end = end
    assert len(acknowledged) > 100
