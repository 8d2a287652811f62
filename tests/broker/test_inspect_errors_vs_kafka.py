"""Requests that inspect or trim partitions, at the edge (DeleteRecords past the high watermark, special
ListOffsets timestamps and leader epochs, OffsetForLeaderEpoch, DescribeProducers, DescribeTransactions,
ListTransactions, DescribeTopicPartitions and DescribeLogDirs of unknown partitions), answered by a fresh kbroker and a fresh Apache Kafka 4.3.1 and compared field for field
(tests/broker/side_by_side.py)."""

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

TOPIC = "trail"


def _prepare(raw: RawClient) -> None:
    """A topic of two partitions; partition 0 holds 5 records (timestamps 1000-1004), partition 1 none."""
    body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30000, "validate_only": False}  # fmt: skip
    assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    side_by_side.wait_for_leaders(raw, TOPIC, 2)
    produce = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
               "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch_of(5)}]}]}  # fmt: skip
    assert raw.call(ApiKey.PRODUCE, 9, produce)["responses"][0]["partition_responses"][0]["error_code"] == 0


def _until_transactions_loaded(raw: RawClient) -> None:
    """Until DescribeTransactions answers from a loaded coordinator (Kafka creates and loads __transaction_state
    on the first lookup: NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS before)."""
    side_by_side.until_transaction_coordinator(raw, "tx-none")
    deadline = time.monotonic() + 60
    while True:
        state = raw.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx-none"]})["transaction_states"][0]
        if state["error_code"] not in (14, 15, 16):
            return
        assert time.monotonic() < deadline, state
        time.sleep(0.2)


def _list_offsets(*partitions: tuple[int, int], epoch: int = -1, isolation: int = 0) -> Any:
    wanted = [{"partition_index": p, "current_leader_epoch": epoch, "timestamp": t} for p, t in partitions]
    return lambda node: {"replica_id": -1, "isolation_level": isolation, "timeout_ms": 30000,
                         "topics": [{"name": TOPIC, "partitions": wanted}]}  # fmt: skip


def _delete_records(*partitions: tuple[str, int, int]) -> Any:
    topics: dict[str, list[dict[str, int]]] = {}
    for name, index, offset in partitions:
        topics.setdefault(name, []).append({"partition_index": index, "offset": offset})
    return lambda node: {"topics": [{"name": n, "partitions": ps} for n, ps in topics.items()], "timeout_ms": 30000}


def _epochs(*partitions: tuple[str, int, int, int]) -> Any:
    """OffsetForLeaderEpoch v4 of (topic, partition, current leader epoch, leader epoch)."""
    topics: dict[str, list[dict[str, int]]] = {}
    for name, index, current, epoch in partitions:
        topics.setdefault(name, []).append({"partition": index, "current_leader_epoch": current,
                                            "leader_epoch": epoch})  # fmt: skip
    return lambda node: {"replica_id": -1, "topics": [{"topic": n, "partitions": ps} for n, ps in topics.items()]}


REQUESTS: list[Request | Step] = [
    _prepare,
    *[(f"list offsets at {t}", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, t), (1, t))) for t in (-1, -2, -3, -4, -5,
                                                                                            1003)],
    ("list offsets of one partition twice", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, -1), (0, -2), (1, -1))),
    ("list offsets past the last timestamp", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, 99_999))),
    ("list offsets with a future leader epoch", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, -1), epoch=7)),
    ("list offsets read committed", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, -1), (1, -3), isolation=1)),
    ("list offsets an unknown timestamp code", ApiKey.LIST_OFFSETS, 10, _list_offsets((0, -9))),
    ("leader epochs", ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, _epochs((TOPIC, 0, -1, 0), (TOPIC, 0, -1, 5),
                                                                  (TOPIC, 1, -1, 0), (TOPIC, 0, 3, 0))),
    ("leader epochs of unknown partitions", ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, _epochs((TOPIC, 7, -1, 0),
                                                                                        ("nothing", 0, -1, 0))),
    ("delete records past the high watermark", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 0, 9))),
    ("delete records of unknown partitions", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 7, 0),
                                                                                       ("nothing", 0, 0))),
    ("delete records below the start", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 0, -7))),
    ("delete records to the high watermark", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 0, -1))),
    ("delete records", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 0, 2), (TOPIC, 1, 0))),
    ("delete records backwards", ApiKey.DELETE_RECORDS, 2, _delete_records((TOPIC, 0, 1))),
    ("describe producers", ApiKey.DESCRIBE_PRODUCERS, 0, lambda node: {
        "topics": [{"name": TOPIC, "partition_indexes": [0, 7]}, {"name": "nothing", "partition_indexes": [0]}]}),
    lambda raw: _until_transactions_loaded(raw),
    ("describe transactions", ApiKey.DESCRIBE_TRANSACTIONS, 0, lambda node: {"transactional_ids": ["tx-none", ""]}),
    ("list transactions with a bad state", ApiKey.LIST_TRANSACTIONS, 1, lambda node: {
        "state_filters": ["Sleeping"], "producer_id_filters": [], "duration_filter": -1}),
    ("list transactions", ApiKey.LIST_TRANSACTIONS, 1, lambda node: {
        "state_filters": [], "producer_id_filters": [7], "duration_filter": 1000}),
    ("describe topic partitions", ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, lambda node: {
        "topics": [{"name": TOPIC}, {"name": "nothing"}, {"name": "bad/name"}], "response_partition_limit": 1,
        "cursor": None}),
    ("describe topic partitions from a cursor", ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, lambda node: {
        "topics": [{"name": TOPIC}], "response_partition_limit": 10,
        "cursor": {"topic_name": TOPIC, "partition_index": 1}}),
    ("describe log dirs of unknown topics", ApiKey.DESCRIBE_LOG_DIRS, 4, lambda node: {
        "topics": [{"topic": "nothing", "partitions": [0]}]}),
    # ElectLeaders and the reassignment APIs are cluster-mode APIs in kbroker (docs/compatibility.md)
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """Log directories are each broker's own paths; topics are compared by name (Kafka answers the unknown ones
    first)."""
    for result in answer.get("results", []):
        if "log_dir" in result:
            result.update(log_dir="<dir>", total_bytes="<bytes>", usable_bytes="<bytes>")
    for key in ("topics", "replica_election_results"):
        if isinstance(answer.get(key), list) and answer[key] and isinstance(answer[key][0], dict):
            name = "name" if "name" in answer[key][0] else "topic"
            if name in answer[key][0]:
                answer[key].sort(key=lambda t: str(t[name]))
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
