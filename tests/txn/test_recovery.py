"""Producer state survives restarts: snapshots plus a header scan of the log after them."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.partition_log import PartitionLog
from kbroker.txn.entry import ProducerStateEntry
from kbroker.txn.producer_state import ProducerStateError, ProducerStateManager
from kbroker.txn.recovery import load_producer_state, take_snapshot
from kbroker.txn.snapshot import (
    Snapshot,
    SnapshotError,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    snapshot_path,
    write_snapshot,
)
from kbroker.txn.states import ProducerStates
from protocol.errors import ErrorCode
from protocol.record_builder import build_control_batch
from protocol.records import ControlRecordType, RecordBatch
from tests.log.batches import make_batch
from tests.txn.batches import idempotent_batch

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)
NOW = 1_000_000


def clock() -> int:
    return NOW


def states(**kwargs: int) -> ProducerStates:
    return ProducerStates(clock=clock, **kwargs)


def produce(log: PartitionLog, state: ProducerStateManager, pid: int, epoch: int, seq: int, records: int = 2) -> int:
    """What the Produce handler does; returns the base offset."""
    data = idempotent_batch(pid, epoch, seq, records, timestamp=NOW - 10)
    batch = RecordBatch(data)
    duplicate = state.check(batch)
    if duplicate is not None:
        return duplicate.base_offset
    info = log.append(data)
    state.record(batch, info.base_offset, info.max_timestamp)
    return info.base_offset


def summary(state: ProducerStateManager) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    return {
        pid: (e.producer_epoch, [(b.last_seq, b.last_offset, b.offset_delta, b.timestamp) for b in e.batches])
        for pid, e in sorted(state.producers.items())
    }


def random_traffic(log: PartitionLog, state: ProducerStateManager, batches: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    sequences: dict[int, int] = {}
    for i in range(batches):
        if rng.random() < 0.2:
            log.append(make_batch(1, 20, NOW - 10, seed=i))
            continue
        pid = rng.randrange(6)
        records = rng.randrange(1, 4)
        seq = sequences.get(pid, 0)
        produce(log, state, pid, 0, seq, records)
        sequences[pid] = seq + records


def reopen(log: PartitionLog, clean: bool = True) -> PartitionLog:
    log.close()
    return PartitionLog.open(log.directory, SMALL, clean_shutdown=clean)


@pytest.fixture
def log(tmp_path: Path):
    partition_log = PartitionLog.open(tmp_path / "orders-0", SMALL)
    yield partition_log
    partition_log.close()


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


def test_rebuild_from_log_alone_matches_live_state(log: PartitionLog) -> None:
    live = states().for_log(log)
    random_traffic(log, live, 120)
    for _, path in list_snapshots(log.directory):
        path.unlink()
    log = reopen(log, clean=False)
    rebuilt = ProducerStateManager(clock=clock)
    stats = load_producer_state(log, rebuilt)
    assert stats.snapshot_offset == -1 and stats.batches_scanned > 50
    assert summary(rebuilt) == summary(live)
    log.close()


def test_restart_uses_the_snapshot_and_scans_only_the_tail(log: PartitionLog) -> None:
    live = states().for_log(log)
    random_traffic(log, live, 80)
    take_snapshot(log, live)
    snapshot_offset = log.log_end_offset
    produce(log, live, 1, 0, live.producers[1].last_seq + 1)
    produce(log, live, 3, 0, live.producers[3].last_seq + 1)
    log = reopen(log)
    rebuilt = ProducerStateManager(clock=clock)
    stats = load_producer_state(log, rebuilt)
    assert stats.snapshot_offset == snapshot_offset
    assert stats.batches_scanned == 2
    assert summary(rebuilt) == summary(live)
    log.close()


def test_rebuilt_state_detects_duplicates_and_gaps(log: PartitionLog) -> None:
    live = states().for_log(log)
    bases = [produce(log, live, 7, 0, seq * 2) for seq in range(8)]
    log = reopen(log, clean=False)
    rebuilt = states().for_log(log)
    assert [produce(log, rebuilt, 7, 0, seq * 2) for seq in range(3, 8)] == bases[3:]
    end = log.log_end_offset
    with pytest.raises(ProducerStateError) as info:
        produce(log, rebuilt, 7, 0, 17)
    assert info.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, rebuilt, 7, 0, 16) == end
    log.close()


def test_segment_roll_takes_a_snapshot_and_keeps_two(log: PartitionLog) -> None:
    registry = states()
    live = registry.for_log(log)
    for seq in range(100):
        produce(log, live, 1, 0, seq * 2)
    assert len(log.segments) > 3
    snapshots = list_snapshots(log.directory)
    assert len(snapshots) == 2
    assert snapshots[0][0] > log.segments[-2].base_offset


def test_snapshot_beyond_the_log_end_is_discarded(log: PartitionLog) -> None:
    live = states().for_log(log)
    for seq in range(5):
        produce(log, live, 1, 0, seq * 2)
    ghost = ProducerStateEntry(99, 0)
    ghost.add_batch(0, 0, 500, 0, NOW)
    write_snapshot(log.directory, Snapshot(501, 500, 1234, [ghost]))
    log = reopen(log)
    rebuilt = ProducerStateManager(clock=clock)
    load_producer_state(log, rebuilt)
    assert 99 not in rebuilt.producers and summary(rebuilt) == summary(live)
    assert not snapshot_path(log.directory, 501).exists()
    log.close()


def test_snapshot_of_other_data_at_the_same_offsets_is_discarded(tmp_path: Path) -> None:
    """A log cut by recovery and refilled past a snapshot's offset must not trust that snapshot."""
    first = PartitionLog.open(tmp_path / "a-0", SMALL)
    state = states().for_log(first)
    for seq in range(4):
        produce(first, state, 1, 0, seq * 2)
    take_snapshot(first, state)
    snapshot = list_snapshots(first.directory)[0][1]
    first.close()
    second = PartitionLog.open(tmp_path / "b-0", SMALL)
    other = ProducerStateManager(clock=clock)
    for seq in range(4):
        produce(second, other, 2, 0, seq * 2)
    shutil.copy(snapshot, second.directory / snapshot.name)
    rebuilt = ProducerStateManager(clock=clock)
    stats = load_producer_state(second, rebuilt)
    assert stats.snapshot_offset == -1
    assert set(rebuilt.producers) == {2}
    second.close()


