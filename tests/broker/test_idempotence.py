"""Idempotent producers against a real kbroker: InitProducerId, sequence checks, restarts, real clients."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import Record, iter_batches
from tests.broker.conftest import batch_of, create_topic, fetch, fetched_partition, list_offset, produce, unique_topic
from tests.process import BrokerProcess, RawClient


@pytest.fixture
def topic(raw: RawClient) -> str:
    name = unique_topic("idem")
    create_topic(raw, name)
    return name


def init_producer_id(client: RawClient, version: int = 4, transactional_id: str | None = None, **kw: Any) -> dict:
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": 60_000, **kw}
    return client.call(ApiKey.INIT_PRODUCER_ID, version, body)


def idempotent(count: int, pid: int, epoch: int, seq: int) -> bytes:
    """A batch of a producer id, timestamped now (producer state expires by batch timestamps, as in Kafka)."""
    now = int(time.time() * 1000)
    return batch_of(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, start_ts=now)


def read_all(client: RawClient, topic: str, partition: int = 0) -> list[tuple[int, Record]]:
    """(batch producer id, record) of every record in the partition, in offset order."""
    end = list_offset(client, topic, -1, partition=partition)["offset"]
    found: list[tuple[int, Record]] = []
    offset = 0
    while offset < end:
        data = fetched_partition(fetch(client, [(topic, partition, offset)]), topic, partition)["records"]
        for batch in iter_batches(bytes(data)):
            found += [(batch.producer_id, r) for r in batch.records() if r.offset >= offset]
        offset = found[-1][1].offset + 1
    return found


# -- InitProducerId --------------------------------------------------------


@pytest.mark.parametrize("version", range(5))
def test_every_version_issues_a_fresh_producer_id_with_epoch_zero(raw: RawClient, version: int) -> None:
    answers = [init_producer_id(raw, version) for _ in range(3)]
    assert all(a["error_code"] == 0 and a["producer_epoch"] == 0 for a in answers)
    ids = [a["producer_id"] for a in answers]
    assert len(set(ids)) == 3 and min(ids) >= 0


def test_v3_with_an_existing_id_still_gets_a_new_one_as_kafka_does(raw: RawClient) -> None:
    first = init_producer_id(raw, 3)
    again = init_producer_id(raw, 3, producer_id=first["producer_id"], producer_epoch=first["producer_epoch"])
    assert again["error_code"] == 0 and again["producer_epoch"] == 0
    assert again["producer_id"] != first["producer_id"]


def test_an_empty_transactional_id_is_invalid(raw: RawClient) -> None:
    for version in range(5):
        answer = init_producer_id(raw, version, "")
        assert answer["error_code"] == ErrorCode.INVALID_REQUEST
        assert (answer["producer_id"], answer["producer_epoch"]) == (-1, -1)


def test_init_producer_id_is_advertised_0_to_5(raw: RawClient) -> None:
    keys = {k["api_key"]: k for k in raw.call(ApiKey.API_VERSIONS, 3, {})["api_keys"]}
    assert (keys[ApiKey.INIT_PRODUCER_ID]["min_version"], keys[ApiKey.INIT_PRODUCER_ID]["max_version"]) == (0, 5)


def test_producer_ids_are_never_reused_across_restarts(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.bootstrap) as client:
            before = {init_producer_id(client)["producer_id"] for _ in range(5)}
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            after = {init_producer_id(client)["producer_id"] for _ in range(5)}
    finally:
        broker.stop()
    assert len(before) == len(after) == 5 and not before & after


# -- sequence checks over the wire ----------------------------------------------


def test_resent_batch_gets_its_original_offset_and_is_not_appended(raw: RawClient, topic: str) -> None:
    pid = init_producer_id(raw)["producer_id"]
    first = produce(raw, topic, idempotent(3, pid, 0, 0))
    second = produce(raw, topic, idempotent(2, pid, 0, 3))
    assert (first["error_code"], first["base_offset"], second["base_offset"]) == (0, 0, 3)
    again = produce(raw, topic, idempotent(3, pid, 0, 0))
    assert (again["error_code"], again["base_offset"], again["log_append_time_ms"]) == (0, 0, -1)
    assert produce(raw, topic, idempotent(2, pid, 0, 3))["base_offset"] == 3
    assert list_offset(raw, topic, -1)["offset"] == 5
    assert [r.offset for _, r in read_all(raw, topic)] == list(range(5))


def test_gap_stale_epoch_and_new_epoch(raw: RawClient, topic: str) -> None:
    pid = init_producer_id(raw)["producer_id"]
    assert produce(raw, topic, idempotent(2, pid, 1, 0))["error_code"] == 0
    gap = produce(raw, topic, idempotent(1, pid, 1, 5))
    assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and gap["base_offset"] == -1
    for version in (3, 9, 11):  # Produce answers INVALID_PRODUCER_EPOCH at every version, as Kafka >= 2.7
        stale = produce(raw, topic, idempotent(1, pid, 0, 2), version=version)
        assert stale["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
    bumped_late = produce(raw, topic, idempotent(1, pid, 2, 2))
    assert bumped_late["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(raw, topic, idempotent(1, pid, 2, 0))["base_offset"] == 2
    assert list_offset(raw, topic, -1)["offset"] == 3


def test_log_append_time_topic_reports_the_stored_time_for_a_duplicate(raw: RawClient) -> None:
    name = unique_topic("idem-lat")
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": "message.timestamp.type", "value": "LogAppendTime"}],
            }
        ],
        "timeout_ms": 5000,
        "validate_only": False,
    }
    assert raw.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]["error_code"] == 0
    create_topic(raw, name)
    pid = init_producer_id(raw)["producer_id"]
    first = produce(raw, name, idempotent(2, pid, 0, 0))
    assert first["log_append_time_ms"] > 1_000
    again = produce(raw, name, idempotent(2, pid, 0, 0))
    assert (again["base_offset"], again["log_append_time_ms"]) == (0, first["log_append_time_ms"])


@pytest.mark.parametrize("stop", ["kill", "term"])
def test_duplicates_are_detected_after_a_restart(tmp_path: Path, stop: str) -> None:
    broker = BrokerProcess(tmp_path / "data", "--config", "kbroker.fsync.before.ack=true").start()
    name = unique_topic("idem-restart")
    try:
        with RawClient(broker.bootstrap) as client:
            create_topic(client, name)
            pid = init_producer_id(client)["producer_id"]
            bases = [produce(client, name, idempotent(2, pid, 0, seq * 2))["base_offset"] for seq in range(8)]
            produce(client, name, batch_of(3))  # a batch without producer id in between
        if stop == "kill":
            broker.kill()
        else:
            assert broker.stop() == 0
        broker.start()
        with RawClient(broker.bootstrap) as client:
            assert [produce(client, name, idempotent(2, pid, 0, seq * 2))["base_offset"] for seq in range(3, 8)] == (
                bases[3:]
            )
            assert (
                produce(client, name, idempotent(1, pid, 0, 17))["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            )
            assert produce(client, name, idempotent(1, pid, 0, 16))["base_offset"] == 19
            assert list_offset(client, name, -1)["offset"] == 20
    finally:
        broker.stop()


def produce_request(client: RawClient, topic: str, records: bytes) -> bytes:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    return client.request_bytes(ApiKey.PRODUCE, 9, body)


def test_kill_9_with_five_in_flight_then_resend_what_was_not_acknowledged(tmp_path: Path) -> None:
    """As a client with max 5 in flight: unacknowledged batches written before the crash are duplicates."""
    broker = BrokerProcess(tmp_path / "data", "--config", "kbroker.fsync.before.ack=true").start()
    name = unique_topic("idem-inflight")
    size, total, kill_after = 20, 300, 120
    try:
        with RawClient(broker.bootstrap) as client:
            create_topic(client, name)
            pid = init_producer_id(client)["producer_id"]
            batches = [idempotent(size, pid, 0, i * size) for i in range(total)]
            sent = acked = 0
            for _ in range(5):
                client.send(produce_request(client, name, batches[sent]))
                sent += 1
            while acked < kill_after:
                _, response = client.read_response(ApiKey.PRODUCE, 9)
                answer = response["responses"][0]["partition_responses"][0]
                assert (answer["error_code"], answer["base_offset"]) == (0, acked * size)
                acked += 1
                client.send(produce_request(client, name, batches[sent]))
                sent += 1
            # five batches in flight, unacknowledged: kill once the broker has written some of them (on a busy
            # machine it may not have read them yet when the last acknowledgement arrives)
            with RawClient(broker.bootstrap) as observer:
                deadline = time.monotonic() + 30
                while list_offset(observer, name, -1)["offset"] <= acked * size:
                    assert time.monotonic() < deadline, "the in-flight batches were never written"
                    time.sleep(0.001)
            broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            written = list_offset(client, name, -1)["offset"]
            assert acked * size < written <= sent * size  # nothing acknowledged lost; some unacknowledged written
            for i in range(acked, total):
                answer = produce(client, name, batches[i])
                assert (answer["error_code"], answer["base_offset"]) == (0, i * size), i
            found = read_all(client, name)
    finally:
        broker.stop()
    assert [r.offset for _, r in found] == list(range(total * size))
    assert len(found) == total * size


# -- real idempotent clients ------------------------------------------------------


def check_exactly_once(client: RawClient, topic: str, expected: list[bytes]) -> None:
    """Every expected value once, in order, at dense offsets, written by an idempotent producer."""
    found = read_all(client, topic)
    assert [r.offset for _, r in found] == list(range(len(found)))
    values = [r.value or b"" for _, r in found]
    assert len(values) == len(set(values)), "duplicates in the log"
    assert sorted(values) == sorted(expected)
    assert values == expected  # one partition, one producer, max 5 in flight with idempotence: order kept
    assert all(pid >= 0 for pid, _ in found)


def test_kafka_python_idempotent_by_default(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2, batch_size=2048)
    try:
        assert producer.config["enable_idempotence"] is True
        values = [b"kp-%05d" % i for i in range(500)]
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        producer.flush(30)
        offsets = [f.get(10).offset for f in futures]
    finally:
        producer.close(5)
    assert offsets == list(range(500))
    check_exactly_once(raw, topic, values)


def test_confluent_kafka_idempotent(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 2})
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    values = [b"ck-%05d" % i for i in range(2000)]
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    check_exactly_once(raw, topic, values)


def test_kill_9_during_a_long_idempotent_run_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "data", "--config", "kbroker.fsync.before.ack=true").start()
    name = unique_topic("idem-crash")
    total = 60_000
    values = [b"crash-%06d" % i for i in range(total)]
    delivered: list[int] = []
    errors: list[Any] = []
    try:
        with RawClient(broker.bootstrap) as client:
            create_topic(client, name)
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "batch.num.messages": 200,
                "message.timeout.ms": 120_000,
                "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
            }
        )

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                delivered.append(msg.offset())

        def run() -> None:
            for value in values:
                while True:
                    try:
                        producer.produce(name, value, partition=0, on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            producer.flush(120)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        while len(delivered) < total // 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(delivered) >= total // 3, "the producer made no progress"
        broker.kill()
        killed_at = len(delivered)
        print("killed after", killed_at, "deliveries")
        time.sleep(0.3)
        broker.start()
        thread.join(150)
        assert not thread.is_alive()
        assert errors == []
        assert killed_at < total, "the kill came after the run ended"
        assert len(delivered) == total
        with RawClient(broker.bootstrap) as client:
            check_exactly_once(client, name, values)
    finally:
        broker.stop()


@pytest.mark.parametrize("client_name", ["java-3.9", "java-4", "franz-go"])
def test_clients_idempotent_by_default_with_acks_all(
    broker: BrokerProcess, raw: RawClient, topic: str, client_name: str
) -> None:
    from tests.compat.clients.adapter import Record as ClientRecord
    from tests.compat.clients.registry import FACTORIES

    client = FACTORIES[client_name]()
    if isinstance(client, str):
        pytest.skip(client)
    values = [b"%s-%04d" % (client_name.encode(), i) for i in range(300)]
    try:
        placed = client.produce(broker.bootstrap, topic, [ClientRecord(None, v, partition=0) for v in values], "all")
    finally:
        client.close()
    assert placed == [(0, i) for i in range(300)]
    check_exactly_once(raw, topic, values)


def test_aiokafka_idempotent(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    values = [b"aio-%04d" % i for i in range(300)]

    async def run() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, linger_ms=2)
        await producer.start()
        try:
            futures = [await producer.send(topic, v, partition=0) for v in values]
            return [(await f).offset for f in futures]
        finally:
            await producer.stop()

    assert asyncio.run(run()) == list(range(300))
    check_exactly_once(raw, topic, values)


def test_kafka_python_transactional_producer_commits(broker: BrokerProcess) -> None:
    """Transactions are covered in test_transactions.py; here only that idempotence and a transactional id mix."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="tx-idem-1", max_block_ms=20_000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("idem-txn", b"v", partition=0)
        producer.commit_transaction()
    finally:
        producer.close(5)
