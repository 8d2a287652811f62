"""ShareGroupDescribe, ConsumerGroupDescribe and the share-group offset admin APIs on group ids that are not
what the request expects (unknown, empty, a group of another type), answered field for field as Apache Kafka
4.3.1 answers them: both brokers are asked the same requests over the raw protocol in one test."""

from __future__ import annotations

import base64
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import create_topic, unique_topic
from tests.process import BrokerProcess, RawClient

pytestmark = pytest.mark.timeout(300)


def _member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _groups(raw: RawClient) -> dict[str, str]:
    """A classic group, a KIP-848 consumer group and a share group, made on this broker; their ids."""
    topic = unique_topic("described")
    create_topic(raw, topic)
    classic, consumer, share = unique_topic("classic"), unique_topic("consumer"), unique_topic("share")
    join = {
        "group_id": classic,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }
    join["member_id"] = _call(raw, ApiKey.JOIN_GROUP, 9, join, ok=ErrorCode.MEMBER_ID_REQUIRED)["member_id"]
    _call(raw, ApiKey.JOIN_GROUP, 9, join)
    heartbeat = {
        "group_id": consumer,
        "member_id": _member_id(),
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    _call(raw, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, heartbeat)
    share_heartbeat = {
        "group_id": share,
        "member_id": _member_id(),
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": [topic],
    }
    _call(raw, ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_heartbeat)
    return {"unknown": unique_topic("nobody"), "empty": "", "classic": classic, "consumer": consumer, "share": share}


def _call(
    raw: RawClient, api: ApiKey, version: int, body: dict[str, Any], ok: ErrorCode = ErrorCode.NONE
) -> dict[str, Any]:
    """The answer `ok`, asking again while the group coordinator is not ready (Kafka creates
    __consumer_offsets on the first FindCoordinator, then loads its coordinator)."""
    not_ready = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
    deadline = time.monotonic() + 60
    while True:
        raw.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [body["group_id"]]})
        answer = raw.call(api, version, body)
        if answer["error_code"] == ok:
            return answer
        assert answer["error_code"] in not_ready and time.monotonic() < deadline, answer
        time.sleep(0.2)


def _answers(bootstrap: str) -> dict[str, Any]:
    """Every answer of interest with the group ids replaced by their roles, so both brokers' answers compare."""
    with RawClient(bootstrap) as raw:
        ids = _groups(raw)
        roles = {group_id: role for role, group_id in ids.items()}
        asked = [ids[role] for role in ("unknown", "empty", "classic", "consumer")]
        answers: dict[str, Any] = {}
        body = {"group_ids": [*asked, ids["share"]], "include_authorized_operations": False}
        for group in raw.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, body)["groups"]:
            if group["group_id"] == ids["share"]:
                continue  # a live group: its members are the broker's own
            answers[f"ShareGroupDescribe {roles.get(group['group_id'], group['group_id'])}"] = _named(group, ids)
        body = {"group_ids": [*asked[:3], ids["share"]], "include_authorized_operations": False}
        for group in raw.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, body)["groups"]:
            answers[f"ConsumerGroupDescribe {roles.get(group['group_id'], group['group_id'])}"] = _named(group, ids)
        body = {"groups": [ids[role] for role in ("unknown", "empty", "consumer", "share")],
                "include_authorized_operations": False}  # fmt: skip
        for group in raw.call(ApiKey.DESCRIBE_GROUPS, 5, body)["groups"]:
            answers[f"DescribeGroups {roles.get(group['group_id'], group['group_id'])}"] = _named(group, ids)
        body = {"groups_names": [ids[role] for role in ("unknown", "empty", "classic", "consumer", "share")]}
        for result in raw.call(ApiKey.DELETE_GROUPS, 2, body)["results"]:
            answers[f"DeleteGroups {roles.get(result['group_id'], result['group_id'])}"] = _named(result, ids)
        for role in ("unknown", "classic", "consumer"):
            topics = [{"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 0}]}]
            altered = raw.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": ids[role], "topics": topics})
            answers[f"AlterShareGroupOffsets {role}"] = _named(altered, ids)
            body = {"group_id": ids[role], "topics": [{"topic_name": "t"}]}
            deleted = raw.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, body)
            answers[f"DeleteShareGroupOffsets {role}"] = _named(deleted, ids)
        return answers


def _named(answer: dict[str, Any], ids: dict[str, str]) -> Any:
    """`answer` as plain data, each group id written as its role (`<classic>`). A topic's or partition's
    error has a message on both brokers, in each broker's words (kbroker's error texts are its own)."""
    answer = dict(answer)
    for topic in answer.get("responses", []):
        for entry in [topic, *topic.get("partitions", [])]:
            if entry.get("error_code"):
                entry["error_message"] = "<message>" if entry.get("error_message") else None
    text = repr(answer)
    for role, group_id in ids.items():
        if group_id:
            text = text.replace(group_id, f"<{role}>")
    return text


@pytest.fixture(scope="module")
def kafka_answers() -> Iterator[dict[str, Any]]:
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef() as kafka:
        yield _answers(kafka.bootstrap)


def test_answers_are_kafkas(kafka_answers: dict[str, Any], tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path).start()
    try:
        ours = _answers(broker.bootstrap)
    finally:
        broker.stop()
    differences = {k: (ours.get(k), kafka_answers.get(k)) for k in kafka_answers.keys() | ours.keys()
                   if ours.get(k) != kafka_answers.get(k)}  # fmt: skip
    assert not differences, "\n".join(
        f"{k}:\n  kbroker {a}\n  kafka   {b}" for k, (a, b) in sorted(differences.items())
    )