def test_corrupt_snapshot_falls_back_to_an_older_one(log: PartitionLog) -> None:
    live = states().for_log(log)
    produce(log, live, 1, 0, 0)
    take_snapshot(log, live)
    older = log.log_end_offset
    produce(log, live, 1, 0, 2)
    newest = take_snapshot(log, live)
    newest.write_bytes(newest.read_bytes()[:-5])
    log = reopen(log)
    rebuilt = ProducerStateManager(clock=clock)
    stats = load_producer_state(log, rebuilt)
    assert stats.snapshot_offset == older and stats.batches_scanned == 1
    assert summary(rebuilt) == summary(live)
    log.close()


def test_load_drops_expired_snapshot_entries_and_scanned_ones_at_the_next_check(log: PartitionLog) -> None:
    live = states().for_log(log)
    log.append(idempotent_batch(1, 0, 0, timestamp=NOW - 5_000))
    produce(log, live, 2, 0, 0)
    take_snapshot(log, live)
    log.append(idempotent_batch(3, 0, 0, timestamp=NOW - 5_000))
    log = reopen(log)
    rebuilt = ProducerStateManager(expiration_ms=1_000, clock=clock)
    load_producer_state(log, rebuilt)
    assert set(rebuilt.producers) == {2, 3}
    assert rebuilt.remove_expired() == 1 and set(rebuilt.producers) == {2}
    log.close()


def test_rebuild_tracks_transactions_from_headers(log: PartitionLog) -> None:
    log.append(bytearray(idempotent_batch(4, 0, 0, 2)))
    data = bytearray(idempotent_batch(5, 0, 0, 2))
    data[21 + 1] |= 0x10  # transactional bit (the CRC is not checked on load)
    log.append(data)
    log.append(bytearray(idempotent_batch(6, 1, 0, 1)))
    log.append(
        bytearray(
            build_control_batch(
                ControlRecordType.COMMIT, producer_id=6, producer_epoch=2, coordinator_epoch=0, timestamp=NOW
            )
        )
    )
    log = reopen(log)
    rebuilt = ProducerStateManager(clock=clock)
    load_producer_state(log, rebuilt)
    assert rebuilt.producers[5].txn_first_offset == 2
    assert rebuilt.producers[6].txn_first_offset == -1 and rebuilt.producers[6].producer_epoch == 2
    assert rebuilt.producers[4].txn_first_offset == -1
    log.close()


