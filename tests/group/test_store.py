"""__consumer_offsets: record layout, replay after clean and unclean stops, tombstones, snapshots."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.group import records
from kbroker.group.config import GroupConfig
from kbroker.group.group import CommittedOffset
from kbroker.group.offsets import GroupRecord
from kbroker.group.runtime import GroupRuntime
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.log import LogConfig, LogManager
from kbroker.log.coordinator_log import partition_for
from protocol.errors import ErrorCode
from tests.group.fakes import FakeClock

CONFIG = GroupConfig(offsets_topic_partitions=4)


def committed(value: int, metadata: str = "", epoch: int = -1, ts: int = 1000) -> CommittedOffset:
    return CommittedOffset(value, epoch, metadata, ts)


def open_runtime(data_dir: Path, **kwargs: object) -> tuple[LogManager, GroupRuntime]:
    logs = LogManager(data_dir, LogConfig())
    logs.startup()
    runtime = GroupRuntime(CONFIG, logs, clock=FakeClock(), **kwargs)  # type: ignore[arg-type]
    runtime.load()
    return logs, runtime


def test_record_layout_round_trips() -> None:
    key = records.offset_key("grp", ("topic", 7))
    assert key[:2] == b"\x00\x01"
    parsed = records.parse_key(key)
    assert isinstance(parsed, records.OffsetKey) and parsed.group_id == "grp" and parsed.tp == ("topic", 7)
    value = committed(42, "meta-é", 3, 99)
    assert records.parse_offset_value(records.offset_value(value)) == value
    group = GroupRecord("consumer", 5, "range", None, 1234)
    assert records.parse_group_value(records.group_value(group)) == group
    assert records.parse_key(records.group_key("grp")) == records.GroupKey("grp")
    with pytest.raises(records.RecordFormatError):
        records.parse_key(b"\x00\x09abc")
    with pytest.raises(records.RecordFormatError):
        records.parse_offset_value(b"\x00\x03\x00")


def test_partition_matches_kafkas_hash() -> None:
    assert partition_for("test", 50) == 3556498 % 50  # Java: "test".hashCode() == 3556498
    assert partition_for("", 50) == 0
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0
    assert 0 <= partition_for("ünïcode-grøup", 7) < 7


def commit(runtime: GroupRuntime, group: str, offsets: dict[tuple[str, int], CommittedOffset]) -> ErrorCode:
    return asyncio.run(runtime.commit(group, -1, "", None, offsets))


def test_offsets_survive_a_clean_stop(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        assert await runtime.commit("a", -1, "", None, {("t", 0): committed(5, "x", 2)}) is ErrorCode.NONE
        assert await runtime.commit("a", -1, "", None, {("t", 0): committed(9), ("t", 1): committed(1)}) == 0
        assert await runtime.commit("b", -1, "", None, {("u", 3): committed(7)}) is ErrorCode.NONE
        await logs.shutdown()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert runtime.fetch("a", None) == {("t", 0): committed(9), ("t", 1): committed(1)}
    assert runtime.fetch("b", [("u", 3)]) == {("u", 3): committed(7)}
    assert logs.topic(OFFSETS_TOPIC) is not None and logs.topic(OFFSETS_TOPIC).partitions == 4  # type: ignore[union-attr]
    logs.abort()


def test_offsets_survive_a_crash(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        for i in range(20):
            assert await runtime.commit("g", -1, "", None, {("t", i % 3): committed(i)}) is ErrorCode.NONE
        logs.abort()  # no flush, no clean-shutdown marker: the next start recovers

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert not logs.had_clean_shutdown
    assert runtime.fetch("g", None) == {("t", 0): committed(18), ("t", 1): committed(19), ("t", 2): committed(17)}
    logs.abort()


def test_deleted_groups_and_offsets_stay_deleted(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        await runtime.commit("gone", -1, "", None, {("t", 0): committed(1)})
        await runtime.commit("kept", -1, "", None, {("t", 0): committed(2), ("t", 1): committed(3)})
        assert await runtime.delete_groups(["gone", "never"]) == {
            "gone": ErrorCode.NONE,
            "never": ErrorCode.GROUP_ID_NOT_FOUND,
        }
        assert await runtime.delete_offsets("kept", [("t", 1)]) == (ErrorCode.NONE, {("t", 1): ErrorCode.NONE})
        logs.abort()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert "gone" not in runtime.groups
    assert runtime.fetch("kept", None) == {("t", 0): committed(2)}
    logs.abort()


def test_expired_offsets_are_tombstoned(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        logs.create_topic("t", 1)
        clock = runtime.clock
        assert isinstance(clock, FakeClock)
        await runtime.commit("old", -1, "", None, {("t", 0): committed(1, ts=clock.now)})
        clock.now += CONFIG.offsets_retention_ms
        await runtime.commit("new", -1, "", None, {("t", 0): committed(2, ts=clock.now)})
        assert runtime.expire_offsets() == 1
        await logs.shutdown()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert set(runtime.groups) == {"new"}
    logs.abort()


def test_group_records_keep_generation_and_protocol_type(tmp_path: Path) -> None:
    from kbroker.group.coordinator import JoinRequest

    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        request = JoinRequest("g", "", None, "consumer", [("range", b"")], 10_000, 10_000, False)
        result = await runtime.join(request)
        assert result.generation_id == 1
        runtime.leave("g", [(result.member_id, None)])
        await logs.shutdown()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    group = runtime.groups["g"]
    assert group.generation_id == 2 and group.protocol_type == "consumer"
    logs.abort()


def test_snapshot_bounds_the_log_and_replays_the_same_state(tmp_path: Path) -> None:
    async def first() -> tuple[int, int]:
        logs, runtime = open_runtime(tmp_path, snapshot_min_bytes=20_000)
        for i in range(2000):
            group = f"g{i % 5}"
            assert await runtime.commit(group, -1, "", None, {("t", i % 4): committed(i)}) is ErrorCode.NONE
        await asyncio.gather(*runtime._background)
        partition = runtime.store.partition_for("g0")
        partition_log = logs.get_log(OFFSETS_TOPIC, partition)
        assert partition_log is not None
        assert partition_log.log_start_offset > 0
        result = partition_log.log_start_offset, partition_log.size_in_bytes
        await logs.shutdown()
        return result

    start, size = asyncio.run(first())
    assert size < 3 * 20_000 + 10_000
    logs, runtime = open_runtime(tmp_path)
    for g in range(5):
        expected = {("t", p): committed(max(i for i in range(2000) if i % 5 == g and i % 4 == p)) for p in range(4)}
        assert runtime.fetch(f"g{g}", None) == expected
    logs.abort()


def test_snapshot_then_crash_replays_the_same_state(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path, snapshot_min_bytes=10_000)
        for i in range(600):
            await runtime.commit("g", -1, "", None, {("t", i % 3): committed(i)})
        await asyncio.gather(*runtime._background)
        await runtime.commit("g", -1, "", None, {("t", 0): committed(10_000)})
        logs.abort()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert runtime.fetch("g", None) == {("t", 0): committed(10_000), ("t", 1): committed(598), ("t", 2): committed(599)}
    logs.abort()


def test_offsets_topic_created_by_someone_else_is_adopted(tmp_path: Path) -> None:
    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        logs.create_topic(OFFSETS_TOPIC, 1)  # as a client's Metadata auto-creation would
        assert await runtime.commit("g", -1, "", None, {("t", 0): committed(3)}) is ErrorCode.NONE
        assert runtime.store.partitions == 1
        await logs.shutdown()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert runtime.store.partitions == 1 and runtime.fetch("g", None) == {("t", 0): committed(3)}
    logs.abort()


def test_replay_skips_superseded_records_but_keeps_transactions_in_order(tmp_path: Path) -> None:
    from protocol.record_builder import build_control_batch
    from protocol.records import ControlRecordType

    def key(tp: tuple[str, int]) -> bytes:
        return records.offset_key("g", tp)

    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        store = runtime.store
        store.append("g", [(key(("t", 0)), records.offset_value(committed(1)))])
        store.append("g", [(key(("t", 0)), records.offset_value(committed(5)))], producer_id=7, producer_epoch=0)
        store.append("g", [(key(("t", 0)), records.offset_value(committed(2)))])
        store.append("g", [(key(("t", 1)), records.offset_value(committed(9)))])
        store.append("g", [(key(("t", 1)), None)])
        partition_log = logs.get_log(OFFSETS_TOPIC, store.partition_for("g"))
        assert partition_log is not None
        marker = build_control_batch(
            ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=1
        )
        partition_log.append(bytearray(marker))
        store.append("g", [(key(("t", 2)), records.offset_value(committed(3)))], producer_id=8, producer_epoch=0)
        await logs.shutdown()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    # the committed transaction is published at its marker; producer 8's is still open
    assert runtime.fetch("g", None) == {("t", 0): committed(5)}
    assert runtime.has_pending_txn_offset("g", ("t", 2))
    logs.abort()


def test_crash_in_the_middle_of_a_snapshot_replays_the_same_state(tmp_path: Path) -> None:
    class Crash(Exception):
        pass

    async def first() -> None:
        logs, runtime = open_runtime(tmp_path)
        for i in range(50):
            await runtime.commit("g", -1, "", None, {("t", i % 3): committed(i)})
        await runtime.delete_offsets("g", [("t", 2)])
        partition = runtime.store.partition_for("g")
        partition_log = logs.get_log(OFFSETS_TOPIC, partition)
        assert partition_log is not None

        def crash(offset: int) -> int:
            raise Crash  # the snapshot is written and fsynced; the log start has not moved yet

        partition_log.delete_records = crash  # type: ignore[method-assign]
        with pytest.raises(Crash):
            await runtime.store.snapshot(partition, runtime.live_entries(partition))
        logs.abort()

    asyncio.run(first())
    logs, runtime = open_runtime(tmp_path)
    assert runtime.fetch("g", None) == {("t", 0): committed(48), ("t", 1): committed(49)}
    logs.abort()
