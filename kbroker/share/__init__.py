"""Share groups (KIP-932): point-to-point consumption where each record goes to one member.

  partition.py    SharePartition: the in-flight engine of one (share group, partition), pure
  group.py        ShareGroup, ShareMember, the simple assignor
  coordinator.py  ShareGroupCoordinator: membership through ShareGroupHeartbeat, pure
  sessions.py     share sessions and their epochs, pure
  state_records.py, state_store.py   the __share_group_state layout; ShareStateStore (write, load, rewrite)
  runtime.py      ShareRuntime: timers, share partitions per group, wake-ups, persistence

Handlers reach the runtime with `share_runtime(ctx.broker)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.share.coordinator import ShareCoordinatorConfig
from kbroker.share.partition import SharePartitionConfig
from kbroker.share.runtime import ShareRuntime
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

__all__ = ["ShareRuntime", "share_runtime", "start_share_coordinator"]


def start_share_coordinator(broker: Broker) -> ShareRuntime:
    config = broker.config
    runtime = ShareRuntime(
        broker,
        ShareCoordinatorConfig(
            session_timeout_ms=config.get_int("group.share.session.timeout.ms"),
            heartbeat_interval_ms=config.get_int("group.share.heartbeat.interval.ms"),
            max_size=config.get_int("group.share.max.size"),
        ),
        SharePartitionConfig(
            record_lock_duration_ms=config.get_int("group.share.record.lock.duration.ms"),
            delivery_count_limit=config.get_int("group.share.delivery.count.limit"),
            max_record_locks=config.get_int("group.share.partition.max.record.locks"),
        ),
        state_partitions=config.get_int("share.coordinator.state.topic.num.partitions"),
    )
    runtime.load()
    runtime.start()
    return runtime


def share_runtime(broker: Broker) -> ShareRuntime:
    """The running share coordinator; COORDINATOR_NOT_AVAILABLE (retriable) when there is none."""
    runtime = broker.shares
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime
