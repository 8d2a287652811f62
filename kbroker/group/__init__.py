"""Consumer groups: the classic group coordinator and the committed-offsets store.

  state.py        GroupState and its allowed transitions
  member.py       Member;  group.py  ClassicGroup (members, generation, protocol, offsets)
  coordinator.py  GroupCoordinator: JoinGroup/SyncGroup/Heartbeat/LeaveGroup and timers, pure (injected clock)
  consumer_group.py, consumer_coordinator.py, reconcile.py, assignors.py
                  consumer-protocol groups (KIP-848): ConsumerGroupHeartbeat, epochs, assignors; pure
  offsets.py      GroupOffsets: commit checks, fetch, delete, expiry, pure
  records.py      __consumer_offsets key/value layout;  store.py  OffsetsStore (append, replay, snapshots)
  runtime.py      GroupRuntime: asyncio futures for deferred answers, timer and expiry tasks

Handlers reach the runtime with `group_runtime(ctx.broker)`; the server sets
`broker.groups = start_group_coordinator(broker)` after the logs are loaded and calls
`await runtime.stop()` before the connections drain. A single broker without __consumer_offsets
yet starts it at the first `group_runtime()` instead (Broker.coordinators_on_first_use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.group.config import GroupConfig
from kbroker.group.consumer_coordinator import ConsumerGroupSettings
from kbroker.group.runtime import GroupRuntime
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

__all__ = ["GroupConfig", "GroupRuntime", "group_runtime", "start_group_coordinator"]


def start_group_coordinator(broker: Broker) -> GroupRuntime:
    """Load the committed offsets and start the timers (the server then sets broker.groups)."""
    config = GroupConfig.from_properties(broker.config)

    def consumer_settings(group_id: str) -> ConsumerGroupSettings:
        """The group's consumer.session.timeout.ms / consumer.heartbeat.interval.ms over the broker's defaults."""
        overrides = broker.dynamic_configs.group_configs(group_id)
        return ConsumerGroupSettings(
            int(overrides.get("consumer.session.timeout.ms", config.consumer_session_timeout_ms)),
            int(overrides.get("consumer.heartbeat.interval.ms", config.consumer_heartbeat_interval_ms)),
        )

    clock = broker.clock
    runtime = GroupRuntime(config, broker.logs, clock=clock.wall_ms, timers=clock, consumer_settings=consumer_settings)
    if broker.cluster is None:
        runtime.load()
    else:  # cluster mode: the groups of each __consumer_offsets partition load when this broker leads it
        runtime.store.owned = set()
        runtime.store.in_cluster = True
    runtime.start()
    return runtime


def group_runtime(broker: Broker, group_id: str | None = None) -> GroupRuntime:
    """The running coordinator; COORDINATOR_NOT_AVAILABLE (retriable) when there is none. With `group_id`:
    NOT_COORDINATOR when another broker coordinates that group (cluster mode)."""
    runtime = broker.groups
    if runtime is None and broker.coordinators_on_first_use:
        broker.groups = runtime = start_group_coordinator(broker)
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if group_id is not None:
        error = runtime.coordinator_error(group_id)
        if error is not ErrorCode.NONE:
            raise KafkaProtocolError(error)
    return runtime
