"""A bound on the segment files kept open: an LRU of descriptors, reopened on demand.

Every segment reads and appends through a descriptor of its .log file. Thousands of
partitions under a low `ulimit -n` would run the process out of descriptors, so the
log manager shares one `OpenFiles` among its segments: past `capacity` the least
recently used descriptors are closed, and a segment reopens its file on next use.
With the usual limits the capacity is never reached and nothing is ever closed.

A descriptor handed out in a `FileRegion` (a fetch's zero-copy range, written to the
socket with sendfile) must stay open until the response is written, which the
connection does before the event loop runs anything else: such a segment is *lent*
until the loop's next iteration and is not closed meanwhile. When too many are lent
at once (a fetch of hundreds of partitions), reads return copies of their bytes
instead, so the lent descriptors never fill the cache.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

MIN_CAPACITY = 16
RESERVED = 4096  # descriptors left for sockets, index and checkpoint writes, threads (large limits)


class _HasFile(Protocol):
    def release_fd(self) -> None: ...


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return (soft, hard) as they now are."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else _kernel_max()  # "unlimited" is capped by nr_open
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            log.warning("open_file_limit_not_raised", soft=soft, hard=hard, error=str(error))
    return soft, hard


def _kernel_max() -> int:
    try:
        return int(Path("/proc/sys/fs/nr_open").read_text())
    except (OSError, ValueError):
        return 1 << 20


def capacity_for_limit(soft: int) -> int:
    """Segment descriptors to keep open under a soft limit of `soft`: half of a small limit,
    all but RESERVED of a large one."""
    if soft == resource.RLIM_INFINITY or soft < 0:
        soft = 1 << 20
    return max(MIN_CAPACITY, soft // 2 if soft < 2 * RESERVED else soft - RESERVED)


class OpenFiles:
    """The open segment descriptors of one broker, least recently used first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(MIN_CAPACITY, capacity)
        self.lend_limit = self.capacity // 2
        self._open: OrderedDict[_HasFile, None] = OrderedDict()
        self._lent: set[_HasFile] = set()
        self.evicted: set[_HasFile] = set()  # closed by the bound, not reopened yet (empty: lending is moot)
        self._release_scheduled = False
        self.evictions = 0
        self.pressed = False  # near the capacity: keep the LRU order exact (below it, any order will do)

    @classmethod
    def for_process(cls) -> OpenFiles:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return cls(capacity_for_limit(soft))

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, segment: _HasFile) -> None:
        """`segment` just opened its file; close the least recently used ones past the capacity."""
        self._open[segment] = None
        self.evicted.discard(segment)
        if len(self._open) > self.capacity:
            self._evict()
        self.pressed = len(self._open) > self.capacity * 3 // 4

    def touch(self, segment: _HasFile) -> None:
        self._open.move_to_end(segment)

    def forget(self, segment: _HasFile) -> None:
        """`segment` closed its file (or keeps it outside the cache until it is destroyed)."""
        self._open.pop(segment, None)
        self._lent.discard(segment)
        self.evicted.discard(segment)
        self.pressed = len(self._open) > self.capacity * 3 // 4

    def lend(self, segment: _HasFile) -> bool:
        """Keep `segment`'s descriptor open until the loop's next iteration (False: too many
        are lent already; copy the bytes instead)."""
        if not self.evicted or segment in self._lent:
            # nothing closed: reads open no file, so nothing is evicted before the response is written
            return True
        if len(self._lent) >= self.lend_limit:
            return False
        loop = asyncio._get_running_loop()
        if loop is None:
            return True  # no loop: the caller uses the descriptor before anything else runs
        self._lent.add(segment)
        if not self._release_scheduled:
            self._release_scheduled = True
            loop.call_soon(self._release_lent)
        return True

    def _release_lent(self) -> None:
        self._release_scheduled = False
        self._lent.clear()
        if len(self._open) > self.capacity:
            self._evict()

    def _evict(self) -> None:
        opened = self._open
        lent: list[_HasFile] = []
        while opened and len(opened) + len(lent) > self.capacity:
            segment, _ = opened.popitem(last=False)
            if segment in self._lent:
                lent.append(segment)  # in use right now: back at the recent end
                continue
            segment.release_fd()
            self.evicted.add(segment)
            self.evictions += 1
        for segment in lent:
            opened[segment] = None
