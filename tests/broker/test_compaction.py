"""Log compaction seen by real clients: confluent-kafka writes a compacted topic with many updates per
key and tombstones, the cleaner runs (short settings), and a consumer from offset 0 sees each live
key's last value at its original offset, tombstones until `delete.retention.ms` has passed, then not.
The same scenario runs against Apache Kafka (tests/kafka_ref.py) and both give the same records.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.process import BrokerProcess

Row = tuple[int, bytes | None, bytes | None]

DELETE_RETENTION_MS = 3000
SEGMENT_MS = 500
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": str(SEGMENT_MS),
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
}
CLEANER_SETTINGS = {"log.cleaner.backoff.ms": "100"}


def kbroker_args() -> list[str]:
    args = []
    for name, value in CLEANER_SETTINGS.items():
        args += ["--config", f"{name}={value}"]
    return args


def create_compacted_topic(bootstrap: str, topic: str, configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config=configs or TOPIC_CONFIGS)])
    futures[topic].result(30)
    deadline = time.monotonic() + 30
    while topic not in admin.list_topics(timeout=10).topics:  # Kafka answers before its metadata knows it
        assert time.monotonic() < deadline
        time.sleep(0.1)


def produce(bootstrap: str, topic: str, rows: list[tuple[bytes, bytes | None]], compression: str = "none") -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": compression}
    )
    for key, value in rows:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def read_all(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[Row]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    rows: list[Row] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    return rows
                raise AssertionError(message.error())
            rows.append((message.offset(), message.key(), message.value()))
        raise AssertionError("no end of partition within 30 s")
    finally:
        consumer.close()


def wait_for(
    bootstrap: str, topic: str, expected: list[Row], timeout: float = 60.0, isolation: str = "read_committed"
) -> list[Row]:
    deadline = time.monotonic() + timeout
    while True:
        rows = read_all(bootstrap, topic, isolation)
        if rows == expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.3)


def compacted(history: list[Row], clean_below: int, keep_tombstones: bool) -> list[Row]:
    """The model: below `clean_below` each key's last record (tombstones only if kept), above it everything."""
    last = {key: row for row in history if row[0] < clean_below for key in [row[1]]}
    kept = sorted(r for r in last.values() if r[2] is not None or keep_tombstones)
    return kept + [r for r in history if r[0] >= clean_below]


def scenario(
    bootstrap: str, compression: str = "none", topic: str | None = None
) -> tuple[list[Row], list[Row], list[Row], list[Row]]:
    """(seen after the first round, its model, seen after the second, its model)."""
    topic = topic or f"compacted-{uuid.uuid4().hex[:8]}"
    create_compacted_topic(bootstrap, topic)
    rows: list[tuple[bytes, bytes | None]] = [(b"key-%02d" % (i % 20), b"v%03d" % i) for i in range(200)]
    rows += [(b"key-03", None), (b"key-07", None), (b"key-07", b"back"), (b"key-11", None)]
    produce(bootstrap, topic, rows, compression)
    time.sleep(SEGMENT_MS / 1000 + 0.3)
    produce(bootstrap, topic, [(b"roll-a", b"x")])  # rolls: everything before it is cleanable
    history: list[Row] = [(offset, key, value) for offset, (key, value) in enumerate(rows + [(b"roll-a", b"x")])]
    model_a = compacted(history, len(rows), keep_tombstones=True)
    seen_a = wait_for(bootstrap, topic, model_a)
    time.sleep(DELETE_RETENTION_MS / 1000 + 0.5)  # the tombstones' delete horizon passes
    more: list[tuple[bytes, bytes | None]] = [(b"key-%02d" % i, b"w%d" % i) for i in range(5)]
    produce(bootstrap, topic, more, compression)
    time.sleep(SEGMENT_MS / 1000 + 0.3)
    produce(bootstrap, topic, [(b"roll-b", b"y")])
    history += [(len(history) + i, key, value) for i, (key, value) in enumerate(more + [(b"roll-b", b"y")])]
    model_b = compacted(history, len(history) - 1, keep_tombstones=False)
    seen_b = wait_for(bootstrap, topic, model_b)
    return seen_a, model_a, seen_b, model_b


@pytest.fixture
def kbroker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker(*kbroker_args())


