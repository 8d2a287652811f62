"""Shared helpers of the compatibility scenarios: the per-test context, topic setup, a background producer."""

from __future__ import annotations

import contextlib
import itertools
import re
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pytest

from tests.compat.clients.adapter import Client, Consumed, Record
from tests.compat.clients.apiversions import missing_apis

_counter = itertools.count()


def wait_for_port(host: str, port: int, timeout: float) -> None:
    """Block until host:port accepts a TCP connection, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Compat:
    """What a scenario gets: the broker's address and APIs, and the client under test (or why it is absent)."""

    bootstrap: str
    advertised: dict[int, tuple[int, int]]
    subject: Client | str
    setup_clients: list[object] = field(default_factory=list)
    session_timeout_ms: int = 6000  # for group members: the broker's minimum allows it
    own_broker: bool = False  # the suite started this kbroker (KBROKER_BOOTSTRAP unset)

    @property
    def client(self) -> Client:
        assert isinstance(self.subject, Client)
        return self.subject

    def need(self, ops: Iterable[str] = (), caps: Iterable[str] = (), apis: Iterable[str] = ()) -> None:
        """Skip the test unless the client can do ``caps`` and the broker advertises what ``ops``/``apis`` need."""
        if isinstance(self.subject, str):
            pytest.skip(self.subject)
        for capability in [*ops, *caps]:
            if capability in self.client.missing:
                pytest.skip(f"{self.client.name} cannot do {capability}: {self.client.missing[capability]}")
        needed = self.client.apis(*ops, *caps) | set(apis)
        absent = missing_apis(self.advertised, needed)
        if absent:
            pytest.skip(f"broker does not implement {', '.join(absent)} yet")

    def topic(self, scenario: str) -> str:
        """A topic name unique to this test run, naming the scenario and client."""
        name = self.subject.name if isinstance(self.subject, Client) else "none"
        return re.sub(r"[^a-zA-Z0-9._-]", "-", f"compat-{scenario}-{name}-{next(_counter)}-{now_ms() % 100000}")

    def setup_topic(self, scenario: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        """Create a fresh topic with kafka-python's admin client (not the client under test)."""
        return self.setup_topic_named(self.topic(scenario), partitions, configs)

    def setup_topic_named(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        """Create the topic `topic` as setup_topic does."""
        absent = missing_apis(self.advertised, {"CreateTopics", "Metadata"})
        if absent:
            pytest.skip(f"broker does not implement {', '.join(absent)} yet (needed to set up the topic)")
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="compat-setup")
        try:
            # Apache Kafka answers CreateTopics before its metadata cache has the topic; a group leader that assigns
            # before then gives the topic to nobody, and kafka-python's next round (when the metadata arrives) lost
            # a member on Kafka 4.3. Wait for a leader on every partition.
            admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})], wait_for_metadata=True)
        finally:
            admin.close()
        return topic

    def setup_produce(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        """Produce with kafka-python, not idempotent (not the client under test); (partition, offset) per record."""
        self._need_setup_producer()
        from tests.compat.clients.kafka_python_client import KafkaPythonClient

        return KafkaPythonClient(idempotent=False).produce(self.bootstrap, topic, records)

    def setup_consume(
        self,
        topic: str,
        count: int,
        partitions: Sequence[int] = (0,),
        isolation: str = "read_committed",
        timeout_s: float = 20,
    ) -> list[Consumed]:
        """Read with kafka-python (not the client under test) from earliest until ``count`` records or the timeout."""
        from tests.compat.clients.kafka_python_client import KafkaPythonClient

        result = KafkaPythonClient().consume(
            self.bootstrap, topic, partitions, "earliest", count, timeout_s=timeout_s, isolation=isolation
        )
        assert result.error is None, result.error_message
        return result.records

    def _need_setup_producer(self) -> None:
        absent = missing_apis(self.advertised, {"Produce", "Metadata"})
        if absent:
            pytest.skip(f"broker does not implement {', '.join(absent)} yet (needed to set up records)")

    def produce_later(
        self, topic: str, records: Sequence[Record], delay_s: float, repeat: bool = False
    ) -> DelayedProduce:
        """Produce ``records`` with kafka-python after ``delay_s`` seconds (and every ``delay_s`` if ``repeat``,
        until joined), in a thread."""
        self._need_setup_producer()
        delayed = DelayedProduce(self, topic, records, delay_s, repeat)
        delayed.thread.start()
        return delayed


class DelayedProduce:
    """A produce that happens in the background; ``acked_at`` is the monotonic time its (last) acks arrived."""

    def __init__(
        self, compat: Compat, topic: str, records: Sequence[Record], delay_s: float, repeat: bool = False
    ) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=compat.bootstrap, acks="all", linger_ms=0, enable_idempotence=False
        )
        self.producer.partitions_for(topic)  # connect and load metadata before the clock starts
        self.topic = topic
        self.records = records
        self.delay_s = delay_s
        self.repeat = repeat
        self.stopped = threading.Event()
        self.acked_at: float | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stopped.wait(self.delay_s):
                futures = [
                    self.producer.send(self.topic, key=r.key, value=r.value, partition=r.partition)
                    for r in self.records
                ]
                for future in futures:
                    future.get(timeout=20)
                self.acked_at = time.monotonic()
                if not self.repeat:
                    return
        except BaseException as exc:  # reported by join()
            self.error = exc

    def join(self) -> float:
        self.stopped.set()
        self.thread.join(timeout=30)
        self.producer.close(timeout=5)
        if self.error is not None:
            raise self.error
        assert self.acked_at is not None, "background produce did not finish"
        return self.acked_at


def by_partition(records: Iterable[Consumed]) -> dict[int, list[Consumed]]:
    out: dict[int, list[Consumed]] = {}
    for record in records:
        out.setdefault(record.partition, []).append(record)
    return out


def assert_dense(records: Sequence[Consumed], start: int = 0) -> None:
    """Offsets of one partition's records run start, start+1, ... without gaps or repeats."""
    offsets = [r.offset for r in records]
    assert offsets == list(range(start, start + len(records))), f"offsets not dense from {start}: {offsets[:20]}"
