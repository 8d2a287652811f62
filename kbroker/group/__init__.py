"""Consumer groups: the classic group coordinator and the committed-offsets store.

  state.py        GroupState and its allowed transitions
  member.py       Member;  group.py  ClassicGroup (members, generation, protocol, offsets)
  coordinator.py  GroupCoordinator: JoinGroup/SyncGroup/Heartbeat/LeaveGroup and timers, pure (injected clock)
  offsets.py      GroupOffsets: commit checks, fetch, delete, expiry, pure
  records.py      __consumer_offsets key/value layout;  store.py  OffsetsStore (append, replay, snapshots)
  runtime.py      GroupRuntime: asyncio futures for deferred answers, timer and expiry tasks

Handlers reach the runtime with `group_runtime(ctx.broker)`; the server sets
`broker.groups = start_group_coordinator(broker)` after the logs are loaded and calls
`await runtime.stop()` before the connections drain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.group.config import GroupConfig
from kbroker.group.runtime import GroupRuntime
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

__all__ = ["GroupConfig", "GroupRuntime", "group_runtime", "start_group_coordinator"]


def start_group_coordinator(broker: Broker) -> GroupRuntime:
    """Load the committed offsets and start the timers (the server then sets broker.groups)."""
    clock = broker.clock
    runtime = GroupRuntime(GroupConfig.from_properties(broker.config), broker.logs, clock=clock.wall_ms, timers=clock)
    runtime.load()
    runtime.start()
    return runtime


def group_runtime(broker: Broker) -> GroupRuntime:
    """The running coordinator; COORDINATOR_NOT_AVAILABLE (retriable) when there is none."""
    runtime = broker.groups
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime
