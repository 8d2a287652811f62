"""Raw requests sent to a fresh kbroker and a fresh Apache Kafka 4.3.1 in the same order, and their answers
compared field for field (tests/broker/test_*_vs_kafka.py).

Normalised before the comparison: a non-zero topic id is `<id>`, the broker's node id `<node>`, an error
message is `<message>` (each broker words its messages itself; whether there is one is compared), and the
nodes' addresses, the cluster id and throttle times are left out.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.process import BrokerProcess, RawClient

ZERO_UUID = b"\0" * 16

# label, API, version, body(node id); or a Step: set-up run in its place, whose answer is not compared
Body = Callable[[int], dict[str, Any]]
Request = tuple[str, ApiKey, int, Body]
Step = Callable[[RawClient], None]


def normalised(value: Any, node: int) -> Any:
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key in ("error_message", "message", "acknowledge_error_message"):
                result[key] = "<message>" if item else item
            elif key == "topic_id" and item != ZERO_UUID:
                result[key] = "<id>"
            elif key in ("node_id", "leader_id", "controller_id", "coordinator_id") and item == node:
                result[key] = "<node>"
            elif key == "resource_name" and item == str(node):
                result[key] = "<node>"
            elif key in ("brokers", "cluster_id", "throttle_time_ms", "host", "port"):
                continue  # each broker's own
            else:
                result[key] = normalised(item, node)
        return result
    if isinstance(value, list):
        return [normalised(item, node) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two answers differ, as `path: kbroker's value != Kafka's` (list items by their name if any)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in ours.keys() | theirs.keys():
            found += differences(ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{path}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            where = a.get("name", i) if isinstance(a, dict) else i
            found += differences(a, b, f"{path}[{where}]")
        return found
    return [] if ours == theirs else [f"{path or '.'}: {ours!r} != {theirs!r}"]


def node_id(raw: RawClient) -> int:
    body = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return int(raw.call(ApiKey.METADATA, 12, body)["brokers"][0]["node_id"])


def until(raw: RawClient, api: ApiKey, version: int, body: dict[str, Any], done: Callable[[Any], bool],
          timeout: float = 30, pause: float = 0.1) -> Any:  # fmt: skip
    """Send the request until `done(answer)`; the answer. Kafka shows many changes a moment after it
    acknowledged them (its controller applies them, its broker's metadata cache follows)."""
    deadline = time.monotonic() + timeout
    while not done(answer := raw.call(api, version, body)):
        assert time.monotonic() < deadline, answer
        time.sleep(pause)
    return answer


def wait_for_leaders(raw: RawClient, topic: str, partitions: int) -> None:
    """Until each partition answers ListOffsets: Kafka leads a new topic's partitions a moment after creating it."""
    wanted = [{"partition_index": p, "timestamp": -1} for p in range(partitions)]
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": wanted}]}
    until(raw, ApiKey.LIST_OFFSETS, 8, body,
          lambda answer: all(p["error_code"] == 0 for t in answer["topics"] for p in t["partitions"]))  # fmt: skip


def until_coordinator(raw: RawClient, group: str) -> None:
    """Until the group's coordinator answers OffsetFetch without an error: Kafka creates __consumer_offsets on
    the first FindCoordinator, then loads its coordinator."""
    deadline = time.monotonic() + 60
    while True:
        raw.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        body = {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}],
                "require_stable": False}  # fmt: skip
        answer = raw.call(ApiKey.OFFSET_FETCH, 9, body)["groups"][0]
        if answer["error_code"] == 0:
            return
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)


def until_transaction_coordinator(raw: RawClient, transactional_id: str) -> None:
    """Until the transactional id's coordinator is found: Kafka creates __transaction_state on the first lookup."""
    body = {"key_type": 1, "coordinator_keys": [transactional_id]}
    until(raw, ApiKey.FIND_COORDINATOR, 4, body, lambda a: a["coordinators"][0]["error_code"] == 0, 60, 0.2)


def answers(
    bootstrap: str, requests: list[Request | Step], adjust: Callable[[str, Any], Any] = lambda label, a: a
) -> dict[str, Any]:
    """Each request's normalised answer by label; a Step runs in its place (set-up whose answer is not compared)."""
    with RawClient(bootstrap) as raw:
        node = node_id(raw)
        found = {}
        for request in requests:
            if callable(request):
                request(raw)
                continue
            label, api, version, body = request
            found[label] = adjust(label, normalised(raw.call(api, version, body(node)), node))
        return found


def answers_of_kafka(requests: list[Request | Step], **kw: Any) -> Iterator[dict[str, Any]]:
    """A module fixture's body: Apache Kafka's answers (skipped without java)."""
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef() as kafka:
        yield answers(kafka.bootstrap, requests, **kw)


def comparison(requests: list[Request | Step], adjust: Callable[[str, Any], Any] = lambda label, a: a) -> Any:
    """A test module's fixture and test: `kafka_answers, test_answers_are_kafkas = comparison(REQUESTS)`."""

    @pytest.fixture(scope="module")
    def kafka_answers() -> Iterator[dict[str, Any]]:
        yield from answers_of_kafka(requests, adjust=adjust)

    def test_answers_are_kafkas(kafka_answers: dict[str, Any], tmp_path: Path) -> None:
        assert_same_as_kafka(kafka_answers, tmp_path, requests, adjust=adjust)

    return kafka_answers, test_answers_are_kafkas


def assert_same_as_kafka(
    theirs: dict[str, Any], data_dir: Path, requests: list[Request | Step], *args: str, **kw: Any
) -> None:
    broker = BrokerProcess(data_dir, *args).start()
    try:
        ours = answers(broker.bootstrap, requests, **kw)
    finally:
        broker.stop()
    found = {label: differences(ours[label], theirs[label]) for label in theirs}
    report = "\n".join(f"{label}: {where}" for label, where in found.items() if where)
    assert not report, report
