"""Consumer groups: the classic group coordinator and the committed-offsets store.

  state.py        GroupState and its allowed transitions
  member.py       Member;  group.py  ClassicGroup (members, generation, protocol, offsets)
  coordinator.py  GroupCoordinator: JoinGroup/SyncGroup/Heartbeat/LeaveGroup and timers, pure (injected clock)
  offsets.py      GroupOffsets: commit checks, fetch, delete, expiry, pure
  records.py      __consumer_offsets key/value layout;  store.py  OffsetsStore (append, replay, snapshots)
  runtime.py      GroupRuntime: asyncio futures for deferred answers, timer and expiry tasks

Handlers reach the runtime with `group_runtime(ctx.broker)`; the server calls
`start_group_coordinator(broker)` after the logs are loaded and `await runtime.stop()`
before the connections drain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.group.config import GroupConfig
from kbroker.group.runtime import EXTENSION_KEY, GroupRuntime
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

__all__ = ["GroupConfig", "GroupRuntime", "group_runtime", "start_group_coordinator"]


def start_group_coordinator(broker: Broker) -> GroupRuntime:
    """Load the committed offsets, start the timers and register the runtime on the broker."""
    runtime = GroupRuntime(GroupConfig.from_properties(broker.config), broker.logs)
    runtime.load()
    runtime.start()
    broker.extensions[EXTENSION_KEY] = runtime
    return runtime


def group_runtime(broker: Broker) -> GroupRuntime:
    """The running coordinator; COORDINATOR_NOT_AVAILABLE (retriable) when there is none."""
    runtime = broker.extensions.get(EXTENSION_KEY)
    if not isinstance(runtime, GroupRuntime) or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime
