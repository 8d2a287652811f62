"""ShareFetch and ShareAcknowledge at the edge (no session, wrong session epochs, acknowledging what was not
acquired, bad acknowledgement types and ranges, unknown topic ids, strangers, closing twice), answered by a
fresh kbroker and a fresh Apache Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.conftest import batch_of
from tests.broker.side_by_side import Request, Step
from tests.process import RawClient

pytestmark = pytest.mark.timeout(300)

TOPIC, GROUP = "jobs", "workers"
ALICE, MALLORY = "alice-" + "a" * 16, "mallory-" + "m" * 14
ACCEPT, RELEASE, REJECT = 1, 2, 3
STATE: dict[str, Any] = {}  # the topic id of the broker being asked (set by _prepare)


def _topic_id(raw: RawClient) -> bytes:
    body = {"topics": [{"name": TOPIC, "topic_id": b"\0" * 16}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}  # fmt: skip
    return bytes(raw.call(ApiKey.METADATA, 12, body)["topics"][0]["topic_id"])


def _prepare(raw: RawClient) -> None:
    """A topic of one partition with 5 records, a share group reading from the earliest, ALICE in it and
    assigned the partition (Kafka assigns it a heartbeat after the join)."""
    body = {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30000, "validate_only": False}  # fmt: skip
    assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    side_by_side.wait_for_leaders(raw, TOPIC, 1)
    produce = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
               "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch_of(5)}]}]}  # fmt: skip
    assert raw.call(ApiKey.PRODUCE, 9, produce)["responses"][0]["partition_responses"][0]["error_code"] == 0
    STATE["tid"] = _topic_id(raw)
    side_by_side.until_coordinator(raw, GROUP)
    earliest = [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]
    body = {"resources": [{"resource_type": 32, "resource_name": GROUP, "configs": earliest}], "validate_only": False}
    assert raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == 0
    describe = {"resources": [{"resource_type": 32, "resource_name": GROUP,
                               "configuration_keys": ["share.auto.offset.reset"]}],
                "include_synonyms": False, "include_documentation": False}  # fmt: skip
    # Kafka's brokers see a group config a moment after the controller
    side_by_side.until(raw, ApiKey.DESCRIBE_CONFIGS, 4, describe,
                       lambda a: a["results"][0]["configs"][0]["value"] == "earliest")  # fmt: skip
    heartbeat = {"group_id": GROUP, "member_id": ALICE, "member_epoch": 0, "rack_id": None,
                 "subscribed_topic_names": [TOPIC]}  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        answer = raw.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, heartbeat)
        assert answer["error_code"] == 0, answer
        if answer["assignment"] and answer["assignment"]["topic_partitions"]:
            return
        assert time.monotonic() < deadline, answer
        heartbeat = {**heartbeat, "member_epoch": answer["member_epoch"], "subscribed_topic_names": None}
        time.sleep(0.5)


def _acks(*batches: tuple[int, int, int]) -> list[dict[str, Any]]:
    return [{"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in batches]


def _fetch(epoch: int, *acks: tuple[int, int, int], member: str = ALICE, max_records: int = 2,
           partitions: bool = True, max_wait_ms: int = 10_000) -> Any:  # fmt: skip
    """A fetch that acquires returns once it has; one that finds nothing waits max_wait_ms (long enough for a
    JVM short of CPU to load the share partition's state)."""

    def body(node: int) -> dict[str, Any]:
        wanted = [
            {"topic_id": STATE["tid"], "partitions": [{"partition_index": 0, "acknowledgement_batches": _acks(*acks)}]}
        ]
        return {"group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": max_records,
                "share_acquire_mode": 1, "is_renew_ack": False, "topics": wanted if partitions else [],
                "forgotten_topics_data": []}  # fmt: skip

    return body


def _acknowledge(epoch: int, *acks: tuple[int, int, int], member: str = ALICE) -> Any:
    def body(node: int) -> dict[str, Any]:
        wanted = [{"topic_id": STATE["tid"], "partitions": [{"partition_index": 0,
                                                              "acknowledgement_batches": _acks(*acks)}]}]  # fmt: skip
        return {"group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": False,
                "topics": wanted}  # fmt: skip

    return body


REQUESTS: list[Request | Step] = [
    _prepare,
    ("fetch without a session", ApiKey.SHARE_FETCH, 2, _fetch(3)),
    ("acknowledge without a session", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(3, (0, 0, ACCEPT))),
    ("close without a session", ApiKey.SHARE_FETCH, 2, _fetch(-1, partitions=False)),
    ("open with acknowledgements", ApiKey.SHARE_FETCH, 2, _fetch(0, (0, 0, ACCEPT))),
    ("open", ApiKey.SHARE_FETCH, 2, _fetch(0)),  # acquires 0-1; the session's next epoch is 1
    ("acknowledge what was not acquired", ApiKey.SHARE_FETCH, 2, _fetch(1, (3, 4, ACCEPT))),  # acquires 2-3
    ("fetch at a stale epoch", ApiKey.SHARE_FETCH, 2, _fetch(1)),
    ("acknowledge with a bad type", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(2, (0, 0, 9))),
    ("acknowledge a backwards range", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(3, (1, 0, ACCEPT))),
    ("acknowledge", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(4, (0, 0, ACCEPT), (1, 1, RELEASE))),
    ("acknowledge again", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(5, (0, 0, ACCEPT))),
    ("fetch as a stranger", ApiKey.SHARE_FETCH, 2, _fetch(0, member=MALLORY)),  # acquires 1 (released) and 4
    ("fetch when nothing is left", ApiKey.SHARE_FETCH, 2, _fetch(6, max_wait_ms=500)),  # 2-3 held, 1 and 4 taken
    ("reject another member's record", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(7, (1, 1, REJECT))),
    ("close with acknowledgements", ApiKey.SHARE_FETCH, 2, _fetch(-1, (2, 2, ACCEPT), partitions=True)),
    ("acknowledge after the close", ApiKey.SHARE_ACKNOWLEDGE, 2, _acknowledge(8, (2, 2, ACCEPT))),
    # Not compared: a ShareFetch naming an unknown topic id. kbroker answers the partition UNKNOWN_TOPIC_ID;
    # Apache Kafka 4.3.1 answers UNKNOWN_SERVER_ERROR for the whole request, and for the session's next one.
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """The records' bytes are each broker's own batches: compared by whether there are any."""
    for topic in answer.get("responses", []):
        for partition in topic.get("partitions", []):
            if "records" in partition:
                partition["records"] = bool(partition["records"])
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
