"""Producer state survives restarts: snapshots plus a header scan of the log after them (UnifiedLog.load_state)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import kbroker.log.unified_log as unified_module
from kbroker.log import KafkaStorageError
from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from kbroker.log.producer_entry import ProducerStateEntry
from kbroker.log.producer_snapshot import (
    Snapshot,
    SnapshotError,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    snapshot_path,
    write_snapshot,
)
from kbroker.log.producer_state import ProducerStateError, ProducerStateManager
from kbroker.log.unified_log import AppendOrigin, ProducerStateConfig, UnifiedLog
from protocol.errors import ErrorCode
from protocol.record_builder import build_control_batch
from protocol.records import ControlRecordType, RecordBatch
from tests.log.batches import make_batch
from tests.log.producer_batches import idempotent_batch

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)
NOW = 1_000_000


def clock() -> int:
    return NOW


def partition(local: PartitionLog, **kwargs: int) -> UnifiedLog:
    return UnifiedLog(local, ProducerStateConfig(clock=kwargs.pop("clock", clock), **kwargs))  # type: ignore[arg-type]


def produce(log: UnifiedLog, pid: int, epoch: int, seq: int, records: int = 2) -> int:
    """A client append; returns the base offset (the original one for a retried batch)."""
    data = idempotent_batch(pid, epoch, seq, records, timestamp=NOW - 10)
    return log.append_as_leader(RecordBatch(data), AppendOrigin.CLIENT).base_offset


def summary(state: ProducerStateManager) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    return {
        pid: (e.producer_epoch, [(b.last_seq, b.last_offset, b.offset_delta, b.timestamp) for b in e.batches])
        for pid, e in sorted(state.producers.items())
    }


def random_traffic(log: UnifiedLog, batches: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    sequences: dict[int, int] = {}
    for i in range(batches):
        if rng.random() < 0.2:
            log.append_as_leader(make_batch(1, 20, NOW - 10, seed=i), AppendOrigin.CLIENT)
            continue
        pid = rng.randrange(6)
        records = rng.randrange(1, 4)
        seq = sequences.get(pid, 0)
        produce(log, pid, 0, seq, records)
        sequences[pid] = seq + records


def reopen(log: UnifiedLog, clean: bool = True, **kwargs: int) -> UnifiedLog:
    log.local.close()
    return partition(PartitionLog.open(log.local.directory, SMALL, clean_shutdown=clean), **kwargs)


def loaded_from(log: UnifiedLog) -> tuple[int, int]:
    """(snapshot offset, batches scanned) of the partition's load."""
    log.producer_state()
    assert log.last_load is not None
    return log.last_load.snapshot_offset, log.last_load.batches_scanned


@pytest.fixture
def log(tmp_path: Path):
    unified = partition(PartitionLog.open(tmp_path / "orders-0", SMALL))
    yield unified
    unified.local.close()


def test_snapshot_round_trip() -> None:
    entry = ProducerStateEntry(42, 3, coordinator_epoch=7, last_timestamp=99, txn_first_offset=12)
    for i in range(6):
        entry.add_batch(3, i * 2 + 1, 100 + i * 2 + 1, 1, 1000 + i)
    data = encode_snapshot(Snapshot(120, 110, 0xDEADBEEF, [entry, ProducerStateEntry(5, 0)]))
    decoded = decode_snapshot(data)
    assert (decoded.offset, decoded.anchor_base, decoded.anchor_crc) == (120, 110, 0xDEADBEEF)
    first = decoded.entries[0]
    assert (first.producer_id, first.producer_epoch, first.coordinator_epoch, first.txn_first_offset) == (42, 3, 7, 12)
    assert list(first.batches) == list(entry.batches) and len(first.batches) == 5
    corrupt = bytearray(data)
    corrupt[-3] ^= 1
    with pytest.raises(SnapshotError):
        decode_snapshot(bytes(corrupt))
    with pytest.raises(SnapshotError):
        decode_snapshot(data[:-4])


