"""The bound on open segment files: an LRU of descriptors shared by many partition logs."""

from __future__ import annotations

import asyncio
import os
import resource
from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.files import MIN_CAPACITY, OpenFiles, capacity_for_limit, raise_open_file_limit
from kbroker.log.partition_log import PartitionLog
from protocol.records import iter_batches
from tests.log.batches import make_batch

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200)
PARTITIONS = 40


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def build(root: Path, files: OpenFiles) -> tuple[list[PartitionLog], dict[tuple[int, int], bytes]]:
    """PARTITIONS logs of a few segments each; the stored bytes of every batch by (partition, offset)."""
    logs = [PartitionLog.open(root / f"t-{p}", CONFIG, files=files) for p in range(PARTITIONS)]
    stored = {}
    for i in range(12):
        for p, log in enumerate(logs):
            info = log.append(make_batch(2, 200, seed=p * 100 + i))
            stored[(p, info.base_offset)] = log.read(info.base_offset, 1).read()
    return logs, stored


def test_descriptors_stay_bounded_and_reopen_on_demand(tmp_path):
    files = OpenFiles(MIN_CAPACITY)
    before = open_fds()
    logs, stored = build(tmp_path, files)
    assert sum(len(log.segments) for log in logs) > 3 * MIN_CAPACITY
    assert len(files) <= files.capacity and open_fds() - before <= files.capacity
    assert files.evictions > 0
    for (p, offset), data in stored.items():  # every segment of every log, in an order that defeats the LRU
        assert logs[p].read(offset, 1).read() == data
        assert open_fds() - before <= files.capacity
    for p, log in enumerate(logs):  # appends reopen the active segment
        info = log.append(make_batch(1, seed=p))
        assert next(iter_batches(log.read(info.base_offset, 1).read())).base_offset == info.base_offset
        log.flush_sync()
    for log in logs:
        log.close()
    assert len(files) == 0 and open_fds() == before


def test_a_restart_under_the_bound_recovers_every_partition(tmp_path):
    files = OpenFiles(MIN_CAPACITY)
    logs, stored = build(tmp_path, files)
    for log in logs:
        log.release_files()  # a crash
    before = open_fds()
    files = OpenFiles(MIN_CAPACITY)
    logs = [PartitionLog.open(tmp_path / f"t-{p}", CONFIG, files=files) for p in range(PARTITIONS)]
    assert all(log.recovery.segments_scanned > 0 for log in logs)
    assert open_fds() - before <= files.capacity
    assert {(p, b.base_offset): bytes(b.view()) for p, log in enumerate(logs) for b in log.batches()} == stored
    for log in logs:
        log.close()


def test_lent_descriptors_outlive_other_opens_until_the_next_iteration(tmp_path):
    files = OpenFiles(MIN_CAPACITY)
    logs, stored = build(tmp_path, files)

    async def one_fetch() -> None:
        # one callback reads the first batch of every partition, as a Fetch of all of them does
        regions = [log.read(0, 1).region for log in logs]
        assert all(r is not None for r in regions)
        copies = [r for r in regions if r is not None and r.data is not None]
        assert len(copies) == PARTITIONS - files.lend_limit  # past the lend limit: the bytes, not the fd
        for p, region in enumerate(regions):  # no lent fd was closed (or reused) by the later opens
            assert region is not None and region.read() == stored[(p, 0)]
        assert len(files) <= files.capacity + files.lend_limit
        await asyncio.sleep(0)  # the next iteration releases them
        assert len(files) <= files.capacity

    asyncio.run(one_fetch())
    for log in logs:
        log.close()


def test_capacity_follows_the_limit():
    assert capacity_for_limit(256) == 128
    assert capacity_for_limit(1 << 20) == (1 << 20) - 4096
    assert capacity_for_limit(10) == MIN_CAPACITY
    assert capacity_for_limit(resource.RLIM_INFINITY) > 1 << 19


@pytest.mark.skipif(os.name != "posix", reason="POSIX resource limits")
def test_raise_open_file_limit_sets_soft_to_hard():
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, saved[1]), saved[1]))
        assert raise_open_file_limit() == (saved[1], saved[1])
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (saved[1], saved[1])
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)
