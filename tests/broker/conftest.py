"""A real kbroker process for the broker tests, plus raw-protocol helpers built on our codec.

`broker` is one kbroker subprocess per test session (free port, temporary data dir);
`start_broker(*args)` starts more with other settings (stopped after the test).
Tests use unique topic names, so they share the session broker safely.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import iter_batches
from tests.process import BrokerProcess, RawClient

_data_dirs = itertools.count()

MAX_BYTES = 50 * 1024 * 1024


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("broker") / "data").start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Start a kbroker with extra command-line arguments (e.g. "--config", "key=value")."""
    started: list[BrokerProcess] = []

    def start(*args: str) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"data{next(_data_dirs)}", *args).start()
        started.append(process)
        return process

    yield start
    for process in started:
        if process.alive():
            process.stop()


@pytest.fixture
def raw(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.bootstrap) as client:
        yield client


def unique_topic(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(client: RawClient, name: str, timeout: float = 10.0) -> None:
    """Create `name` by auto-creation on Metadata (num.partitions partitions), wait until each partition's
    leader serves it. Metadata naming a leader is not enough: Apache Kafka's broker publishes a new topic to
    its metadata cache before its replica manager leads the partitions, and answers NOT_LEADER_OR_FOLLOWER
    (which clients retry) meanwhile; a ListOffsets answered without error says the leader is serving."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.call(ApiKey.METADATA, 9, {"topics": [{"name": name}], "allow_auto_topic_creation": True})
        topic = response["topics"][0]
        if topic["error_code"] == 0 and topic["partitions"]:
            indexes = [p["partition_index"] for p in topic["partitions"]]
            if all(list_offset(client, name, -1, partition=i)["error_code"] == 0 for i in indexes):
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} not ready: {topic}")
        time.sleep(0.02)


def batch_of(count: int, *, start_ts: int = 1_000, value_size: int = 10, key: bytes | None = b"k", **kw: Any) -> bytes:
    records = [
        SimpleRecord(key=key, value=(b"%d:" % i).ljust(value_size, b"v"), timestamp=start_ts + i) for i in range(count)
    ]
    return build_record_batch(records, **kw)


def produce(
    client: RawClient,
    topic: str,
    records: bytes | None,
    *,
    partition: int = 0,
    acks: int = -1,
    version: int = 9,
) -> dict[str, Any]:
    """One Produce request for one partition; returns that partition's answer."""
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }
    response = client.call(ApiKey.PRODUCE, version, body)
    (topic_answer,) = response["responses"]
    assert topic_answer["name"] == topic
    (answer,) = topic_answer["partition_responses"]
    return dict(answer)


def fetch_request(
    partitions: list[tuple[str, int, int]],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = MAX_BYTES,
    partition_max_bytes: int = MAX_BYTES,
    isolation_level: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
) -> dict[str, Any]:
    """A Fetch request body for (topic, partition, fetch offset) triples, grouped by topic in order."""
    topics: list[dict[str, Any]] = []
    for topic, partition, offset in partitions:
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "partitions": []})
        topics[-1]["partitions"].append(
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes}
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": session_id,
        "session_epoch": session_epoch,
        "topics": topics,
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch(client: RawClient, partitions: list[tuple[str, int, int]], version: int = 12, **kw: Any) -> dict[str, Any]:
    return client.call(ApiKey.FETCH, version, fetch_request(partitions, **kw))


def fetched_partition(response: dict[str, Any], topic: str, partition: int = 0) -> dict[str, Any]:
    for t in response["responses"]:
        if t["topic"] == topic:
            for p in t["partitions"]:
                if p["partition_index"] == partition:
                    return dict(p)
    raise KeyError(f"{topic}-{partition} not in the fetch response")


def record_offsets(records: Any) -> list[int]:
    """Offsets of every record in fetched batch bytes (whole batches only)."""
    return [record.offset for batch in iter_batches(bytes(records or b"")) for record in batch.records()]


def list_offset(client: RawClient, topic: str, timestamp: int, *, version: int = 7, **kw: Any) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "isolation_level": kw.pop("isolation_level", 0),
        "topics": [
            {"name": topic, "partitions": [{"partition_index": kw.pop("partition", 0), "timestamp": timestamp, **kw}]}
        ],
    }
    response = client.call(ApiKey.LIST_OFFSETS, version, body)
    return dict(response["topics"][0]["partitions"][0])


def read_to_end(consumer: Any, timeout_s: float = 30.0) -> list[Any]:
    """Every record a kafka-python consumer's assigned partitions hold up to their end offsets (taken first),
    in order: done once the positions reach the ends, instead of waiting out a consumer_timeout_ms of silence
    (nothing past the end exists to be missed)."""
    partitions = list(consumer.assignment())
    ends = consumer.end_offsets(partitions)
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while any(consumer.position(tp) < end for tp, end in ends.items()):
        assert time.monotonic() < deadline, f"read {len(records)} records, not up to the end offsets {ends}"
        for batch in consumer.poll(timeout_ms=200).values():
            records.extend(batch)
    return records


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas with a deprecated importlib.resources call
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:kafka.protocol.schemas.load_json")
    config.addinivalue_line("filterwarnings", "ignore:open_text is deprecated:DeprecationWarning")
