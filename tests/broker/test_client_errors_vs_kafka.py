"""Produce, Fetch, offsets, classic group and producer-id requests at the edge (unknown partitions and groups,
out-of-range offsets, bad acks, oversized metadata, stale members), answered by a fresh kbroker and a fresh
Apache Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py)."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.conftest import batch_of, fetch_request
from tests.broker.side_by_side import Request, Step

pytestmark = pytest.mark.timeout(300)

TOPIC = "events"


def _produce(partition: int, acks: int = -1, topic: str = TOPIC, records: bytes | None = None) -> Any:
    data = batch_of(3) if records is None else records
    return lambda node: {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
                         "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": data}]}]}  # fmt: skip


def _fetch(*partitions: tuple[str, int, int]) -> Any:
    return lambda node: fetch_request(list(partitions))


def _commit(group: str, offset: int, *, partition: int = 0, topic: str = TOPIC, metadata: str | None = "",
            generation: int = -1, member: str = "") -> Any:  # fmt: skip
    partitions = [{"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
                   "committed_metadata": metadata}]  # fmt: skip
    return lambda node: {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                         "group_instance_id": None, "topics": [{"name": topic, "partitions": partitions}]}  # fmt: skip


def _offset_fetch(group: str, topics: list[tuple[str, list[int]]] | None) -> Any:
    wanted = None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics]
    return lambda node: {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": wanted}],
                         "require_stable": False}  # fmt: skip


def _create_topic(raw: Any) -> None:
    body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30000, "validate_only": False}  # fmt: skip
    assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    side_by_side.wait_for_leaders(raw, TOPIC, 2)


def _coordinator(raw: Any) -> None:
    """Kafka creates __consumer_offsets on the first FindCoordinator, then loads it: until it answers."""
    side_by_side.until_coordinator(raw, "offsets-group")


REQUESTS: list[Request | Step] = [
    _create_topic,
    ("produce", ApiKey.PRODUCE, 9, _produce(0)),
    ("produce no partition", ApiKey.PRODUCE, 9, _produce(7)),
    ("produce unknown topic", ApiKey.PRODUCE, 9, _produce(0, topic="no-such-topic")),
    ("produce acks 2", ApiKey.PRODUCE, 9, _produce(0, acks=2)),
    ("produce acks -2", ApiKey.PRODUCE, 9, _produce(0, acks=-2)),
    ("produce no records", ApiKey.PRODUCE, 9, _produce(0, records=b"")),
    ("produce bad name", ApiKey.PRODUCE, 9, _produce(0, topic="bad/name")),
    ("fetch", ApiKey.FETCH, 12, _fetch((TOPIC, 0, 0))),
    ("fetch past the end", ApiKey.FETCH, 12, _fetch((TOPIC, 0, 4))),
    ("fetch negative offset", ApiKey.FETCH, 12, _fetch((TOPIC, 0, -1))),
    ("fetch no partition", ApiKey.FETCH, 12, _fetch((TOPIC, 9, 0))),
    ("fetch unknown topic", ApiKey.FETCH, 12, _fetch(("no-such-topic", 0, 0))),
    ("fetch the end", ApiKey.FETCH, 12, _fetch((TOPIC, 0, 3), (TOPIC, 1, 0))),
    _coordinator,
    ("commit", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 2)),
    ("commit no partition", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 1, partition=9)),
    ("commit unknown topic", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 1, topic="no-such-topic")),
    ("commit past the end", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 99)),
    ("commit negative", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", -7)),
    ("commit long metadata", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 1, metadata="m" * 5000)),
    ("commit null metadata", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 1, metadata=None)),
    ("commit as a stranger", ApiKey.OFFSET_COMMIT, 9, _commit("offsets-group", 1, generation=3, member="nobody")),
    ("commit empty group", ApiKey.OFFSET_COMMIT, 9, _commit("", 1)),
    ("offset fetch", ApiKey.OFFSET_FETCH, 9, _offset_fetch("offsets-group", None)),
    ("offset fetch some", ApiKey.OFFSET_FETCH, 9, _offset_fetch("offsets-group", [(TOPIC, [0, 1, 9]),
                                                                                  ("no-such-topic", [0])])),
    ("offset fetch unknown group", ApiKey.OFFSET_FETCH, 9, _offset_fetch("nobody-group", None)),
    ("offset fetch empty group", ApiKey.OFFSET_FETCH, 9, _offset_fetch("", None)),
    ("offset delete empty group", ApiKey.OFFSET_DELETE, 0, lambda node: {
        "group_id": "", "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]}),
    ("offset delete unknown group", ApiKey.OFFSET_DELETE, 0, lambda node: {
        "group_id": "nobody-group", "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]}),
    ("offset delete", ApiKey.OFFSET_DELETE, 0, lambda node: {
        "group_id": "offsets-group", "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0},
                                                                               {"partition_index": 9}]},
                                                {"name": "no-such-topic", "partitions": [{"partition_index": 0}]}]}),
    ("heartbeat unknown group", ApiKey.HEARTBEAT, 4, lambda node: {
        "group_id": "nobody-group", "generation_id": 1, "member_id": "m", "group_instance_id": None}),
    ("heartbeat stranger", ApiKey.HEARTBEAT, 4, lambda node: {
        "group_id": "offsets-group", "generation_id": 1, "member_id": "m", "group_instance_id": None}),
    ("sync unknown group", ApiKey.SYNC_GROUP, 5, lambda node: {
        "group_id": "nobody-group", "generation_id": 1, "member_id": "m", "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range", "assignments": []}),
    ("leave unknown group", ApiKey.LEAVE_GROUP, 5, lambda node: {
        "group_id": "nobody-group", "members": [{"member_id": "m", "group_instance_id": None, "reason": None}]}),
    ("leave stranger", ApiKey.LEAVE_GROUP, 5, lambda node: {
        "group_id": "offsets-group", "members": [{"member_id": "m", "group_instance_id": None, "reason": None}]}),
    ("list groups bad state", ApiKey.LIST_GROUPS, 5, lambda node: {
        "states_filter": ["Sleeping"], "types_filter": ["classic"]}),
    ("list groups", ApiKey.LIST_GROUPS, 5, lambda node: {"states_filter": [], "types_filter": []}),
    ("find coordinator", ApiKey.FIND_COORDINATOR, 4, lambda node: {
        "key_type": 0, "coordinator_keys": ["offsets-group", ""]}),
    ("find coordinator v3", ApiKey.FIND_COORDINATOR, 3, lambda node: {"key": "offsets-group", "key_type": 0}),
    ("find share key type", ApiKey.FIND_COORDINATOR, 4, lambda node: {"key_type": 2, "coordinator_keys": ["g:x:0"]}),
    ("find bad key type", ApiKey.FIND_COORDINATOR, 4, lambda node: {"key_type": 5, "coordinator_keys": ["x"]}),
    ("init producer id long timeout", ApiKey.INIT_PRODUCER_ID, 5, lambda node: {
        "transactional_id": "tx-1", "transaction_timeout_ms": 2_000_000_000, "producer_id": -1,
        "producer_epoch": -1}),
    ("init producer id bad epoch", ApiKey.INIT_PRODUCER_ID, 5, lambda node: {
        "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": 5, "producer_epoch": -1}),
    ("init producer id empty", ApiKey.INIT_PRODUCER_ID, 5, lambda node: {
        "transactional_id": "", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}),
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """Fields that are each broker's own: a produce's log append time and start offset stay, base offsets stay;
    record batches are compared by their offsets alone (kbroker and Kafka write the same batches)."""
    for topic in answer.get("responses", []):
        for partition in topic.get("partitions", []):
            if partition.get("records") is not None:
                partition["records"] = len(partition["records"]) > 0
    if label.startswith("offset delete"):  # Kafka answers the partitions it refuses first
        for topic in answer["topics"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])
    if label == "list groups":
        answer["groups"] = sorted(g["group_id"] for g in answer["groups"])
    if label.startswith("init producer id") and answer.get("producer_id", -1) >= 0:
        answer["producer_id"] = "<producer id>"
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