def read_with_kafka_python(bootstrap: str, topic: str, count: int) -> list[Row]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=200)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        rows: list[Row] = []
        deadline = time.monotonic() + 30
        while len(rows) < count and time.monotonic() < deadline:
            for messages in consumer.poll(500).values():
                rows.extend((m.offset, m.key, m.value) for m in messages)
        return rows
    finally:
        consumer.close()


def test_a_consumer_from_zero_sees_each_live_keys_last_value_at_its_offset(kbroker: BrokerProcess) -> None:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    seen_a, model_a, seen_b, model_b = scenario(kbroker.bootstrap, topic=topic)
    assert seen_a == model_a
    assert (203, b"key-11", None) in seen_a  # a tombstone stays until its delete horizon
    assert seen_b == model_b
    assert not [row for row in seen_b if row[2] is None]
    assert "log_cleaned" in kbroker.log_text()
    # a second client library decodes the cleaned batches (gaps, rewritten batches) the same way
    assert read_with_kafka_python(kbroker.bootstrap, topic, len(seen_b)) == seen_b


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_rewritten_in_their_codec_and_clients_read_them(
    kbroker: BrokerProcess, compression: str
) -> None:
    seen_a, model_a, seen_b, model_b = scenario(kbroker.bootstrap, compression)
    assert (seen_a, seen_b) == (model_a, model_b)


@pytest.fixture
def kafka() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("java is needed for the reference Apache Kafka")
    from tests.kafka_ref import KafkaRef

    with KafkaRef(properties=CLEANER_SETTINGS) as ref:
        yield ref


def test_the_same_scenario_gives_the_same_records_as_apache_kafka(kbroker: BrokerProcess, kafka: Any) -> None:
    ours = scenario(kbroker.bootstrap)
    theirs = scenario(kafka.bootstrap)
    assert theirs[0] == theirs[1] and theirs[2] == theirs[3]  # the model is Kafka's behaviour
    assert ours == theirs


def transactional_scenario(bootstrap: str) -> tuple[list[Row], list[Row], list[Row]]:
    """Committed and aborted transactions and plain records on a compacted topic; after cleaning,
    (read_committed view, read_uncommitted view, model)."""
    from confluent_kafka import Producer

    topic = f"compacted-txn-{uuid.uuid4().hex[:8]}"
    create_compacted_topic(bootstrap, topic)
    committed: list[Row] = []
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    plain = Producer({"bootstrap.servers": bootstrap, "acks": "all"})

    def send(target: Any, rows: list[tuple[bytes, bytes | None]], keep: bool) -> None:
        def delivered(error: Any, message: Any) -> None:
            assert error is None, error
            if keep:
                committed.append((message.offset(), message.key(), message.value()))

        for key, value in rows:
            target.produce(topic, key=key, value=value, partition=0, on_delivery=delivered)
        target.flush(30)

    producer.begin_transaction()
    send(producer, [(b"k%d" % i, b"committed-1") for i in range(5)], keep=True)
    producer.commit_transaction(30)
    send(plain, [(b"k1", b"plain"), (b"k9", b"plain")], keep=True)
    producer.begin_transaction()
    send(producer, [(b"k0", b"aborted"), (b"k2", b"aborted"), (b"only-aborted", b"aborted")], keep=False)
    producer.abort_transaction(30)
    producer.begin_transaction()
    send(producer, [(b"k0", b"committed-2"), (b"k3", None)], keep=True)
    producer.commit_transaction(30)
    time.sleep(SEGMENT_MS / 1000 + 0.3)
    send(plain, [(b"roll", b"x")], keep=True)
    trigger = committed[-1][0]
    model = compacted(sorted(committed), trigger, keep_tombstones=True)
    seen = wait_for(bootstrap, topic, model)
    uncommitted = wait_for(bootstrap, topic, model, isolation="read_uncommitted")  # aborted data is gone
    return seen, uncommitted, model


def test_transactions_on_a_compacted_topic_clean_as_in_kafka(kbroker: BrokerProcess) -> None:
    seen, uncommitted, model = transactional_scenario(kbroker.bootstrap)
    assert seen == model
    assert uncommitted == model
    assert not [row for row in seen if row[1] == b"only-aborted"]


