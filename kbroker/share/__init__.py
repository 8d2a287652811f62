"""Share groups (KIP-932): point-to-point consumption where each record goes to one member.

  partition.py    SharePartition: the in-flight engine of one (share group, partition), pure
  group.py        ShareGroup, ShareMember, the simple assignor
  coordinator.py  ShareGroupCoordinator: membership through ShareGroupHeartbeat, pure
  sessions.py     share sessions and their epochs, pure
  state_records.py, state_store.py   the __share_group_state layout; ShareStateStore (write, load, rewrite)
  runtime.py      ShareRuntime: timers, share partitions per group, wake-ups, persistence
  record_headers.py  kbroker-deliver-at / kbroker-deliver-after-ms / kbroker-tag, read on the share-fetch path
  tag_filter.py   the grammar of kbroker.share.tag.filter, pure
  dead_letters.py copies to errors.deadletterqueue.topic.name

Handlers reach the runtime with `share_runtime(ctx.broker)`. A single broker without
__share_group_state yet starts it at the first `share_runtime()` (Broker.coordinators_on_first_use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.share.coordinator import ShareCoordinatorConfig
from kbroker.share.dead_letters import dead_letter_topic_problem
from kbroker.share.partition import SharePartitionConfig
from kbroker.share.runtime import DEAD_LETTER_TOPIC, TAG_FILTER, ShareRuntime
from kbroker.share.tag_filter import TagFilterError, parse_tag_filter
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

__all__ = ["ShareRuntime", "check_group_config", "share_runtime", "start_share_coordinator"]


def check_group_config(name: str, value: str) -> str | None:
    """Why `value` is refused for the group config `name` (None: accepted), for kbroker's share-group configs."""
    if name == TAG_FILTER:
        try:
            parse_tag_filter(value.strip())
        except TagFilterError as error:
            return str(error)
    elif name == DEAD_LETTER_TOPIC and value.strip():
        return dead_letter_topic_problem(value.strip())
    return None


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
    if runtime is None and broker.coordinators_on_first_use:
        broker.shares = runtime = start_share_coordinator(broker)
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime
