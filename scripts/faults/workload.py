"""The fault runs' workload: an idempotent acks=all producer writing unique values at a steady rate, a
consumer group reading along, and the final read-back of every partition from its beginning.

The producer names each record's partition itself (round robin), so the history knows where every value
was sent before any answer. A producer that hits a fatal error (the idempotent producer's answer to a
broker that lost its sequence numbers) is replaced by a new one under a new name, as Jepsen starts a new
process; each producer's sends are ordered only among themselves.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.faults.checker import Attempt, Outcome, Read

# errors after which the record was certainly never written; any other error leaves it indeterminate
DEFINITE_FAILURES = {KafkaError._PURGE_QUEUE, KafkaError.MSG_SIZE_TOO_LARGE}
QUIET = 2  # librdkafka logs only critical events: every fault would print dozens of disconnections


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> None:
    """RF 3, min.insync.replicas 2: acks=all needs two copies, and one broker may be down."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})
    admin.create_topics([new], operation_timeout=timeout)[topic].result(timeout)


class Workload:
    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 100.0, consumers: int = 2) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.attempts: dict[str, dict[str, Any]] = {}  # value -> producer, partition, sequence, outcome, offset
        self.acknowledged = 0
        self.errors: dict[str, int] = {}  # error name -> count, of the delivery reports and fatal errors
        self.producers_used = 0
        self.consumed = [0] * consumers
        self.consumer_errors: dict[str, int] = {}
        self._stop = threading.Event()
        self._stop_consumers = threading.Event()
        self._group = f"faults-{uuid.uuid4().hex[:8]}"
        self._threads = [threading.Thread(target=self._produce, name="producer", daemon=True)]
        self._threads += [
            threading.Thread(target=self._consume, args=(i,), name=f"consumer-{i}", daemon=True)
            for i in range(consumers)
        ]

    # producing

    def _new_producer(self) -> tuple[str, Producer]:
        self.producers_used += 1
        config = {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            "request.timeout.ms": 10000,
            "client.id": f"faults-p{self.producers_used}",
            "log_level": QUIET,
        }
        return f"p{self.producers_used}", Producer(config)

    def _count(self, errors: dict[str, int], error: KafkaError) -> None:
        errors[error.name()] = errors.get(error.name(), 0) + 1

    def _produce(self) -> None:
        name, producer = self._new_producer()
        sequence = 0
        started = time.monotonic()
        while not self._stop.is_set():
            due = started + sequence / self.rate
            if (wait := due - time.monotonic()) > 0:
                producer.poll(min(wait, 0.1))
                continue
            value = f"{name}-{sequence:07d}"
            partition = sequence % self.partitions
            entry = {"producer": name, "partition": partition, "sequence": sequence, "outcome": Outcome.ATTEMPTED}
            try:
                producer.produce(self.topic, value.encode(), partition=partition, on_delivery=self._delivered(value))
            except BufferError:
                producer.poll(0.1)
                continue
            except KafkaException as error:  # fatal: this producer takes nothing more
                entry["outcome"] = Outcome.FAILED
                self.attempts[value] = entry
                self._count(self.errors, error.args[0])
                name, producer = self._replace(producer)
                sequence, started = 0, time.monotonic()
                continue
            self.attempts[value] = entry
            sequence += 1
            producer.poll(0)
        self._drain(producer)

    def _replace(self, producer: Producer) -> tuple[str, Producer]:
        self._drain(producer, timeout=5.0)
        return self._new_producer()

    def _drain(self, producer: Producer, timeout: float = 60.0) -> None:
        """Wait for the answers still due (bounded), then purge: what is queued failed, in flight is unknown."""
        producer.flush(timeout)
        with contextlib.suppress(KafkaException, RuntimeError):
            producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(5.0)

    def _delivered(self, value: str) -> Any:
        def report(error: KafkaError | None, message: Any) -> None:
            entry = self.attempts[value]
            if error is None:
                entry["outcome"], entry["offset"] = Outcome.ACKNOWLEDGED, message.offset()
                self.acknowledged += 1
            else:
                entry["outcome"] = Outcome.FAILED if error.code() in DEFINITE_FAILURES else Outcome.INDETERMINATE
                self._count(self.errors, error)

        return report

    # consuming along

    def _consume(self, index: int) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self._group,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "client.id": f"faults-c{index}",
                "log_level": QUIET,
            }
        )
        try:
            consumer.subscribe([self.topic])
            while not self._stop_consumers.is_set():
                message = consumer.poll(0.5)
                if message is None:
                    continue
                if (error := message.error()) is not None:
                    self._count(self.consumer_errors, error)
                    continue
                self.consumed[index] += 1
        finally:
            consumer.close()

    # running

    def start(self) -> Workload:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._threads[0].join(120)
        self._stop_consumers.set()
        for thread in self._threads[1:]:
            thread.join(60)

    def progress(self) -> tuple[int, int]:
        """Acknowledged records and records the group consumed, so far."""
        return self.acknowledged, sum(self.consumed)

    def wait_progress(self, acknowledged: int, consumed: int, timeout: float, step: int = 10) -> bool:
        """Until both counts are `step` above the given ones, or the deadline."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = self.progress()
            if now[0] >= acknowledged + step and now[1] >= consumed + step:
                return True
            time.sleep(0.2)
        return False

    def history(self) -> list[Attempt]:
        return [
            Attempt(value, e["producer"], e["partition"], e["sequence"], e["outcome"], e.get("offset"))
            for value, e in self.attempts.items()
        ]


def read_back(bootstrap: str, topic: str, partitions: int, timeout: float = 120.0) -> list[Read]:
    """Every record of every partition from the beginning to the high watermark seen at the start."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"faults-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": QUIET,
        }
    )
    reads: list[Read] = []
    try:
        ends = {}
        for index in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=30)
            if high > low:
                ends[index] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        done = dict.fromkeys(ends, False)  # reached the end (the end-of-partition event at or past it)
        deadline = time.monotonic() + timeout
        while not all(done.values()):
            if time.monotonic() > deadline:
                missing = {p: ends[p] for p in ends if not done[p]}
                raise TimeoutError(f"read-back incomplete after {timeout}s: partitions (and ends) {missing}")
            message = consumer.poll(1.0)
            if message is None:
                continue
            error, partition, offset = message.error(), message.partition(), message.offset()
            assert partition is not None and offset is not None
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and offset >= ends[partition]:
                    done[partition] = True
                continue
            reads.append(Read(partition, offset, (message.value() or b"").decode()))
            if offset + 1 >= ends[partition]:
                done[partition] = True
    finally:
        consumer.close()
    return reads
