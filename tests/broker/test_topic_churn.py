"""Topics created, filled by idempotent and transactional producers, and deleted in a loop (some re-created
under the same names) while the periodic producer-state snapshot and checkpoint duties run every 100 ms:
the broker logs no warning, keeps no state of deleted partitions, and writes no file of a deleted
partition into its successor's directory (a snapshot of the predecessor there could evict the real ones)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from tests.process import BrokerProcess, RawClient

ROUNDS = 5
PARTITIONS = 2
CHURN = (
    "--log-format",
    "json",
    "--config",
    "log.flush.offset.checkpoint.interval.ms=100",  # the producer-state snapshot duty and the checkpoints
    "--config",
    "log.segment.delete.delay.ms=0",  # deleted partitions' directories go at the next duty round
    "--config",
    "transaction.state.log.num.partitions=2",
    "--config",
    "offsets.topic.num.partitions=2",
)


def admin_call(admin: AdminClient, futures: dict) -> None:
    for future in futures.values():
        future.result(timeout=15)


def create(admin: AdminClient, *names: str) -> None:
    admin_call(
        admin, admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
    )


def delete(admin: AdminClient, *names: str) -> None:
    admin_call(admin, admin.delete_topics(list(names), operation_timeout=10))


def produce_idempotent(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 1})
    for i in range(count):
        producer.produce(topic, value=b"i%d" % i, partition=i % PARTITIONS)
    assert producer.flush(15) == 0


def produce_transactions(bootstrap: str, topic: str, transactional_id: str) -> None:
    """One committed and one aborted transaction (ABORT markers enter the aborted-transaction index)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1})
    producer.init_transactions(15)
    for commit in (True, False):
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            producer.produce(topic, value=b"t", partition=partition)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
    assert producer.flush(15) == 0


def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


def partition_states(bootstrap: str, topic: str) -> list[dict]:
    with RawClient(bootstrap) as client:
        request = {"topics": [{"name": topic, "partition_indexes": list(range(PARTITIONS))}]}
        response = client.call(ApiKey.DESCRIBE_PRODUCERS, 0, request)
    return response["topics"][0]["partitions"]


def log_end_offsets(bootstrap: str, topic: str) -> list[int]:
    with RawClient(bootstrap) as client:
        partitions = [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1} for p in range(PARTITIONS)]
        request = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": partitions}]}
        response = client.call(ApiKey.LIST_OFFSETS, 7, request)
    return [p["offset"] for p in response["topics"][0]["partitions"]]


def warnings_in(log_text: str) -> list[str]:
    lines = []
    for line in log_text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            lines.append(line)  # anything not structlog's (a traceback) counts
            continue
        if event.get("level") in ("warning", "error", "critical"):
            lines.append(line)
    return lines


def test_topic_churn_leaves_no_warning_state_or_file(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(*CHURN)
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    data_dir = broker.data_dir
    for round_ in range(ROUNDS):
        once, again = f"churn-once-{round_}", "churn-again"  # `again` is re-created under its name each round
        create(admin, once, again)
        produce_idempotent(bootstrap, once, 20)
        produce_idempotent(bootstrap, again, 10 + round_ * 7)
        produce_transactions(bootstrap, again, f"churn-tx-{round_}")
        time.sleep(0.3)  # snapshots of both topics' partitions are due and written
        delete(admin, once, again)
        time.sleep(0.3)  # several duty rounds over a broker that has just deleted them
    create(admin, "churn-again")
    produce_idempotent(bootstrap, "churn-again", 3)
    time.sleep(1.0)  # many more duty rounds

    # the deleted partitions' directories are gone, renamed ones included; no temp file anywhere
    def only_the_survivor() -> bool:
        names = {p.name for p in data_dir.iterdir() if p.name.startswith("churn-")}
        return names == {f"churn-again-{p}" for p in range(PARTITIONS)}

    until(only_the_survivor)
    assert not [p for p in data_dir.rglob("*.tmp")]

    # nothing of a predecessor in the survivor's directories: snapshots and indexes of this log only
    ends = log_end_offsets(bootstrap, "churn-again")
    for partition in range(PARTITIONS):
        directory = Path(data_dir / f"churn-again-{partition}")
        snapshots = [int(name[:20]) for name in os.listdir(directory) if name.endswith(".snapshot")]
        assert all(offset <= ends[partition] for offset in snapshots), (snapshots, ends)
        assert not [name for name in os.listdir(directory) if name.endswith(".txnindex")]

    # the re-created topic's producer state is its own: one idempotent producer, no transaction
    producers = [p["active_producers"] for p in partition_states(bootstrap, "churn-again")]
    assert all(len(found) == 1 and found[0]["current_txn_start_offset"] == -1 for found in producers), producers

    assert broker.stop() == 0
    assert warnings_in(broker.log_text()) == []
