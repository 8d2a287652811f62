"""WriteTxnMarkers against a real kbroker: an admin's abort of a transaction left open."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from tests.broker.conftest import create_topic, fetch, fetched_partition, list_offset, unique_topic
from tests.process import BrokerProcess, RawClient


def _open_transaction(bootstrap: str, topic: str, count: int = 3, committed_before: int = 0) -> Producer:
    """A transactional producer with `count` records in partition 0 and its transaction left open,
    after `committed_before` committed transactions of one record."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"hang-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(10)
    for _ in range(committed_before):
        producer.begin_transaction()
        producer.produce(topic, value=b"committed", partition=0)
        producer.commit_transaction(10)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    return producer


def _producer(raw: RawClient, topic: str) -> dict[str, Any]:
    body = {"topics": [{"name": topic, "partition_indexes": [0]}]}
    (partition,) = raw.call(ApiKey.DESCRIBE_PRODUCERS, 0, body)["topics"][0]["partitions"]
    (producer,) = partition["active_producers"]
    return dict(producer)


def _marker(producer: dict[str, Any], topics: dict[str, list[int]], **overrides: Any) -> dict[str, Any]:
    return {
        "producer_id": producer["producer_id"],
        "producer_epoch": producer["producer_epoch"],
        "transaction_result": False,
        "topics": [{"name": name, "partition_indexes": indexes} for name, indexes in topics.items()],
        "coordinator_epoch": producer["coordinator_epoch"],
        **overrides,
    }


def _errors(response: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {
        (t["name"], p["partition_index"]): p["error_code"]
        for m in response["markers"]
        for t in m["topics"]
        for p in t["partitions"]
    }


def test_abort_of_an_open_transaction_unblocks_read_committed(broker: BrokerProcess, raw: RawClient) -> None:
    topic = unique_topic("hang")
    create_topic(raw, topic)
    producer = _open_transaction(broker.bootstrap, topic)
    assert list_offset(raw, topic, -1, isolation_level=1)["offset"] == 0  # the open transaction holds the LSO
    described = _producer(raw, topic)
    assert described["current_txn_start_offset"] == 0
    missing = unique_topic("missing")
    response = raw.call(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [_marker(described, {topic: [0], missing: [0]})]})
    assert _errors(response) == {(topic, 0): 0, (missing, 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert list_offset(raw, topic, -1, isolation_level=1)["offset"] == 4  # 3 records + the ABORT marker
    assert _producer(raw, topic)["current_txn_start_offset"] == -1
    answer = fetched_partition(fetch(raw, [(topic, 0, 0)]), topic, 0)
    batches = list(iter_batches(bytes(answer["records"])))
    assert batches[-1].is_control and batches[-1].end_transaction_marker().type.name == "ABORT"
    del producer


def test_stale_epochs_are_refused(broker: BrokerProcess, raw: RawClient) -> None:
    topic = unique_topic("stale")
    create_topic(raw, topic)
    producer = _open_transaction(broker.bootstrap, topic, count=1, committed_before=1)
    described = _producer(raw, topic)
    assert described["coordinator_epoch"] == 0  # set by the COMMIT marker of the first transaction
    older = _marker(described, {topic: [0]}, producer_epoch=described["producer_epoch"] - 1)
    fenced = _marker(described, {topic: [0]}, coordinator_epoch=described["coordinator_epoch"] - 1)
    same_epoch_v2 = _marker(described, {topic: [0]}, transaction_version=2)
    for marker, error in [
        (older, ErrorCode.INVALID_PRODUCER_EPOCH),
        (same_epoch_v2, ErrorCode.INVALID_PRODUCER_EPOCH),  # a TV2 marker must carry a newer epoch
        (fenced, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    ]:
        assert _errors(raw.call(ApiKey.WRITE_TXN_MARKERS, 2, {"markers": [marker]})) == {(topic, 0): error}
    assert list_offset(raw, topic, -1, isolation_level=1)["offset"] == 2  # still open after the committed one
    del producer
