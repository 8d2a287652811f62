import asyncio
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbroker.log import flush as flush_module
from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError, LogOfflineError, OffsetOutOfRangeError, RecordTooLargeError
from kbroker.log.partition_log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, PartitionLog
from protocol.errors import InvalidRecordError
from protocol.records import RecordBatch
from tests.log.batches import batches_of, make_batch

SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=200)


@pytest.fixture
def log(tmp_path):
    partition_log = PartitionLog.open(tmp_path / "topic-0", SMALL)
    yield partition_log
    if not partition_log.flush_in_flight:
        partition_log.close()


def fill(log, count, records=3, value_size=40, timestamp=10_000):
    """Append `count` batches; batch i holds offsets 3i..3i+2 with timestamps timestamp + 10i + (0..2)."""
    return [log.append(make_batch(records, value_size, timestamp + 10 * i, seed=i)) for i in range(count)]


def test_append_assigns_dense_offsets_and_rewrites_headers(log):
    buffer = make_batch(2) + make_batch(5)
    info = log.append(buffer, leader_epoch=7)
    assert (info.base_offset, info.last_offset, info.log_append_time) == (0, 6, -1)
    stored = batches_of(log.read(0, 10_000).read())
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in stored] == [(0, 1, 7), (2, 6, 7)]
    assert all(b.is_valid() for b in stored)
    assert log.append(make_batch(1)).base_offset == 7
    assert log.log_end_offset == log.high_watermark == 8


def test_read_starts_at_the_batch_holding_the_offset(log):
    fill(log, 30)
    assert len(log.segments) > 1
    for offset in range(log.log_end_offset):
        result = log.read(offset, 1)
        (batch,) = batches_of(result.read())
        assert batch.base_offset <= offset <= batch.last_offset
        assert result.first_offset == batch.base_offset


def test_read_respects_max_bytes_at_batch_boundaries(log):
    fill(log, 10)
    size = batches_of(log.read(0, 1).read())[0].size
    for limit in (size, size + 1, 3 * size - 1, 3 * size):
        batches = batches_of(log.read(0, limit).read())
        assert len(batches) == max(1, limit // size)
    assert log.read(0, 1, min_one_batch=False).region is None


def test_read_stays_in_one_segment_and_moves_on(log):
    fill(log, 30)
    second = log.segments[1].base_offset
    result = log.read(0, 10**9)
    assert batches_of(result.read())[-1].next_offset == second
    assert log.read(second, 10**9).first_offset == second


def test_read_bounds(log):
    fill(log, 3)
    assert log.read(9, 100).region is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    limited = log.read(0, 10**6, max_offset=6)
    assert [b.base_offset for b in batches_of(limited.read())] == [0, 3]
    assert log.read(6, 10**6, max_offset=6).region is None


def test_roll_on_segment_bytes_ms_and_index(tmp_path):
    log = PartitionLog.open(
        tmp_path / "t-0",
        LogConfig(segment_bytes=10_000, segment_ms=1000, index_interval_bytes=0, segment_index_bytes=8 * 4),
    )
    log.append(make_batch(), now=0)
    log.append(make_batch(), now=500)
    assert len(log.segments) == 1
    log.append(make_batch(), now=1501)  # segment.ms
    assert [s.base_offset for s in log.segments] == [0, 2]
    for _ in range(4):
        log.append(make_batch(), now=1600)  # the 4-entry index fills
    assert [s.base_offset for s in log.segments] == [0, 2, 6]
    log.close()


def test_oversized_and_malformed_batches(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(max_message_bytes=200))
    with pytest.raises(RecordTooLargeError):
        log.append(make_batch(1, 500))
    with pytest.raises(InvalidRecordError):
        log.append(make_batch()[:-3])
    with pytest.raises(InvalidRecordError):
        log.append(bytearray())
    assert log.log_end_offset == 0 and log.size_in_bytes == 0
    log.close()


def test_log_append_time(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(make_batch(3, timestamp=5), now=123_456)
    assert info.log_append_time == 123_456
    (batch,) = batches_of(log.read(0, 1000).read())
    assert batch.is_log_append_time and batch.max_timestamp == 123_456 and batch.is_valid()
    assert log.fetch_offset_by_timestamp(100_000) == (123_456, 0)
    log.close()


def test_offsets_by_timestamp(log):
    fill(log, 30)  # record at offset 3i + k has timestamp 10_000 + 10i + k
    assert log.fetch_offset_by_timestamp(0) == (10_000, 0)
    assert log.fetch_offset_by_timestamp(10_001) == (10_001, 1)
    assert log.fetch_offset_by_timestamp(10_003) == (10_010, 3)
    assert log.fetch_offset_by_timestamp(10_252) == (10_252, 77)
    assert log.fetch_offset_by_timestamp(10_293) is None
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 0)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (-1, 90)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (10_292, 89)
    log.delete_records(50)
    assert log.fetch_offset_by_timestamp(0) == (10_162, 50)
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 50)


