"""The leader epoch cache: Kafka's LeaderEpochFileCache rules, persisted in leader-epoch-checkpoint."""

from __future__ import annotations

from pathlib import Path

from kbroker.log.leader_epoch import CHECKPOINT_FILE, EpochEntry, LeaderEpochCache


def pairs(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(entry.epoch, entry.start_offset) for entry in cache.entries]


def test_assign_records_each_new_epoch_once(tmp_path: Path) -> None:
    cache = LeaderEpochCache.load(tmp_path)
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # the same epoch further on: nothing new
    assert cache.assign(2, 10)
    assert not cache.assign(-1, 12)
    assert pairs(cache) == [(0, 0), (2, 10)]
    assert pairs(LeaderEpochCache.load(tmp_path)) == [(0, 0), (2, 10)]
    assert (tmp_path / CHECKPOINT_FILE).read_text() == "0\n2\n0 0\n2 10\n"


def test_assign_removes_contradicted_entries(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path, [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)])
    cache.assign(4, 15)  # epoch 5 at 20 is contradicted
    assert pairs(cache) == [(1, 0), (3, 10), (4, 15)]
    cache.assign(6, 12)  # epoch 4 starting at 15 is after 12
    assert pairs(cache) == [(1, 0), (3, 10), (6, 12)]
    cache.assign(6, 11)  # the same epoch, earlier: moved back
    assert pairs(cache) == [(1, 0), (3, 10), (6, 11)]


def test_end_offset_for(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path, [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)])
    assert cache.end_offset_for(5, 27) == (5, 27)  # the latest ends at the log end
    assert cache.end_offset_for(3, 27) == (3, 20)
    assert cache.end_offset_for(4, 27) == (3, 20)  # unknown but between: the floor epoch, the next start
    assert cache.end_offset_for(1, 27) == (1, 10)
    assert cache.end_offset_for(0, 27) == (0, 0)  # older than every entry: itself, the first start
    assert cache.end_offset_for(6, 27) == (-1, -1)
    assert cache.end_offset_for(-1, 27) == (-1, -1)
    assert LeaderEpochCache(tmp_path).end_offset_for(0, 5) == (-1, -1)
    assert cache.epoch_for_offset(9) == 1 and cache.epoch_for_offset(10) == 3 and cache.epoch_for_offset(99) == 5


def test_truncate_from_end(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path, [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)])
    cache.truncate_from_end(21)
    assert pairs(cache) == [(1, 0), (3, 10), (5, 20)]
    cache.truncate_from_end(20)
    assert pairs(cache) == [(1, 0), (3, 10)]
    assert pairs(LeaderEpochCache.load(tmp_path)) == [(1, 0), (3, 10)]
    cache.truncate_from_end(0)
    assert pairs(cache) == []


def test_truncate_from_start(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path, [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)])
    cache.truncate_from_start(0)
    assert pairs(cache) == [(1, 0), (3, 10), (5, 20)]
    cache.truncate_from_start(15)
    assert pairs(cache) == [(3, 15), (5, 20)]
    cache.truncate_from_start(20)
    assert pairs(cache) == [(5, 20)]
    cache.truncate_from_start(30)
    assert pairs(cache) == [(5, 30)]
    assert pairs(LeaderEpochCache.load(tmp_path)) == [(5, 30)]


def test_unreadable_checkpoint_is_an_empty_cache(tmp_path: Path) -> None:
    for text in ("1\n0\n", "0\n2\n0 0\n", "0\n2\n3 10\n1 20\n", "zero\n"):
        (tmp_path / CHECKPOINT_FILE).write_text(text)
        assert LeaderEpochCache.load(tmp_path).entries == []


def test_a_deleted_partition_writes_nothing(tmp_path: Path) -> None:
    cache = LeaderEpochCache.load(tmp_path)
    cache.enabled = False
    cache.assign(0, 0)
    assert not (tmp_path / CHECKPOINT_FILE).exists()
