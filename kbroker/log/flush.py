"""Group commit: one fsync, run off the event loop, shared by every waiter it covers.

`GroupCommit.flush(offset)` returns once everything below `offset` is durable.
While an fsync is in flight, new waiters whose offset it covers share it;
the others wait for the next one, which starts as soon as the current one
ends and covers everything appended by then.
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_right
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from kbroker.log.errors import KafkaStorageError
from kbroker.log.index import write_index_file
from kbroker.log.segment import DELETED_SUFFIX, LogSegment

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class FlushPlan:
    """What one flush makes durable; built in the event loop, run in a thread."""

    target_offset: int
    log_paths: list[Path] = field(
        default_factory=list
    )  # opened in the thread: segment descriptors may be closed meanwhile
    index_writes: list[tuple[Path, int, bytes]] = field(default_factory=list)
    # (segment, offset index entries, time index entries) whose index files this flush makes durable
    finished_segments: list[tuple[LogSegment, int, int]] = field(default_factory=list)
    directory: Path | None = None
    rolls: int = 0  # the log's roll count when planned (the directory fsync covers those)

    def run(self) -> None:
        """fdatasync the logs, write and fsync finished segments' indexes, fsync the directory."""
        for path in self.log_paths:
            _fdatasync_path(path)
        for path, position, data in self.index_writes:
            write_index_file(path, position, data, fsync=True)
        if self.directory is not None:
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def complete(self) -> None:
        for segment, offset_entries, time_entries in self.finished_segments:
            segment.offset_index.mark_written(offset_entries)
            segment.time_index.mark_written(time_entries)
            segment.indexes_durable = True


class FlushOpenError(KafkaStorageError):
    """A file to flush could not be opened (no descriptor left): this flush fails, the log stays online."""


def _fdatasync_path(path: Path) -> None:
    """fdatasync a segment's .log file through a descriptor of its own (it syncs the file,
    whichever descriptor wrote it); one renamed for deletion meanwhile needs no sync."""
    for candidate in (path, path.with_name(path.name + DELETED_SUFFIX)):
        try:
            fd = os.open(candidate, os.O_RDONLY)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise FlushOpenError(f"{path}: cannot open to flush: {error}") from error
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
        return


def plan_flush(
    segments: list[LogSegment], bases: list[int], recovery_point: int, target: int, directory: Path | None
) -> FlushPlan:
    """The work to make [recovery_point, target) durable; finished segments also get their indexes.

    Starts at the segment holding the recovery point, or before it at the finished
    segments whose index files are not durable yet (usually just the one rolled last).
    """
    plan = FlushPlan(target, directory=directory)
    active = segments[-1]
    start = max(0, bisect_right(bases, recovery_point) - 1)
    while start > 0 and not segments[start - 1].indexes_durable:
        start -= 1
    for segment in segments[start:]:
        if segment.base_offset >= target and segment is not active:
            break
        plan.log_paths.append(segment.log_path)
        if segment is not active and not segment.indexes_durable:
            segment.ensure_indexes()
            for index in (segment.offset_index, segment.time_index):
                plan.index_writes.append((index.path, 0, index.encode_all()))
            plan.finished_segments.append((segment, len(segment.offset_index), len(segment.time_index)))
    return plan


class GroupCommit:
    """Serialises fsyncs of one partition log and lets concurrent waiters share them."""

    def __init__(
        self,
        plan: Callable[[], FlushPlan],
        on_durable: Callable[[FlushPlan], None],
        durable_offset: Callable[[], int],
        executor: Executor | None,
        on_failed: Callable[[Exception], None],
    ) -> None:
        self._plan = plan
        self._on_durable = on_durable
        self._on_failed = on_failed
        self._durable_offset = durable_offset
        self._executor = executor
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> bool:
        return self._task is not None

    async def flush(self, offset: int) -> None:
        """Return when everything below `offset` is durable; raise KafkaStorageError if an fsync fails."""
        while self._durable_offset() < offset:
            task = self._task
            if task is None:
                task = self._task = asyncio.get_running_loop().create_task(self._run())
            await asyncio.shield(task)

    def flush_in_background(self, offset: int) -> None:
        """Start a flush up to `offset` without waiting (roll, flush.messages); errors are logged."""
        task = asyncio.get_running_loop().create_task(self.flush(offset))
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background_flush_failed", error=str(task.exception()))

    async def _run(self) -> None:
        try:
            plan = self._plan()
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, plan.run)
            except OSError as error:
                self._on_failed(error)
                raise KafkaStorageError(f"fsync failed: {error}") from error
            self._on_durable(plan)
        finally:
            self._task = None

    def flush_now(self) -> None:
        """Flush in the calling thread (no event loop: startup, shutdown, tests)."""
        if self._task is not None:
            raise RuntimeError("an asynchronous flush is in flight; await it first")
        plan = self._plan()
        try:
            plan.run()
        except OSError as error:
            self._on_failed(error)
            raise KafkaStorageError(f"fsync failed: {error}") from error
        self._on_durable(plan)

    async def idle(self) -> None:
        """Wait for the flush in flight and the background ones, if any."""
        while self._task is not None or self._background:
            pending = [t for t in (self._task, *self._background) if t is not None]
            await asyncio.wait(pending)