def test_offsets_by_timestamp_unordered(log):
    for ts in (500, 100, 900, 300):
        log.append(make_batch(1, timestamp=ts))
    assert log.fetch_offset_by_timestamp(200) == (500, 0)
    assert log.fetch_offset_by_timestamp(600) == (900, 2)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (900, 2)


def test_delete_records(log):
    fill(log, 30)
    assert log.delete_records(40) == 40
    assert log.delete_records(10) == 40
    with pytest.raises(OffsetOutOfRangeError):
        log.read(39, 100)
    assert log.read(40, 1).first_offset == 39  # the batch holding 40
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(91)
    assert log.delete_records(-1) == 90


def test_retention_by_bytes_time_and_log_start(log):
    fill(log, 60)
    sizes = [s.size for s in log.segments]
    assert len(sizes) >= 4
    log.update_config(LogConfig(segment_bytes=4000, index_interval_bytes=200, retention_bytes=sum(sizes) - sizes[0]))
    assert log.delete_old_segments(now=20_000) == sizes[0]  # records are not 14 days old at 20_000
    assert log.log_start_offset == log.segments[0].base_offset > 0
    # time: everything is older than retention.ms, but the active segment stays
    log.update_config(LogConfig(segment_bytes=4000, retention_ms=1000))
    log.delete_old_segments(now=10_000 + 5000)
    assert len(log.segments) == 1 and log.log_start_offset == log.segments[0].base_offset
    assert log.read(log.log_start_offset, 10**6).region is not None


def test_delete_records_makes_segments_deletable(log):
    fill(log, 60)
    third = log.segments[2].base_offset
    log.delete_records(third + 1)
    log.delete_old_segments(now=20_000)
    assert log.segments[0].base_offset == third and log.log_start_offset == third + 1


def test_deleted_segment_stays_readable_until_purged(log, tmp_path):
    fill(log, 30)
    region = log.read(0, 100).region
    expected = region.read()
    log.delete_records(log.segments[1].base_offset)
    log.delete_old_segments(now=20_000)
    assert sorted(p.name for p in (tmp_path / "topic-0").glob("*.deleted"))[0].endswith(".index.deleted")
    assert region.read() == expected
    assert log.purge_deleted_segments(now=20_000 + 59_999) == 0
    assert log.purge_deleted_segments(now=20_000 + 60_000) == 1
    assert not list((tmp_path / "topic-0").glob("*.deleted"))


def test_failed_write_leaves_nothing_readable(log, monkeypatch):
    fill(log, 2)
    size = log.size_in_bytes
    real_pwrite = os.pwrite

    def half_then_full(fd, data, position):
        if len(data) > 20:
            real_pwrite(fd, bytes(data)[:20], position)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, position)

    monkeypatch.setattr(os, "pwrite", half_then_full)
    with pytest.raises(KafkaStorageError, match="No space"):
        log.append(make_batch())
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    assert log.log_end_offset == 6 and log.size_in_bytes == size
    assert os.fstat(log.active_segment.fd).st_size == size
    assert log.append(make_batch()).base_offset == 6
    assert [b.base_offset for b in batches_of(log.read(0, 10**6).read())] == [0, 3, 6]


def test_group_commit_shares_fsyncs(tmp_path, monkeypatch):
    runs = []
    real_run = flush_module.FlushPlan.run

    def counting_run(plan):
        runs.append(plan.target_offset)
        real_run(plan)

    monkeypatch.setattr(flush_module.FlushPlan, "run", counting_run)
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(fsync_before_ack=True))

    async def scenario():
        infos = [log.append(make_batch()) for _ in range(20)]
        await asyncio.gather(*(log.wait_for_ack(info, acks=-1) for info in infos))
        assert runs == [20]
        first = asyncio.ensure_future(log.wait_for_ack(log.append(make_batch()), acks=-1))
        while len(runs) < 2:  # its flush is now in flight
            await asyncio.sleep(0.001)
        late = [log.append(make_batch()) for _ in range(5)]
        await asyncio.gather(first, *(log.wait_for_ack(info, acks=-1) for info in late))
        assert runs == [20, 21, 26]
        await log.wait_for_ack(log.append(make_batch()), acks=1)  # acks=1: no fsync
        assert runs == [20, 21, 26] and log.recovery_point == 26

    asyncio.run(scenario())
    log.close()


def test_flush_messages_forces_a_flush(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(flush_messages=3))

    async def scenario():
        assert not log.append(make_batch(2)).flush_required
        info = log.append(make_batch(2))
        assert info.flush_required
        await log.wait_for_ack(info, acks=1)
        assert log.recovery_point == 4

    asyncio.run(scenario())
    log.close()


