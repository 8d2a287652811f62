"""LogManager: the data directories (log.dirs), their topics and partition logs, and their periodic duties.

Each data directory (`log.dirs`; the first is `data_dir`) holds its own partitions and checkpoints:

    <dir>/.kafka_cleanshutdown              written by an orderly stop, removed at start
    <dir>/recovery-point-offset-checkpoint  "topic partition offset" lines (checkpoint.py), its partitions only
    <dir>/log-start-offset-checkpoint
    <dir>/replication-offset-checkpoint     high watermarks (a single replica's is its log end offset)
    <dir>/<topic>-<partition>/              segments + partition.metadata
    <dir>/<topic>-<partition>.<id>-delete/  a deleted partition, removed at next start

and the first one also the topics:

    <data-dir>/topics.d/<topic>.json        topic id, partition count, config overrides

A new partition goes to the directory holding the fewest partitions (the first of those on a tie), as
Kafka places them. A partition found in two directories stops the start-up (DuplicateLogDirectoryError):
which copy is right is for an operator to say, as in Kafka.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from kbroker.clock import REAL_CLOCK, Clock
from kbroker.log.checkpoint import MAX_FILE_NAME, fsync_directory, read_checkpoint, write_atomically, write_checkpoint
from kbroker.log.config import LogConfig
from kbroker.log.errors import (
    InvalidConfigError,
    KafkaStorageError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kbroker.log.files import OpenFiles
from kbroker.log.metadata import (
    TOPICS_DIR,
    TopicMetadata,
    partition_metadata_intact,
    topic_file,
    validate_topic_name,
    write_partition_metadata,
    write_topic,
)
from kbroker.log.producer_state_config import ProducerStateConfig

# The partition classes (segments, indexes, producer state, validation, compression) load with the first
# partition loaded or created, not with the manager: a broker on an empty data directory starts without them.
if TYPE_CHECKING:
    from kbroker.log.partition_log import PartitionLog
    from kbroker.log.unified_log import AppendListener, UnifiedLog

log = structlog.get_logger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"  # high watermarks, as Kafka's
DELETE_SUFFIX = "-delete"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_DELETED_DIR = re.compile(r"^(.+)-(\d+)\.[0-9a-f]{32}-delete$")

TopicPartition = tuple[str, int]


class DuplicateLogDirectoryError(Exception):
    """One partition has a directory in two data directories: the broker refuses to start."""


class LogManager:
    """Owns every partition log under one data directory."""

    def __init__(
        self,
        data_dir: Path | str,
        default_config: LogConfig | None = None,
        *,
        log_dirs: Sequence[Path | str] | None = None,
        executor: Executor | None = None,
        flush_threads: int = 4,
        retention_check_interval_ms: int = 300_000,
        checkpoint_interval_ms: int = 60_000,
        flush_check_interval_ms: int = 1_000,
        producer_state: ProducerStateConfig | None = None,
        open_files: OpenFiles | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.data_dir = Path(data_dir)
        # every data directory, data_dir first (it also keeps topics.d)
        self.log_dirs = list(dict.fromkeys([self.data_dir, *(Path(d) for d in log_dirs or ())]))
        self.clock = clock  # what the periodic duties read and sleep on (retention; a test's virtual clock)
        # a bound on open segment descriptors, from RLIMIT_NOFILE (see files.py)
        self.open_files = open_files if open_files is not None else OpenFiles.for_process()
        self.default_config = default_config or LogConfig()
        self._own_executor = executor is None
        self.executor: Executor = executor or ThreadPoolExecutor(flush_threads, thread_name_prefix="kbroker-fsync")
        self.retention_check_interval_ms = retention_check_interval_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.flush_check_interval_ms = flush_check_interval_ms
        self.producer_state_config = producer_state or ProducerStateConfig()
        # every partition's on_append event (UnifiedLog): listeners(log, info, size) subscribe here once
        self.on_append: list[AppendListener] = []
        self.had_clean_shutdown = False
        self.checkpointed_high_watermarks: dict[TopicPartition, int] = {}
        self.fresh_directory = False  # nothing was ever stored here: no recovery to speak of
        self._topics: dict[str, TopicMetadata] = {}
        self._configs: dict[str, LogConfig] = {}
        self._logs: dict[TopicPartition, UnifiedLog] = {}
        self._retired: list[tuple[int, PartitionLog, Path]] = []  # deleted topics' logs: close after, moved to
        self.offline_partitions: dict[TopicPartition, str] = {}  # could not be loaded: KAFKA_STORAGE_ERROR
        self._offline_dirs: dict[TopicPartition, Path] = {}  # where each offline partition lies
        # partitions per data directory, kept as they come and go: placing a new partition must not
        # count every partition again (that made creating 10,000 partitions quadratic)
        self._placed: Counter[Path] = Counter({d: 0 for d in self.log_dirs})

    # -- startup and shutdown ------------------------------------------
    def startup(self) -> None:
        """Load every topic and partition; recover them when the last stop was not clean."""
        started = time.perf_counter()
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
        clean = {d: (d / CLEAN_SHUTDOWN_FILE).exists() for d in self.log_dirs}
        self.had_clean_shutdown = all(clean.values())
        # Every stop, and every start that loads something, writes the recovery-point checkpoints: with neither
        # they nor anything to load (below), nothing was ever stored here.
        never_checkpointed = not any(clean.values()) and not any(
            (d / RECOVERY_POINT_CHECKPOINT).exists() for d in self.log_dirs
        )
        # the high watermarks at the last checkpoint: where a replicated partition starts again
        self.checkpointed_high_watermarks = {}
        for directory in self.log_dirs:
            self.checkpointed_high_watermarks.update(read_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT))
        deleting = self._remove_deleted_dirs()
        self._load_topics(deleting)
        found = self._find_partition_dirs()
        for directory in self.log_dirs:
            recovery_points = read_checkpoint(directory / RECOVERY_POINT_CHECKPOINT)
            start_offsets = read_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT)
            for tp, partition_dir in found.items():
                if partition_dir.parent != directory:
                    continue
                try:
                    self._load_partition(
                        partition_dir, tp, recovery_points.get(tp, 0), start_offsets.get(tp, 0), clean[directory]
                    )
                except KafkaStorageError as error:
                    log.error("partition_offline", topic=tp[0], partition=tp[1], error=str(error))
                    self.offline_partitions[tp] = str(error)
                    self._offline_dirs[tp] = directory
                    self._placed[directory] += 1
        for metadata in list(self._topics.values()):
            for partition in range(metadata.partitions):
                tp = (metadata.name, partition)
                if tp not in self._logs and tp not in self.offline_partitions:
                    self._create_partition(metadata, partition)
        for directory, was_clean in clean.items():
            if was_clean:
                (directory / CLEAN_SHUTDOWN_FILE).unlink()
                fsync_directory(directory)
        self.fresh_directory = (
            never_checkpointed and not self._topics and not self._logs and not self.offline_partitions
        )
        if not self.fresh_directory:  # a fresh directory's would be empty: no fsyncs for them (start-up time)
            self.write_checkpoints()
        log.info(
            "log_manager_started",
            data_dir=str(self.data_dir),
            **({"log_dirs": len(self.log_dirs)} if len(self.log_dirs) > 1 else {}),
            **({"fresh_directory": True} if self.fresh_directory else {"clean_shutdown": self.had_clean_shutdown}),
            topics=len(self._topics),
            partitions=len(self._logs),
            producer_state_batches_scanned=self._producer_state_batches_scanned(),
            **self._recovery_summary(),
            open_segment_files=len(self.open_files),
            open_segment_files_bound=self.open_files.capacity,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def _recovery_summary(self) -> dict[str, int]:
        """Totals of every partition's load: the start-up line stands for one line per partition."""
        loads = [unified.local.recovery for unified in self._logs.values()]
        return {
            "offline_partitions": len(self.offline_partitions),
            "bytes": sum(u.local.size_in_bytes for u in self._logs.values()),
            "partitions_recovered": sum(1 for r in loads if r.segments_scanned),
            "bytes_recovered": sum(r.bytes_scanned for r in loads),
            "bytes_truncated": sum(r.bytes_truncated for r in loads),
            "segments_deleted": sum(r.segments_deleted for r in loads),
        }

    def _producer_state_batches_scanned(self) -> int:
        return sum(u.last_load.batches_scanned for u in self._logs.values() if u.last_load is not None)

    def _open_partition(
        self,
        directory: Path,
        config: LogConfig,
        *,
        start: int = 0,
        recovery_point: int = 0,
        clean_shutdown: bool = False,
    ) -> UnifiedLog:
        """The partition in `directory`, loaded (recovered if need be) or created empty."""
        from kbroker.log.partition_log import PartitionLog  # late: see the imports
        from kbroker.log.unified_log import UnifiedLog

        local = PartitionLog.open(
            directory,
            config,
            log_start_offset=start,
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
            executor=self.executor,
            files=self.open_files,
        )
        return UnifiedLog(local, self.producer_state_config, self.on_append)

    def _find_partition_dirs(self) -> dict[TopicPartition, Path]:
        """Every partition directory of every data directory; one partition in two stops the start."""
        found: dict[TopicPartition, Path] = {}
        for log_dir in self.log_dirs:
            for directory in sorted(log_dir.iterdir()):
                match = _PARTITION_DIR.match(directory.name)
                if not (match and directory.is_dir()):
                    continue
                tp = (match.group(1), int(match.group(2)))
                if tp in found:
                    raise DuplicateLogDirectoryError(
                        f"partition {tp[0]}-{tp[1]} has a directory in two data directories, {found[tp].parent} "
                        f"and {log_dir}: remove the copy that should not be there (the one on the volume that "
                        "failed or was restored last) and start again"
                    )
                found[tp] = directory
        return found

    def _remove_deleted_dirs(self) -> set[str]:
        topics = set()
        for log_dir in self.log_dirs:
            for directory in log_dir.iterdir():
                match = _DELETED_DIR.match(directory.name)
                if match:
                    topics.add(match.group(1))
                    shutil.rmtree(directory, ignore_errors=True)
        return topics

    def log_dir_of(self, tp: TopicPartition) -> Path | None:
        """The data directory holding the partition (None: no such partition)."""
        unified = self._logs.get(tp)
        if unified is not None:
            return unified.local.directory.parent
        return self._offline_dirs.get(tp)

    def partition_counts(self) -> dict[Path, int]:
        """How many partitions each data directory holds (offline ones included)."""
        return dict(self._placed)

    def _next_log_dir(self) -> Path:
        """Where a new partition goes: the directory with the fewest partitions, the first on a tie."""
        return min(self.log_dirs, key=lambda d: self._placed[d])

    def _load_topics(self, deleting: set[str]) -> None:
        topics_dir = self.data_dir / TOPICS_DIR
        topics_dir.mkdir(exist_ok=True)
        for path in topics_dir.iterdir():
            if path.suffix != ".json":
                path.unlink(missing_ok=True)  # a temp file from an interrupted write
                continue
            try:
                metadata = TopicMetadata.from_json(path.read_bytes())
                config = LogConfig.from_properties(metadata.configs, self.default_config)
            except (ValueError, KeyError, InvalidConfigError) as error:
                log.error("topic_metadata_unreadable", path=str(path), error=str(error))
                continue
            partition_dirs = [d / f"{metadata.name}-{p}" for d in self.log_dirs for p in range(metadata.partitions)]
            if metadata.name in deleting and not any(d.exists() for d in partition_dirs):
                path.unlink()  # a deletion interrupted after its directories were renamed
                continue
            self._topics[metadata.name] = metadata
            self._configs[metadata.name] = config

    def _load_partition(
        self, directory: Path, tp: TopicPartition, recovery_point: int, start: int, clean_shutdown: bool
    ) -> None:
        topic, partition = tp
        metadata = self._topics.get(topic)
        if metadata is None:
            log.warning("partition_without_topic_metadata", directory=str(directory))
            metadata = TopicMetadata(topic, uuid.uuid4(), partition + 1)
            self._topics[topic] = metadata
            self._configs[topic] = self.default_config
            write_topic(self.data_dir, metadata)
        elif partition >= metadata.partitions:
            metadata.partitions = partition + 1
            write_topic(self.data_dir, metadata)
        if not clean_shutdown and not partition_metadata_intact(directory, metadata.topic_id):
            write_partition_metadata(directory, metadata.topic_id)
        self._logs[tp] = self._open_partition(
            directory, self._configs[topic], start=start, recovery_point=recovery_point, clean_shutdown=clean_shutdown
        )
        self._placed[directory.parent] += 1

    async def shutdown(self) -> None:
        """Orderly stop: snapshot producer states, flush every log, write checkpoints, then the
        clean-shutdown marker."""
        for unified in self._logs.values():
            unified.take_snapshot()  # a clean restart then rebuilds producer state without scanning
        logs = [unified.local for unified in self._logs.values()]
        results = await asyncio.gather(*(p.shutdown() for p in logs), return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        if failures:  # no clean-shutdown marker: the next start recovers
            log.error("log_manager_shutdown_failed", errors=[str(f) for f in failures])
            raise failures[0]
        for _, partition_log, _ in self._retired:
            await partition_log.idle()
        self.write_checkpoints()
        for directory in self.log_dirs:
            write_atomically(directory / CLEAN_SHUTDOWN_FILE, b"")
        self._close_retired(force=True)
        if self._own_executor:
            self.executor.shutdown(wait=True)
        log.info("log_manager_stopped", data_dir=str(self.data_dir), partitions=len(self._logs))

    def abort(self) -> None:
        """Close every file without flushing or marking a clean stop: the next start recovers."""
        for unified in self._logs.values():
            unified.local.release_files()
        self._close_retired(force=True)
        if self._own_executor:
            self.executor.shutdown(wait=True)

    # -- topics --------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int,
        *,
        configs: Mapping[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> TopicMetadata:
        """Create a topic and its partition directories (metadata first, so a crash never loses it)."""
        validate_topic_name(name)
        if name in self._topics:
            raise TopicExistsError(f"topic {name!r} already exists")
        if partitions < 1:
            raise InvalidConfigError(f"partition count {partitions} must be at least 1")
        overrides = {str(k): str(v) for k, v in (configs or {}).items()}
        config = LogConfig.from_properties(overrides, self.default_config)
        metadata = TopicMetadata(name, topic_id or uuid.uuid4(), partitions, overrides)
        write_topic(self.data_dir, metadata)
        self._topics[name] = metadata
        self._configs[name] = config
        for partition in range(partitions):
            self._create_partition(metadata, partition)
        self._fsync_log_dirs()
        log.info("topic_created", topic=name, topic_id=str(metadata.topic_id), partitions=partitions)
        return metadata

    def _create_partition(self, metadata: TopicMetadata, partition: int) -> PartitionLog:
        for log_dir in self.log_dirs:  # a leftover in any directory: topics are created empty
            shutil.rmtree(log_dir / f"{metadata.name}-{partition}", ignore_errors=True)
        directory = self._next_log_dir() / f"{metadata.name}-{partition}"
        directory.mkdir()
        write_partition_metadata(directory, metadata.topic_id)
        unified = self._open_partition(directory, self._configs[metadata.name])
        self._logs[(metadata.name, partition)] = unified
        self._placed[directory.parent] += 1
        return unified.local

    def create_partitions(self, name: str, total: int) -> TopicMetadata:
        """CreatePartitions: grow the topic to `total` partitions."""
        metadata = self._require_topic(name)
        if total <= metadata.partitions:
            raise InvalidConfigError(f"topic {name!r} already has {metadata.partitions} partitions")
        old = metadata.partitions
        metadata.partitions = total
        write_topic(self.data_dir, metadata)
        for partition in range(old, total):
            self._create_partition(metadata, partition)
        self._fsync_log_dirs()
        return metadata

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        """Replace the topic's config overrides (validated first) and apply them to its logs."""
        metadata = self._require_topic(name)
        overrides = {str(k): str(v) for k, v in configs.items()}
        config = LogConfig.from_properties(overrides, self.default_config)
        metadata.configs = overrides
        write_topic(self.data_dir, metadata)
        self._configs[name] = config
        for (topic, _), unified in self._logs.items():
            if topic == name:
                unified.local.update_config(config)
        return metadata

    def set_default_config(self, config: LogConfig) -> None:
        """New broker-level topic defaults (dynamic broker configs): every topic's config is derived
        again from its overrides and applied to its running logs at once."""
        self.default_config = config
        for name in self._configs:
            metadata = self._topics.get(name)
            self._configs[name] = LogConfig.from_properties(metadata.configs if metadata else {}, config)
        for (topic, _), unified in self._logs.items():
            unified.local.update_config(self._configs[topic])

    def delete_topic(self, name: str) -> None:
        """Rename the partition directories to *-delete (readers keep their files for
        file.delete.delay.ms), then remove the metadata."""
        metadata = self._require_topic(name)
        delay = self._configs[name].file_delete_delay_ms
        for partition in range(metadata.partitions):
            unified = self._logs.pop((name, partition), None)
            if unified is None:
                continue
            self._placed[unified.local.directory.parent] -= 1
            unified.mark_deleted()  # its state goes, and it writes nothing into the (renamed) directory
            partition_log = unified.local
            suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_SUFFIX}"
            # in its own data directory; long names cut, as Kafka does
            target = partition_log.directory.parent / (name[: MAX_FILE_NAME - len(suffix)] + suffix)
            partition_log.directory.rename(target)
            self._retired.append((REAL_CLOCK.wall_ms() + delay, partition_log, target))
        self._fsync_log_dirs()
        topic_file(self.data_dir, name).unlink()
        fsync_directory(self.data_dir / TOPICS_DIR)
        del self._topics[name]
        del self._configs[name]
        log.info("topic_deleted", topic=name, topic_id=str(metadata.topic_id))

    def _close_retired(self, force: bool = False, now: int | None = None) -> None:
        now = REAL_CLOCK.wall_ms() if now is None else now
        keep = []
        for deadline, partition_log, moved_to in self._retired:
            if force or (deadline <= now and not partition_log.flush_in_flight):
                partition_log.release_files()
                shutil.rmtree(moved_to, ignore_errors=True)
            else:
                keep.append((deadline, partition_log, moved_to))
        self._retired = keep

    def _fsync_log_dirs(self) -> None:
        for directory in self.log_dirs:
            fsync_directory(directory)

    def _require_topic(self, name: str) -> TopicMetadata:
        metadata = self._topics.get(name)
        if metadata is None:
            raise UnknownTopicOrPartitionError(name)
        return metadata

    # -- lookups -------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        """The partition's local log (segments, reads, retention): append through get_partition."""
        unified = self._logs.get((topic, partition))
        return unified.local if unified is not None else None

    def get_partition(self, topic: str, partition: int) -> UnifiedLog | None:
        """The partition every writer appends through (producer state, transaction index, on_append)."""
        return self._logs.get((topic, partition))

    def partitions(self) -> Iterator[tuple[TopicPartition, UnifiedLog]]:
        return iter(list(self._logs.items()))

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def topics(self) -> dict[str, TopicMetadata]:
        return dict(self._topics)

    def topic_config(self, name: str) -> LogConfig:
        self._require_topic(name)
        return self._configs[name]

    def logs(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter([(tp, unified.local) for tp, unified in self._logs.items()])

    # -- periodic duties -----------------------------------------------
    def run_retention(self, now: int | None = None) -> int:
        """One retention pass over every log; return the bytes released."""
        released = 0
        for tp, partition_log in self.logs():
            try:
                released += partition_log.delete_old_segments(now)
            except KafkaStorageError as error:
                log.error("retention_failed", topic=tp[0], partition=tp[1], error=str(error))
        return released

    def purge_deleted(self, now: int | None = None) -> None:
        """Remove files deleted more than file.delete.delay.ms ago."""
        for _, partition_log in self.logs():
            partition_log.purge_deleted_segments(now)
        self._close_retired(now=now)

    async def flush_due(self, now: int | None = None) -> None:
        """flush.ms: flush the logs whose oldest unflushed data is that old."""
        now = REAL_CLOCK.wall_ms() if now is None else now
        due = [
            partition_log.flush()
            for _, partition_log in self.logs()
            if partition_log.unflushed_messages > 0
            and now - partition_log.last_flush_ms >= partition_log.config.flush_ms
        ]
        for result in await asyncio.gather(*due, return_exceptions=True):
            if isinstance(result, Exception):
                log.error("flush_failed", error=str(result))

    def tick_producer_states(self) -> None:
        """Snapshot the producer state of partitions that moved on; expire idle producers where due."""
        for _, unified in self.partitions():
            unified.tick()

    def checkpoint_offsets(self) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(recovery points, log start offsets) of every log, as the checkpoints will hold them."""
        points = {tp: partition_log.recovery_point for tp, partition_log in self.logs()}
        starts = {tp: partition_log.log_start_offset for tp, partition_log in self.logs()}
        return points, starts

    def write_checkpoints(self, offsets: tuple[dict, dict] | None = None) -> None:
        """Each data directory's checkpoints, of the partitions it holds."""
        points, starts = offsets or self.checkpoint_offsets()
        high_watermarks = {tp: partition_log.high_watermark for tp, partition_log in self.logs()}
        for directory in self.log_dirs:
            mine = {tp for tp in points if self.log_dir_of(tp) == directory}
            write_checkpoint(directory / RECOVERY_POINT_CHECKPOINT, {tp: points[tp] for tp in mine})
            write_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT, {tp: starts[tp] for tp in mine if tp in starts})
            write_checkpoint(
                directory / REPLICATION_OFFSET_CHECKPOINT,
                {tp: high_watermarks[tp] for tp in mine if tp in high_watermarks},
            )

    async def run(self) -> None:
        """The periodic duties until cancelled: flush.ms, retention, checkpoints, file deletion."""
        loop = asyncio.get_running_loop()
        clock = self.clock
        now = clock.wall_ms()
        next_retention = now + self.retention_check_interval_ms
        next_checkpoint = now + self.checkpoint_interval_ms
        next_snapshot = now + self.producer_state_config.snapshot_interval_ms
        while True:
            await clock.sleep(self.flush_check_interval_ms / 1000)
            now = clock.wall_ms()
            try:
                await self.flush_due(now)
                if now >= next_retention:
                    next_retention = now + self.retention_check_interval_ms
                    self.run_retention(now)
                self.purge_deleted(now)
                if now >= next_snapshot:
                    next_snapshot = now + self.producer_state_config.snapshot_interval_ms
                    self.tick_producer_states()
                if now >= next_checkpoint:
                    next_checkpoint = now + self.checkpoint_interval_ms
                    await loop.run_in_executor(self.executor, self.write_checkpoints, self.checkpoint_offsets())
            except (OSError, KafkaStorageError) as error:  # the duties go on; the next round retries
                log.error("log_manager_duty_failed", error=str(error))