def test_rebuild_from_log_alone_matches_live_state(log: UnifiedLog) -> None:
    random_traffic(log, 120)
    live = summary(log.producer_state())
    for _, path in list_snapshots(log.local.directory):
        path.unlink()
    rebuilt = reopen(log, clean=False)
    assert loaded_from(rebuilt)[0] == -1 and loaded_from(rebuilt)[1] > 50
    assert summary(rebuilt.producer_state()) == live
    rebuilt.local.close()


def test_restart_uses_the_snapshot_and_scans_only_the_tail(log: UnifiedLog) -> None:
    random_traffic(log, 80)
    log.take_snapshot()
    snapshot_offset = log.log_end_offset
    live = log.producer_state()
    produce(log, 1, 0, live.producers[1].last_seq + 1)
    produce(log, 3, 0, live.producers[3].last_seq + 1)
    rebuilt = reopen(log)
    assert loaded_from(rebuilt) == (snapshot_offset, 2)
    assert summary(rebuilt.producer_state()) == summary(live)
    rebuilt.local.close()


def test_rebuilt_state_detects_duplicates_and_gaps(log: UnifiedLog) -> None:
    bases = [produce(log, 7, 0, seq * 2) for seq in range(8)]
    log = reopen(log, clean=False)
    assert [produce(log, 7, 0, seq * 2) for seq in range(3, 8)] == bases[3:]
    end = log.log_end_offset
    with pytest.raises(ProducerStateError) as info:
        produce(log, 7, 0, 17)
    assert info.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, 7, 0, 16) == end
    log.local.close()


def test_segment_roll_takes_a_snapshot_and_keeps_two(log: UnifiedLog) -> None:
    for seq in range(100):
        produce(log, 1, 0, seq * 2)
    assert len(log.local.segments) > 3
    snapshots = list_snapshots(log.local.directory)
    assert len(snapshots) == 2
    assert snapshots[0][0] > log.local.segments[-2].base_offset


def test_snapshot_beyond_the_log_end_is_discarded(log: UnifiedLog) -> None:
    for seq in range(5):
        produce(log, 1, 0, seq * 2)
    live = summary(log.producer_state())
    ghost = ProducerStateEntry(99, 0)
    ghost.add_batch(0, 0, 500, 0, NOW)
    write_snapshot(log.local.directory, Snapshot(501, 500, 1234, [ghost]))
    log = reopen(log)
    rebuilt = log.producer_state()
    assert 99 not in rebuilt.producers and summary(rebuilt) == live
    assert not snapshot_path(log.local.directory, 501).exists()
    log.local.close()


def test_snapshot_of_other_data_at_the_same_offsets_is_discarded(tmp_path: Path) -> None:
    """A log cut by recovery and refilled past a snapshot's offset must not trust that snapshot."""
    first = partition(PartitionLog.open(tmp_path / "a-0", SMALL))
    for seq in range(4):
        produce(first, 1, 0, seq * 2)
    first.take_snapshot()
    snapshot = list_snapshots(first.local.directory)[0][1]
    first.local.close()
    second = partition(PartitionLog.open(tmp_path / "b-0", SMALL))
    for seq in range(4):
        produce(second, 2, 0, seq * 2)
    for _, path in list_snapshots(second.local.directory):
        path.unlink()
    shutil.copy(snapshot, second.local.directory / snapshot.name)
    second = reopen(second)
    assert loaded_from(second)[0] == -1
    assert set(second.producer_state().producers) == {2}
    second.local.close()


def test_corrupt_snapshot_falls_back_to_an_older_one(log: UnifiedLog) -> None:
    produce(log, 1, 0, 0)
    log.take_snapshot()
    older = log.log_end_offset
    produce(log, 1, 0, 2)
    log.take_snapshot()
    newest = list_snapshots(log.local.directory)[0][1]
    newest.write_bytes(newest.read_bytes()[:-5])
    live = summary(log.producer_state())
    log = reopen(log)
    assert loaded_from(log) == (older, 1)
    assert summary(log.producer_state()) == live
    log.local.close()


