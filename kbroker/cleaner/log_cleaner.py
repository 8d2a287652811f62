"""The log cleaner's runtime (Kafka's LogCleaner and LogCleanerManager).

Every `log.cleaner.backoff.ms` while nothing is due, the event loop picks the compacted
partition with the largest dirty ratio above its `min.cleanable.dirty.ratio` (or one whose
dirty data is older than `max.compaction.lag.ms`), snapshots it into a `CleanJob` and hands
that to the cleaner thread; appends and fetches go on meanwhile (only segments below the
first uncleanable offset are read: never the active one, never at or past the last stable
offset, never younger than `min.compaction.lag.ms`). Back on the loop, each cleaned group is
swapped in if the partition still has those segments, and the partition's first dirty offset
is checkpointed in `<data-dir>/cleaner-offset-checkpoint`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.cleaner import cleaner_enabled
from kbroker.log.checkpoint import read_checkpoint, write_checkpoint
from kbroker.log.errors import KafkaStorageError
from kbroker.log.manager import LogManager, TopicPartition
from kbroker.log.partition_log import PartitionLog
from kbroker.log.producer_entry import NO_OFFSET
from kbroker.log.segment import now_ms
from kbroker.log.unified_log import UnifiedLog
from protocol.errors import InvalidRecordError
from protocol.records import HEADER

# The cleaning round itself (segments, record_filter, offset_map, throttle) loads at the first round, not at
# start-up: most brokers have no compacted topic, and start-up time matters.
if TYPE_CHECKING:
    from kbroker.cleaner.record_filter import LastRecord
    from kbroker.cleaner.segments import CleanJob, RoundResult

log = structlog.get_logger(__name__)

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The `log.cleaner.*` broker settings the cleaner acts on (Kafka's names and defaults)."""

    enable: bool = True
    io_max_bytes_per_second: float = 1.7976931348623157e308
    dedupe_buffer_size: int = 134217728
    io_buffer_load_factor: float = 0.9
    backoff_ms: int = 15000

    @classmethod
    def from_broker(cls, config: Any) -> CleanerConfig:
        return cls(
            enable=cleaner_enabled(config),
            io_max_bytes_per_second=config.get_float("log.cleaner.io.max.bytes.per.second"),
            dedupe_buffer_size=config.get_int("log.cleaner.dedupe.buffer.size"),
            io_buffer_load_factor=config.get_float("log.cleaner.io.buffer.load.factor"),
            backoff_ms=config.get_int("log.cleaner.backoff.ms"),
        )


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """A topic's compaction settings (topic names, broker defaults applied)."""

    compact: bool = True
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX

    @classmethod
    def from_topic_config(cls, values: Mapping[str, Any]) -> CompactionSettings:
        policy = values.get("cleanup.policy", ("delete",))
        policies = policy.split(",") if isinstance(policy, str) else list(policy)
        return cls(
            compact="compact" in [p.strip() for p in policies],
            delete_retention_ms=int(values.get("delete.retention.ms", 86400000)),
            min_cleanable_dirty_ratio=float(values.get("min.cleanable.dirty.ratio", 0.5)),
            min_compaction_lag_ms=int(values.get("min.compaction.lag.ms", 0)),
            max_compaction_lag_ms=int(values.get("max.compaction.lag.ms", LONG_MAX)),
        )


@dataclass(slots=True)
class LogToClean:
    tp: TopicPartition
    unified: UnifiedLog
    settings: CompactionSettings
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment's base offset
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


def _first_batch_timestamp(partition_log: PartitionLog, index: int) -> int:
    segment = partition_log.segments[index]
    if segment.size < HEADER.size:
        return -1
    return int(HEADER.unpack(segment.pread(0, HEADER.size))[8])


def _last_records(unified: UnifiedLog) -> dict[int, LastRecord]:
    """Each active producer's last data offset (None when it has only markers) and epoch."""
    from kbroker.cleaner.record_filter import LastRecord  # late: see the imports

    return {
        pid: LastRecord(None if entry.last_offset == NO_OFFSET else entry.last_offset, entry.producer_epoch)
        for pid, entry in unified.producer_state().producers.items()
    }


