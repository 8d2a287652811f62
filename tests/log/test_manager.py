import asyncio
import errno
import json
import os
import shutil
import uuid

import pytest

from kbroker.log.checkpoint import read_checkpoint
from kbroker.log.config import LogConfig
from kbroker.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    KafkaStorageError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kbroker.log.manager import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LogManager,
)
from tests.log.batches import make_batch


def started(data_dir, **kwargs):
    manager = LogManager(data_dir, **kwargs)
    manager.startup()
    return manager


def stop(manager):
    asyncio.run(manager.shutdown())


def test_create_append_clean_restart(tmp_path):
    manager = started(tmp_path)
    assert not manager.had_clean_shutdown
    topic_id = uuid.uuid4()
    metadata = manager.create_topic("orders", 3, configs={"retention.ms": "1000"}, topic_id=topic_id)
    assert metadata.topic_id == topic_id and metadata.partitions == 3
    assert manager.topic_config("orders").retention_ms == 1000
    manager.get_log("orders", 1).append(make_batch(4))
    manager.get_log("orders", 1).delete_records(2)
    stop(manager)
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert (tmp_path / RECOVERY_POINT_CHECKPOINT).read_text().splitlines() == [
        "0",
        "3",
        "orders 0 0",
        "orders 1 4",
        "orders 2 0",
    ]
    document = json.loads((tmp_path / "topics.d" / "orders.json").read_text())
    assert document["topic_id"] == str(topic_id) and document["configs"] == {"retention.ms": "1000"}
    assert f"topic_id: {topic_id}" in (tmp_path / "orders-1" / "partition.metadata").read_text()

    manager = started(tmp_path)
    assert manager.had_clean_shutdown and not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    log = manager.get_log("orders", 1)
    assert (log.log_start_offset, log.log_end_offset, log.recovery.segments_scanned) == (2, 4, 0)
    assert manager.topic("orders").topic_id == topic_id
    assert manager.topic_config("orders").retention_ms == 1000
    stop(manager)


def test_unclean_restart_recovers(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 1)
    for _ in range(5):
        manager.get_log("t", 0).append(make_batch(2))
    manager.abort()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    manager = started(tmp_path)
    assert not manager.had_clean_shutdown
    log = manager.get_log("t", 0)
    assert log.log_end_offset == 10 and log.recovery.segments_scanned == 1 and log.recovery_point == 10
    stop(manager)


def test_topic_names_and_duplicates(tmp_path):
    manager = started(tmp_path)
    for name in ("", ".", "..", "a/b", "x" * 250, "bad name"):
        with pytest.raises(InvalidTopicError):
            manager.create_topic(name, 1)
    manager.create_topic("a.b_c-9", 1)
    with pytest.raises(TopicExistsError):
        manager.create_topic("a.b_c-9", 1)
    with pytest.raises(InvalidConfigError):
        manager.create_topic("other", 1, configs={"retention.ms": "soon"})
    assert manager.topic("other") is None and not (tmp_path / "other-0").exists()
    with pytest.raises(UnknownTopicOrPartitionError):
        manager.delete_topic("missing")
    stop(manager)


def test_delete_topic_and_recreate(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 2)
    log = manager.get_log("t", 0)
    log.append(make_batch(3))
    region = log.read(0, 100).region
    manager.delete_topic("t")
    assert manager.get_log("t", 0) is None and manager.topic("t") is None
    assert not (tmp_path / "t-0").exists() and len(list(tmp_path.glob("t-0.*-delete"))) == 1
    assert len(region.read()) == region.size  # readers keep their files until file.delete.delay.ms
    manager.create_topic("t", 1)
    assert manager.get_log("t", 0).log_end_offset == 0
    manager.purge_deleted(now=10**15)
    assert not list(tmp_path.glob("*-delete"))
    stop(manager)
    manager = started(tmp_path)
    assert manager.topic("t").partitions == 1
    stop(manager)


def test_interrupted_deletion_completes_at_start(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 1)
    manager.abort()
    (tmp_path / "t-0").rename(tmp_path / f"t-0.{uuid.uuid4().hex}-delete")
    manager = started(tmp_path)
    assert manager.topic("t") is None and not list(tmp_path.glob("*-delete"))
    stop(manager)


def test_missing_partition_directory_is_created(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 2)
    manager.abort()
    shutil.rmtree(tmp_path / "t-1")
    manager = started(tmp_path)
    assert manager.get_log("t", 1) is not None
    stop(manager)


def test_create_partitions_and_configs(tmp_path):
    manager = started(tmp_path, default_config=LogConfig(retention_bytes=10))
    manager.create_topic("t", 1)
    manager.create_partitions("t", 3)
    assert manager.get_log("t", 2) is not None and manager.topic("t").partitions == 3
    with pytest.raises(InvalidConfigError):
        manager.create_partitions("t", 2)
    manager.set_topic_configs("t", {"segment.bytes": "100000"})
    assert manager.get_log("t", 1).config == LogConfig(retention_bytes=10, segment_bytes=100000)
    with pytest.raises(InvalidConfigError):
        manager.set_topic_configs("t", {"segment.bytes": "x"})
    assert manager.topic("t").configs == {"segment.bytes": "100000"}
    stop(manager)
    manager = started(tmp_path, default_config=LogConfig(retention_bytes=10))
    assert manager.get_log("t", 2).config.segment_bytes == 100000
    stop(manager)


