"""Consumer groups: list, describe (members, assignments, per-partition lag), delete, and offset resets."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbroker.client.admin import EARLIEST, LATEST, list_offsets
from kbroker.client.cluster import Cluster, check
from kbroker.client.connection import KafkaError
from kbroker.client.consume import committed_offsets
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def list_groups(cluster: Cluster, types: Sequence[str] = (), states: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every group of every broker, of these types and in these states (all when empty): id, protocol type,
    state (when the broker says)."""
    cluster.metadata([])
    body = {"states_filter": list(states), "types_filter": list(types)}
    groups: dict[str, dict[str, Any]] = {}
    for node in sorted(cluster.brokers):
        conn = cluster.connection(node)
        if types and conn.version(ApiKey.LIST_GROUPS) < 5:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "the broker cannot list groups by type (ListGroups v5)")
        response = conn.call(ApiKey.LIST_GROUPS, body)
        check(response["error_code"], "list groups")
        for g in response["groups"]:
            groups[g["group_id"]] = {
                "group": g["group_id"],
                "protocol_type": g["protocol_type"],
                "state": g["group_state"] or None,
            }
    return [groups[name] for name in sorted(groups)]


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """A consumer-protocol assignment (version, [topic, [partition]], user data): topic -> partitions."""
    if len(data) < 6:
        return {}
    pos = 2
    (topics,) = _INT32.unpack_from(data, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(max(topics, 0)):
        (length,) = _INT16.unpack_from(data, pos)
        name = bytes(data[pos + 2 : pos + 2 + length]).decode("utf-8", "replace")
        pos += 2 + length
        (count,) = _INT32.unpack_from(data, pos)
        pos += 4
        out[name] = sorted(_INT32.unpack_from(data, pos + 4 * i)[0] for i in range(count))
        pos += 4 * count
    return out


def _describe_groups(cluster: Cluster, group: str) -> dict[str, Any]:
    def attempt() -> dict[str, Any]:
        response = cluster.coordinator(group).call(
            ApiKey.DESCRIBE_GROUPS, {"groups": [group], "include_authorized_operations": False}
        )
        described = response["groups"][0]
        check(described["error_code"], f"describe group {group}")
        return dict(described)

    return cluster.retry(attempt)


def group_state(cluster: Cluster, group: str) -> str:
    """The group's state as its coordinator names it (Dead: no such group)."""
    return str(_describe_groups(cluster, group)["group_state"])


def describe_group(cluster: Cluster, group: str) -> dict[str, Any]:
    """State, members (with their assigned partitions) and, per committed partition, offset, end and lag."""
    described = _describe_groups(cluster, group)
    members = []
    owner: dict[tuple[str, int], str] = {}
    for m in described["members"]:
        assignment = decode_assignment(m["member_assignment"]) if described["protocol_type"] == "consumer" else {}
        for topic, partitions in assignment.items():
            for p in partitions:
                owner[(topic, p)] = m["member_id"]
        members.append(
            {
                "member_id": m["member_id"],
                "group_instance_id": m["group_instance_id"],
                "client_id": m["client_id"],
                "host": m["client_host"],
                "assignment": assignment,
            }
        )
    committed = committed_offsets(cluster, group, None)
    if described["group_state"] == "Dead" and not committed:  # how a coordinator describes a group it lacks
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group} does not exist")
    topics = sorted({t for t, _ in committed} | {t for t, _ in owner})
    offsets = []
    for topic in topics:
        try:
            info = cluster.topic(topic)
        except KafkaError:
            continue
        wanted = sorted({p for t, p in [*committed, *owner] if t == topic and p in info.partitions})
        ends = list_offsets(cluster, info, wanted, LATEST)
        for p in wanted:
            current = committed.get((topic, p))
            offsets.append(
                {
                    "topic": topic,
                    "partition": p,
                    "current_offset": current,
                    "log_end_offset": ends[p],
                    "lag": None if current is None else max(ends[p] - current, 0),
                    "member_id": owner.get((topic, p)),
                }
            )
    return {
        "group": group,
        "state": described["group_state"],
        "protocol_type": described["protocol_type"],
        "protocol": described["protocol_data"],
        "members": members,
        "offsets": offsets,
    }


def delete_group(cluster: Cluster, group: str) -> None:
    def attempt() -> None:
        result = cluster.coordinator(group).call(ApiKey.DELETE_GROUPS, {"groups_names": [group]})["results"][0]
        check(result["error_code"], f"delete group {group}")

    cluster.retry(attempt)


@dataclass
class ResetSpec:
    """One of Kafka's reset scenarios (kafka-consumer-groups.sh --reset-offsets)."""

    to_earliest: bool = False
    to_latest: bool = False
    to_offset: int | None = None
    shift_by: int | None = None
    to_datetime_ms: int | None = None


def plan_reset(
    cluster: Cluster,
    topics: Mapping[str, list[int] | None],
    spec: ResetSpec,
    current: Mapping[tuple[str, int], int | None],
    *,
    require_partitions: bool = False,
) -> list[dict[str, Any]]:
    """New offset per partition, clamped to the log's range as Kafka's tools do, from `current` (a group's
    committed offsets, or a share group's start offsets). With `require_partitions`, a partition the topic lacks
    is an error, as Kafka's share-group tool checks."""
    plan = []
    for name, chosen in topics.items():
        info = cluster.topic(name)
        partitions = sorted(info.partitions) if chosen is None else chosen
        missing = [p for p in partitions if p not in info.partitions]
        if require_partitions and missing:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=f"{name}[{','.join(map(str, missing))}]")
        starts = list_offsets(cluster, info, partitions, EARLIEST)
        ends = list_offsets(cluster, info, partitions, LATEST)
        by_time = list_offsets(cluster, info, partitions, spec.to_datetime_ms) if spec.to_datetime_ms else {}
        for p in partitions:
            offset = current.get((name, p))
            if spec.to_earliest:
                target = starts[p]
            elif spec.to_latest:
                target = ends[p]
            elif spec.to_offset is not None:
                target = spec.to_offset
            elif spec.shift_by is not None:
                target = (offset if offset is not None else ends[p]) + spec.shift_by
            else:
                target = by_time[p] if by_time.get(p, -1) >= 0 else ends[p]
            target = min(max(target, starts[p]), ends[p])
            plan.append({"topic": name, "partition": p, "current_offset": offset, "new_offset": target})
    return plan
