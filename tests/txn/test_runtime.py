"""The coordinator on real logs, in process: a crash (no clean shutdown) with a transaction in
PrepareCommit or PrepareAbort is completed at the next start, markers and offsets included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kbroker.broker import Broker, new_log_manager
from kbroker.config import BrokerConfig
from kbroker.group import start_group_coordinator
from kbroker.group.group import CommittedOffset
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.log import AppendOrigin
from kbroker.txn.runtime import start_transaction_coordinator, transaction_coordinator
from kbroker.txn.transaction import TxnState
from protocol.errors import ErrorCode
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import iter_batches

PROPS = {"transaction.state.log.num.partitions": "2", "offsets.topic.num.partitions": "2"}


def new_broker(data_dir: Path) -> Broker:
    config = BrokerConfig.build(PROPS, listen="127.0.0.1:0", data_dir=data_dir)
    logs = new_log_manager(config)
    logs.startup()
    return Broker(config=config, logs=logs)


def outline(broker: Broker, topic: str) -> list[str]:
    log = broker.logs.get_log(topic, 0)
    assert log is not None
    shown = []
    for batch in iter_batches(log.read(0, 1 << 20).read()):
        if batch.is_control:
            shown.append(batch.end_transaction_marker().type.name)
        else:
            shown.append(",".join(bytes(r.value or b"").decode() for r in batch.records()))
    return shown


@pytest.mark.parametrize("commit", [True, False])
def test_prepared_transaction_is_completed_after_a_crash(tmp_path: Path, commit: bool) -> None:
    async def before_crash() -> tuple[int, int]:
        broker = new_broker(tmp_path)
        broker.logs.create_topic("orders", 1)
        broker.groups = groups = start_group_coordinator(broker)
        broker.transactions = runtime = await start_transaction_coordinator(broker)
        coordinator = transaction_coordinator(broker)
        init = await coordinator.init_producer_id("app", 60_000)
        pid, epoch = init.producer_id, init.producer_epoch
        offsets_tp = (OFFSETS_TOPIC, groups.store.partition_for("g"))
        assert await coordinator.add_partitions("app", pid, epoch, {("orders", 0), offsets_tp}) is ErrorCode.NONE
        data = bytearray(
            build_record_batch(
                [SimpleRecord(b"k", b"v", (), 1)],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=0,
                is_transactional=True,
            )
        )
        broker.logs.get_partition("orders", 0).append_as_leader(data, AppendOrigin.COORDINATOR)  # type: ignore[union-attr]
        offsets = {("orders", 0): CommittedOffset(5, -1, "", 1)}
        assert await groups.txn_commit("g", pid, epoch, -1, "", None, offsets) is ErrorCode.NONE
        metadata = coordinator.transactions["app"]
        # the Prepare record is durable, then the process dies before any marker
        await runtime.state_log.write("app", metadata.prepare_end(commit, 10))
        await runtime.stop()
        await groups.stop()
        broker.logs.abort()
        return pid, epoch

    async def after_restart() -> None:
        broker = new_broker(tmp_path)
        broker.groups = groups = start_group_coordinator(broker)
        assert groups.fetch("g", [("orders", 0)]) == {("orders", 0): None}  # still pending
        broker.transactions = runtime = await start_transaction_coordinator(broker)
        metadata = transaction_coordinator(broker).transactions["app"]
        assert metadata.state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT)
        assert outline(broker, "orders") == ["v", "COMMIT" if commit else "ABORT"]
        committed = groups.fetch("g", [("orders", 0)])[("orders", 0)]
        assert (committed.offset if committed else None) == (5 if commit else None)
        await runtime.stop()
        await groups.stop()
        await broker.logs.shutdown()

    asyncio.run(before_crash())
    asyncio.run(after_restart())
