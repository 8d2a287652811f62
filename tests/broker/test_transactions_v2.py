"""Transactions v2 (KIP-890) on the wire, against kbroker and against Apache Kafka 4.3 with the same
requests: Produce v12 adds its partition, EndTxn v5 bumps the epoch (markers carry it), a late write
of a finished transaction is fenced, a timed-out transaction is aborted with the epoch fenced."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import RecordBatch, iter_batches
from tests.broker.conftest import create_topic, fetch, fetched_partition, unique_topic
from tests.broker.test_transactions import (
    add_partitions,
    describe,
    offset_fetch,
    txn_offset_commit,
    txn_records,
    wait_until,
)
from tests.kafka_ref import KafkaRef, kafka_home
from tests.process import BrokerProcess, RawClient

ABORT_CHECK = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
RETRIED = (E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS)


@pytest.fixture(scope="module", params=["kbroker", "kafka"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "kbroker":
        config = [arg for name, value in ABORT_CHECK.items() for arg in ("--config", f"{name}={value}")]
        process = BrokerProcess(tmp_path_factory.mktemp("tv2") / "data", *config).start()
        try:
            yield process.bootstrap
        finally:
            process.stop()
        return
    if shutil.which("java") is None or not (kafka_home() / ".complete").exists():
        pytest.skip("reference Apache Kafka is not available")
    with KafkaRef(properties=ABORT_CHECK) as kafka:
        yield kafka.bootstrap


@pytest.fixture
def raw(target: str) -> Iterator[RawClient]:
    with RawClient(target) as client:
        yield client


def init_pid(client: RawClient, tid: str, timeout_ms: int = 60_000) -> tuple[int, int]:
    deadline = time.monotonic() + 30
    while True:
        # as clients do first: Kafka creates __transaction_state on the first lookup
        client.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        answer = client.call(
            ApiKey.INIT_PRODUCER_ID, 5, {"transactional_id": tid, "transaction_timeout_ms": timeout_ms}
        )
        if answer["error_code"] == E.NONE:
            return answer["producer_id"], answer["producer_epoch"]
        assert answer["error_code"] in RETRIED and time.monotonic() < deadline, answer
        time.sleep(0.1)


def produce_txn(client: RawClient, tid: str, topic: str, records: bytes, version: int = 12) -> int:
    body = {
        "transactional_id": tid,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    return int(client.call(ApiKey.PRODUCE, version, body)["responses"][0]["partition_responses"][0]["error_code"])


def end_txn_v5(client: RawClient, tid: str, pid: int, epoch: int, commit: bool) -> dict[str, Any]:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    return dict(client.call(ApiKey.END_TXN, 5, body))


def batches(client: RawClient, topic: str) -> list[RecordBatch]:
    found: list[RecordBatch] = []
    while True:  # Kafka may answer a batch at a time
        offset = found[-1].last_offset + 1 if found else 0
        answer = fetched_partition(fetch(client, [(topic, 0, offset)]), topic)
        assert answer["error_code"] == 0
        more = list(iter_batches(bytes(answer["records"] or b"")))
        if not more:
            return found
        found.extend(more)


def test_v2_transactions_bump_the_epoch_and_fence_late_writes(raw: RawClient) -> None:
    topic, tid = unique_topic("tv2"), unique_topic("tid")
    create_topic(raw, topic)
    pid, epoch = init_pid(raw, tid)
    # no AddPartitionsToTxn: Produce v12 adds the partition
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch, 0, "a")) == E.NONE
    assert describe(raw, tid)["transaction_state"] == "Ongoing"
    answer = end_txn_v5(raw, tid, pid, epoch, True)
    assert (answer["error_code"], answer["producer_id"], answer["producer_epoch"]) == (E.NONE, pid, epoch + 1)
    wait_until(lambda: describe(raw, tid)["transaction_state"] == "CompleteCommit")
    assert describe(raw, tid)["producer_epoch"] == epoch + 1
    # the retried EndTxn (answer lost) gets the same answer
    retry = end_txn_v5(raw, tid, pid, epoch, True)
    assert (retry["error_code"], retry["producer_id"], retry["producer_epoch"]) == (E.NONE, pid, epoch + 1)
    # a late write of the committed transaction (a zombie, old epoch), by either protocol, is fenced
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch, 1, "late")) == E.INVALID_PRODUCER_EPOCH
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch, 1, "late"), version=11) == E.INVALID_PRODUCER_EPOCH
    # the next transaction, with the new epoch (sequences restart), aborted
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch + 1, 0, "b")) == E.NONE
    answer = end_txn_v5(raw, tid, pid, epoch + 1, False)
    assert (answer["error_code"], answer["producer_epoch"]) == (E.NONE, epoch + 2)
    wait_until(lambda: describe(raw, tid)["transaction_state"] == "CompleteAbort")
    assert end_txn_v5(raw, tid, pid, epoch, True)["error_code"] == E.PRODUCER_FENCED
    log = [(b.is_control, b.producer_epoch) for b in batches(raw, topic)]
    assert log == [(False, epoch), (True, epoch + 1), (False, epoch + 1), (True, epoch + 2)]


def test_timed_out_transaction_is_aborted_with_the_epoch_fenced(raw: RawClient) -> None:
    topic, tid = unique_topic("tv2to"), unique_topic("tid")
    create_topic(raw, topic)
    pid, epoch = init_pid(raw, tid, timeout_ms=1_000)
    assert add_partitions(raw, tid, pid, epoch, topic) == E.NONE  # a v1 client
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch, 0, "stale"), version=11) == E.NONE
    wait_until(lambda: describe(raw, tid)["transaction_state"] == "CompleteAbort", timeout=20)
    # the fence bumps the epoch once, also with transaction.version 2, as Kafka 4.3 does
    assert describe(raw, tid)["producer_epoch"] == epoch + 1
    assert [(b.is_control, b.producer_epoch) for b in batches(raw, topic)] == [(False, epoch), (True, epoch + 1)]
    assert produce_txn(raw, tid, topic, txn_records(pid, epoch, 1, "late"), version=11) == E.INVALID_PRODUCER_EPOCH


def test_txn_offset_commit_v5_adds_the_offsets_partition(raw: RawClient) -> None:
    topic, tid, group = unique_topic("tv2off"), unique_topic("tid"), unique_topic("g")
    create_topic(raw, topic)
    pid, epoch = init_pid(raw, tid)
    deadline = time.monotonic() + 30

    def commit(version: int) -> int:
        # Kafka creates and loads __consumer_offsets on first use: NOT_COORDINATOR, LOAD_IN_PROGRESS meanwhile
        while (error := txn_offset_commit(raw, tid, pid, epoch, group, topic, version=version)) in RETRIED:
            assert time.monotonic() < deadline
            raw.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
            time.sleep(0.2)
        return error

    # v3 (transactions v1) needs AddOffsetsToTxn first; v5 adds the group's offsets partition itself
    assert commit(3) == E.INVALID_TXN_STATE
    assert commit(5) == E.NONE
    assert describe(raw, tid)["transaction_state"] == "Ongoing"
    answer = end_txn_v5(raw, tid, pid, epoch, True)
    assert (answer["error_code"], answer["producer_epoch"]) == (E.NONE, epoch + 1)
    wait_until(lambda: offset_fetch(raw, group, topic) == 11)
    # the finished transaction's epoch is fenced
    assert txn_offset_commit(raw, tid, pid, epoch, group, topic, version=5) == E.INVALID_PRODUCER_EPOCH