def test_load_drops_expired_snapshot_entries_and_scanned_ones_at_the_next_check(log: UnifiedLog) -> None:
    log.append_as_leader(idempotent_batch(1, 0, 0, timestamp=NOW - 5_000), AppendOrigin.COORDINATOR)
    produce(log, 2, 0, 0)
    log.take_snapshot()
    log.local.append(idempotent_batch(3, 0, 0, timestamp=NOW - 5_000))  # below UnifiedLog: found by the scan
    log = reopen(log, expiration_ms=1_000)
    rebuilt = log.producer_state()
    assert set(rebuilt.producers) == {2, 3}
    assert rebuilt.remove_expired() == 1 and set(rebuilt.producers) == {2}
    log.local.close()


def test_rebuild_tracks_transactions_from_headers(log: UnifiedLog) -> None:
    local = log.local
    local.append(bytearray(idempotent_batch(4, 0, 0, 2)))
    data = bytearray(idempotent_batch(5, 0, 0, 2))
    data[21 + 1] |= 0x10  # transactional bit (the CRC is not checked on load)
    local.append(data)
    local.append(bytearray(idempotent_batch(6, 1, 0, 1)))
    local.append(
        bytearray(
            build_control_batch(
                ControlRecordType.COMMIT, producer_id=6, producer_epoch=2, coordinator_epoch=0, timestamp=NOW
            )
        )
    )
    log = reopen(log)
    rebuilt = log.producer_state()
    assert rebuilt.producers[5].txn_first_offset == 2 and rebuilt.ongoing == {5: 2}
    assert rebuilt.producers[6].txn_first_offset == -1 and rebuilt.producers[6].producer_epoch == 2
    assert rebuilt.producers[4].txn_first_offset == -1
    log.local.close()


def test_a_load_that_scanned_snapshots_and_loads_once(log: UnifiedLog) -> None:
    for seq in range(10):
        log.local.append(idempotent_batch(1, 0, seq))
    log = reopen(log)
    state = log.producer_state()
    assert log.producer_state() is state
    assert [offset for offset, _ in list_snapshots(log.local.directory)] == [10]
    assert state.producers[1].last_seq == 9
    log.local.close()


def test_tick_snapshots_a_moved_log_and_expires_producers(log: UnifiedLog) -> None:
    now = [NOW]
    log = reopen(log, expiration_ms=1_000, expiration_check_interval_ms=50, clock=lambda: now[0])
    log.producer_state().apply(1, 0, 0, 0, 0, NOW - 5_000)
    log.append_as_leader(make_batch(3), AppendOrigin.CLIENT)  # not idempotent: only the duty snapshots it
    assert list_snapshots(log.local.directory) == []
    now[0] += 100
    log.tick()
    assert len(log.producer_state()) == 0
    assert [offset for offset, _ in list_snapshots(log.local.directory)] == [3]
    log.local.close()


def test_snapshot_after_many_appends(log: UnifiedLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unified_module, "SNAPSHOT_EVERY_APPENDS", 10)
    for seq in range(9):
        produce(log, 1, 0, seq * 2, records=2)
    assert list_snapshots(log.local.directory) == []
    produce(log, 1, 0, 18)
    assert [offset for offset, _ in list_snapshots(log.local.directory)] == [20]


def test_a_failing_snapshot_never_fails_the_append(log: UnifiedLog, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise KafkaStorageError("disk gone")

    monkeypatch.setattr(unified_module, "take_snapshot", broken)
    monkeypatch.setattr(unified_module, "SNAPSHOT_EVERY_APPENDS", 1)
    assert produce(log, 1, 0, 0) == 0
    assert produce(log, 1, 0, 2) == 2


def test_a_deleted_partition_writes_no_snapshot_and_drops_its_state(log: UnifiedLog) -> None:
    produce(log, 1, 0, 0)
    log.mark_deleted()
    log.take_snapshot()
    log.tick()
    assert list_snapshots(log.local.directory) == []
    assert not log.state_loaded and log.on_append == [] and log.local.append_listeners == []
    with pytest.raises(KafkaStorageError):
        produce(log, 1, 0, 2)
