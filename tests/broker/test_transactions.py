"""Transactions against a real kbroker: confluent-kafka (librdkafka) and kafka-python transactional
producers, fencing, timeouts, kill -9 recovery, tooling APIs.

Until read_committed exists, outcomes are checked on the raw log: a read_uncommitted Fetch
returns the data batches and the COMMIT/ABORT control batches; offsets via OffsetFetch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch, iter_batches
from tests.broker.conftest import create_topic, fetch, fetched_partition, produce, unique_topic
from tests.process import BrokerProcess, RawClient

FAST = (
    "--config",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
    "--config",
    "group.initial.rebalance.delay.ms=0",
)
SMALL = ("--config", "transaction.state.log.num.partitions=3", "--config", "offsets.topic.num.partitions=3")


@pytest.fixture(scope="module")
def tbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("txn") / "data", *SMALL, *FAST).start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


@pytest.fixture
def raw(tbroker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(tbroker.bootstrap) as client:
        yield client


# -- helpers ---------------------------------------------------------------------------------


def log_batches(client: RawClient, topic: str, partition: int = 0) -> list[RecordBatch]:
    answer = fetched_partition(fetch(client, [(topic, partition, 0)]), topic, partition)
    assert answer["error_code"] == 0
    return list(iter_batches(bytes(answer["records"] or b"")))


def outline(batches: list[RecordBatch]) -> list[str]:
    """Each batch as 'COMMIT'/'ABORT' or its record values joined by ','."""
    shown = []
    for batch in batches:
        if batch.is_control:
            shown.append(batch.end_transaction_marker().type.name)
        else:
            shown.append(",".join(bytes(r.value or b"").decode() for r in batch.records()))
    return shown


def txn_producer(bootstrap: str, transactional_id: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 0, **extra})


def init_pid(client: RawClient, transactional_id: str, timeout_ms: int = 60_000, version: int = 4) -> dict[str, Any]:
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms}
    deadline = time.monotonic() + 10
    while True:
        answer = client.call(ApiKey.INIT_PRODUCER_ID, version, body)
        if answer["error_code"] != E.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def add_partitions(client: RawClient, tid: str, pid: int, epoch: int, topic: str, version: int = 3) -> int:
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
    }
    answer = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, body)
    return int(answer["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"])


def end_txn(client: RawClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    return int(client.call(ApiKey.END_TXN, version, body)["error_code"])


def txn_records(pid: int, epoch: int, seq: int, *values: str) -> bytes:
    return build_record_batch(
        [SimpleRecord(b"k", v.encode(), (), 1_000) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def describe(client: RawClient, tid: str) -> dict[str, Any]:
    answer = client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})
    return dict(answer["transaction_states"][0])


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.05)


def offset_fetch(client: RawClient, group: str, topic: str) -> int:
    answer = client.call(
        ApiKey.OFFSET_FETCH, 6, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
    )
    return int(answer["topics"][0]["partitions"][0]["committed_offset"])


# -- librdkafka ------------------------------------------------------------------------------------


def test_confluent_commit_and_abort_write_markers(tbroker: BrokerProcess, raw: RawClient) -> None:
    topic = unique_topic("txn")
    create_topic(raw, topic)
    producer = txn_producer(tbroker.bootstrap, unique_topic("tid"))
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(topic, b"c1", partition=0)
    producer.produce(topic, b"c2", partition=0)
    producer.commit_transaction(15)
    producer.begin_transaction()
    producer.produce(topic, b"a1", partition=0)
    producer.flush(15)  # sent, so the abort needs markers
    producer.abort_transaction(15)
    batches = log_batches(raw, topic)
    assert outline(batches) == ["c1,c2", "COMMIT", "a1", "ABORT"]
    assert all(b.is_transactional for b in batches)
    assert len({b.producer_id for b in batches}) == 1


def test_confluent_send_offsets_published_on_commit_dropped_on_abort(tbroker: BrokerProcess, raw: RawClient) -> None:
    topic, group = unique_topic("txo"), unique_topic("g")
    create_topic(raw, topic)
    consumer = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group})
    try:
        producer = txn_producer(tbroker.bootstrap, unique_topic("tid"))
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce(topic, b"x", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 42)], consumer.consumer_group_metadata(), 15)
        assert offset_fetch(raw, group, topic) == -1  # pending until the commit
        producer.commit_transaction(15)
        assert offset_fetch(raw, group, topic) == 42
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 99)], consumer.consumer_group_metadata(), 15)
        producer.abort_transaction(15)
        assert offset_fetch(raw, group, topic) == 42
    finally:
        consumer.close()


def test_second_producer_with_the_same_id_fences_the_first(tbroker: BrokerProcess, raw: RawClient) -> None:
    topic, tid = unique_topic("fence"), unique_topic("tid")
    create_topic(raw, topic)
    first = txn_producer(tbroker.bootstrap, tid)
    first.init_transactions(15)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    first.flush(15)
    second = txn_producer(tbroker.bootstrap, tid)
    second.init_transactions(15)  # aborts the first one's open transaction
    second.begin_transaction()
    second.produce(topic, b"winner", partition=0)
    second.commit_transaction(15)
    with pytest.raises(KafkaException) as failure:
        first.produce(topic, b"late", partition=0)
        first.commit_transaction(15)
    assert failure.value.args[0].fatal()
    assert outline(log_batches(raw, topic)) == ["zombie", "ABORT", "winner", "COMMIT"]


# -- kafka-python ------------------------------------------------------------------------------------


def test_kafka_python_transactional_producer(tbroker: BrokerProcess, raw: RawClient) -> None:
    from kafka import KafkaProducer

    topic = unique_topic("kp")
    create_topic(raw, topic)
    producer = KafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id=unique_topic("tid"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"kept", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"dropped", partition=0).get(10)
        producer.abort_transaction()
    finally:
        producer.close(5)
    assert outline(log_batches(raw, topic)) == ["kept", "COMMIT", "dropped", "ABORT"]


# -- raw protocol: verification, timeouts, versions, tooling ---------------------------------------------


def test_produce_outside_the_transaction_is_refused(raw: RawClient) -> None:
    topic, tid = unique_topic("ver"), unique_topic("tid")
    create_topic(raw, topic)
    answer = init_pid(raw, tid)
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    assert produce(raw, topic, txn_records(pid, epoch, 0, "early"))["error_code"] == E.INVALID_TXN_STATE
    assert add_partitions(raw, tid, pid, epoch, topic) == E.NONE
    assert produce(raw, topic, txn_records(pid, epoch, 0, "in"))["error_code"] == E.NONE
    assert add_partitions(raw, tid, pid, epoch, "no-such-topic-" + topic) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert end_txn(raw, tid, pid, epoch, True) == E.NONE
    assert produce(raw, topic, txn_records(pid, epoch, 1, "after"))["error_code"] == E.INVALID_TXN_STATE
    assert outline(log_batches(raw, topic)) == ["in", "COMMIT"]


def test_brokers_form_of_add_partitions_verifies_and_adds(raw: RawClient) -> None:
    """AddPartitionsToTxn v5, what a partition leader asks another broker's coordinator in cluster mode."""
    topic, tid = unique_topic("v5"), unique_topic("tid")
    create_topic(raw, topic)
    answer = init_pid(raw, tid)
    pid, epoch = answer["producer_id"], answer["producer_epoch"]

    def ask(verify_only: bool, producer_epoch: int = epoch) -> int:
        transaction = {
            "transactional_id": tid,
            "producer_id": pid,
            "producer_epoch": producer_epoch,
            "verify_only": verify_only,
            "topics": [{"name": topic, "partitions": [0]}],
        }
        reply = raw.call(ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [transaction]})
        assert reply["error_code"] == 0
        (result,) = reply["results_by_transaction"]
        assert result["transactional_id"] == tid
        return int(result["topic_results"][0]["results_by_partition"][0]["partition_error_code"])

    assert ask(verify_only=True) == E.INVALID_TXN_STATE  # not in the transaction yet
    assert ask(verify_only=False) == E.NONE  # added
    assert ask(verify_only=True) == E.NONE
    assert ask(verify_only=True, producer_epoch=epoch - 1) == E.INVALID_PRODUCER_EPOCH
    assert produce(raw, topic, txn_records(pid, epoch, 0, "in"))["error_code"] == E.NONE
    assert end_txn(raw, tid, pid, epoch, True) == E.NONE
    assert outline(log_batches(raw, topic)) == ["in", "COMMIT"]


