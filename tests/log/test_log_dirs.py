"""Several data directories (log.dirs) under one LogManager, on real directories."""

import asyncio

import pytest

from kbroker.cleaner.log_cleaner import CHECKPOINT_FILE, LogCleaner
from kbroker.log.checkpoint import read_checkpoint
from kbroker.log.manager import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    DuplicateLogDirectoryError,
    LogManager,
)
from tests.log.batches import make_batch


def started(dirs):
    manager = LogManager(dirs[0], log_dirs=dirs)
    manager.startup()
    return manager


def stop(manager):
    asyncio.run(manager.shutdown())


def test_new_partitions_go_to_the_directory_with_fewest(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    manager = started(dirs)
    manager.create_topic("t", 4)
    placed = [manager.log_dir_of(("t", p)) for p in range(4)]
    assert placed == [dirs[0], dirs[1], dirs[2], dirs[0]]  # fewest first, the first listed on a tie
    manager.create_topic("u", 2)
    assert [manager.log_dir_of(("u", p)) for p in range(2)] == [dirs[1], dirs[2]]
    manager.create_partitions("u", 3)
    assert manager.log_dir_of(("u", 2)) == dirs[0]
    assert manager.partition_counts() == {dirs[0]: 3, dirs[1]: 2, dirs[2]: 2}
    for tp in [("t", 0), ("t", 3), ("u", 2)]:
        assert (dirs[0] / f"{tp[0]}-{tp[1]}" / "partition.metadata").exists()
    assert not (dirs[1] / "topics.d").exists()  # the topics live in the first directory only
    stop(manager)


def test_reload_from_every_directory_with_own_checkpoints(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.create_topic("t", 2)
    manager.get_log("t", 0).append(make_batch(3))
    manager.get_log("t", 1).append(make_batch(5))
    manager.get_log("t", 1).delete_records(2)
    stop(manager)
    for directory in dirs:
        assert (directory / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(dirs[0] / RECOVERY_POINT_CHECKPOINT) == {("t", 0): 3}
    assert read_checkpoint(dirs[1] / RECOVERY_POINT_CHECKPOINT) == {("t", 1): 5}
    assert read_checkpoint(dirs[1] / LOG_START_OFFSET_CHECKPOINT) == {("t", 1): 2}

    again = started(dirs)
    assert again.had_clean_shutdown
    assert again.log_dir_of(("t", 1)) == dirs[1]
    assert again.get_log("t", 0).log_end_offset == 3
    assert (again.get_log("t", 1).log_start_offset, again.get_log("t", 1).log_end_offset) == (2, 5)
    again.delete_topic("t")
    assert again.log_dir_of(("t", 1)) is None
    assert [p.name for p in dirs[1].iterdir() if p.name.endswith("-delete")]  # renamed in its own directory
    stop(again)
    third = started(dirs)
    assert third.topics() == {} and not any(p.name.startswith("t-") for d in dirs for p in d.iterdir())
    stop(third)


def test_a_partition_in_two_directories_is_refused(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.create_topic("t", 1)
    stop(manager)
    (dirs[1] / "t-0").mkdir()
    with pytest.raises(DuplicateLogDirectoryError, match=r"t-0 .* two data directories"):
        LogManager(dirs[0], log_dirs=dirs).startup()


def test_unclean_stop_recovers_only_that_directory(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.create_topic("t", 2)
    manager.get_log("t", 1).append(make_batch(2))
    stop(manager)
    (dirs[1] / CLEAN_SHUTDOWN_FILE).unlink()
    again = started(dirs)
    assert not again.had_clean_shutdown
    assert again.get_log("t", 1).log_end_offset == 2
    stop(again)


def test_cleaner_checkpoint_per_directory(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.create_topic("t", 2)
    cleaner = LogCleaner(manager, topic_config=lambda _: {})
    cleaner._write_checkpoints({("t", 0): 7, ("t", 1): 9})
    assert read_checkpoint(dirs[0] / CHECKPOINT_FILE) == {("t", 0): 7}
    assert read_checkpoint(dirs[1] / CHECKPOINT_FILE) == {("t", 1): 9}
    assert LogCleaner(manager, topic_config=lambda _: {}).checkpoints == {("t", 0): 7, ("t", 1): 9}
    stop(manager)


def test_placement_counts_follow_deletions_and_restarts(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.create_topic("t", 4)  # a b a b
    manager.delete_topic("t")
    manager.create_topic("u", 3)  # counts back to zero: a b a
    assert [manager.log_dir_of(("u", p)) for p in range(3)] == [dirs[0], dirs[1], dirs[0]]
    stop(manager)
    again = started(dirs)  # counts rebuilt from what was loaded: a has 2, b has 1
    again.create_topic("v", 2)
    assert [again.log_dir_of(("v", p)) for p in range(2)] == [dirs[1], dirs[0]]
    assert again.partition_counts() == {dirs[0]: 3, dirs[1]: 2}
    stop(again)
