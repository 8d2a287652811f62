"""The controller's elections and reassignments in process against a real ZooKeeper (two ClusterRuntimes):
a reorder completes at once and a PREFERRED election then moves the leader, each state write raising the
leader epoch; a deposed controller's election (its lease's epoch version outdated) writes nothing and steps
down; a broker that is not the controller refuses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kbroker.cluster.election import ElectionType, Outcome
from kbroker.cluster.partition_moves import NotControllerError
from kbroker.cluster.reassignment import ReplicaAssignment
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.conftest import async_test
from tests.cluster.test_runtime import _broker, _until


@async_test
async def test_elections_and_reassignments_are_the_controllers_fenced_writes(
    zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    first = await _broker(zookeeper, zk_chroot, 1, tmp_path)
    second = await _broker(zookeeper, zk_chroot, 2, tmp_path)
    try:
        assert first.is_controller
        await _until(lambda: set(first.metadata.brokers) == {1, 2})
        await first.create_topic("t", 1, 2, {}, {0: (2, 1)})
        await _until(lambda: first.metadata.leaders_known("t") and second.metadata.leaders_known("t"))
        assert first.metadata.state("t", 0).leader == 2  # type: ignore[union-attr]

        # a reorder needs no new replica: it completes at once, the leader (in the target) stays
        assert await first.moves.alter_reassignments("t", {0: (1, 2)}, True, timeout_s=10) == {0: None}
        await _until(lambda: second.metadata.topics["t"].partitions[0] == (1, 2))
        assert first.moves.list_reassignments(None) == {}
        state = first.metadata.state("t", 0)
        assert state is not None and state.leader == 2 and state.leader_epoch == 1  # phase A raised it

        with pytest.raises(NotControllerError):
            await second.moves.elect_leaders(ElectionType.PREFERRED, [("t", 0)])
        with pytest.raises(NotControllerError):
            second.moves.list_reassignments(None)

        # a deposed controller (its epoch's znode version outdated) writes nothing and steps down
        lease = first.lease
        assert lease is not None
        first.lease = dataclasses.replace(lease, epoch_zk_version=lease.epoch_zk_version - 1)
        with pytest.raises(NotControllerError):
            await first.moves.elect_leaders(ElectionType.PREFERRED, [("t", 0)])
        assert (await first.store.partition_state("t", 0)) == state
        await _until(lambda: first.is_controller or second.is_controller)  # someone is elected again
        controller = first if first.is_controller else second
        await _until(lambda: controller.metadata.controller_id == controller.node_id)

        outcome = await controller.moves.elect_leaders(ElectionType.PREFERRED, [("t", 0), ("t", 3), ("u", 0)])
        assert outcome[("t", 0)] is Outcome.ELECTED
        assert isinstance(outcome[("t", 3)], LookupError) and isinstance(outcome[("u", 0)], LookupError)
        await _until(lambda: (s := second.metadata.state("t", 0)) is not None and s.leader == 1)
        elected = second.metadata.state("t", 0)
        assert elected is not None and elected.leader_epoch == 2 and set(elected.isr) == {1, 2}
        again = await controller.moves.elect_leaders(ElectionType.PREFERRED, [("t", 0)])
        assert again == {("t", 0): Outcome.NOT_NEEDED}
        assert controller.moves.list_reassignments([("t", 0)]) == {}
        assert ReplicaAssignment(second.metadata.topics["t"].partitions[0]) == ReplicaAssignment((1, 2))
    finally:
        for runtime in (first, second):
            await runtime.stop()
            await runtime.logs.shutdown()
