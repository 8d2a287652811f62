"""Membership of a classic consumer group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) for one topic.

The member subscribes with the consumer protocol (version 0: topics, no user data) and offers the `range`
assignor, which every Kafka client also offers, so it can share a group with Java, librdkafka or Python
consumers. When the coordinator makes it the leader it assigns each subscribed topic's partitions by
range: members sorted by id, each a contiguous share, the first ones one more when the count does not divide.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from kbroker.client.cluster import Cluster, check
from kbroker.client.connection import BrokerConnection, KafkaError
from kbroker.client.groups import decode_assignment
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

PROTOCOL_TYPE = "consumer"
ASSIGNOR = "range"
SESSION_TIMEOUT_MS = 10_000
REBALANCE_TIMEOUT_MS = 30_000
HEARTBEAT_INTERVAL_S = 3.0
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
# Answers after which the member joins again (with a new member id when the coordinator forgot it).
REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}


def _string(text: str) -> bytes:
    data = text.encode()
    return _INT16.pack(len(data)) + data


def encode_subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    return _INT16.pack(0) + _INT32.pack(len(topics)) + b"".join(_string(t) for t in topics) + _INT32.pack(-1)


def decode_subscription(data: bytes) -> list[str]:
    (count,) = _INT32.unpack_from(data, 2)
    topics, pos = [], 6
    for _ in range(count):
        (length,) = _INT16.unpack_from(data, pos)
        topics.append(bytes(data[pos + 2 : pos + 2 + length]).decode())
        pos += 2 + length
    return topics


def encode_assignment(assignment: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, partitions], null user data."""
    out = _INT16.pack(0) + _INT32.pack(len(assignment))
    for topic, partitions in sorted(assignment.items()):
        out += _string(topic) + _INT32.pack(len(partitions)) + b"".join(_INT32.pack(p) for p in partitions)
    return out + _INT32.pack(-1)


def range_assign(
    subscriptions: dict[str, list[str]], partition_counts: dict[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Kafka's RangeAssignor: member id -> topic -> partitions."""
    result: dict[str, dict[str, list[int]]] = {member: {} for member in subscriptions}
    for topic, count in partition_counts.items():
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        share, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = share + (1 if index < extra else 0)
            result[member][topic] = list(range(start, start + size))
            start += size
    return result


class GroupMember:
    """This process as one member of `group`, subscribed to `topic`."""

    def __init__(self, cluster: Cluster, group: str, topic: str) -> None:
        self.cluster = cluster
        self.group = group
        self.topic = topic
        self.member_id = ""
        self.generation = -1
        self.assignment: list[int] = []
        self._last_heartbeat = 0.0

    def join(self) -> list[int]:
        """Join (again), take part in the assignment, and return this member's partitions of the topic."""
        for _ in range(50):
            conn = self.cluster.coordinator(self.group)
            response = conn.call(
                ApiKey.JOIN_GROUP,
                {
                    "group_id": self.group,
                    "session_timeout_ms": SESSION_TIMEOUT_MS,
                    "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                    "protocol_type": PROTOCOL_TYPE,
                    "protocols": [{"name": ASSIGNOR, "metadata": encode_subscription([self.topic])}],
                },
            )
            code = response["error_code"]
            if code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: join again with the id the coordinator chose
                self.member_id = response["member_id"]
                continue
            if self._retry_join(code):
                continue
            check(code, f"join group {self.group}")
            self.member_id, self.generation = response["member_id"], response["generation_id"]
            assignments = self._assign(response) if response["leader"] == self.member_id else {}
            if self._sync(conn, response["protocol_name"], assignments):
                self._last_heartbeat = time.monotonic()
                return self.assignment
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"group {self.group} did not settle")

    def _retry_join(self, code: int) -> bool:
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return True
        if code == ErrorCode.REBALANCE_IN_PROGRESS or (code and ErrorCode(code).retriable):
            time.sleep(0.1)
            return True
        return False

    def _assign(self, response: dict[str, Any]) -> dict[str, bytes]:
        subscriptions = {m["member_id"]: decode_subscription(m["metadata"]) for m in response["members"]}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        counts = {
            name: len(info.partitions) for name, info in self.cluster.metadata(topics).items() if not info.error_code
        }
        return {member: encode_assignment(a) for member, a in range_assign(subscriptions, counts).items()}

    def _sync(self, conn: BrokerConnection, protocol: str | None, assignments: dict[str, bytes]) -> bool:
        response = conn.call(
            ApiKey.SYNC_GROUP,
            {
                "group_id": self.group,
                "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": PROTOCOL_TYPE,
                "protocol_name": protocol,
                "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
            },
        )
        code = response["error_code"]
        if self._retry_join(code) or code == ErrorCode.ILLEGAL_GENERATION:
            return False
        check(code, f"sync group {self.group}")
        self.assignment = decode_assignment(response["assignment"]).get(self.topic, [])
        return True

    def heartbeat(self) -> bool:
        """Heartbeat when due; False when the group is rebalancing and this member must join again."""
        if time.monotonic() - self._last_heartbeat < HEARTBEAT_INTERVAL_S:
            return True
        response = self.cluster.coordinator(self.group).call(
            ApiKey.HEARTBEAT,
            {"group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
             "group_instance_id": None},
        )  # fmt: skip
        self._last_heartbeat = time.monotonic()
        code = response["error_code"]
        if code in REJOIN:
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return False
        if code and not ErrorCode(code).retriable:
            check(code, f"heartbeat of group {self.group}")
        return True

    def leave(self) -> None:
        if not self.member_id:
            return
        conn = self.cluster.coordinator(self.group)
        if conn.version(ApiKey.LEAVE_GROUP) >= 3:
            body: dict[str, Any] = {"group_id": self.group, "members": [{"member_id": self.member_id}]}
        else:
            body = {"group_id": self.group, "member_id": self.member_id}
        conn.call(ApiKey.LEAVE_GROUP, body)  # a failure only means the session times out instead
        self.member_id = ""
