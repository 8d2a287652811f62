"""The coordinators' internal partitions loaded and unloaded one at a time (what cluster mode does as this
broker gains or loses their leadership), on real logs in process, and the markers of other brokers'
partitions routed to their leaders."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.broker import Broker, new_log_manager
from kbroker.config import BrokerConfig
from kbroker.group import group_runtime, start_group_coordinator
from kbroker.group.coordinator import JoinRequest
from kbroker.group.group import CommittedOffset
from kbroker.log.coordinator_log import partition_for
from kbroker.txn import markers
from kbroker.txn.markers import NO_LEADER
from kbroker.txn.runtime import start_transaction_coordinator, transaction_coordinator
from kbroker.txn.transaction import TopicPartition
from protocol.errors import ErrorCode, KafkaProtocolError
from protocol.records import iter_batches

PARTITIONS = 4
PROPS = {
    "transaction.state.log.num.partitions": str(PARTITIONS),
    "offsets.topic.num.partitions": str(PARTITIONS),
    "group.initial.rebalance.delay.ms": "60000",
}


def new_broker(data_dir: Path) -> Broker:
    config = BrokerConfig.build(PROPS, listen="127.0.0.1:0", data_dir=data_dir)
    logs = new_log_manager(config)
    logs.startup()
    return Broker(config=config, logs=logs)


def two_keys() -> tuple[str, str]:
    """Two keys in different partitions."""
    first = "key-0"
    second = next(
        f"key-{i}" for i in range(1, 100) if partition_for(f"key-{i}", PARTITIONS) != partition_for(first, PARTITIONS)
    )
    return first, second


def test_groups_of_an_unloaded_partition_leave_and_come_back_with_their_offsets(tmp_path: Path) -> None:
    moved, kept = two_keys()
    moved_partition = partition_for(moved, PARTITIONS)

    async def run() -> None:
        broker = new_broker(tmp_path)
        broker.groups = groups = start_group_coordinator(broker)
        for group in (moved, kept):
            assert await groups.commit(group, -1, "", None, {("t", 0): CommittedOffset(7, -1, "", 1)}) is ErrorCode.NONE
        groups.store.owned = set(range(PARTITIONS))  # as in cluster mode, leading every partition
        waiting = asyncio.ensure_future(
            groups.join(JoinRequest(moved, "", None, "consumer", [("range", b"")], 10_000, 10_000, False))
        )
        await asyncio.sleep(0)
        assert not waiting.done()  # the initial rebalance delay holds it

        groups.unload([moved_partition])
        assert (await waiting).error is ErrorCode.NOT_COORDINATOR
        assert moved not in groups.groups and kept in groups.groups
        with pytest.raises(KafkaProtocolError) as refused:
            group_runtime(broker, moved)
        assert refused.value.code is ErrorCode.NOT_COORDINATOR
        assert group_runtime(broker, kept) is groups
        # a write that still reaches the store is refused, not appended to a partition led elsewhere
        error = await groups.commit(moved, -1, "", None, {("t", 0): CommittedOffset(9, -1, "", 1)})
        assert error is ErrorCode.COORDINATOR_NOT_AVAILABLE

        groups.load([moved_partition])
        assert group_runtime(broker, moved) is groups
        assert groups.fetch(moved, None) == {("t", 0): CommittedOffset(7, -1, "", 1)}
        await groups.stop()
        await broker.logs.shutdown()

    asyncio.run(run())


def test_transactional_ids_of_an_unloaded_partition_leave_and_come_back(tmp_path: Path) -> None:
    moved, kept = two_keys()

    async def run() -> None:
        broker = new_broker(tmp_path)
        broker.groups = start_group_coordinator(broker)
        broker.transactions = runtime = await start_transaction_coordinator(broker)
        coordinator = transaction_coordinator(broker)
        first = await coordinator.init_producer_id(moved, 60_000)
        await coordinator.init_producer_id(kept, 60_000)
        store = runtime.state_log.store
        store.owned = set(range(PARTITIONS))
        coordinator.owns = lambda tid: runtime.coordinator_error(tid) is ErrorCode.NONE

        runtime.unload([store.partition_for(moved)])
        assert moved not in coordinator.transactions and coordinator.by_producer_id(first.producer_id) is None
        with pytest.raises(KafkaProtocolError) as refused:
            transaction_coordinator(broker, moved)
        assert refused.value.code is ErrorCode.NOT_COORDINATOR
        assert transaction_coordinator(broker, kept) is coordinator
        # a request already past the check cannot write either
        assert (await coordinator.init_producer_id(moved, 60_000)).error is ErrorCode.NOT_COORDINATOR
        assert moved not in coordinator.transactions

        runtime.load([store.partition_for(moved)])
        again = await transaction_coordinator(broker, moved).init_producer_id(moved, 60_000)
        assert (again.producer_id, again.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
        await runtime.stop()
        await broker.groups.stop()  # type: ignore[union-attr]
        await broker.logs.shutdown()

    asyncio.run(run())


class FakeLeaders:
    """RemoteMarkers: partition leaders by name, and the WriteTxnMarkers requests sent to them."""

    def __init__(self, broker: Broker, leaders: dict[TopicPartition, int | None], answers: list[object]) -> None:
        self.broker = broker
        self.leaders = leaders
        self.answers = answers  # per send: an exception, or an error code for every partition
        self.sent: list[tuple[int, list[TopicPartition]]] = []

    def leader_of(self, topic: str, partition: int) -> int | None:
        return self.leaders[(topic, partition)]

    async def send(
        self,
        broker_id: int,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        commit: bool,
        coordinator_epoch: int,
    ) -> dict[TopicPartition, ErrorCode]:
        assert coordinator_epoch == 7
        self.sent.append((broker_id, list(partitions)))
        answer = self.answers.pop(0) if self.answers else ErrorCode.NONE
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, ErrorCode)
        return dict.fromkeys(partitions, answer)


def markers_in(broker: Broker, topic: str, partition: int) -> list[str]:
    log = broker.logs.get_partition(topic, partition)
    assert log is not None
    return [b.end_transaction_marker().type.name for b in iter_batches(log.read(0, 1 << 20).read()) if b.is_control]


def test_markers_of_other_leaders_partitions_go_to_those_leaders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(markers, "REMOTE_RETRY_S", 0.0)

    async def run() -> None:
        broker = new_broker(tmp_path)  # node 1
        broker.logs.create_topic("orders", 4)
        writer = markers.LogMarkerWriter(broker)
        leaders: dict[TopicPartition, int | None] = {
            ("orders", 0): 1,
            ("orders", 1): 2,
            ("orders", 2): 3,
            ("orders", 3): None,  # deleted: skipped
        }
        # broker 2 is unreachable once, broker 3 says it no longer leads, then both take the markers
        remote = FakeLeaders(broker, leaders, [OSError("refused"), ErrorCode.NOT_LEADER_OR_FOLLOWER])
        writer.remote = remote
        await writer.write_markers(5, 0, sorted(leaders), commit=True, coordinator_epoch=7)
        assert markers_in(broker, "orders", 0) == ["COMMIT"]
        assert markers_in(broker, "orders", 1) == [] and markers_in(broker, "orders", 3) == []
        first_round = sorted(remote.sent[:2])
        assert first_round == [(2, [("orders", 1)]), (3, [("orders", 2)])]
        assert sorted(remote.sent[2:]) == first_round  # each sent once more, broker 1's not again

        # a partition without a leader for longer than the retries: the transaction stays prepared
        leaders[("orders", 1)] = NO_LEADER
        with pytest.raises(markers.KafkaStorageError):
            await writer.write_markers(6, 0, [("orders", 1)], commit=False, coordinator_epoch=7)
        await broker.logs.shutdown()

    asyncio.run(run())