@pytest.mark.parametrize(("version", "expected"), [(1, E.INVALID_PRODUCER_EPOCH), (3, E.PRODUCER_FENCED)])
def test_fencing_error_follows_the_request_version(raw: RawClient, version: int, expected: E) -> None:
    topic, tid = unique_topic("v"), unique_topic("tid")
    create_topic(raw, topic)
    old = init_pid(raw, tid)
    new = init_pid(raw, tid)
    assert new["producer_epoch"] == old["producer_epoch"] + 1
    assert add_partitions(raw, tid, old["producer_id"], old["producer_epoch"], topic, version) == expected
    assert end_txn(raw, tid, old["producer_id"], old["producer_epoch"], True, version) == expected
    v4 = raw.call(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {"transactional_id": tid, "transaction_timeout_ms": 60_000, "producer_id": 123456, "producer_epoch": 0},
    )
    assert v4["error_code"] == E.PRODUCER_FENCED
    v3 = raw.call(
        ApiKey.INIT_PRODUCER_ID,
        3,
        {"transactional_id": tid, "transaction_timeout_ms": 60_000, "producer_id": 123456, "producer_epoch": 0},
    )
    assert v3["error_code"] == E.INVALID_PRODUCER_EPOCH


def test_timeout_above_the_maximum_is_refused(raw: RawClient) -> None:
    assert init_pid(raw, unique_topic("tid"), timeout_ms=900_001)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT


