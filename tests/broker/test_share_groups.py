"""Share groups over the raw protocol against a real kbroker: sessions, acknowledgement errors, and
kill -9 during consumption (acknowledged records never come back; acquired ones do).

Scenarios with real share consumers, on kbroker and Apache Kafka, are tests/compat/scenarios/test_share_groups.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import batch_of, create_topic, produce, unique_topic
from tests.process import BrokerProcess, RawClient

ACCEPT, RELEASE = 1, 2


def topic_id(raw: RawClient, topic: str) -> bytes:
    response = raw.call(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": b"\0" * 16}]})
    return bytes(response["topics"][0]["topic_id"])


def join(raw: RawClient, group: str, member: str, topic: str) -> dict[str, Any]:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": [topic],
    }
    response = raw.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
    assert response["error_code"] == 0, response
    return response


def share_fetch(
    raw: RawClient,
    group: str,
    member: str,
    epoch: int,
    tid: bytes,
    *,
    acks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
    max_records: int = 500,
    max_wait_ms: int = 500,
    version: int = 2,
    record_limit: bool = True,
) -> dict[str, Any]:
    batches = [{"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]
    body = {
        "group_id": group,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": max_records,
        "batch_size": max_records,
        "share_acquire_mode": 1 if record_limit else 0,
        "is_renew_ack": False,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}]}],
        "forgotten_topics_data": [],
    }
    return raw.call(ApiKey.SHARE_FETCH, version, body)


def share_acknowledge(
    raw: RawClient, group: str, member: str, epoch: int, tid: bytes, acks: list[tuple[int, int, int]]
) -> dict[str, Any]:
    batches = [{"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]
    body = {
        "group_id": group,
        "member_id": member,
        "share_session_epoch": epoch,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}]}],
    }
    return raw.call(ApiKey.SHARE_ACKNOWLEDGE, 1, body)


def acquired(response: dict[str, Any]) -> list[tuple[int, int]]:
    """(offset, delivery count) of every acquired record."""
    assert response["error_code"] == 0, response
    return [
        (offset, r["delivery_count"])
        for t in response["responses"]
        for p in t["partitions"]
        for r in p["acquired_records"]
        for offset in range(r["first_offset"], r["last_offset"] + 1)
    ]


def test_session_epochs_and_acknowledgement_errors(broker: BrokerProcess, raw: RawClient) -> None:
    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)
    tid = topic_id(raw, topic)
    joined = join(raw, group, "m1", topic)
    assert joined["assignment"]["topic_partitions"] == [{"topic_id": tid, "partitions": [0]}]
    assert produce(raw, topic, batch_of(10))["error_code"] == 0
    assert share_fetch(raw, group, "m1", 3, tid)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    first = share_fetch(raw, group, "m1", 0, tid, max_records=4)
    assert acquired(first) == [(i, 1) for i in range(4)]
    assert share_fetch(raw, group, "m1", 5, tid)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # offsets 0-1 accepted, 2-3 released, 4-9 never acquired: acknowledging them is INVALID_RECORD_STATE
    bad = share_acknowledge(raw, group, "m1", 1, tid, [(4, 4, ACCEPT)])
    assert bad["responses"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_RECORD_STATE
    good = share_acknowledge(raw, group, "m1", 2, tid, [(0, 1, ACCEPT), (2, 3, RELEASE)])
    assert good["responses"][0]["partitions"][0]["error_code"] == 0
    again = share_fetch(raw, group, "m1", 3, tid)
    assert acquired(again) == [(2, 2), (3, 2)] + [(i, 1) for i in range(4, 10)]
    # batch-optimized acquisition (v1, and v2's mode 0) takes the last batch whole, past max_records
    assert produce(raw, topic, batch_of(10))["error_code"] == 0  # offsets 10-19
    whole = share_fetch(raw, group, "m1", 4, tid, max_records=3, version=1, max_wait_ms=0)
    assert acquired(whole) == [(i, 1) for i in range(10, 20)]
    described = raw.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    (g,) = described["groups"]
    assert (g["group_state"], [m["member_id"] for m in g["members"]]) == ("Stable", ["m1"])


def test_kill_9_during_consumption_never_redelivers_acknowledged_records(
    start_broker: Callable[..., BrokerProcess],
) -> None:
    broker = start_broker("--config", "share.coordinator.state.topic.num.partitions=3")
    topic, group = unique_topic("share"), unique_topic("sg")
    total = 60
    with RawClient(broker.bootstrap) as raw:
        create_topic(raw, topic)
        tid = topic_id(raw, topic)
        join(raw, group, "m0", topic)
        share_fetch(raw, group, "m0", 0, tid, max_wait_ms=0)  # the share partition starts at 0 (latest, empty)
        for _ in range(total // 10):
            assert produce(raw, topic, batch_of(10))["error_code"] == 0
    accepted: list[int] = []
    for iteration in range(10):
        with RawClient(broker.bootstrap) as raw:
            member = f"m{iteration}"
            join(raw, group, member, topic)
            got = acquired(share_fetch(raw, group, member, 0, tid, max_records=20))
            offsets = [offset for offset, _ in got]
            assert not set(offsets) & set(accepted), "an acknowledged record came back"
            if not offsets:
                break
            half = offsets[: (len(offsets) + 1) // 2]
            answer = share_acknowledge(raw, group, member, 1, tid, [(half[0], half[-1], ACCEPT)])
            assert answer["responses"][0]["partitions"][0]["error_code"] == 0
            accepted += half  # answered: durable
        broker.kill()
        broker.start()
    assert sorted(accepted) == list(range(total))
    assert len(accepted) == total


def test_a_deleted_topic_leaves_no_share_state(broker: BrokerProcess, raw: RawClient) -> None:
    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)
    tid = topic_id(raw, topic)
    join(raw, group, "m1", topic)
    assert produce(raw, topic, batch_of(3))["error_code"] == 0
    assert len(acquired(share_fetch(raw, group, "m1", 0, tid))) == 3
    deleted = raw.call(
        ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": topic, "topic_id": b"\0" * 16}], "timeout_ms": 5000}
    )
    assert deleted["responses"][0]["error_code"] == 0
    offsets = raw.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]})
    assert offsets["groups"][0]["topics"] == []
    after = share_fetch(raw, group, "m1", 1, tid, max_wait_ms=0)
    assert after["error_code"] == 0
    assert [p["error_code"] for t in after["responses"] for p in t["partitions"]] == [ErrorCode.UNKNOWN_TOPIC_ID]


def test_classic_and_share_groups_share_one_namespace(broker: BrokerProcess, raw: RawClient) -> None:
    """As Apache Kafka 4.3.1 answers (checked against it): JoinGroup on a share group's id is
    INCONSISTENT_GROUP_PROTOCOL, ShareGroupHeartbeat on a classic group's id GROUP_ID_NOT_FOUND."""
    topic, share_group, classic_group = unique_topic("share"), unique_topic("sg"), unique_topic("cg")
    create_topic(raw, topic)
    join(raw, share_group, "m1", topic)
    body = {
        "group_id": share_group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }
    assert raw.call(ApiKey.JOIN_GROUP, 9, body)["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    body["group_id"] = classic_group
    member_id = raw.call(ApiKey.JOIN_GROUP, 9, body)["member_id"]  # MEMBER_ID_REQUIRED
    body["member_id"] = member_id
    assert raw.call(ApiKey.JOIN_GROUP, 9, body)["error_code"] == 0
    heartbeat = {"group_id": classic_group, "member_id": "x" * 22, "member_epoch": 0, "rack_id": None}
    answer = raw.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {**heartbeat, "subscribed_topic_names": [topic]})
    assert (answer["error_code"], answer["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {classic_group} is not a share group.",
    )


def test_group_configs_earliest_and_a_lower_delivery_limit(broker: BrokerProcess, raw: RawClient) -> None:
    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)
    tid = topic_id(raw, topic)
    assert produce(raw, topic, batch_of(2))["error_code"] == 0  # before the group exists
    configs = [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
        {"name": "share.delivery.count.limit", "config_operation": 0, "value": "2"},
        {"name": "share.heartbeat.interval.ms", "config_operation": 0, "value": "7000"},
    ]
    body = {"resources": [{"resource_type": 32, "resource_name": group, "configs": configs}], "validate_only": False}
    altered = raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert altered["responses"][0]["error_code"] == 0, altered
    bad = [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "sometimes"}]
    body = {"resources": [{"resource_type": 32, "resource_name": group, "configs": bad}], "validate_only": True}
    assert raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == ErrorCode.INVALID_CONFIG
    assert join(raw, group, "m1", topic)["heartbeat_interval_ms"] == 7000
    assert acquired(share_fetch(raw, group, "m1", 0, tid)) == [(0, 1), (1, 1)]  # earliest
    share_acknowledge(raw, group, "m1", 1, tid, [(0, 1, RELEASE)])
    assert acquired(share_fetch(raw, group, "m1", 2, tid)) == [(0, 2), (1, 2)]
    share_acknowledge(raw, group, "m1", 3, tid, [(0, 1, RELEASE)])  # the second delivery was the last
    assert acquired(share_fetch(raw, group, "m1", 4, tid, max_wait_ms=0)) == []


