"""kill -9 of the broker (kbroker only: Apache Kafka is not restarted by tests/kafka_ref.py).

An idempotent acks=all run with fsync before ack loses nothing and duplicates nothing across the crash; a group
resumes from its committed offsets; an open transaction ends, after the restart, aborted."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.conftest import KBROKER_ARGS
from tests.compat.group_support import keyed, unique
from tests.compat.own_broker import OwnBroker
from tests.compat.scenarios.test_group_offsets import consume_commit_restart
from tests.compat.support import Compat, assert_dense, by_partition
from tests.ports import free_port

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KBROKER_BOOTSTRAP")), reason="kbroker only: needs a broker the suite can kill -9 and restart"
)
RUN = 1000


@pytest.fixture(scope="module")
def crash_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    data = tmp_path_factory.mktemp("kbroker-crash") / "data"
    broker = OwnBroker(data, free_port(), [*KBROKER_ARGS, "--config", "kbroker.fsync.before.ack=true"]).start()
    try:
        yield broker
    finally:
        broker.stop()


def on(compat: Compat, broker: OwnBroker) -> Compat:
    return dataclasses.replace(compat, bootstrap=broker.bootstrap)


@pytest.mark.timeout(300)
def test_idempotent_run_survives_kill9(compat: Compat, crash_broker: OwnBroker) -> None:
    compat.need(ops=("produce_idempotent",))
    c = on(compat, crash_broker)
    topic = c.setup_topic("idem-kill", 2)
    records = keyed("run", RUN, 2)
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["offsets"] = c.client.produce_idempotent(c.bootstrap, topic, records, pace_ms=2)
        except BaseException as exc:
            outcome["error"] = exc

    producer = threading.Thread(target=run, daemon=True)
    producer.start()
    time.sleep(1.0)
    assert producer.is_alive(), f"the run ended before the kill: {outcome}"
    crash_broker.restart_after_kill9()
    producer.join(240)
    assert not producer.is_alive(), "the run did not finish within 240 s of the restart"
    assert "error" not in outcome, outcome.get("error")
    from tests.compat.clients.kafka_python_client import KafkaPythonClient

    ends = [KafkaPythonClient().list_offset(c.bootstrap, topic, p, "latest") for p in (0, 1)]
    assert sum(ends) == RUN, f"end offsets {ends} for {RUN} records"
    consumed = c.setup_consume(topic, RUN, [0, 1], isolation="read_uncommitted", timeout_s=30)
    assert sorted(r.value or b"" for r in consumed) == sorted(r.value or b"" for r in records), "lost or duplicated"
    for part in by_partition(consumed).values():
        assert_dense(part)
    offsets = outcome["offsets"]
    assert isinstance(offsets, list)
    assert sorted(offsets) == sorted((r.partition, r.offset) for r in consumed), "acknowledged offsets differ"


@pytest.mark.timeout(180)
def test_group_resumes_after_kill9(compat: Compat, crash_broker: OwnBroker) -> None:
    compat.need(ops=("group",))
    c = on(compat, crash_broker)
    topic = c.setup_topic("group-kill9", 2)
    consume_commit_restart(c, topic, unique("group", c), between=crash_broker.restart_after_kill9)


@pytest.mark.timeout(180)
def test_open_transaction_after_kill9(compat: Compat, crash_broker: OwnBroker) -> None:
    """A transaction open at the crash is aborted when the next producer with its id initializes."""
    compat.need(ops=("txn",))
    c = on(compat, crash_broker)
    topic = c.setup_topic("txn-kill9", 1)
    txn_id = unique("txn", c)
    first = c.client.txn_producer(c.bootstrap, txn_id)
    first.begin()
    first.send(topic, [Record(b"k", f"open-{i}".encode(), partition=0) for i in range(5)])
    crash_broker.restart_after_kill9()
    try:
        first.close()
    except Exception:  # its connections died with the broker
        pass
    second = c.client.txn_producer(c.bootstrap, txn_id)
    try:
        second.begin()
        second.send(topic, [Record(b"k", b"after", partition=0)])
        second.commit()
    finally:
        second.close()
    assert [r.value for r in c.setup_consume(topic, 1)] == [b"after"]
    every = c.setup_consume(topic, 6, isolation="read_uncommitted")
    assert [r.value for r in every] == [f"open-{i}".encode() for i in range(5)] + [b"after"]