def test_registry_snapshots_after_a_scan_and_loads_once(log: PartitionLog) -> None:
    for seq in range(10):
        log.append(idempotent_batch(1, 0, seq))
    registry = states()
    state = registry.for_log(log)
    assert registry.for_log(log) is state
    assert [offset for offset, _ in list_snapshots(log.directory)] == [10]
    assert state.producers[1].last_seq == 9


def test_registry_expires_every_loaded_partition_and_snapshots_all(tmp_path: Path) -> None:
    logs = [PartitionLog.open(tmp_path / f"t-{i}", SMALL) for i in range(2)]
    registry = ProducerStates(expiration_ms=1_000, clock=clock)
    for i, partition_log in enumerate(logs):
        state = registry.for_log(partition_log)
        partition_log.append(idempotent_batch(10 + i, 0, 0, timestamp=NOW - 5_000))
        state.record(RecordBatch(idempotent_batch(10 + i, 0, 0, timestamp=NOW - 5_000)), 0)
        produce(partition_log, state, 20 + i, 0, 0)
    assert registry.remove_expired() == 2
    assert [set(m.producers) for _, m in sorted(registry.loaded(), key=lambda x: x[0].partition)] == [{20}, {21}]
    registry.snapshot_all()
    for partition_log in logs:
        assert [offset for offset, _ in list_snapshots(partition_log.directory)] == [partition_log.log_end_offset]
        partition_log.close()


def test_duty_snapshots_moved_logs_and_expires_until_cancelled(log: PartitionLog) -> None:
    import asyncio

    now = [NOW]
    registry = ProducerStates(
        expiration_ms=1_000, expiration_check_interval_ms=50, snapshot_interval_ms=10, clock=lambda: now[0]
    )
    state = registry.for_log(log)
    state.apply(1, 0, 0, 0, 0, NOW - 5_000)
    log.append(make_batch(3))  # not idempotent: no record(), only the duty snapshots it
    now[0] += 100

    async def scenario() -> None:
        duty = asyncio.create_task(registry.run())
        await asyncio.sleep(0.1)
        duty.cancel()
        with pytest.raises(asyncio.CancelledError):
            await duty

    asyncio.run(scenario())
    assert len(state) == 0
    assert [offset for offset, _ in list_snapshots(log.directory)] == [3]


def test_preload_loads_and_snapshots_every_partition(tmp_path: Path) -> None:
    logs = [PartitionLog.open(tmp_path / f"t-{i}", SMALL) for i in range(3)]
    logs[0].append(idempotent_batch(5, 0, 0, timestamp=NOW))
    logs[1].append(make_batch(2))
    registry = states()
    registry.preload(logs)
    assert len(registry.loaded()) == 3
    assert set(registry.for_log(logs[0]).producers) == {5}
    assert [[o for o, _ in list_snapshots(lg.directory)] for lg in logs] == [[1], [2], []]
    for partition_log in logs:
        partition_log.close()


def test_snapshot_after_many_batches_and_after_the_interval(log: PartitionLog, monkeypatch: pytest.MonkeyPatch) -> None:
    import kbroker.txn.states as states_module

    monkeypatch.setattr(states_module, "SNAPSHOT_EVERY_BATCHES", 10)
    now = [NOW]
    registry = ProducerStates(snapshot_interval_ms=1_000, clock=lambda: now[0])
    state = registry.for_log(log)
    for seq in range(9):
        produce(log, state, 1, 0, seq * 2, records=2)
    assert list_snapshots(log.directory) == []
    produce(log, state, 1, 0, 18)
    assert [offset for offset, _ in list_snapshots(log.directory)] == [20]
    produce(log, state, 1, 0, 20)
    now[0] += 1_000
    produce(log, state, 1, 0, 22)
    assert [offset for offset, _ in list_snapshots(log.directory)] == [24, 20]


def test_a_failing_snapshot_never_fails_the_record(log: PartitionLog, monkeypatch: pytest.MonkeyPatch) -> None:
    import kbroker.txn.states as states_module
    from kbroker.log import KafkaStorageError

    def broken(*_: object) -> None:
        raise KafkaStorageError("disk gone")

    monkeypatch.setattr(states_module, "take_snapshot", broken)
    now = [NOW]
    registry = ProducerStates(snapshot_interval_ms=1, clock=lambda: now[0])
    state = registry.for_log(log)
    now[0] += 10
    assert produce(log, state, 1, 0, 0) == 0
    assert state.producers[1].last_seq == 1
