"""Consumer-protocol groups (KIP-848) over the raw protocol against a real kbroker: heartbeats, describe,
commits with member epochs, list/describe of group types, the classic/consumer namespace, and kill -9.

Scenarios with real clients, on kbroker and Apache Kafka, are tests/compat/scenarios/test_consumer_groups.py.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess, RawClient

E = ErrorCode


def create_topic(raw: RawClient, name: str, partitions: int) -> None:
    body = {
        "topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
        ],
        "timeout_ms": 5000,
        "validate_only": False,
    }
    assert raw.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]["error_code"] == 0


def topic_id(raw: RawClient, topic: str) -> bytes:
    response = raw.call(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": b"\0" * 16}]})
    return bytes(response["topics"][0]["topic_id"])


def heartbeat(raw: RawClient, group: str, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": None,
        **fields,
    }
    return raw.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)


def join(raw: RawClient, group: str, member: str, topics: list[str], **fields: Any) -> dict[str, Any]:
    return heartbeat(
        raw, group, member, 0, rebalance_timeout_ms=30000, subscribed_topic_names=topics, topic_partitions=[], **fields
    )


def owned(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"topic_id": t["topic_id"], "partitions": t["partitions"]} for t in response["assignment"]["topic_partitions"]
    ]


def describe(raw: RawClient, group: str) -> dict[str, Any]:
    response = raw.call(
        ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
    )
    return response["groups"][0]


def commit(raw: RawClient, group: str, member: str, epoch: int, topic: str, version: int = 9) -> int:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}
        ],
    }
    response = raw.call(ApiKey.OFFSET_COMMIT, version, body)
    return int(response["topics"][0]["partitions"][0]["error_code"])


def fetch(raw: RawClient, group: str, member: str | None, epoch: int, topic: str) -> dict[str, Any]:
    body = {
        "groups": [
            {
                "group_id": group,
                "member_id": member,
                "member_epoch": epoch,
                "topics": [{"name": topic, "partition_indexes": [0]}],
            }
        ],
        "require_stable": False,
    }
    return raw.call(ApiKey.OFFSET_FETCH, 9, body)["groups"][0]


def test_two_members_reconcile_and_describe(raw: RawClient) -> None:
    topic, group = unique_topic(), unique_topic("g")
    create_topic(raw, topic, 4)
    tid = topic_id(raw, topic)
    a = join(raw, group, "member-a", [topic])
    assert a["error_code"] == 0 and a["member_epoch"] == 1 and a["heartbeat_interval_ms"] == 5000
    assert a["assignment"]["topic_partitions"] == [{"topic_id": tid, "partitions": [0, 1, 2, 3]}]
    b = join(raw, group, "member-b", [topic])
    assert b["member_epoch"] == 2 and b["assignment"]["topic_partitions"] == []  # a still owns everything
    a = heartbeat(raw, group, "member-a", 1, topic_partitions=[{"topic_id": tid, "partitions": [0, 1, 2, 3]}])
    assert a["member_epoch"] == 1 and len(a["assignment"]["topic_partitions"][0]["partitions"]) == 2
    described = describe(raw, group)
    assert described["group_state"] == "Reconciling" and described["group_epoch"] == 2
    assert described["assignor_name"] == "uniform"
    a = heartbeat(raw, group, "member-a", 1, topic_partitions=owned(a))
    assert a["member_epoch"] == 2
    b = heartbeat(raw, group, "member-b", 2, topic_partitions=[])
    assert len(b["assignment"]["topic_partitions"][0]["partitions"]) == 2
    described = describe(raw, group)
    assert described["group_state"] == "Stable"
    members = {m["member_id"]: m for m in described["members"]}
    assert members["member-b"]["assignment"] == members["member-b"]["target_assignment"]
    assert members["member-b"]["member_type"] == 1 and members["member-b"]["client_host"].startswith("/")
    # commits with the member epoch (v9), STALE_MEMBER_EPOCH otherwise, and older versions refused
    assert commit(raw, group, "member-b", 2, topic) == 0
    assert commit(raw, group, "member-b", 1, topic) == E.STALE_MEMBER_EPOCH
    assert commit(raw, group, "nobody", 2, topic) == E.UNKNOWN_MEMBER_ID
    assert commit(raw, group, "member-b", 2, topic, version=8) == E.UNSUPPORTED_VERSION
    assert fetch(raw, group, "member-b", 2, topic)["topics"][0]["partitions"][0]["committed_offset"] == 5
    assert fetch(raw, group, "member-b", 7, topic)["error_code"] == E.STALE_MEMBER_EPOCH
    assert fetch(raw, group, None, -1, topic)["error_code"] == 0  # admin clients
    # ListGroups v5 reports the type; DescribeGroups (classic) reports Dead, as Kafka before v6
    listed = raw.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})["groups"]
    assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable", "group_type": "consumer"} in listed
    classic = raw.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
    assert classic["groups"][0]["group_state"] == "Dead"
    # a classic member may join a live consumer group (online migration): first it is given a member id
    join_body = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}],
        "reason": None,
    }
    assert raw.call(ApiKey.JOIN_GROUP, 9, join_body)["error_code"] == E.MEMBER_ID_REQUIRED
    join_body["protocol_type"] = "connect"  # not the consumer protocol: refused
    assert raw.call(ApiKey.JOIN_GROUP, 9, join_body)["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    # a group with members cannot be deleted; once they left it can, offsets and all
    deleted = raw.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]
    assert deleted["error_code"] == E.NON_EMPTY_GROUP
    assert heartbeat(raw, group, "member-a", -1)["member_epoch"] == -1
    assert heartbeat(raw, group, "member-b", -1)["error_code"] == 0
    assert describe(raw, group)["group_state"] == "Empty"
    assert raw.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]["error_code"] == 0
    assert describe(raw, group)["error_code"] == E.GROUP_ID_NOT_FOUND
    assert fetch(raw, group, None, -1, topic)["topics"][0]["partitions"][0]["committed_offset"] == -1


def test_errors(raw: RawClient) -> None:
    topic, group = unique_topic(), unique_topic("g")
    create_topic(raw, topic, 1)
    assert heartbeat(raw, group, "m", 3)["error_code"] == E.GROUP_ID_NOT_FOUND
    assert heartbeat(raw, group, "m", 0)["error_code"] == E.INVALID_REQUEST
    assert join(raw, group, "m", [topic], server_assignor="sticky")["error_code"] == E.UNSUPPORTED_ASSIGNOR
    bad = join(raw, group, "m", [], subscribed_topic_regex="(")
    assert bad["error_code"] == E.INVALID_REGULAR_EXPRESSION
    assert join(raw, group, "m", [topic])["error_code"] == 0
    assert heartbeat(raw, group, "m", 9, topic_partitions=[])["error_code"] == E.FENCED_MEMBER_EPOCH
    assert heartbeat(raw, group, "x", 1)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert describe(raw, unique_topic("none"))["error_code"] == E.GROUP_ID_NOT_FOUND


def test_group_configs_set_the_heartbeat_interval(raw: RawClient) -> None:
    topic, group = unique_topic(), unique_topic("g")
    create_topic(raw, topic, 1)
    body = {
        "resources": [
            {
                "resource_type": 32,
                "resource_name": group,
                "configs": [{"name": "consumer.heartbeat.interval.ms", "config_operation": 0, "value": "7000"}],
            }
        ],
        "validate_only": False,
    }
    assert raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == 0
    assert join(raw, group, "m", [topic])["heartbeat_interval_ms"] == 7000


def test_group_survives_kill9(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    topic, group = unique_topic(), unique_topic("g")
    with RawClient(broker.bootstrap) as raw:
        create_topic(raw, topic, 2)
        tid = topic_id(raw, topic)
        a = join(raw, group, "member-a", [topic], instance_id="static-a")
        assert a["member_epoch"] == 1
        assert commit(raw, group, "member-a", 1, topic) == 0
    broker.kill()
    broker.start()
    with RawClient(broker.bootstrap) as raw:
        # the member carries on with its epoch and partitions; the offset is kept
        again = heartbeat(raw, group, "member-a", 1, topic_partitions=[{"topic_id": tid, "partitions": [0, 1]}])
        assert again["error_code"] == 0 and again["member_epoch"] == 1
        described = describe(raw, group)
        assert described["group_epoch"] == 1 and described["members"][0]["instance_id"] == "static-a"
        assert fetch(raw, group, "member-a", 1, topic)["topics"][0]["partitions"][0]["committed_offset"] == 5


def test_offsets_by_topic_id_v10(raw: RawClient) -> None:
    topic, group = unique_topic(), unique_topic("g")
    create_topic(raw, topic, 2)
    tid, unknown = topic_id(raw, topic), b"\x01" * 16
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {"topic_id": tid, "partitions": [{"partition_index": 1, "committed_offset": 3, "committed_metadata": "m"}]},
            {
                "topic_id": unknown,
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            },
        ],
    }
    answer = raw.call(ApiKey.OFFSET_COMMIT, 10, body)["topics"]
    assert [(t["topic_id"], t["partitions"][0]["error_code"]) for t in answer] == [
        (tid, 0),
        (unknown, E.UNKNOWN_TOPIC_ID),
    ]
    asked = {"group_id": group, "member_id": None, "member_epoch": -1}
    body = {
        "groups": [
            {
                **asked,
                "topics": [
                    {"topic_id": tid, "partition_indexes": [0, 1]},
                    {"topic_id": unknown, "partition_indexes": [0]},
                ],
            }
        ],
        "require_stable": False,
    }
    (fetched,) = raw.call(ApiKey.OFFSET_FETCH, 10, body)["groups"]
    by_id = {
        t["topic_id"]: [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in t["partitions"]]
        for t in fetched["topics"]
    }
    assert by_id == {tid: [(0, -1, 0), (1, 3, 0)], unknown: [(0, -1, E.UNKNOWN_TOPIC_ID)]}
    body = {"groups": [{**asked, "topics": None}], "require_stable": False}
    (every,) = raw.call(ApiKey.OFFSET_FETCH, 10, body)["groups"]
    assert [(t["topic_id"], [p["committed_offset"] for p in t["partitions"]]) for t in every["topics"]] == [(tid, [3])]


def _subscription(topic: str, owned: list[int]) -> bytes:
    """ConsumerProtocolSubscription v1: the topic, null user data, owned partitions."""
    name = topic.encode()
    out = struct.pack(">hi", 1, 1) + struct.pack(">h", len(name)) + name + struct.pack(">i", -1)
    if not owned:
        return out + struct.pack(">i", 0)
    out += struct.pack(">i", 1) + struct.pack(">h", len(name)) + name + struct.pack(">i", len(owned))
    return out + b"".join(struct.pack(">i", p) for p in owned)


def _classic_join(raw: RawClient, group: str, member: str, topic: str, owned: list[int]) -> dict[str, Any]:
    body = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": _subscription(topic, owned)}],
        "reason": None,
    }
    return raw.call(ApiKey.JOIN_GROUP, 9, body)


def _classic_sync(raw: RawClient, group: str, member: str, generation: int) -> dict[str, Any]:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    }
    return raw.call(ApiKey.SYNC_GROUP, 5, body)


def _partitions(assignment: bytes) -> list[int]:
    """The partitions of a one-topic ConsumerProtocolAssignment."""
    (topics,) = struct.unpack_from(">i", assignment, 2)
    if topics == 0:
        return []
    (length,) = struct.unpack_from(">h", assignment, 6)
    (count,) = struct.unpack_from(">i", assignment, 8 + length)
    return list(struct.unpack_from(f">{count}i", assignment, 12 + length))


def _group_type(raw: RawClient, group: str) -> str:
    listed = raw.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]
    return next(g["group_type"] for g in listed if g["group_id"] == group)


def test_classic_member_in_a_consumer_group_over_the_wire_and_across_kill9(
    start_broker: Callable[..., BrokerProcess],
) -> None:
    """Online migration: a classic member joins a consumer group (JoinGroup answered by the consumer group,
    SyncGroup with its share in the consumer protocol), survives a broker kill -9 with its classic metadata,
    and when the consumer-protocol member leaves the group is a classic group again, rebalancing."""
    broker = start_broker()
    topic, group = unique_topic(), unique_topic("g")
    with RawClient(broker.bootstrap) as raw:
        create_topic(raw, topic, 4)
        tid = topic_id(raw, topic)
        a = join(raw, group, "member-a", [topic])
        assert a["member_epoch"] == 1 and len(a["assignment"]["topic_partitions"][0]["partitions"]) == 4
        first = _classic_join(raw, group, "", topic, [])
        assert first["error_code"] == E.MEMBER_ID_REQUIRED
        member = first["member_id"]
        joined = _classic_join(raw, group, member, topic, [])
        assert joined["error_code"] == 0 and joined["leader"] == "" and joined["members"] == []
        assert joined["protocol_type"] == "consumer" and joined["protocol_name"] == "range"
        generation = joined["generation_id"]
        # a still holds everything: b waits for what a gives up (nothing yet)
        assert _partitions(_classic_sync(raw, group, member, generation)["assignment"]) == []
        a = heartbeat(raw, group, "member-a", 1, topic_partitions=owned(a))
        keep = a["assignment"]["topic_partitions"][0]["partitions"]
        assert len(keep) == 2
        a = heartbeat(raw, group, "member-a", 1, topic_partitions=[{"topic_id": tid, "partitions": keep}])
        assert a["member_epoch"] == 2
        beat = {"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": None}
        assert raw.call(ApiKey.HEARTBEAT, 4, beat)["error_code"] == E.REBALANCE_IN_PROGRESS  # released: rejoin
        joined = _classic_join(raw, group, member, topic, [])
        generation = joined["generation_id"]
        mine = _partitions(_classic_sync(raw, group, member, generation)["assignment"])
        assert sorted(mine + keep) == [0, 1, 2, 3]
        types = sorted(m["member_type"] for m in describe(raw, group)["members"])
        assert types == [0, 1] and _group_type(raw, group) == "consumer"
    broker.kill()
    broker.start()
    with RawClient(broker.bootstrap) as raw:
        beat = {"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": None}
        assert raw.call(ApiKey.HEARTBEAT, 4, beat)["error_code"] == 0  # still a classic member, same epoch
        assert sorted(m["member_type"] for m in describe(raw, group)["members"]) == [0, 1]
        assert heartbeat(raw, group, "member-a", -1)["error_code"] == 0
        assert _group_type(raw, group) == "classic"
        assert raw.call(ApiKey.HEARTBEAT, 4, beat)["error_code"] == E.REBALANCE_IN_PROGRESS
        joined = _classic_join(raw, group, member, topic, mine)
        assert joined["error_code"] == 0 and joined["leader"] == member and joined["generation_id"] == generation + 1