class LogCleaner:
    """Compacts the partitions of `cleanup.policy=compact` topics in one worker thread."""

    def __init__(
        self,
        logs: LogManager,
        config: CleanerConfig | None = None,
        *,
        topic_config: Callable[[str], Mapping[str, Any]],
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.logs = logs
        self.config = config or CleanerConfig()
        self.topic_config = topic_config
        self.clock = clock
        # one cleaner-offset-checkpoint per data directory, of the partitions it holds (as Kafka keeps it)
        self.checkpoints: dict[TopicPartition, int] = {}
        for directory in logs.log_dirs:
            self.checkpoints.update(read_checkpoint(directory / CHECKPOINT_FILE))
        # the partition each checkpoint was taken of: a topic deleted and created again starts dirty
        self._owners: dict[TopicPartition, UnifiedLog] = {}
        self._uncleanable: dict[TopicPartition, UnifiedLog] = {}  # a round failed on this partition object
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="kbroker-cleaner")
        self._stop = threading.Event()
        self.rounds = 0

    def _write_checkpoints(self, checkpoints: dict[TopicPartition, int]) -> None:
        """Each data directory's cleaner-offset-checkpoint, of its own partitions."""
        for directory in self.logs.log_dirs:
            mine = {tp: offset for tp, offset in checkpoints.items() if self.logs.log_dir_of(tp) == directory}
            write_checkpoint(directory / CHECKPOINT_FILE, mine)

    # -- choosing a log --------------------------------------------------------------
    def cleanable(
        self, tp: TopicPartition, unified: UnifiedLog, now: int, settings: CompactionSettings | None = None
    ) -> LogToClean | None:
        settings = settings or CompactionSettings.from_topic_config(self.topic_config(tp[0]))
        partition_log = unified.local
        if not settings.compact or partition_log.offline is not None or unified.deleted:
            return None
        segments = partition_log.segments
        if self._owners.setdefault(tp, unified) is not unified:
            self._owners[tp] = unified
            self.checkpoints.pop(tp, None)
        first_dirty = self.checkpoints.get(tp, partition_log.log_start_offset)
        if first_dirty < partition_log.log_start_offset or first_dirty > partition_log.log_end_offset:
            first_dirty = partition_log.log_start_offset
        uncleanable = min(unified.last_stable_offset(), segments[-1].base_offset)
        bases = [s.base_offset for s in segments]
        if settings.min_compaction_lag_ms > 0:
            for i, segment in enumerate(segments[:-1]):
                if bases[i + 1] > first_dirty and segment.largest_timestamp() > now - settings.min_compaction_lag_ms:
                    uncleanable = min(uncleanable, segment.base_offset)
                    break
        uncleanable = max(first_dirty, uncleanable)
        # the segment holding the first uncleanable offset starts the uncleanable part
        index = max(0, max((i for i, b in enumerate(bases) if b <= uncleanable), default=0))
        first_uncleanable = bases[index]
        clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
        start = min(first_dirty, first_uncleanable)
        cleanable_bytes = sum(
            s.size
            for i, s in enumerate(segments[:index])
            if (bases[i + 1] if i + 1 < len(bases) else partition_log.log_end_offset) > start
        )
        need_now = False
        if settings.max_compaction_lag_ms < LONG_MAX:
            for i in range(len(segments) - 1):
                if bases[i + 1] > first_dirty:
                    timestamp = _first_batch_timestamp(partition_log, i)
                    if 0 < timestamp < now - settings.max_compaction_lag_ms:
                        need_now = True
                        break
        return LogToClean(tp, unified, settings, first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, need_now)

    def grab_filthiest(self, now: int) -> LogToClean | None:
        best = None
        settings: dict[str, CompactionSettings] = {}  # each topic's, once a pass
        for tp, unified in self.logs.partitions():
            try:
                if tp[0] not in settings:
                    settings[tp[0]] = CompactionSettings.from_topic_config(self.topic_config(tp[0]))
                if not settings[tp[0]].compact or self._uncleanable.get(tp) is unified:
                    continue
                candidate = self.cleanable(tp, unified, now, settings[tp[0]])
            except (KafkaStorageError, OSError) as error:
                log.warning("cleaner_skipped_partition", topic=tp[0], partition=tp[1], error=str(error))
                continue
            if candidate is None or candidate.clean_bytes + candidate.cleanable_bytes == 0:
                continue
            due = (candidate.need_compaction_now and candidate.cleanable_bytes > 0) or (
                candidate.cleanable_ratio > candidate.settings.min_cleanable_dirty_ratio
            )
            if due and (best is None or candidate.cleanable_ratio > best.cleanable_ratio):
                best = candidate
        return best

    # -- one round -------------------------------------------------------------------
    def _job(self, candidate: LogToClean, now: int) -> CleanJob:
        from kbroker.cleaner.segments import CleanJob, SourceSegment  # late: see the imports

        unified = candidate.unified
        partition_log = unified.local
        segments = partition_log.segments
        sources = []
        first_dirty_position = 0
        for i, segment in enumerate(segments):
            if segment.base_offset >= candidate.first_uncleanable_offset or i + 1 >= len(segments):
                break
            next_base = segments[i + 1].base_offset
            if segment.base_offset <= candidate.first_dirty_offset < next_base:
                first_dirty_position = segment.position_of(candidate.first_dirty_offset)
            sources.append(SourceSegment(segment, os.dup(segment.fd), segment.base_offset, segment.size, next_base))
        config = partition_log.config
        return CleanJob(
            topic=partition_log.topic,
            partition=partition_log.partition,
            directory=partition_log.directory,
            segments=sources,
            first_dirty_offset=candidate.first_dirty_offset,
            first_dirty_position=first_dirty_position,
            first_uncleanable_offset=candidate.first_uncleanable_offset,
            aborted=unified.collect_aborted(segments[0].base_offset, candidate.first_uncleanable_offset),
            active_producers=_last_records(unified),
            now=now,
            delete_retention_ms=candidate.settings.delete_retention_ms,
            config=config,
        )

    def _run_job(self, job: CleanJob) -> RoundResult:
        from kbroker.cleaner.offset_map import OffsetMap  # late: see the imports
        from kbroker.cleaner.segments import clean_partition
        from kbroker.cleaner.throttle import Throttler

        try:
            throttler = Throttler(self.config.io_max_bytes_per_second, stop=self._stop)
            offset_map = OffsetMap(self.config.dedupe_buffer_size, self.config.io_buffer_load_factor)
            return clean_partition(job, offset_map, throttler)
        finally:
            job.close()

    async def clean_once(self, now: int | None = None) -> bool:
        """Clean the filthiest log if one is due; True when a round ran and swapped everything in."""
        now = self.clock() if now is None else now
        candidate = self.grab_filthiest(now)
        if candidate is None:
            return False
        tp, unified = candidate.tp, candidate.unified
        partition_log = unified.local
        started = time.perf_counter()
        from kbroker.cleaner.segments import CleaningAbortedError  # late: see the imports

        job = self._job(candidate, now)
        loop = asyncio.get_running_loop()
        try:
            result: RoundResult = await loop.run_in_executor(self._executor, self._run_job, job)
        except CleaningAbortedError as error:
            if self._stop.is_set():
                return False
            self._mark_uncleanable(tp, unified, str(error))
            return False
        except (OSError, KafkaStorageError, InvalidRecordError) as error:
            self._mark_uncleanable(tp, unified, str(error))
            return False
        swapped = self._swap_in(partition_log, result)
        if swapped == len(result.groups) and self.logs.get_partition(*tp) is unified:
            self.checkpoints[tp] = result.end_offset
            for gone in [key for key in self.checkpoints if self.logs.get_partition(*key) is None]:
                del self.checkpoints[gone]  # deleted topics leave the checkpoint file
                self._owners.pop(gone, None)
            await loop.run_in_executor(self._executor, self._write_checkpoints, dict(self.checkpoints))
        self.rounds += 1
        stats = result.stats
        log.info(
            "log_cleaned",
            topic=tp[0],
            partition=tp[1],
            first_dirty_offset=candidate.first_dirty_offset,
            end_offset=result.end_offset,
            dirty_ratio=round(candidate.cleanable_ratio, 3),
            groups=len(result.groups),
            swapped=swapped,
            messages_read=stats.messages_read,
            messages_written=stats.messages_written,
            bytes_read=stats.bytes_read,
            bytes_written=stats.bytes_written,
            keyless_dropped=stats.invalid_messages,
            map_full=result.map_full,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return swapped == len(result.groups)  # a swap refused: back off before the next try

    def _mark_uncleanable(self, tp: TopicPartition, unified: UnifiedLog, reason: str) -> None:
        """A round failed (unreadable batch, I/O error): leave the partition alone, as Kafka marks it
        uncleanable, until it is loaded again (a restart, or the topic created anew)."""
        self._uncleanable[tp] = unified
        log.error("cleaning_failed", topic=tp[0], partition=tp[1], error=reason, partition_now_uncleanable=True)

    def _swap_in(self, partition_log: PartitionLog, result: RoundResult) -> int:
        swapped = 0
        now = self.clock()
        for group in result.groups:
            replaced = None
            if swapped == result.groups.index(group) and not self._stop.is_set():
                try:
                    replaced = partition_log.replace_segments(group.swap, group.old, now, group.segment)
                except OSError as error:
                    log.error("cleaned_segment_swap_failed", directory=str(partition_log.directory), error=str(error))
            if replaced is None:
                group.segment.close()
                group.swap.unlink(missing_ok=True)  # the partition changed meanwhile: the next round redoes it
                continue
            swapped += 1
        return swapped

    # -- lifecycle -------------------------------------------------------------------
    async def run(self) -> None:
        """Clean due logs until cancelled; sleep `log.cleaner.backoff.ms` when none is due."""
        while True:
            try:
                cleaned = await self.clean_once()
            except (OSError, KafkaStorageError) as error:
                log.error("log_cleaner_round_failed", error=str(error))
                cleaned = False
            if not cleaned:
                await asyncio.sleep(self.config.backoff_ms / 1000)

    async def shutdown(self) -> None:
        """Stop a round in progress (its `.cleaned` file goes) and the thread."""
        self._stop.set()
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown, True)
