"""UnifiedLog's two entry points and its on_append event."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbroker.log import AppendInfo, AppendOrigin, LogConfig, LogManager, PartitionLog, UnifiedLog
from kbroker.log.leader_epoch import CHECKPOINT_FILE, LeaderEpochCache
from kbroker.log.producer_state import ProducerStateError
from protocol.errors import ErrorCode
from protocol.record_builder import SimpleRecord, build_control_batch, build_record_batch
from protocol.records import ControlRecordType, RecordBatch, iter_batches
from tests.log.batches import make_batch
from tests.log.producer_batches import idempotent_batch

Event = tuple[str, int, int, int]


def open_log(directory: Path, config: LogConfig | None = None) -> UnifiedLog:
    return UnifiedLog(PartitionLog.open(directory, config or LogConfig()))


@pytest.fixture
def log(tmp_path: Path) -> Iterator[UnifiedLog]:
    unified = open_log(tmp_path / "t-0")
    yield unified
    unified.local.close()


def listen(log: UnifiedLog) -> list[Event]:
    events: list[Event] = []

    def on_append(source: UnifiedLog, info: AppendInfo, size: int) -> None:
        events.append((source.topic, info.base_offset, info.last_offset, size))

    log.on_append.append(on_append)
    return events


def txn_batch(pid: int, seq: int, records: int = 2, epoch: int = 0) -> bytearray:
    return bytearray(
        build_record_batch(
            [SimpleRecord(b"k", b"v%d" % i, (), 1_000 + i) for i in range(records)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
    )


def marker(pid: int, commit: bool, epoch: int = 0) -> bytearray:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytearray(
        build_control_batch(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0, timestamp=2_000)
    )


def stored(log: UnifiedLog) -> bytes:
    return log.local.read(log.log_start_offset, 1 << 20).read()


def test_every_origin_fires_on_append_once(log: UnifiedLog) -> None:
    events = listen(log)
    client = idempotent_batch(1, 0, 0, 3)
    log.append_as_leader(RecordBatch(client), AppendOrigin.CLIENT)
    log.append_as_leader(txn_batch(2, 0), AppendOrigin.COORDINATOR)
    log.append_as_leader(marker(2, commit=True), AppendOrigin.MARKER, coordinator_epoch=5)
    assert events == [("t", 0, 2, len(client)), ("t", 3, 4, len(txn_batch(2, 0))), ("t", 5, 5, len(marker(2, True)))]
    state = log.producer_state()
    assert set(state.producers) == {1, 2} and state.ongoing == {}
    assert state.producers[2].coordinator_epoch == 5


def test_a_retried_client_batch_gets_its_offsets_and_is_not_appended(log: UnifiedLog) -> None:
    events = listen(log)
    first = log.append_as_leader(RecordBatch(idempotent_batch(1, 0, 0, 2)), AppendOrigin.CLIENT)
    again = log.append_as_leader(RecordBatch(idempotent_batch(1, 0, 0, 2)), AppendOrigin.CLIENT)
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset) == (0, 1)
    assert log.log_end_offset == 2 and len(events) == 1
    with pytest.raises(ProducerStateError) as error:
        log.append_as_leader(RecordBatch(idempotent_batch(1, 0, 5)), AppendOrigin.CLIENT)
    assert error.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # a coordinator's batch is not checked against the sequence
    log.append_as_leader(idempotent_batch(1, 0, 9), AppendOrigin.COORDINATOR)
    assert log.log_end_offset == 3


def test_a_follower_stores_the_leaders_batches_as_they_are(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "t-0")
    for epoch, data, origin in [
        (3, make_batch(2), AppendOrigin.COORDINATOR),
        (3, txn_batch(7, 0, 3), AppendOrigin.COORDINATOR),
        (4, make_batch(1), AppendOrigin.COORDINATOR),
        (4, marker(7, commit=False), AppendOrigin.MARKER),
        (5, txn_batch(8, 0), AppendOrigin.COORDINATOR),
    ]:
        leader.append_as_leader(data, origin, leader_epoch=epoch)
    follower = open_log(tmp_path / "f-0")
    events = listen(follower)
    data = bytearray(stored(leader))
    half = next(b for b in iter_batches(data) if b.base_offset == 5).position
    follower.append_as_follower(data[:half])
    info = follower.append_as_follower(data[half:])
    assert (info.base_offset, info.last_offset) == (5, 8)
    assert stored(follower) == stored(leader)  # offsets and leader epochs kept: the same bytes
    assert [e[1] for e in events] == [0, 5, 7]  # one local append per run of batches of one leader epoch
    assert follower.producer_state().ongoing == leader.producer_state().ongoing == {8: 7}
    assert follower.transaction_index().aborted == leader.transaction_index().aborted
    assert follower.last_stable_offset() == 7
    leader.local.close()
    follower.local.close()


def test_a_follower_batch_may_leave_a_gap_but_never_go_back(log: UnifiedLog, tmp_path: Path) -> None:
    leader = open_log(tmp_path / "l-0")
    for epoch in (1, 1, 2):
        leader.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=epoch)
    data = bytearray(stored(leader))
    second = next(b for b in iter_batches(data) if b.base_offset == 2).position
    info = log.append_as_follower(data[second:])  # offsets 0-1 compacted away upstream
    assert (info.base_offset, info.last_offset, log.log_end_offset) == (2, 5, 6)
    assert epochs(log) == [(1, 2), (2, 4)]
    assert [b.base_offset for b in iter_batches(stored(log))] == [2, 4]
    with pytest.raises(Exception, match="below 6"):
        log.append_as_follower(data[second:])
    assert log.log_end_offset == 6
    log.local.close()
    reopened = open_log(tmp_path / "t-0")
    assert [b.base_offset for b in iter_batches(stored(reopened))] == [2, 4]
    reopened.local.close()
    leader.local.close()


def test_a_follower_keeps_the_leaders_append_time(tmp_path: Path) -> None:
    config = LogConfig(message_timestamp_type="LogAppendTime")
    leader = open_log(tmp_path / "l-0", config)
    leader.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, now=123_456)
    follower = open_log(tmp_path / "f-0", config)
    follower.append_as_follower(bytearray(stored(leader)))
    assert stored(follower) == stored(leader)
    assert next(iter_batches(stored(follower))).max_timestamp == 123_456
    leader.local.close()
    follower.local.close()


def test_a_deleted_topic_releases_its_partitions_and_state(tmp_path: Path) -> None:
    manager = LogManager(tmp_path / "data", LogConfig(file_delete_delay_ms=0))
    manager.startup()
    released: list[weakref.ref[object]] = []
    for _ in range(3):
        manager.create_topic("t", 2)  # the same name each time
        for partition in range(2):
            unified = manager.get_partition("t", partition)
            assert unified is not None
            unified.append_as_leader(RecordBatch(idempotent_batch(1, 0, 0)), AppendOrigin.CLIENT)
            unified.append_as_leader(txn_batch(2, 0), AppendOrigin.COORDINATOR)
            unified.append_as_leader(marker(2, commit=False), AppendOrigin.MARKER)
            released += [weakref.ref(unified), weakref.ref(unified.producer_state())]
        del unified
        manager.delete_topic("t")
        manager.tick_producer_states()
        manager.purge_deleted()
    gc.collect()
    assert [ref for ref in released if ref() is not None] == []
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.name.startswith("t-")) == []
    manager.abort()


def epochs(log: UnifiedLog) -> list[tuple[int, int]]:
    return [(entry.epoch, entry.start_offset) for entry in log.leader_epochs.entries]


def test_leader_appends_record_each_epoch_where_it_starts(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.append_as_leader(make_batch(1), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.append_as_leader(make_batch(3), AppendOrigin.COORDINATOR, leader_epoch=4)
    log.append_as_leader(make_batch(1), AppendOrigin.MARKER)  # epoch 0 from a caller that does not know it
    assert [b.partition_leader_epoch for b in iter_batches(stored(log))] == [1, 1, 4, 4]
    assert epochs(log) == [(1, 0), (4, 3)]
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(2) == (1, 3)
    assert log.end_offset_for_epoch(4) == (4, 7)
    assert log.end_offset_for_epoch(5) == (-1, -1)
    assert log.end_offset_for_epoch(5, current_epoch=6) == (4, 7)  # a leader that has not written yet
    assert log.end_offset_for_epoch(6, current_epoch=6) == (6, 7)
    log.local.close()
    reopened = open_log(tmp_path / "t-0")
    assert epochs(reopened) == [(1, 0), (4, 3)]
    reopened.local.close()


def test_a_follower_records_the_leaders_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "t-0")
    for epoch in (2, 2, 5, 7):
        leader.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=epoch)
    follower = open_log(tmp_path / "f-0")
    follower.append_as_follower(bytearray(stored(leader)))
    assert epochs(follower) == epochs(leader) == [(2, 0), (5, 4), (7, 6)]
    leader.local.close()
    follower.local.close()


def test_epochs_past_the_recovered_log_end_are_dropped(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.leader_epochs.assign(3, 2)  # recorded, then the process died before the batch was written
    log.local.close()
    reopened = open_log(tmp_path / "t-0")
    assert epochs(reopened) == [(1, 0)]
    assert LeaderEpochCache.load(tmp_path / "t-0").entries == reopened.leader_epochs.entries
    reopened.local.close()


def test_a_log_without_a_checkpoint_gets_its_epochs_from_its_batches(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, LogConfig(segment_bytes=300))
    for epoch in (0, 0, 3, 3, 3, 6):
        log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=epoch)
    assert len(log.local.segments) > 1
    log.local.close()
    (directory / CHECKPOINT_FILE).unlink()  # written by a version without the cache
    reopened = open_log(directory, LogConfig(segment_bytes=300))
    assert epochs(reopened) == [(0, 0), (3, 4), (6, 10)]
    assert (directory / CHECKPOINT_FILE).exists()
    reopened.local.delete_records(5)
    reopened.tick()
    assert epochs(reopened) == [(3, 5), (6, 10)]
    assert reopened.end_offset_for_epoch(0) == (0, 5)  # older than every entry: ends where the log starts
    reopened.local.close()


def test_truncate_to_drops_data_epochs_and_producer_state_after_the_offset(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=400, index_interval_bytes=1)  # an index entry per batch: cut too
    log = open_log(tmp_path / "t-0", config)
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.append_as_leader(txn_batch(7, 0), AppendOrigin.COORDINATOR, leader_epoch=1)  # 2-3
    log.append_as_leader(marker(7, commit=False), AppendOrigin.MARKER)  # 4: aborted
    kept = stored(log)
    state = dict(log.producer_state().producers)
    log.take_snapshot()  # at 5
    log.append_as_leader(txn_batch(8, 0), AppendOrigin.COORDINATOR, leader_epoch=3)  # 5-6, open
    log.append_as_leader(marker(8, commit=False), AppendOrigin.MARKER)  # 7: aborted
    log.append_as_leader(txn_batch(9, 0), AppendOrigin.COORDINATOR)  # 8-9, open
    log.take_snapshot()  # at 10
    assert len(log.local.segments) == 2 and epochs(log) == [(1, 0), (3, 5)]
    assert [a.producer_id for a in log.collect_aborted(0, 10)] == [7, 8]

    assert not log.truncate_to(10)
    assert log.truncate_to(5)
    assert (log.log_end_offset, log.high_watermark) == (5, 5)
    assert stored(log) == kept
    assert epochs(log) == [(1, 0)]
    assert log.producer_state().ongoing == {}
    assert dict(log.producer_state().producers).keys() == state.keys()
    assert [a.producer_id for a in log.collect_aborted(0, 10)] == [7]
    assert log.last_stable_offset() == 5
    left = sorted(p.name for p in (tmp_path / "t-0").iterdir() if not p.name.endswith(".deleted"))
    assert not [name for name in left if name.startswith("00000000000000000007") or "10.snapshot" in name]

    leader = open_log(tmp_path / "leader-0")
    leader.append_as_leader(bytearray(kept), AppendOrigin.COORDINATOR, leader_epoch=1)
    leader.append_as_leader(make_batch(3), AppendOrigin.COORDINATOR, leader_epoch=4)
    diverged = bytearray(leader.local.read(5, 1 << 20).read())
    log.append_as_follower(diverged)  # the new leader's data continues where the cut left off
    assert stored(log) == stored(leader) and epochs(log) == [(1, 0), (4, 5)]
    log.local.close()
    reopened = open_log(tmp_path / "t-0", config)
    assert stored(reopened) == stored(leader) and epochs(reopened) == [(1, 0), (4, 5)]
    assert reopened.producer_state().ongoing == {}
    assert [a.producer_id for a in reopened.collect_aborted(0, 10)] == [7]
    reopened.local.close()
    leader.local.close()


def test_truncate_below_the_log_start_starts_empty_there(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(4), AppendOrigin.COORDINATOR, leader_epoch=2)
    log.local.delete_records(3)
    assert log.truncate_to(2)
    assert (log.log_start_offset, log.log_end_offset) == (2, 2)
    assert epochs(log) == []
    log.append_as_leader(make_batch(1), AppendOrigin.COORDINATOR, leader_epoch=5)
    assert epochs(log) == [(5, 2)]
    log.local.close()


def test_the_high_watermark_moves_apart_from_the_log_end_once_replicated(log: UnifiedLog) -> None:
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR)
    assert log.high_watermark == log.log_end_offset == 2  # a single replica: as before
    log.local.start_replication()
    log.append_as_leader(txn_batch(7, 0), AppendOrigin.COORDINATOR)  # 2-3
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR)  # 4-5
    assert (log.high_watermark, log.log_end_offset) == (2, 6)
    assert [b.base_offset for b in iter_batches(stored(log))] == [0]  # consumers stop at the high watermark
    assert [b.base_offset for b in iter_batches(log.read(0, 1 << 20, to_log_end=True).read())] == [0, 2, 4]
    assert log.local.read(0, 1 << 20).high_watermark == 2
    assert log.last_stable_offset() == 2
    assert log.local.update_high_watermark(4)
    assert not log.local.update_high_watermark(3)  # only forward
    assert log.last_stable_offset() == 2  # the open transaction still bounds it
    assert log.local.update_high_watermark(99) and log.high_watermark == 6  # never past the log end
    assert log.local.update_high_watermark(3, only_forward=False) and log.high_watermark == 3
    log.truncate_to(2)
    assert log.high_watermark == 2
    log.append_as_leader(make_batch(1), AppendOrigin.COORDINATOR)
    assert log.high_watermark == 2
    log.local.stop_replication()
    assert log.high_watermark == log.log_end_offset == 3
    log.local.start_replication(high_watermark=1)
    assert log.high_watermark == 1


def test_truncate_to_at_the_log_end_drops_an_epoch_with_no_data(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.assign_leader_epoch(2)  # became leader at 2, wrote nothing, lost the leadership
    assert epochs(log) == [(1, 0), (2, 2)]
    assert not log.truncate_to(2)  # nothing to cut but the epoch the new leader never had
    assert epochs(log) == [(1, 0)] and log.log_end_offset == 2
    log.local.close()


def test_truncate_fully_and_start_at_a_leaders_log_start(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(2), AppendOrigin.COORDINATOR, leader_epoch=1)
    log.append_as_leader(txn_batch(7, 0), AppendOrigin.COORDINATOR, leader_epoch=1)  # 2-3
    log.append_as_leader(marker(7, commit=False), AppendOrigin.MARKER)  # 4: aborted
    log.take_snapshot()
    log.local.start_replication()
    log.truncate_fully_and_start_at(20)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (20, 20, 20)
    assert epochs(log) == [] and log.producer_state().producers == {}
    assert log.collect_aborted(0, 30) == [] and stored(log) == b""
    leader = open_log(tmp_path / "leader-0")
    leader.append_as_leader(make_batch(20), AppendOrigin.COORDINATOR, leader_epoch=1)
    leader.append_as_leader(make_batch(3), AppendOrigin.COORDINATOR, leader_epoch=2)
    log.append_as_follower(bytearray(leader.local.read(20, 1 << 20, to_log_end=True).read()))
    assert (log.log_start_offset, log.log_end_offset) == (20, 23) and epochs(log) == [(2, 20)]
    log.local.close()
    reopened = open_log(tmp_path / "t-0")
    assert (reopened.log_start_offset, reopened.log_end_offset) == (20, 23)
    assert reopened.collect_aborted(0, 30) == [] and epochs(reopened) == [(2, 20)]
    left = [p.name for p in (tmp_path / "t-0").iterdir() if not p.name.endswith(".deleted")]
    assert not [name for name in left if name.startswith("00000000000000000000")], left
    reopened.local.close()
    leader.local.close()
