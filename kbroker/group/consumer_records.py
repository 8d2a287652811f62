"""How a consumer-protocol group is kept in __consumer_offsets: one record with its whole state.

    key    int16 version 19266 ("KB": kbroker's own, outside Kafka's record types 0-8) | int16-length group id
    value  int16 version 0 | UTF-8 JSON: group epoch, assignment epoch, assignor, subscription metadata,
           target assignment, and each member (ids, subscription, epochs, state, assigned and revoking
           partitions, and for a member using the classic protocol its session timeout and protocols). A null value (tombstone): the group is no longer a consumer group.

Kafka writes the same facts as several records (ConsumerGroupMetadata, ...MemberMetadata,
...TargetAssignmentMember, ...CurrentMemberAssignment); kbroker writes the group whenever
any of them changes (a heartbeat that changes nothing writes nothing). Timers are not kept:
after a restart every member gets a full session timeout.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from kbroker.group.consumer_group import Assignment, ClassicMetadata, ConsumerGroup, ConsumerMember, MemberState
from kbroker.group.records import CONSUMER_GROUP_KEY_VERSION

VALUE_VERSION = 0
_I16 = struct.Struct(">h")


def consumer_group_key(group_id: str) -> bytes:
    data = group_id.encode()
    return _I16.pack(CONSUMER_GROUP_KEY_VERSION) + _I16.pack(len(data)) + data


def consumer_group_value(group: ConsumerGroup) -> bytes:
    state = {
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor_name,
        "subscription_metadata": group.subscription_metadata,
        "target": {m: _dump(a) for m, a in group.target.items()},
        "members": [_dump_member(m) for m in group.members.values()],
    }
    return _I16.pack(VALUE_VERSION) + json.dumps(state, separators=(",", ":")).encode()


def parse_consumer_group_value(group_id: str, value: bytes) -> ConsumerGroup:
    (version,) = _I16.unpack_from(value)
    if version != VALUE_VERSION:
        raise ValueError(f"unknown consumer group value version {version}")
    state = json.loads(bytes(value[2:]))
    group = ConsumerGroup(
        group_id,
        group_epoch=state["group_epoch"],
        assignment_epoch=state["assignment_epoch"],
        assignor_name=state["assignor"],
        subscription_metadata={str(k): int(v) for k, v in state["subscription_metadata"].items()},
        target={m: _load(a) for m, a in state["target"].items()},
    )
    for raw in state["members"]:
        group.add(_load_member(raw))
    return group


def _dump(assignment: Assignment) -> dict[str, list[int]]:
    return {topic: sorted(parts) for topic, parts in assignment.items()}


def _load(raw: dict[str, list[int]]) -> Assignment:
    return {str(topic): frozenset(int(p) for p in parts) for topic, parts in raw.items()}


def _dump_member(member: ConsumerMember) -> dict[str, Any]:
    return {
        "member_id": member.member_id,
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "topics": list(member.subscribed_topic_names),
        "regex": member.subscribed_topic_regex,
        "assignor": member.server_assignor,
        "epoch": member.member_epoch,
        "previous_epoch": member.previous_member_epoch,
        "state": member.state.value,
        "assigned": _dump(member.assigned),
        "revoking": _dump(member.pending_revocation),
        "classic": None if member.classic is None else _dump_classic(member.classic),
    }


def _dump_classic(classic: ClassicMetadata) -> dict[str, Any]:
    protocols = [[name, base64.b64encode(metadata).decode()] for name, metadata in classic.protocols]
    return {"session_timeout_ms": classic.session_timeout_ms, "protocols": protocols}


def _load_classic(raw: dict[str, Any] | None) -> ClassicMetadata | None:
    if raw is None:
        return None
    protocols = tuple((str(name), base64.b64decode(data)) for name, data in raw["protocols"])
    return ClassicMetadata(int(raw["session_timeout_ms"]), protocols)


def _load_member(raw: dict[str, Any]) -> ConsumerMember:
    return ConsumerMember(
        member_id=raw["member_id"],
        instance_id=raw["instance_id"],
        rack_id=raw["rack_id"],
        client_id=raw["client_id"],
        client_host=raw["client_host"],
        rebalance_timeout_ms=raw["rebalance_timeout_ms"],
        subscribed_topic_names=tuple(raw["topics"]),
        subscribed_topic_regex=raw["regex"],
        server_assignor=raw["assignor"],
        member_epoch=raw["epoch"],
        previous_member_epoch=raw["previous_epoch"],
        state=MemberState(raw["state"]),
        assigned=_load(raw["assigned"]),
        pending_revocation=_load(raw["revoking"]),
        classic=_load_classic(raw.get("classic")),  # absent from records written before online migration
    )
