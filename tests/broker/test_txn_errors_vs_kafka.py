"""Transaction requests at the edge (unknown transactional ids and producer ids, wrong epochs, unknown topics,
ending twice or in the wrong state, offsets for the empty group), answered by a fresh kbroker and a fresh Apache
Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py). The requests are the versions of the
first transaction protocol (AddPartitionsToTxn v3, EndTxn v4), which both brokers still serve."""

from __future__ import annotations

import time
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.side_by_side import Request, Step
from tests.process import RawClient

pytestmark = pytest.mark.timeout(300)

TOPIC, GROUP, TXN = "ledger", "txn-group", "tx-a"
STATE: dict[str, int] = {}  # the producer id and epoch the broker being asked gave TXN


def _until_ok(raw: RawClient, api: ApiKey, version: int, body: dict[str, Any], field: str = "error_code") -> Any:
    """Kafka creates __transaction_state on the first lookup and loads its coordinator: until it answers."""
    deadline = time.monotonic() + 60
    while True:
        answer = raw.call(api, version, body)
        code = answer[field] if field == "error_code" else answer["coordinators"][0]["error_code"]
        if code == 0:
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)


def _prepare(raw: RawClient) -> None:
    body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30000, "validate_only": False}  # fmt: skip
    assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    side_by_side.wait_for_leaders(raw, TOPIC, 2)
    side_by_side.until_coordinator(raw, GROUP)
    _until_ok(raw, ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [TXN]}, field="coordinators")
    init = {"transactional_id": TXN, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    answer = _until_ok(raw, ApiKey.INIT_PRODUCER_ID, 4, init)
    STATE.update(pid=answer["producer_id"], epoch=answer["producer_epoch"])


def _until_complete(raw: RawClient) -> None:
    """Until the commit's markers are written (Kafka writes them after answering EndTxn; until then a second
    EndTxn is CONCURRENT_TRANSACTIONS)."""
    deadline = time.monotonic() + 30
    while True:
        state = raw.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]})["transaction_states"][0]
        if state["transaction_state"] == "CompleteCommit":
            return
        assert time.monotonic() < deadline, state
        time.sleep(0.1)


def _add(*partitions: tuple[str, int], txn: str = TXN, pid: int = 0, epoch: int = 0) -> Any:
    """AddPartitionsToTxn v3; `pid`/`epoch` are added to the broker's own producer id and epoch."""

    def body(node: int) -> dict[str, Any]:
        topics: dict[str, list[int]] = {}
        for name, index in partitions:
            topics.setdefault(name, []).append(index)
        return {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": STATE["pid"] + pid,
                "v3_and_below_producer_epoch": STATE["epoch"] + epoch,
                "v3_and_below_topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}  # fmt: skip

    return body


def _end(committed: bool, epoch: int = 0) -> Any:
    return lambda node: {"transactional_id": TXN, "producer_id": STATE["pid"], "producer_epoch": STATE["epoch"] + epoch,
                         "committed": committed}  # fmt: skip


def _add_offsets(group: str = GROUP) -> Any:
    return lambda node: {"transactional_id": TXN, "producer_id": STATE["pid"], "producer_epoch": STATE["epoch"],
                         "group_id": group}  # fmt: skip


def _txn_commit(group: str = GROUP, topic: str = TOPIC) -> Any:
    partitions = [{"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1, "committed_metadata": ""}]
    return lambda node: {"transactional_id": TXN, "group_id": group, "producer_id": STATE["pid"],
                         "producer_epoch": STATE["epoch"], "generation_id": -1, "member_id": "",
                         "group_instance_id": None, "topics": [{"name": topic, "partitions": partitions}]}  # fmt: skip


REQUESTS: list[Request | Step] = [
    _prepare,
    ("end without a transaction", ApiKey.END_TXN, 4, _end(True)),
    ("abort without a transaction", ApiKey.END_TXN, 4, _end(False)),
    ("add to an unknown transactional id", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), txn="tx-unknown")),
    ("add with another producer id", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), pid=7)),
    ("add with a future epoch", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), epoch=5)),
    ("add an unknown topic", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), ("nothing", 0))),
    ("add an unknown partition", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), (TOPIC, 9))),
    ("add", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 0), (TOPIC, 1))),
    ("add again", ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add((TOPIC, 1))),
    ("add offsets", ApiKey.ADD_OFFSETS_TO_TXN, 3, _add_offsets()),
    ("add offsets of the empty group", ApiKey.ADD_OFFSETS_TO_TXN, 3, _add_offsets("")),
    ("commit offsets of the empty group", ApiKey.TXN_OFFSET_COMMIT, 3, _txn_commit(group="")),
    ("commit offsets of an unknown topic", ApiKey.TXN_OFFSET_COMMIT, 3, _txn_commit(topic="nothing")),
    ("commit offsets", ApiKey.TXN_OFFSET_COMMIT, 3, _txn_commit()),
    ("end with a future epoch", ApiKey.END_TXN, 4, _end(True, epoch=5)),
    ("end", ApiKey.END_TXN, 4, _end(True)),
    lambda raw: _until_complete(raw),
    ("end again", ApiKey.END_TXN, 4, _end(True)),
    ("abort what was committed", ApiKey.END_TXN, 4, _end(False)),
]  # fmt: skip


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS)