def test_read_committed_share_group_never_delivers_aborted_records(broker: BrokerProcess, raw: RawClient) -> None:
    from confluent_kafka import Producer

    from protocol.records import iter_batches

    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)
    tid = topic_id(raw, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(10)
    for values, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False), ([b"c2"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        producer.flush(10)
        (producer.commit_transaction if commit else producer.abort_transaction)(10)
    configs = [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
        {"name": "share.isolation.level", "config_operation": 0, "value": "read_committed"},
    ]
    body = {"resources": [{"resource_type": 32, "resource_name": group, "configs": configs}], "validate_only": False}
    assert raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == 0
    join(raw, group, "m1", topic)
    response = share_fetch(raw, group, "m1", 0, tid)
    # c0 c1 COMMIT a0 a1 ABORT c2 COMMIT: the aborted records are archived; the markers stay acquired (GAP).
    # Apache Kafka 4.3.1 acquires exactly these offsets for the same sequence (checked by hand).
    assert [offset for offset, _ in acquired(response)] == [0, 1, 2, 5, 6, 7]
    records = response["responses"][0]["partitions"][0]["records"]
    values = [r.value for b in iter_batches(bytes(records)) if not b.is_control for r in b.records()]
    assert values == [b"c0", b"c1", b"c2"]


def test_describe_offsets_of_an_unknown_group_or_topic_answers_no_offset(broker: BrokerProcess, raw: RawClient) -> None:
    """As Apache Kafka 4.3.1 answers (checked against it): DescribeShareGroupOffsets has no GROUP_ID_NOT_FOUND;
    a group without state, or a topic that does not exist, has start offset and lag -1 without an error."""
    topic, group = unique_topic("share"), unique_topic("sg")
    create_topic(raw, topic)

    def describe(group_id: str, topics: list[dict[str, Any]] | None) -> dict[str, Any]:
        body = {"groups": [{"group_id": group_id, "topics": topics}]}
        return dict(raw.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, body)["groups"][0])

    assert describe(group, None) == {"group_id": group, "topics": [], "error_code": 0, "error_message": None}
    absent = unique_topic("absent")
    answer = describe(group, [{"topic_name": topic, "partitions": [0]}, {"topic_name": absent, "partitions": [0]}])
    assert answer["error_code"] == 0
    assert [(t["topic_name"], t["topic_id"] == b"\0" * 16) for t in answer["topics"]] == [
        (topic, False),
        (absent, True),
    ]
    assert [(p["start_offset"], p["lag"], p["error_code"]) for t in answer["topics"] for p in t["partitions"]] == [
        (-1, -1, 0),
        (-1, -1, 0),
    ]
    join(raw, group, "m1", topic)
    assert produce(raw, topic, batch_of(2))["error_code"] == 0
    tid = topic_id(raw, topic)
    assert len(acquired(share_fetch(raw, group, "m1", 0, tid))) == 2
    answer = describe(group, [{"topic_name": topic, "partitions": [0, 7]}, {"topic_name": absent, "partitions": [0]}])
    rows = [(p["start_offset"], p["lag"], p["error_code"]) for t in answer["topics"] for p in t["partitions"]]
    assert rows == [(0, 2, 0), (-1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (-1, -1, 0)]