def test_failed_fsync_takes_the_log_offline(tmp_path, monkeypatch):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(fsync_before_ack=True))

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    async def scenario():
        info = log.append(make_batch())
        monkeypatch.setattr(os, "fdatasync", broken)
        with pytest.raises(KafkaStorageError, match="Input/output"):
            await log.wait_for_ack(info, acks=-1)
        assert log.recovery_point == 0 and log.offline
        monkeypatch.undo()
        with pytest.raises(LogOfflineError):  # a failed fsync is never retried
            await log.wait_for_ack(info, acks=-1)
        with pytest.raises(LogOfflineError):
            log.append(make_batch())
        assert log.read(0, 100).first_offset == 0  # reads go on

    asyncio.run(scenario())
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig())
    assert reopened.offline is None and reopened.log_end_offset == 1
    reopened.close()


def test_roll_flushes_the_finished_segment_in_background(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)

    async def scenario():
        fill(log, 30)
        await log.idle()
        assert log.recovery_point >= log.active_segment.base_offset
        assert all(s.indexes_durable for s in log.segments[:-1])

    asyncio.run(scenario())
    log.close()


def test_stored_bytes_are_the_clients(log):
    original = make_batch(4, 100, seed=3)
    sent = bytearray(original)
    log.append(sent, leader_epoch=2)
    stored = log.read(0, 10**6).read()
    assert stored == bytes(sent)
    assert stored[17:] == bytes(original[17:])  # everything from the CRC on is untouched
    assert RecordBatch(stored).is_valid()


def test_ack_waits_for_an_fsync_covering_the_batch(tmp_path, monkeypatch):
    synced: dict[int, int] = {}  # inode -> file size when fdatasync returned
    real = os.fdatasync

    def recording(fd):
        real(fd)
        status = os.fstat(fd)
        synced[status.st_ino] = max(synced.get(status.st_ino, 0), status.st_size)

    monkeypatch.setattr(os, "fdatasync", recording)
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(fsync_before_ack=True, segment_bytes=3000))

    async def scenario():
        for i in range(40):
            info = log.append(make_batch(2, 100, seed=i))
            segment = log.active_segment
            await log.wait_for_ack(info, acks=-1)
            assert synced.get(os.fstat(segment.fd).st_ino, 0) >= segment.size
        assert len(log.segments) > 3

    asyncio.run(scenario())
    log.close()


def test_corrupt_log_on_read_keeps_the_log_end(log):
    fill(log, 10)
    path = log.active_segment.log_path
    data = bytearray(path.read_bytes())
    data[16] = 7  # the first batch's magic
    path.write_bytes(data)
    log.active_segment.offset_index.reset()  # force a walk from the start
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    assert log.log_end_offset == 30
    assert log.append(make_batch()).base_offset == 30


def test_real_short_write_and_efbig(tmp_path):
    """A kernel-refused write (RLIMIT_FSIZE, in a child process) leaves only whole batches."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.log.disk_full_child", str(tmp_path / "t-0")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "File too large" in done.stdout and "OK" in done.stdout


def test_a_segment_flushed_while_active_gets_durable_indexes_after_its_roll(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    fill(log, 10)
    log.flush_sync()
    first = log.active_segment
    log.roll()
    assert log.recovery_point == first.next_offset and not first.indexes_durable
    log.flush_sync()
    assert first.indexes_durable
    assert first.offset_index.path.read_bytes() == first.offset_index.encode_all()
    log.close()


def test_a_write_that_cannot_be_cut_back_takes_the_log_offline(log, monkeypatch):
    fill(log, 2)

    def failing(*args):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "pwrite", failing)
    monkeypatch.setattr(os, "ftruncate", failing)
    with pytest.raises(LogOfflineError, match="cut failed"):
        log.append(make_batch())
    monkeypatch.undo()
    with pytest.raises(LogOfflineError):
        log.append(make_batch())
    assert log.log_end_offset == 6


def test_batches_iterates_everything_in_order(log):
    fill(log, 30)
    log.delete_records(4)
    assert [b.base_offset for b in log.batches()] == list(range(3, 90, 3))
    assert [b.base_offset for b in log.batches(80, chunk_bytes=10)] == [78, 81, 84, 87]
    assert all(b.is_valid() for b in log.batches())


def test_append_accepts_a_writable_view(log):
    request = bytearray(b"header") + make_batch(2)
    info = log.append(memoryview(request)[6:], leader_epoch=3)
    assert info.base_offset == 0 and RecordBatch(request, 6).partition_leader_epoch == 3
    assert log.read(0, 1000).read() == bytes(request[6:])
