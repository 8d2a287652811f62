"""ShareRuntime on a real LogManager and a fake clock: initialisation at the high watermark, lock expiry and
session timeouts through `tick`, durable state reloaded by a new runtime (a restart)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from kbroker.config_repository import ConfigRepository
from kbroker.log import AppendOrigin, LogConfig, LogManager
from kbroker.share.coordinator import HeartbeatRequest, ShareCoordinatorConfig
from kbroker.share.partition import AcknowledgementBatch, AcknowledgeType, RecordState, SharePartitionConfig
from kbroker.share.runtime import ShareRuntime
from kbroker.waiters import FetchWaiters
from protocol.record_builder import SimpleRecord, build_record_batch
from tests.group.fakes import FakeClock


@dataclass(eq=False)
class BrokerParts:
    """What the runtime uses of the Broker: its logs, its fetch waiters and its group configs."""

    logs: LogManager
    fetch_waiters: FetchWaiters = field(default_factory=FetchWaiters)
    dynamic_configs: ConfigRepository = field(default_factory=ConfigRepository)


def runtime_on(data_dir: Path, clock: FakeClock) -> tuple[LogManager, ShareRuntime]:
    logs = LogManager(data_dir, LogConfig())
    logs.startup()
    runtime = ShareRuntime(
        BrokerParts(logs),  # type: ignore[arg-type]
        ShareCoordinatorConfig(session_timeout_ms=10_000),
        SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=100),
        state_partitions=2,
        clock=clock,
    )
    runtime.load()
    return logs, runtime


def append(logs: LogManager, topic: str, count: int) -> None:
    partition = logs.get_partition(topic, 0)
    assert partition is not None
    records = [SimpleRecord(b"k", b"v%d" % i, (), 1) for i in range(count)]
    partition.append_as_leader(bytearray(build_record_batch(records)), AppendOrigin.COORDINATOR)


def test_share_partitions_start_at_the_high_watermark_and_locks_expire_on_tick(tmp_path: Path) -> None:
    clock = FakeClock()
    logs, runtime = runtime_on(tmp_path, clock)
    logs.create_topic("t", 1)
    append(logs, "t", 5)  # before the group: never delivered (share.auto.offset.reset=latest)

    async def scenario() -> None:
        joined = runtime.heartbeat(HeartbeatRequest("g", "a", 0, None, ("t",)))
        assert joined.assignment == {"t": (0,)}
        partition = runtime.share_partition("g", "t", 0)
        assert partition is not None and partition.start_offset == 5
        append(logs, "t", 3)
        ranges = partition.acquire("a", clock(), 10, 8)
        assert [(r.first_offset, r.last_offset) for r in ranges] == [(5, 7)]
        clock.now += 1000
        runtime.tick()
        assert partition.state_of(5) == (RecordState.AVAILABLE, 1)
        partition.acquire("a", clock(), 1, 8)  # offset 5 again, delivery 2
        clock.now += 10_000  # the member stopped heartbeating: removed, its record released
        runtime.tick()
        assert runtime.coordinator.groups["g"].members == {}
        assert partition.state_of(5) == (RecordState.AVAILABLE, 2)

    asyncio.run(scenario())


def test_acknowledged_state_survives_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    logs, runtime = runtime_on(tmp_path, clock)
    logs.create_topic("t", 1)

    async def consume() -> None:
        runtime.heartbeat(HeartbeatRequest("g", "a", 0, None, ("t",)))
        append(logs, "t", 6)
        partition = runtime.share_partition("g", "t", 0)
        assert partition is not None
        partition.acquire("a", clock(), 6, 6)
        batch = AcknowledgementBatch(
            0, 3, (AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)
        )
        assert partition.acknowledge("a", [batch], clock()) == 0
        runtime.after_acknowledge("g", "t", 0)
        await runtime.persist("g")

    asyncio.run(consume())
    logs.abort()  # kill -9: offsets 4-5 were acquired, never acknowledged
    logs, restarted = runtime_on(tmp_path, clock)
    partition = restarted.partitions[("g", "t", 0)]
    assert partition.start_offset == 2
    assert partition.state_of(2) == (RecordState.AVAILABLE, 1)
    assert partition.state_of(3) == (RecordState.ARCHIVED, 1)
    got = partition.acquire("b", clock(), 10, 6)
    # 4-5 were in the window when the state was written (acquired, written as available with their count)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got] == [(2, 2, 2), (4, 5, 2)]
    assert restarted.coordinator.groups["g"].state == "Empty"