def test_transactions_give_the_same_records_as_apache_kafka(kbroker: BrokerProcess, kafka: Any) -> None:
    ours = transactional_scenario(kbroker.bootstrap)
    assert ours[0] == ours[2] and ours[1] == ours[2]
    theirs = transactional_scenario(kafka.bootstrap)
    assert theirs[0] == theirs[2] and theirs[1] == theirs[2]
    # offsets are each broker's own: a COMMIT marker is written after EndTxn is answered, so the
    # plain records that follow may come before or after it (checked against each one's offsets above)
    assert [[(key, value) for _, key, value in view] for view in ours] == [
        [(key, value) for _, key, value in view] for view in theirs
    ]


def test_kill_9_during_cleaning_loses_nothing_and_duplicates_nothing(tmp_path: Any) -> None:
    """A few rounds of: write more updates, wait until a cleaning round is writing (a `.cleaned`
    file exists), kill -9 at a random moment after, restart. Every key's last record stays at its
    offset, every record read is one written at that offset, offsets strictly increase."""
    import random

    from tests.process import free_port

    data_dir = tmp_path / "data"
    port = free_port()
    args = [*kbroker_args(), "--config", "log.cleaner.io.max.bytes.per.second=100000"]
    topic = f"compacted-kill-{uuid.uuid4().hex[:8]}"
    history: dict[int, tuple[bytes, bytes | None]] = {}
    rng = random.Random(7)
    broker = BrokerProcess(data_dir, *args, port=port).start()
    try:
        configs = {"cleanup.policy": "compact", "segment.bytes": "65536", "min.cleanable.dirty.ratio": "0.01"}
        create_compacted_topic(broker.bootstrap, topic, configs)
        for iteration in range(3):
            if not broker.alive():
                broker = BrokerProcess(data_dir, *args, port=port).start()
            _produce_tracked(broker.bootstrap, topic, history, iteration, rng)
            partition_dir = data_dir / f"{topic}-0"
            # odd rounds: a group is being written; even: a group is complete (.swap) and not yet swapped in
            suffix = ".cleaned" if iteration % 2 else ".swap"
            deadline = time.monotonic() + 60
            while not any(p.name.endswith(suffix) for p in partition_dir.iterdir()):
                assert time.monotonic() < deadline, f"no {suffix} file within 60 s"
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.3))  # the round reads and writes at 100 kB/s: a random point of it
            broker.kill()
        broker = BrokerProcess(data_dir, *args, port=port)
        logged_before = len(broker.log_text())  # the killed processes wrote to the same log file
        broker.start()
        _check_against_history(read_all(broker.bootstrap, topic, "read_uncommitted"), history)
        # let the restarted broker finish a round (it cleans the whole dirty log in one), then check again
        deadline = time.monotonic() + 60
        while "log_cleaned" not in broker.log_text()[logged_before:]:
            assert time.monotonic() < deadline, "no cleaning round finished within 60 s of the restart"
            time.sleep(0.2)
        _check_against_history(read_all(broker.bootstrap, topic, "read_uncommitted"), history)
    finally:
        if broker.alive():
            broker.stop()


def _produce_tracked(
    bootstrap: str, topic: str, history: dict[int, tuple[bytes, bytes | None]], iteration: int, rng: Any
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 16384})

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        history[message.offset()] = (message.key(), message.value())

    for i in range(2500):
        key = b"key-%03d" % rng.randrange(300)
        value = None if rng.random() < 0.02 else b"%d-%d-" % (iteration, i) + b"v" * 80
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _check_against_history(rows: list[Row], history: dict[int, tuple[bytes, bytes | None]]) -> None:
    offsets = [offset for offset, _, _ in rows]
    assert offsets == sorted(set(offsets)), "an offset is read twice or out of order"
    for offset, key, value in rows:
        assert history.get(offset) == (key, value), f"offset {offset} holds a record never written there"
    last: dict[bytes, int] = {}
    for offset in sorted(history):
        last[history[offset][0]] = offset
    seen = set(offsets)
    lost = [offset for offset in last.values() if offset not in seen and history[offset][1] is not None]
    assert not lost, f"the last record of {len(lost)} keys is missing, e.g. offset {lost[0]}"
