"""kbroker's storage engine: a segmented log per partition, knowing nothing of sockets.

Layers (one noun each, as in Kafka's storage module):
  LogSegment (segment.py)     one .log file + sparse .index and .timeindex (index.py); its descriptor
                              under the broker-wide bound on open files (OpenFiles, files.py)
  load_segments (loader.py)   startup: open segments, recover after an unclean stop
  PartitionLog                offsets, append, read, timestamps, retention, group commit (flush.py)
  UnifiedLog (unified_log.py) the partition every writer appends through: producer state (producer_state.py,
                              snapshots), aborted-transaction index (txn_index.py), one on_append event
  LogManager                  data dir, topic metadata, checkpoints, clean-shutdown marker, periodic duties

Public API (all on the event loop thread; only fsyncs run in the manager's executor):

  LogConfig(...)                                   Kafka topic settings, see config.py
  LogConfig.from_properties({"retention.ms": "60000"}, base=None) -> LogConfig   (InvalidConfigError)
  to_properties(config) -> dict[str, str]

  LogManager(data_dir, default_config=None, *, log_dirs=None, executor=None, flush_threads=4,
             retention_check_interval_ms=300_000, checkpoint_interval_ms=60_000, flush_check_interval_ms=1_000,
             open_files=None)          log_dirs: every data directory (data_dir first; default just data_dir)
    .startup() -> None                  load + recover; .had_clean_shutdown tells which;
                                        .offline_partitions: {(topic, partition): reason} that failed to load;
                                        DuplicateLogDirectoryError: a partition in two data directories
    .log_dir_of(tp) -> Path | None      the data directory holding a partition; .partition_counts() per directory
    await .shutdown() -> None           flush all, checkpoints, clean-shutdown marker
    .abort() -> None                    close without flush or marker (next start recovers)
    .create_topic(name, partitions, *, configs=None, topic_id=None) -> TopicMetadata
    .create_partitions(name, total) -> TopicMetadata
    .set_topic_configs(name, configs) -> TopicMetadata     replaces the override set
    .delete_topic(name) -> None
    .get_log(topic, partition) -> PartitionLog | None          the local log: reads, retention (tools, tests)
    .get_partition(topic, partition) -> UnifiedLog | None      appends go through this
    .on_append: list of (UnifiedLog, AppendInfo, size) -> None  every partition's append event (fetch waiters)
    .topic(name) -> TopicMetadata | None;  .topics() -> dict[str, TopicMetadata];  .topic_config(name) -> LogConfig
    .logs() -> Iterator[((topic, partition), PartitionLog)]
    await .run() -> None                periodic duties until cancelled (flush.ms, retention, checkpoints, deletes)
    .run_retention(now=None) -> int;  await .flush_due(now=None);  .write_checkpoints()

  PartitionLog.open(directory, config=None, *, log_start_offset=0, recovery_point=0, clean_shutdown=False,
                    executor=None, files=None) -> PartitionLog
    .append(buffer: bytearray | memoryview (writable), *, leader_epoch=0, now=None, assign_offsets=True)
        -> AppendInfo: rewrites base offset / leader epoch (and LogAppendTime) in place; data is in the file
        on return; assign_offsets=False (a follower) keeps the batches' offsets, rising from the log end
    await .wait_for_ack(info, acks) -> None      fsync first when fsync_before_ack (acks=-1) or flush.messages
    await .flush(offset=None) -> None            group commit, off the event loop
    .read(fetch_offset, max_bytes, *, max_offset=None, min_one_batch=True, to_log_end=False) -> LogReadResult
        bounded by the high watermark (to_log_end: the log end offset, a follower's fetch)
        .region: FileRegion(fd, position, size, data=None) | None -> os.sendfile(sock, fd, position, size)
                 or .read(); fd valid until the loop's next iteration; .data: the bytes already (send those)
        offsets need not be dense: a fetch_offset inside a gap starts at the next batch
    .fetch_offset_by_timestamp(ts) -> TimestampAndOffset | None   ts >= 0, or LATEST/EARLIEST/MAX_TIMESTAMP
    .delete_records(offset) -> int               new log start offset (-1: the high watermark)
    .batches(start_offset=None) -> Iterator[RecordBatch]   whole-log walk for state rebuilds (not fetches)
    .delete_old_segments(now=None) -> int;  .roll() -> LogSegment;  .truncate_to(offset) -> bool
    .start_replication(high_watermark=None);  .update_high_watermark(offset, only_forward=True) -> bool;
    .stop_replication()                          high watermark apart from the log end (else HW = LEO)
    .log_start_offset, .log_end_offset, .high_watermark, .recovery_point, .size_in_bytes
    .offline: str | None                         set after a failed fsync: appends raise LogOfflineError
    await .shutdown();  .close()

  UnifiedLog(local, producer_config=None, on_append=None)
    .append_as_leader(records, origin=AppendOrigin.CLIENT) -> AppendInfo   RecordBatch (CLIENT) or buffer;
        a CLIENT batch's records are validated first (validator.py: RecordValidationError, with Kafka's code)
    .append_as_follower(buffer) -> AppendInfo    batches carrying offsets and leader epochs (gaps kept)
    .truncate_to(offset) -> bool                 a diverged follower: log, epochs, producer state, index
    .leader_epochs: LeaderEpochCache;  .end_offset_for_epoch(epoch, current_epoch=-1) -> (epoch, offset)
    .producer_state() -> ProducerStateManager;  .last_stable_offset();  .collect_aborted(fetch, upper)
    .read(...), .wait_for_ack(...), .log_start_offset, .log_end_offset, .high_watermark, .config, .local

Errors (errors.py): KafkaStorageError and its LogOfflineError (-> KAFKA_STORAGE_ERROR), OffsetOutOfRangeError
(-> OFFSET_OUT_OF_RANGE), RecordTooLargeError (-> MESSAGE_TOO_LARGE), InvalidConfigError (-> INVALID_CONFIG),
InvalidTopicError, TopicExistsError, UnknownTopicOrPartitionError; a malformed append buffer raises
protocol.errors.InvalidRecordError (-> CORRUPT_MESSAGE); validator.RecordValidationError carries its own code
(INVALID_RECORD, INVALID_TIMESTAMP, UNKNOWN_SERVER_ERROR) and the per-record errors.
"""