def test_transaction_left_open_past_its_timeout_is_aborted(raw: RawClient) -> None:
    topic, tid = unique_topic("to"), unique_topic("tid")
    create_topic(raw, topic)
    answer = init_pid(raw, tid, timeout_ms=1_000)
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    assert add_partitions(raw, tid, pid, epoch, topic) == E.NONE
    assert produce(raw, topic, txn_records(pid, epoch, 0, "stale"))["error_code"] == E.NONE
    assert describe(raw, tid)["transaction_state"] == "Ongoing"
    wait_until(lambda: describe(raw, tid)["transaction_state"] == "CompleteAbort", timeout=10)
    state = describe(raw, tid)
    assert state["producer_epoch"] == epoch + 1  # the abort fenced the producer
    assert outline(log_batches(raw, topic)) == ["stale", "ABORT"]
    assert end_txn(raw, tid, pid, epoch, True) == E.PRODUCER_FENCED
    assert produce(raw, topic, txn_records(pid, epoch, 1, "zombie"))["error_code"] == E.INVALID_PRODUCER_EPOCH


def test_tooling_apis(raw: RawClient) -> None:
    topic, tid = unique_topic("tool"), unique_topic("tid")
    create_topic(raw, topic)
    answer = init_pid(raw, tid)
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    add_partitions(raw, tid, pid, epoch, topic)
    produce(raw, topic, txn_records(pid, epoch, 0, "a", "b"))
    state = describe(raw, tid)
    assert (state["error_code"], state["transaction_state"], state["producer_id"]) == (0, "Ongoing", pid)
    assert state["topics"] == [{"topic": topic, "partitions": [0]}]
    assert describe(raw, "never-used-" + tid)["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
    listed = raw.call(
        ApiKey.LIST_TRANSACTIONS,
        1,
        {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [pid], "duration_filter": -1},
    )
    assert listed["unknown_state_filters"] == ["Bogus"]
    assert [(t["transactional_id"], t["transaction_state"]) for t in listed["transaction_states"]] == [(tid, "Ongoing")]
    # v2's pattern must match the whole id, as Java's Matcher.matches (checked against Kafka 4.3.1)
    for pattern, expected in [(tid, [tid]), (tid[:-1], []), (tid[:-1] + ".", [tid]), ("", [tid]), (None, [tid])]:
        body = {"state_filters": [], "producer_id_filters": [pid], "duration_filter": -1}
        listed = raw.call(ApiKey.LIST_TRANSACTIONS, 2, {**body, "transactional_id_pattern": pattern})
        assert [t["transactional_id"] for t in listed["transaction_states"]] == expected, pattern
    invalid = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1, "transactional_id_pattern": "["}
    assert raw.call(ApiKey.LIST_TRANSACTIONS, 2, invalid)["error_code"] == E.INVALID_REGULAR_EXPRESSION
    producers = raw.call(ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0, 9]}]})
    found, missing = producers["topics"][0]["partitions"]
    assert missing["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION
    (active,) = found["active_producers"]
    assert (active["producer_id"], active["last_sequence"], active["current_txn_start_offset"]) == (pid, 1, 0)
    assert end_txn(raw, tid, pid, epoch, False) == E.NONE
    producers = raw.call(ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    assert producers["topics"][0]["partitions"][0]["active_producers"][0]["current_txn_start_offset"] == -1


def test_find_coordinator_for_transactions(raw: RawClient, tbroker: BrokerProcess) -> None:
    answer = raw.call(ApiKey.FIND_COORDINATOR, 3, {"key": "some-txn", "key_type": 1})
    assert (answer["error_code"], answer["port"]) == (0, tbroker.port)


# -- kill -9 -------------------------------------------------------------------------------------------


def test_kill_9_mid_transaction_then_commit_after_restart(tmp_path: Any) -> None:
    broker = BrokerProcess(tmp_path / "data", *SMALL).start()
    try:
        topic, tid = unique_topic("k9"), unique_topic("tid")
        with RawClient(broker.bootstrap) as client:
            create_topic(client, topic)
            answer = init_pid(client, tid)
            pid, epoch = answer["producer_id"], answer["producer_epoch"]
            assert add_partitions(client, tid, pid, epoch, topic) == E.NONE
            assert produce(client, topic, txn_records(pid, epoch, 0, "before-crash"))["error_code"] == E.NONE
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            assert describe(client, tid)["transaction_state"] == "Ongoing"  # the state log was replayed
            assert produce(client, topic, txn_records(pid, epoch, 1, "after-restart"))["error_code"] == E.NONE
            assert end_txn(client, tid, pid, epoch, True) == E.NONE
            assert outline(log_batches(client, topic)) == ["before-crash", "after-restart", "COMMIT"]
    finally:
        if broker.alive():
            broker.stop()


def test_kill_9_mid_transaction_ends_aborted_by_timeout(tmp_path: Any) -> None:
    broker = BrokerProcess(tmp_path / "data", *SMALL, *FAST).start()
    try:
        topic, tid = unique_topic("k9t"), unique_topic("tid")
        with RawClient(broker.bootstrap) as client:
            create_topic(client, topic)
            answer = init_pid(client, tid, timeout_ms=1_500)
            pid, epoch = answer["producer_id"], answer["producer_epoch"]
            add_partitions(client, tid, pid, epoch, topic)
            produce(client, topic, txn_records(pid, epoch, 0, "orphan"))
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            wait_until(lambda: describe(client, tid)["transaction_state"] == "CompleteAbort")
            assert outline(log_batches(client, topic)) == ["orphan", "ABORT"]
            # a new instance starts cleanly on the same id
            again = init_pid(client, tid)
            assert again["error_code"] == 0 and again["producer_epoch"] == epoch + 2
    finally:
        if broker.alive():
            broker.stop()


def test_confluent_kill_9_between_transactions_keeps_committed_data_and_offsets(tmp_path: Any) -> None:
    broker = BrokerProcess(tmp_path / "data", *SMALL).start()
    try:
        topic, tid, group = unique_topic("k9c"), unique_topic("tid"), unique_topic("g")
        with RawClient(broker.bootstrap) as client:
            create_topic(client, topic)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        producer = txn_producer(broker.bootstrap, tid)
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce(topic, b"one", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 7)], consumer.consumer_group_metadata(), 15)
        producer.commit_transaction(15)
        producer.begin_transaction()
        producer.produce(topic, b"two", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 8)], consumer.consumer_group_metadata(), 15)
        producer.flush(15)
        consumer.close()
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap) as client:
            assert offset_fetch(client, group, topic) == 7  # the open transaction's offset stays pending
            assert describe(client, tid)["transaction_state"] == "Ongoing"
        producer.commit_transaction(30)  # the same producer finishes it against the restarted broker
        with RawClient(broker.bootstrap) as client:
            assert offset_fetch(client, group, topic) == 8
            assert outline(log_batches(client, topic)) == ["one", "COMMIT", "two", "COMMIT"]
    finally:
        if broker.alive():
            broker.stop()


