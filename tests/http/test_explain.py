"""/v1/explain/groups and /v1/explain/transactions against real confluent-kafka clients."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer

from tests.broker.conftest import create_topic, unique_topic
from tests.http.conftest import HttpBroker, http_json
from tests.process import RawClient


def test_group_and_open_transaction(http_broker: HttpBroker) -> None:
    topic, group, txn_id = unique_topic("explain"), unique_topic("group"), unique_topic("txn")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)
    producer = Producer({"bootstrap.servers": http_broker.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, value=b"open %d" % i, partition=0)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})  # fmt: skip
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        stable = None
        while time.monotonic() < deadline and stable is None:
            consumer.poll(0.2)
            groups = http_json("GET", f"{http_broker.url}/v1/explain/groups")[1]["groups"]
            stable = next((g for g in groups if g["group"] == group and g["state"] == "Stable"), None)
        assert stable is not None and stable["generation"] >= 1 and stable["protocol_type"] == "consumer"
        assert len(stable["members"]) == 1 and stable["leader"] == stable["members"][0]["member_id"]
        status, body = http_json("GET", f"{http_broker.url}/v1/explain/transactions")
        assert status == 200
        (open_txn,) = [t for t in body["open_transactions"] if t["transactional_id"] == txn_id]
        assert open_txn["state"] == "Ongoing" and open_txn["partitions"] == [f"{topic}-0"]
        (held,) = [p for p in body["partitions_held_back"] if p["topic"] == topic]
        assert held["last_stable_offset"] == 0 and held["high_watermark"] == 4 and held["records_held_back"] == 4
        assert held["open"] == [{"producer_id": open_txn["producer_id"], "first_offset": 0, "transactional_id": txn_id}]
        producer.commit_transaction(30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            body = http_json("GET", f"{http_broker.url}/v1/explain/transactions")[1]
            if not [p for p in body["partitions_held_back"] if p["topic"] == topic]:
                break
            time.sleep(0.05)
        assert not [p for p in body["partitions_held_back"] if p["topic"] == topic]
        assert not [t for t in body["open_transactions"] if t["transactional_id"] == txn_id]
    finally:
        consumer.close()