from typing import TYPE_CHECKING

from kbroker.lazy_names import lazy_names
from kbroker.log.config import LogConfig, to_properties
from kbroker.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    KafkaStorageError,
    LogError,
    LogOfflineError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kbroker.log.manager import LogManager
from kbroker.log.metadata import TopicMetadata
from kbroker.log.producer_state_config import ProducerStateConfig

if TYPE_CHECKING:
    from kbroker.log.partition_log import (
        EARLIEST_TIMESTAMP,
        LATEST_TIMESTAMP,
        MAX_TIMESTAMP,
        AppendInfo,
        FileRegion,
        LogReadResult,
        PartitionLog,
    )
    from kbroker.log.unified_log import AppendOrigin, UnifiedLog

# The partition classes load at the first use of one of these names (a partition loaded or created imports
# them too), not with the package: a broker on an empty data directory starts without them (start-up time).
_PARTITION_NAMES = {
    "EARLIEST_TIMESTAMP": "kbroker.log.partition_log",
    "LATEST_TIMESTAMP": "kbroker.log.partition_log",
    "MAX_TIMESTAMP": "kbroker.log.partition_log",
    "AppendInfo": "kbroker.log.partition_log",
    "FileRegion": "kbroker.log.partition_log",
    "LogReadResult": "kbroker.log.partition_log",
    "PartitionLog": "kbroker.log.partition_log",
    "AppendOrigin": "kbroker.log.unified_log",
    "UnifiedLog": "kbroker.log.unified_log",
}


__getattr__ = lazy_names(globals(), _PARTITION_NAMES)


__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "AppendOrigin",
    "FileRegion",
    "InvalidConfigError",
    "InvalidTopicError",
    "KafkaStorageError",
    "LogConfig",
    "LogError",
    "LogOfflineError",
    "LogManager",
    "LogReadResult",
    "NotCoordinatorError",
    "NotEnoughReplicasError",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "ProducerStateConfig",
    "RecordTooLargeError",
    "TopicExistsError",
    "TopicMetadata",
    "UnifiedLog",
    "UnknownTopicOrPartitionError",
    "to_properties",
]