def test_aiokafka_transactional_producer_with_offsets(tbroker: BrokerProcess, raw: RawClient) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    topic, group = unique_topic("aio"), unique_topic("g")
    create_topic(raw, topic)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id=unique_topic("tid"))
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"aio-kept", partition=0)
                await producer.send_offsets_to_transaction({AioTopicPartition(topic, 0): 3}, group)
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"aio-dropped", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert outline(log_batches(raw, topic)) == ["aio-kept", "COMMIT", "aio-dropped", "ABORT"]
    assert offset_fetch(raw, group, topic) == 3


def txn_offset_commit(
    client: RawClient, tid: str, pid: int, epoch: int, group: str, topic: str, version: int = 3, **member: Any
) -> int:
    body = {
        "transactional_id": tid,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": member.get("generation_id", -1),
        "member_id": member.get("member_id", ""),
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 11,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    }
    answer = client.call(ApiKey.TXN_OFFSET_COMMIT, version, body)
    return int(answer["topics"][0]["partitions"][0]["error_code"])


def test_txn_offset_commit_v3_checks_member_and_generation(raw: RawClient) -> None:
    topic, group, tid = unique_topic("kip447"), unique_topic("g"), unique_topic("tid")
    create_topic(raw, topic)
    join_body = {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}],
    }
    member_id = raw.call(ApiKey.JOIN_GROUP, 5, join_body)["member_id"]
    joined = raw.call(ApiKey.JOIN_GROUP, 5, {**join_body, "member_id": member_id})
    assert joined["error_code"] == 0
    generation = joined["generation_id"]
    answer = init_pid(raw, tid)
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    # without AddOffsetsToTxn the group's partition is not in the transaction
    assert txn_offset_commit(raw, tid, pid, epoch, group, topic) == E.INVALID_TXN_STATE
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    assert raw.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, body)["error_code"] == 0
    assert txn_offset_commit(raw, tid, pid, epoch, group, topic, member_id="ghost", generation_id=generation) == (
        E.UNKNOWN_MEMBER_ID
    )
    assert txn_offset_commit(raw, tid, pid, epoch, group, topic, member_id=member_id, generation_id=generation + 1) == (
        E.ILLEGAL_GENERATION
    )
    assert txn_offset_commit(raw, tid, pid, epoch, group, topic, member_id=member_id, generation_id=generation) == 0
    assert txn_offset_commit(raw, tid, pid, epoch + 1, group, topic) == E.INVALID_TXN_STATE
    assert offset_fetch(raw, group, topic) == -1
    assert end_txn(raw, tid, pid, epoch, True) == E.NONE
    assert offset_fetch(raw, group, topic) == 11