def test_orphan_partition_directory_is_adopted(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 1)
    manager.get_log("t", 0).append(make_batch())
    manager.abort()
    (tmp_path / "topics.d" / "t.json").unlink()
    manager = started(tmp_path)
    assert manager.topic("t").partitions == 1 and manager.get_log("t", 0).log_end_offset == 1
    stop(manager)


def test_run_applies_retention_flush_and_checkpoints(tmp_path):
    manager = started(
        tmp_path,
        default_config=LogConfig(segment_bytes=1000, retention_bytes=1500, flush_ms=0, file_delete_delay_ms=0),
        retention_check_interval_ms=10,
        checkpoint_interval_ms=10,
        flush_check_interval_ms=5,
    )
    manager.create_topic("t", 1)
    log = manager.get_log("t", 0)

    async def scenario():
        runner = asyncio.create_task(manager.run())
        for _ in range(20):
            log.append(make_batch(1, 200))
        for _ in range(100):
            await asyncio.sleep(0.01)
            if log.log_start_offset > 0 and log.recovery_point == log.log_end_offset:
                break
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
        await manager.shutdown()

    asyncio.run(scenario())
    assert log.log_start_offset > 0 and log.size_in_bytes <= 1500 + 1000
    assert not list((tmp_path / "t-0").glob("*.deleted"))
    lines = (tmp_path / RECOVERY_POINT_CHECKPOINT).read_text().splitlines()
    assert lines[2] == "t 0 20"
    start = (tmp_path / "log-start-offset-checkpoint").read_text().splitlines()[2]
    assert start == f"t 0 {log.log_start_offset}"


def test_failed_shutdown_leaves_no_clean_marker(tmp_path, monkeypatch):
    manager = started(tmp_path)
    manager.create_topic("t", 2)
    manager.get_log("t", 1).append(make_batch())

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    with pytest.raises(KafkaStorageError):
        stop(manager)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    monkeypatch.undo()
    manager.abort()
    manager = started(tmp_path)
    assert not manager.had_clean_shutdown and manager.get_log("t", 1).log_end_offset == 1
    stop(manager)


def test_unloadable_partition_is_offline_and_the_rest_serves(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("t", 2)
    manager.get_log("t", 0).append(make_batch())
    stop(manager)
    (tmp_path / "t-1" / "00000000000000000000.log").unlink()
    (tmp_path / "t-1" / "00000000000000000000.log").mkdir()  # open() of the segment now fails
    manager = started(tmp_path)
    assert manager.get_log("t", 1) is None and ("t", 1) in manager.offline_partitions
    assert manager.get_log("t", 0).log_end_offset == 1
    stop(manager)


def test_start_up_log_tells_a_fresh_directory_from_a_clean_and_an_unclean_one(tmp_path):
    from tests.logs import captured_logs

    def started_event():
        with captured_logs() as logs:
            manager = started(tmp_path)
        return manager, next(e for e in logs if e["event"] == "log_manager_started")

    manager, event = started_event()
    assert event.get("fresh_directory") is True and "clean_shutdown" not in event
    stop(manager)
    manager, event = started_event()
    assert event["clean_shutdown"] is True and "fresh_directory" not in event
    manager, event = started_event()  # the previous run was not shut down: recovery
    assert event["clean_shutdown"] is False and "fresh_directory" not in event
    stop(manager)


def test_a_fresh_directory_starts_without_writing_empty_checkpoints(tmp_path):
    """Nothing to checkpoint, no fsyncs at start (start-up time); a crash then leaves a directory still fresh,
    unless a topic was created meanwhile: its partitions are recovered, and the start says so."""
    from tests.logs import captured_logs

    def started_event():
        with captured_logs() as logs:
            manager = started(tmp_path)
        return manager, next(e for e in logs if e["event"] == "log_manager_started")

    manager, event = started_event()
    assert event.get("fresh_directory") is True
    assert not (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()
    manager.abort()  # a crash
    manager, event = started_event()
    assert event.get("fresh_directory") is True
    manager.create_topic("t", 1)
    manager.abort()  # a crash before the first periodic checkpoint
    manager, event = started_event()
    assert event["clean_shutdown"] is False and "fresh_directory" not in event
    assert read_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("t", 0): 0}  # written at this start
    stop(manager)


def test_high_watermarks_are_checkpointed(tmp_path):
    manager = started(tmp_path)
    manager.create_topic("orders", 2)
    manager.get_log("orders", 0).append(make_batch(4))
    replicated = manager.get_log("orders", 1)
    replicated.start_replication()
    replicated.append(make_batch(5))
    replicated.update_high_watermark(3)
    stop(manager)
    lines = (tmp_path / REPLICATION_OFFSET_CHECKPOINT).read_text().splitlines()
    assert lines == ["0", "2", "orders 0 4", "orders 1 3"]
    manager = started(tmp_path)
    assert manager.checkpointed_high_watermarks == {("orders", 0): 4, ("orders", 1): 3}
    assert manager.get_log("orders", 1).high_watermark == 5  # not replicated until the cluster says so
    stop(manager)


def test_partition_metadata_written_again_after_a_crash_lost_it(tmp_path):
    manager = started(tmp_path)
    topic_id = manager.create_topic("t", 2).topic_id
    manager.abort()  # as after kill -9 or a power cut: partition.metadata had no fsync of its own
    (tmp_path / "t-0" / "partition.metadata").unlink()
    (tmp_path / "t-1" / "partition.metadata").write_bytes(b"version: 0\ntopic_")  # torn
    manager = started(tmp_path)
    for partition in range(2):
        text = (tmp_path / f"t-{partition}" / "partition.metadata").read_text()
        assert text == f"version: 0\ntopic_id: {topic_id}\n"
    stop(manager)
