"""DescribeTopicPartitions against a real kbroker: paging with cursors, errors, ELR fields."""

from __future__ import annotations

import uuid
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.process import RawClient


def _create(raw: RawClient, name: str, partitions: int) -> None:
    body = {
        "topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
        ],
        "timeout_ms": 5000,
        "validate_only": False,
    }
    assert raw.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]["error_code"] == 0


def _describe(raw: RawClient, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> dict:
    body: dict[str, Any] = {
        "topics": [{"name": n} for n in names],
        "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return dict(raw.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body))


def _page(response: dict) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
    topics = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in response["topics"]]
    cursor = response["next_cursor"]
    return topics, None if cursor is None else (cursor["topic_name"], cursor["partition_index"])


def test_partition_fields(raw: RawClient) -> None:
    name = f"dtp-{uuid.uuid4().hex[:8]}"
    _create(raw, name, 2)
    (topic,) = _describe(raw, [name])["topics"]
    assert (topic["error_code"], topic["name"], topic["is_internal"]) == (0, name, False)
    assert len(topic["topic_id"]) == 16 and topic["topic_id"] != b"\x00" * 16
    partition = topic["partitions"][1]
    assert partition == {
        "error_code": 0,
        "partition_index": 1,
        "leader_id": 1,
        "leader_epoch": 0,
        "replica_nodes": [1],
        "isr_nodes": [1],
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": [],
    }


def test_pages_follow_the_cursor(raw: RawClient) -> None:
    prefix = f"dtp-{uuid.uuid4().hex[:8]}"
    a, b, c = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"
    _create(raw, a, 3)
    _create(raw, b, 2)
    _create(raw, c, 1)
    names = [c, a, b]  # answered in name order
    assert _page(_describe(raw, names, limit=2)) == ([(a, [0, 1])], (a, 2))
    assert _page(_describe(raw, names, limit=2, cursor=(a, 2))) == ([(a, [2]), (b, [0])], (b, 1))
    # the limit reached exactly at a topic's end: the cursor is the next topic's partition 0
    assert _page(_describe(raw, names, limit=2, cursor=(b, 0))) == ([(b, [0, 1])], (c, 0))
    assert _page(_describe(raw, names, limit=2, cursor=(c, 0))) == ([(c, [0])], None)
    assert _page(_describe(raw, names, limit=0)) == ([(a, [0])], (a, 1))  # at least one partition


def test_every_topic_when_none_named(raw: RawClient) -> None:
    name = f"dtp-{uuid.uuid4().hex[:8]}"
    _create(raw, name, 1)
    topics, cursor = _page(_describe(raw, [], cursor=(name, 0)))
    assert topics[0] == (name, [0]) and cursor is None
    assert all(n >= name for n, _ in topics)


def test_errors(raw: RawClient) -> None:
    name = f"dtp-{uuid.uuid4().hex[:8]}"
    _create(raw, name, 1)
    missing, illegal = f"missing-{uuid.uuid4().hex[:8]}", "bad/name"
    answers = {t["name"]: t["error_code"] for t in _describe(raw, [name, missing, illegal])["topics"]}
    assert answers == {
        name: 0,
        missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        illegal: ErrorCode.INVALID_TOPIC_EXCEPTION,
    }
    # the cursor's topic must be among the named ones, and its partition not negative
    for cursor in [(missing + "z", 0), (name, -1)]:
        answers = {t["name"]: t["error_code"] for t in _describe(raw, [name], cursor=cursor)["topics"]}
        assert answers == {name: ErrorCode.INVALID_REQUEST}
