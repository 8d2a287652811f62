"""Share groups (KIP-932): list, describe (members, assignments, start offsets and lag), reset and delete start
offsets, delete groups. ListGroups, ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets and DeleteGroups, each sent where Kafka's admin client sends it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kbroker.client.cluster import Cluster, check
from kbroker.client.connection import KafkaError
from kbroker.client.groups import list_groups
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

SHARE_TYPE = "share"
INACTIVE = ("Empty", "Dead")
UNINITIALIZED = -1  # a share partition without a start offset (DescribeShareGroupOffsets)


def list_share_groups(cluster: Cluster, states: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every share group of every broker (ListGroups v5 with the type filter "share"): id and state."""
    return [{"group": g["group"], "state": g["state"]} for g in list_groups(cluster, [SHARE_TYPE], list(states))]


def _describe(cluster: Cluster, group: str) -> tuple[dict[str, Any], tuple[str, int, int]]:
    """The coordinator's ShareGroupDescribe of `group`, and the coordinator (host, port, node id)."""

    def attempt() -> tuple[dict[str, Any], tuple[str, int, int]]:
        conn = cluster.coordinator(group)
        body = {"group_ids": [group], "include_authorized_operations": False}
        described = conn.call(ApiKey.SHARE_GROUP_DESCRIBE, body)["groups"][0]
        check(described["error_code"], f"describe share group {group}", described["error_message"])
        node = next((n for n, address in cluster.brokers.items() if address == (conn.host, conn.port)), -1)
        return dict(described), (conn.host, conn.port, node)

    return cluster.retry(attempt)


def share_group_state(cluster: Cluster, group: str) -> str:
    """The group's state; Dead when the coordinator has no share group of that id."""
    try:
        return str(_describe(cluster, group)[0]["group_state"])
    except KafkaError as error:
        if error.code == ErrorCode.GROUP_ID_NOT_FOUND:
            return "Dead"
        raise


def start_offsets(cluster: Cluster, group: str, topics: Mapping[str, list[int]] | None = None) -> list[dict[str, Any]]:
    """DescribeShareGroupOffsets: per share partition its start offset and lag (None where the broker has none).
    `topics` None: every partition the group has state for."""
    wanted = None if topics is None else [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]

    def attempt() -> list[dict[str, Any]]:
        conn = cluster.coordinator(group)
        response = conn.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, {"groups": [{"group_id": group, "topics": wanted}]})
        answer = response["groups"][0]
        check(answer["error_code"], f"describe offsets of share group {group}", answer["error_message"])
        rows = []
        for topic in answer["topics"]:
            for p in topic["partitions"]:
                check(p["error_code"], f"{topic['topic_name']}[{p['partition_index']}]", p["error_message"])
                known = p["start_offset"] != UNINITIALIZED
                rows.append(
                    {
                        "topic": topic["topic_name"],
                        "partition": p["partition_index"],
                        "start_offset": p["start_offset"] if known else None,
                        "leader_epoch": p["leader_epoch"] if known and p["leader_epoch"] >= 0 else None,
                        "lag": p["lag"] if known and p["lag"] >= 0 else None,
                    }
                )
        return sorted(rows, key=lambda r: (r["topic"], r["partition"]))

    return cluster.retry(attempt)


def describe_share_group(cluster: Cluster, group: str) -> dict[str, Any]:
    """State, epochs, coordinator, members (client id, host, assignment by topic name) and start offsets."""
    described, (host, port, node) = _describe(cluster, group)
    members = []
    for m in sorted(described["members"], key=lambda m: m["member_id"]):
        assignment = {t["topic_name"]: sorted(t["partitions"]) for t in m["assignment"]["topic_partitions"]}
        members.append(
            {
                "member_id": m["member_id"],
                "client_id": m["client_id"],
                "host": m["client_host"],
                "rack": m["rack_id"],
                "member_epoch": m["member_epoch"],
                "subscribed_topics": sorted(m["subscribed_topic_names"]),
                "assignment": dict(sorted(assignment.items())),
            }
        )
    return {
        "group": group,
        "state": described["group_state"],
        "coordinator": {"node_id": node, "host": host, "port": port},
        "group_epoch": described["group_epoch"],
        "assignment_epoch": described["assignment_epoch"],
        "assignor": described["assignor_name"],
        "members": members,
        "offsets": start_offsets(cluster, group),
    }


def alter_start_offsets(cluster: Cluster, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """AlterShareGroupOffsets: the group's share partitions start at these offsets (the group must be empty)."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append({"partition_index": partition, "start_offset": offset})
    body = {"group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}

    def attempt() -> None:
        response = cluster.coordinator(group).call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, body)
        check(response["error_code"], f"reset offsets of share group {group}", response["error_message"])
        for topic in response["responses"]:
            for p in topic["partitions"]:
                check(p["error_code"], f"{topic['topic_name']}[{p['partition_index']}]", p["error_message"])

    cluster.retry(attempt)


def delete_start_offsets(cluster: Cluster, group: str, topics: Iterable[str]) -> dict[str, KafkaError | None]:
    """DeleteShareGroupOffsets: the group forgets its state for these topics. A group-level error is raised; per
    topic, None (deleted) or the topic's error."""
    names = sorted(set(topics))

    def attempt() -> dict[str, KafkaError | None]:
        body = {"group_id": group, "topics": [{"topic_name": t} for t in names]}
        response = cluster.coordinator(group).call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, body)
        check(response["error_code"], f"delete offsets of share group {group}", response["error_message"])
        results: dict[str, KafkaError | None] = {}
        for topic in response["responses"]:
            code = topic["error_code"]
            results[topic["topic_name"]] = (
                KafkaError(code, topic["error_message"], f"topic {topic['topic_name']}") if code else None
            )
        return results

    return cluster.retry(attempt)


def delete_share_group(cluster: Cluster, group: str, listed: Mapping[str, str | None]) -> None:
    """Delete one share group. As Kafka's tool does, it must be listed as a share group (`listed`: id -> state)
    and be empty; then DeleteGroups at its coordinator."""
    if group not in listed:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group} is not a share group")
    if listed[group] not in (*INACTIVE, None):
        raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"share group {group} is {listed[group]}, not Empty")

    def attempt() -> None:
        result = cluster.coordinator(group).call(ApiKey.DELETE_GROUPS, {"groups_names": [group]})["results"][0]
        check(result["error_code"], f"delete share group {group}")

    cluster.retry(attempt)
