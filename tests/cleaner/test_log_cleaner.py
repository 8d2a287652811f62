"""Cleaning rounds over real segment files (a LogManager in a temporary directory, no broker)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kbroker.cleaner.log_cleaner import CHECKPOINT_FILE, CleanerConfig, LogCleaner
from kbroker.log.checkpoint import read_checkpoint
from kbroker.log.manager import LogManager
from kbroker.log.partition_log import PartitionLog
from kbroker.log.swap import recover_swaps
from protocol.record_builder import SimpleRecord, build_record_batch

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "400", "file.delete.delay.ms": "0"}


def topic_config(manager: LogManager, extra: Mapping[str, str] | None = None) -> Any:
    def config(name: str) -> Mapping[str, Any]:
        metadata = manager.topic(name)
        values: dict[str, Any] = dict(metadata.configs) if metadata else {}
        values.update(extra or {})
        return values

    return config


def produce(log: PartitionLog, key: bytes, value: bytes | None, timestamp: int = 1_000) -> int:
    data = bytearray(build_record_batch([SimpleRecord(key, value, (), timestamp)]))
    return log.append(data).base_offset


def records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in log.batches() for r in b.records()]


def write_history(log: PartitionLog, keys: int = 5, rounds: int = 6) -> dict[bytes, tuple[int, bytes]]:
    last = {}
    for r in range(rounds):
        for k in range(keys):
            key, value = b"key-%d" % k, b"value-%d-%d" % (k, r)
            last[key] = (produce(log, key, value), value)
    return last


@pytest.fixture
def manager(tmp_path: Path) -> LogManager:
    manager = LogManager(tmp_path)
    manager.startup()
    manager.create_topic("t", 1, configs=COMPACT)
    return manager


def run(cleaner: LogCleaner, now: int = 10_000) -> bool:
    return asyncio.run(cleaner.clean_once(now))


def test_a_round_keeps_each_keys_last_record_at_its_offset(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    last = write_history(log)
    assert len(log.segments) > 3
    before = log.size_in_bytes
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    assert run(cleaner)
    remaining = records(log)
    active_base = log.active_segment.base_offset
    cleaned = [r for r in remaining if r[0] < active_base]
    by_key: dict[bytes | None, list[int]] = {}
    for offset, key, _ in cleaned:
        by_key.setdefault(key, []).append(offset)
    assert all(len(offsets) == 1 for offsets in by_key.values())
    for offset, key, value in remaining:
        assert key is not None
        if offset < active_base:
            assert (offset, value) == last[key] or any(o > offset for o, k, _ in remaining if k == key)
    assert {k: (o, v) for o, k, v in remaining if k is not None and last[k][0] == o} == last
    assert log.size_in_bytes < before
    # a cleaned segment ends where the next starts (its last offset kept as an empty batch if need be)
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        segment.ensure_indexes()
        assert segment.next_offset == following.base_offset
    assert log.log_end_offset == 30
    assert read_checkpoint(manager.data_dir / CHECKPOINT_FILE)[("t", 0)] == active_base
    # nothing more is due: the dirty section is empty
    assert not run(cleaner)


def test_only_compacted_topics_are_cleaned(manager: LogManager) -> None:
    manager.create_topic("plain", 1, configs={"segment.bytes": "400"})
    log = manager.get_log("plain", 0)
    assert log is not None
    write_history(log)
    segments = list(log.segments)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    run(cleaner)  # cleans t (empty: nothing) and never plain
    assert log.segments == segments


def test_the_dirty_ratio_must_pass_the_minimum(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    assert run(LogCleaner(manager, topic_config=topic_config(manager)))
    write_history(log, keys=2, rounds=2)  # a little dirty data after the cleaned part
    strict = LogCleaner(manager, topic_config=topic_config(manager, {"min.cleanable.dirty.ratio": "0.9"}))
    candidate = strict.cleanable(("t", 0), manager.get_partition("t", 0), 10_000)  # type: ignore[arg-type]
    assert candidate is not None and 0.1 < candidate.cleanable_ratio < 0.9
    assert not run(strict)
    assert run(LogCleaner(manager, topic_config=topic_config(manager, {"min.cleanable.dirty.ratio": "0.1"})))


def test_min_compaction_lag_keeps_young_segments_dirty(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    lagged = LogCleaner(manager, topic_config=topic_config(manager, {"min.compaction.lag.ms": "60000"}))
    assert not run(lagged, now=2_000)  # every record is 1 s old
    assert run(lagged, now=100_000)


def test_tombstones_stay_until_the_delete_horizon_then_go(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log, keys=3, rounds=3)
    tombstone = produce(log, b"key-2", None)
    write_history(log, keys=2, rounds=4)  # pushes the tombstone out of the active segment
    config = topic_config(manager, {"delete.retention.ms": "1000"})
    cleaner = LogCleaner(manager, topic_config=config)
    assert run(cleaner, now=10_000)
    assert (tombstone, b"key-2", None) in records(log)  # the key's last record: it stays, with a horizon
    assert not [r for r in records(log) if r[1] == b"key-2" and r[0] != tombstone]
    write_history(log, keys=2, rounds=4)
    assert run(cleaner, now=10_999)  # before the horizon (10_000 + 1_000)
    assert (tombstone, b"key-2", None) in records(log)
    write_history(log, keys=2, rounds=4)
    assert run(cleaner, now=11_000)
    assert [r for r in records(log) if r[1] == b"key-2"] == []


def test_appends_during_a_round_survive_and_the_swap_is_skipped_when_segments_changed(
    manager: LogManager,
) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))

    async def scenario() -> None:
        round_ = asyncio.ensure_future(cleaner.clean_once(10_000))
        await asyncio.sleep(0)
        produce(log, b"late", b"value")  # the event loop appends while the thread cleans
        await round_

    asyncio.run(scenario())
    assert records(log)[-1][1:] == (b"late", b"value")
    # retention removed the first segments meanwhile: the round's swap does not happen
    write_history(log)
    candidate = cleaner.grab_filthiest(10_000)
    assert candidate is not None
    job = cleaner._job(candidate, 10_000)
    result = cleaner._run_job(job)
    log.delete_records(log.segments[1].base_offset)
    log.delete_old_segments()
    assert cleaner._swap_in(log, result) == 0
    assert not [p for p in os.listdir(log.directory) if p.endswith((".swap", ".cleaned"))]


def test_a_restart_reads_the_cleaned_log(manager: LogManager, tmp_path: Path) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    assert run(cleaner)
    expected = records(log)
    asyncio.run(manager.shutdown())
    again = LogManager(tmp_path)
    again.startup()
    reopened = again.get_log("t", 0)
    assert reopened is not None
    assert records(reopened) == expected
    asyncio.run(again.shutdown())


def test_recovery_installs_a_complete_swap_and_drops_a_partial_one(manager: LogManager, tmp_path: Path) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    candidate = cleaner.grab_filthiest(10_000)
    assert candidate is not None
    result = cleaner._run_job(cleaner._job(candidate, 10_000))
    assert result.groups
    before = records(log)
    # crash: the swap files exist, no old segment was renamed yet
    log.release_files()
    assert recover_swaps(log.directory) == len(result.groups) > 1
    reopened = PartitionLog.open(log.directory, log.config)
    got = records(reopened)
    assert set(got) < set(before)  # records kept at their offsets, some cleaned away, nothing new
    assert {k: (o, v) for o, k, v in got} == {k: (o, v) for o, k, v in before}  # each key's last record
    reopened.close()


def test_the_cleaner_can_be_turned_off() -> None:
    class Config:
        values = {
            "log.cleaner.enable": False,
            "log.cleaner.threads": 1,
            "log.cleaner.io.max.bytes.per.second": 1e308,
            "log.cleaner.dedupe.buffer.size": 1 << 20,
            "log.cleaner.io.buffer.load.factor": 0.9,
            "log.cleaner.backoff.ms": 15000,
        }

        def get_bool(self, name: str) -> bool:
            return bool(self.values[name])

        def get_int(self, name: str) -> int:
            return int(self.values[name])

        def get_float(self, name: str) -> float:
            return float(self.values[name])

    assert not CleanerConfig.from_broker(Config()).enable


def test_recovery_finishes_a_swap_stopped_after_the_old_files_were_renamed(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    before = records(log)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    candidate = cleaner.grab_filthiest(10_000)
    assert candidate is not None
    result = cleaner._run_job(cleaner._job(candidate, 10_000))
    group = next(g for g in result.groups if g.bytes_out > 0)
    for segment in group.old:  # the swap-in had renamed the replaced files, then the process died
        segment.mark_deleted()
    log.release_files()
    recover_swaps(log.directory)
    reopened = PartitionLog.open(log.directory, log.config)
    got = records(reopened)
    assert set(got) <= set(before)
    assert {k: (o, v) for o, k, v in got} == {k: (o, v) for o, k, v in before}
    names = os.listdir(log.directory)
    assert f"{group.base_offset:020d}.log" in names and not [n for n in names if n.endswith(".swap")]
    reopened.close()


def test_a_topic_created_again_under_the_same_name_starts_dirty(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    assert run(cleaner)
    assert cleaner.checkpoints[("t", 0)] > 0
    manager.delete_topic("t")
    manager.create_topic("t", 1, configs=COMPACT)
    again = manager.get_partition("t", 0)
    assert again is not None
    write_history(again.local, rounds=8)  # past the old checkpoint, which would otherwise still apply
    candidate = cleaner.cleanable(("t", 0), again, 10_000)
    assert candidate is not None and candidate.first_dirty_offset == 0


def test_max_compaction_lag_forces_a_round_below_the_dirty_ratio(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    assert run(LogCleaner(manager, topic_config=topic_config(manager)))
    write_history(log, keys=2, rounds=2)  # a little dirty data, first batch timestamp 1000
    strict = {"min.cleanable.dirty.ratio": "0.9"}
    assert not run(LogCleaner(manager, topic_config=topic_config(manager, strict)), now=10_000)
    lagged = {**strict, "max.compaction.lag.ms": "5000"}
    assert not run(LogCleaner(manager, topic_config=topic_config(manager, lagged)), now=5_500)  # 4.5 s old
    assert run(LogCleaner(manager, topic_config=topic_config(manager, lagged)), now=10_000)  # 9 s old


def test_a_partition_whose_round_fails_is_left_alone(manager: LogManager) -> None:
    log = manager.get_log("t", 0)
    assert log is not None
    write_history(log)
    with open(log.segments[1].log_path, "r+b") as damaged:  # a batch length that runs past the file
        damaged.seek(8)
        damaged.write((1 << 30).to_bytes(4, "big"))
    cleaner = LogCleaner(manager, topic_config=topic_config(manager))
    assert cleaner.grab_filthiest(10_000) is not None
    assert not run(cleaner)
    assert cleaner.grab_filthiest(10_000) is None  # no hot loop over the same failure
    assert not [p for p in os.listdir(log.directory) if p.endswith((".cleaned", ".swap"))]


def test_cleaned_segments_live_under_the_open_file_bound(tmp_path: Path) -> None:
    from kbroker.log.files import MIN_CAPACITY, OpenFiles

    files = OpenFiles(MIN_CAPACITY)
    manager = LogManager(tmp_path, open_files=files)
    manager.startup()
    manager.create_topic("t", 1, configs=COMPACT)
    manager.create_topic("other", 1, configs={"segment.bytes": "200"})
    log, other = manager.get_log("t", 0), manager.get_log("other", 0)
    assert log is not None and other is not None
    write_history(log, rounds=8)
    assert run(LogCleaner(manager, topic_config=topic_config(manager)))
    expected = records(log)
    write_history(other, rounds=8)  # many segments elsewhere: the cleaned ones get their files closed
    records(other)
    assert files.evictions > 0
    assert records(log) == expected  # reopened by name: the cleaned files, not the replaced ones
    asyncio.run(manager.shutdown())
