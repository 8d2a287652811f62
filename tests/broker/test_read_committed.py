"""read_committed against a real kbroker: last stable offset, aborted transactions, long polls,
ListOffsets, OffsetFetch RequireStable, restarts, and librdkafka / kafka-python consumers.

Transactions are driven with the real APIs (InitProducerId, AddPartitionsToTxn, Produce, EndTxn)
over raw protocol, or by confluent-kafka's transactional producer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CKTopicPartition

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import iter_batches
from tests.broker.conftest import create_topic, fetch, fetched_partition, list_offset, produce, unique_topic
from tests.process import BrokerProcess, RawClient

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
CONFIG = (
    "--config",
    "transaction.state.log.num.partitions=3",
    "--config",
    "offsets.topic.num.partitions=3",
    "--config",
    "group.initial.rebalance.delay.ms=0",
)


@pytest.fixture(scope="module")
def rbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("rc") / "data", *CONFIG).start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


@pytest.fixture
def raw(rbroker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(rbroker.bootstrap) as client:
        yield client


class RawTxnProducer:
    """A transactional producer speaking raw protocol: one partition (0) of one topic."""

    def __init__(self, client: RawClient, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.tid = unique_topic("tid")
        answer = client.call(
            ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": self.tid, "transaction_timeout_ms": 60_000}
        )
        assert answer["error_code"] == 0, answer
        self.pid, self.epoch = answer["producer_id"], answer["producer_epoch"]
        self.sequence = 0
        self.open = False

    def send(self, *values: str) -> int:
        """Append the values as one transactional batch (opening the transaction); return its base offset."""
        if not self.open:
            body = {
                "v3_and_below_transactional_id": self.tid,
                "v3_and_below_producer_id": self.pid,
                "v3_and_below_producer_epoch": self.epoch,
                "v3_and_below_topics": [{"name": self.topic, "partitions": [0]}],
            }
            answer = self.client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, body)
            assert answer["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
            self.open = True
        batch = build_record_batch(
            [SimpleRecord(b"k", v.encode(), (), 1_000) for v in values],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        self.sequence += len(values)
        answer = produce(self.client, self.topic, batch)
        assert answer["error_code"] == 0, answer
        return int(answer["base_offset"])

    def end(self, commit: bool) -> None:
        body = {
            "transactional_id": self.tid,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "committed": commit,
        }
        assert self.client.call(ApiKey.END_TXN, 3, body)["error_code"] == 0
        self.open = False


def plain(client: RawClient, topic: str, *values: str) -> int:
    batch = build_record_batch([SimpleRecord(b"k", v.encode(), (), 1_000) for v in values])
    answer = produce(client, topic, batch)
    assert answer["error_code"] == 0
    return int(answer["base_offset"])


def read(client: RawClient, topic: str, offset: int, isolation: int, **kw: Any) -> dict[str, Any]:
    answer = fetched_partition(fetch(client, [(topic, 0, offset)], isolation_level=isolation, **kw), topic)
    assert answer["error_code"] == 0
    return answer


def values(answer: dict[str, Any]) -> list[str]:
    """Data record values of the fetched batches (control batches left out), unfiltered."""
    return [
        bytes(r.value or b"").decode()
        for batch in iter_batches(bytes(answer["records"] or b""))
        if not batch.is_control
        for r in batch.records()
    ]


def aborted(answer: dict[str, Any]) -> list[tuple[int, int]] | None:
    found = answer["aborted_transactions"]
    return None if found is None else [(t["producer_id"], t["first_offset"]) for t in found]


# -- raw protocol ----------------------------------------------------------------------------------


def test_fetch_reports_the_aborted_transactions_of_the_returned_range(raw: RawClient) -> None:
    topic = unique_topic("rc")
    create_topic(raw, topic)
    committer, aborter = RawTxnProducer(raw, topic), RawTxnProducer(raw, topic)
    assert plain(raw, topic, "p0") == 0
    assert committer.send("a1", "a2") == 1
    committer.end(commit=True)  # marker at 3
    assert aborter.send("b1") == 4
    aborter.end(commit=False)  # marker at 5
    assert plain(raw, topic, "p1") == 6

    committed = read(raw, topic, 0, READ_COMMITTED)
    assert committed["high_watermark"] == committed["last_stable_offset"] == 7
    assert values(committed) == ["p0", "a1", "a2", "b1", "p1"]  # the client drops b1 by the list below
    assert aborted(committed) == [(aborter.pid, 4)]
    uncommitted = read(raw, topic, 0, READ_UNCOMMITTED)
    assert uncommitted["last_stable_offset"] == 7 and aborted(uncommitted) is None
    assert aborted(read(raw, topic, 5, READ_COMMITTED)) == [(aborter.pid, 4)]  # the marker is still ahead
    assert aborted(read(raw, topic, 6, READ_COMMITTED)) == []
    # a fetch whose data ends before the aborted transaction starts does not list it
    assert aborted(read(raw, topic, 0, READ_COMMITTED, partition_max_bytes=1, max_bytes=1)) == []


def test_an_open_transaction_holds_back_read_committed(raw: RawClient) -> None:
    topic = unique_topic("rc")
    create_topic(raw, topic)
    producer = RawTxnProducer(raw, topic)
    plain(raw, topic, "before")
    assert producer.send("t1") == 1
    plain(raw, topic, "after")

    held = read(raw, topic, 0, READ_COMMITTED)
    assert (held["high_watermark"], held["last_stable_offset"]) == (3, 1)
    assert values(held) == ["before"]
    assert values(read(raw, topic, 1, READ_COMMITTED)) == []
    assert read(raw, topic, 1, READ_UNCOMMITTED)["last_stable_offset"] == 1
    assert values(read(raw, topic, 0, READ_UNCOMMITTED)) == ["before", "t1", "after"]
    assert list_offset(raw, topic, -1, isolation_level=READ_COMMITTED)["offset"] == 1
    assert list_offset(raw, topic, -1, isolation_level=READ_UNCOMMITTED)["offset"] == 3
    assert list_offset(raw, topic, 0, isolation_level=READ_COMMITTED)["offset"] == 0  # first timestamp >= 0

    producer.end(commit=True)
    released = read(raw, topic, 1, READ_COMMITTED)
    assert released["last_stable_offset"] == released["high_watermark"] == 4
    assert values(released) == ["t1", "after"] and aborted(released) == []
    assert list_offset(raw, topic, -1, isolation_level=READ_COMMITTED)["offset"] == 4


def test_a_waiting_read_committed_fetch_wakes_when_the_transaction_ends(raw: RawClient, rbroker: BrokerProcess) -> None:
    topic = unique_topic("rc")
    create_topic(raw, topic)
    producer = RawTxnProducer(raw, topic)
    producer.send("t1")
    answers: list[dict[str, Any]] = []

    def wait() -> None:
        with RawClient(rbroker.bootstrap) as waiter:
            answers.append(read(waiter, topic, 0, READ_COMMITTED, max_wait_ms=8_000))

    started = time.monotonic()
    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.4)
    producer.send("t2")  # an append below no stable offset: the fetch keeps waiting
    time.sleep(0.4)
    assert thread.is_alive()
    producer.end(commit=True)
    thread.join(10)
    elapsed = time.monotonic() - started
    assert 0.8 <= elapsed < 4
    assert values(answers[0]) == ["t1", "t2"] and answers[0]["last_stable_offset"] == 3


def test_offset_fetch_require_stable_while_transactional_offsets_are_pending(raw: RawClient) -> None:
    topic, group = unique_topic("rs"), unique_topic("g")
    create_topic(raw, topic)
    producer = RawTxnProducer(raw, topic)
    body = {"transactional_id": producer.tid, "producer_id": producer.pid, "producer_epoch": producer.epoch}
    assert raw.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, {**body, "group_id": group})["error_code"] == 0
    commit = {
        **body,
        "group_id": group,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 42,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    assert raw.call(ApiKey.TXN_OFFSET_COMMIT, 3, commit)["topics"][0]["partitions"][0]["error_code"] == 0

    def offset_fetch(version: int, require_stable: bool) -> tuple[int, int]:
        topics = [{"name": topic, "partition_indexes": [0]}]
        if version >= 8:
            request = {"groups": [{"group_id": group, "topics": topics}], "require_stable": require_stable}
            answer = raw.call(ApiKey.OFFSET_FETCH, version, request)["groups"][0]["topics"][0]["partitions"][0]
        else:
            request = {"group_id": group, "topics": topics, "require_stable": require_stable}
            answer = raw.call(ApiKey.OFFSET_FETCH, version, request)["topics"][0]["partitions"][0]
        return answer["error_code"], answer["committed_offset"]

    assert offset_fetch(7, True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert offset_fetch(8, True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert offset_fetch(7, False) == (0, -1)
    producer.end(commit=True)
    assert offset_fetch(7, True) == (0, 42)
    assert offset_fetch(8, True) == (0, 42)


def test_the_index_survives_kill_9(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", *CONFIG).start()
    try:
        with RawClient(broker.bootstrap) as client:
            topic = unique_topic("rc")
            create_topic(client, topic)
            aborter, holder = RawTxnProducer(client, topic), RawTxnProducer(client, topic)
            aborter.send("x1", "x2")
            aborter.end(commit=False)
            plain(client, topic, "p")
            open_at = holder.send("held")
            before = read(client, topic, 0, READ_COMMITTED)
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            after = read(client, topic, 0, READ_COMMITTED)
            assert after["last_stable_offset"] == before["last_stable_offset"] == open_at == 4
            assert aborted(after) == aborted(before) == [(aborter.pid, 0)]
            assert values(after) == values(before) == ["x1", "x2", "p"]
    finally:
        if broker.alive():
            broker.stop()


# -- real clients --------------------------------------------------------------------------------------


def _confluent_transactions(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_topic("tid"), "linger.ms": 0})
    producer.init_transactions(15)
    for batch, commit in ((["c1", "c2"], True), (["x1"], False), (["c3"], True)):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, value.encode(), partition=0)
        producer.flush(10)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)


def confluent_values(bootstrap: str, topic: str, isolation: str, count: int, timeout: float = 10.0) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_topic("g"),
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([CKTopicPartition(topic, 0, 0)])
    found: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(found) < count:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                found.append(bytes(message.value() or b"").decode())
    finally:
        consumer.close()
    return found


def test_confluent_consumers_see_committed_or_all(raw: RawClient, rbroker: BrokerProcess) -> None:
    topic = unique_topic("ck")
    create_topic(raw, topic)
    _confluent_transactions(rbroker.bootstrap, topic)
    assert confluent_values(rbroker.bootstrap, topic, "read_committed", 4, timeout=4) == ["c1", "c2", "c3"]
    assert confluent_values(rbroker.bootstrap, topic, "read_uncommitted", 4) == ["c1", "c2", "x1", "c3"]


def test_kafka_python_consumers_see_committed_or_all(raw: RawClient, rbroker: BrokerProcess) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition

    topic = unique_topic("kp")
    create_topic(raw, topic)
    _confluent_transactions(rbroker.bootstrap, topic)
    for isolation, expected in (("read_committed", ["c1", "c2", "c3"]), ("read_uncommitted", ["c1", "c2", "x1", "c3"])):
        consumer = KafkaConsumer(
            bootstrap_servers=rbroker.bootstrap, isolation_level=isolation, enable_auto_commit=False
        )
        try:
            consumer.assign([KPTopicPartition(topic, 0)])
            consumer.seek(KPTopicPartition(topic, 0), 0)
            found: list[str] = []
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline and len(found) < len(expected) + 1:
                for messages in consumer.poll(200).values():
                    found.extend(bytes(m.value).decode() for m in messages)
        finally:
            consumer.close()
        assert found == expected, isolation


def test_a_confluent_read_committed_consumer_waits_for_the_commit(raw: RawClient, rbroker: BrokerProcess) -> None:
    topic = unique_topic("ck")
    create_topic(raw, topic)
    producer = RawTxnProducer(raw, topic)
    plain(raw, topic, "before")
    producer.send("t1")
    plain(raw, topic, "after")
    assert confluent_values(rbroker.bootstrap, topic, "read_committed", 3, timeout=2) == ["before"]
    assert confluent_values(rbroker.bootstrap, topic, "read_uncommitted", 3) == ["before", "t1", "after"]
    found: list[str] = []
    thread = threading.Thread(
        target=lambda: found.extend(confluent_values(rbroker.bootstrap, topic, "read_committed", 3, timeout=10))
    )
    thread.start()
    time.sleep(1.5)
    producer.end(commit=True)
    thread.join(15)
    assert found == ["before", "t1", "after"]
