"""Topic and config admin requests that Kafka refuses (bad names, counts, configs, unknown topics), sent to a
fresh kbroker and a fresh Apache Kafka 4.3.1 in the same order over the raw protocol, and their answers
compared field for field.

Normalised before the comparison: a non-zero topic id is `<id>`, the broker's node id `<node>`, an error
message is `<message>` (each broker words its messages itself; whether there is one is compared), kbroker's
own topic configs (`kbroker.*`) are left out, two documented default differences are masked (DOCUMENTED),
and ListOffsets' topics are sorted by name.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.process import BrokerProcess, RawClient

pytestmark = pytest.mark.timeout(300)

ZERO_UUID = b"\0" * 16
TOPIC, BROKER = 2, 4  # config resource types
SET, DELETE, APPEND = 0, 1, 2  # IncrementalAlterConfigs operations

Request = tuple[str, ApiKey, int, Callable[[int], dict[str, Any]]]  # label, API, version, body(node id)


def _create(*topics: dict[str, Any], validate_only: bool = False) -> Callable[[int], dict[str, Any]]:
    full = [{"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [], **t} for t in topics]
    return lambda node: {"topics": full, "timeout_ms": 30000, "validate_only": validate_only}


def _configs(**values: str) -> list[dict[str, Any]]:
    return [{"name": k.replace("_", "."), "value": v} for k, v in values.items()]


def _partitions(name: str, count: int, assignments: list[list[int]] | None = None, validate_only: bool = False) -> Any:
    topic = {"name": name, "count": count, "assignments": [{"broker_ids": b} for b in assignments or []] or None}
    return lambda node: {"topics": [topic], "timeout_ms": 30000, "validate_only": validate_only}


def _alter(resource_type: int, name: str | None, *configs: tuple[str, int, str | None]) -> Any:
    def body(node: int) -> dict[str, Any]:
        entries = [{"name": n, "config_operation": op, "value": v} for n, op, v in configs]
        resource = {"resource_type": resource_type, "resource_name": str(node) if name is None else name}
        return {"resources": [{**resource, "configs": entries}], "validate_only": False}

    return body


def _describe(resource_type: int, name: str | None, keys: list[str] | None) -> Any:
    def body(node: int) -> dict[str, Any]:
        resource = {"resource_type": resource_type, "resource_name": str(node) if name is None else name}
        return {"resources": [{**resource, "configuration_keys": keys}], "include_synonyms": False,
                "include_documentation": False}  # fmt: skip

    return body


REQUESTS: list[Request] = [
    ("create", ApiKey.CREATE_TOPICS, 7, _create({"name": "orders", "num_partitions": 3})),
    ("create again", ApiKey.CREATE_TOPICS, 7, _create({"name": "orders", "num_partitions": 3})),
    ("create empty name", ApiKey.CREATE_TOPICS, 7, _create({"name": ""})),
    ("create bad chars", ApiKey.CREATE_TOPICS, 7, _create({"name": "bad/name"})),
    ("create dot", ApiKey.CREATE_TOPICS, 7, _create({"name": ".."})),
    ("create long name", ApiKey.CREATE_TOPICS, 7, _create({"name": "x" * 250})),
    ("create colliding", ApiKey.CREATE_TOPICS, 7, _create({"name": "or.ders"}, {"name": "or_ders"})),
    ("create 0 partitions", ApiKey.CREATE_TOPICS, 7, _create({"name": "p0", "num_partitions": 0})),
    ("create -5 partitions", ApiKey.CREATE_TOPICS, 7, _create({"name": "pm5", "num_partitions": -5})),
    ("create rf 2", ApiKey.CREATE_TOPICS, 7, _create({"name": "rf2", "replication_factor": 2})),
    ("create rf 0", ApiKey.CREATE_TOPICS, 7, _create({"name": "rf0", "replication_factor": 0})),
    ("create rf -1", ApiKey.CREATE_TOPICS, 7, _create({"name": "rfm1", "num_partitions": -1, "replication_factor": -1})),
    ("create bad value", ApiKey.CREATE_TOPICS, 7, _create({"name": "c1", "configs": _configs(retention_ms="abc")})),
    ("create unknown config", ApiKey.CREATE_TOPICS, 7, _create({"name": "c2", "configs": _configs(no_such="1")})),
    ("create null value", ApiKey.CREATE_TOPICS, 7, _create({"name": "c3", "configs": [{"name": "retention.ms",
                                                                                        "value": None}]})),
    ("create twice in one", ApiKey.CREATE_TOPICS, 7, _create({"name": "dup"}, {"name": "dup"})),
    ("create validate only", ApiKey.CREATE_TOPICS, 7, _create({"name": "v1", "num_partitions": 2}, validate_only=True)),
    ("create assigned to no broker", ApiKey.CREATE_TOPICS, 7, _create(
        {"name": "a1", "num_partitions": -1, "replication_factor": -1,
         "assignments": [{"partition_index": 0, "broker_ids": [77]}]})),
    ("create assignment and count", ApiKey.CREATE_TOPICS, 7, _create(
        {"name": "a2", "num_partitions": 2, "replication_factor": -1,
         "assignments": [{"partition_index": 0, "broker_ids": [77]}]})),
    ("partitions down", ApiKey.CREATE_PARTITIONS, 3, _partitions("orders", 2)),
    ("partitions same", ApiKey.CREATE_PARTITIONS, 3, _partitions("orders", 3)),
    ("partitions unknown topic", ApiKey.CREATE_PARTITIONS, 3, _partitions("nothing", 4)),
    ("partitions validate only", ApiKey.CREATE_PARTITIONS, 3, _partitions("orders", 5, validate_only=True)),
    ("partitions bad assignment", ApiKey.CREATE_PARTITIONS, 3, _partitions("orders", 5, [[77], [77]])),
    ("partitions short assignment", ApiKey.CREATE_PARTITIONS, 3, _partitions("orders", 5, [[77]])),
    ("describe unknown topic", ApiKey.DESCRIBE_CONFIGS, 4, _describe(TOPIC, "nothing", None)),
    ("describe unknown key", ApiKey.DESCRIBE_CONFIGS, 4, _describe(TOPIC, "orders", ["no.such.config"])),
    ("describe other broker", ApiKey.DESCRIBE_CONFIGS, 4, _describe(BROKER, "77", ["log.retention.ms"])),
    ("describe bad broker id", ApiKey.DESCRIBE_CONFIGS, 4, _describe(BROKER, "one", ["log.retention.ms"])),
    ("alter bad value", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "orders", ("retention.ms", SET, "abc"))),
    ("alter unknown name", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "orders", ("no.such", SET, "1"))),
    ("alter unknown topic", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "nothing", ("retention.ms", SET, "1"))),
    ("alter append scalar", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "orders", ("retention.ms", APPEND,
                                                                                           "1"))),
    ("alter delete unset", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "orders", ("retention.ms", DELETE,
                                                                                          None))),
    ("alter set twice", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(TOPIC, "orders", ("retention.ms", SET, "1"),
                                                                     ("retention.ms", SET, "2"))),
    ("alter broker unknown", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(BROKER, None, ("no.such", SET, "1"))),
    ("alter broker read-only", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, _alter(BROKER, None, ("log.dirs", SET, "/x"))),
    ("list offsets no partition", ApiKey.LIST_OFFSETS, 8, lambda node: {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": "orders", "partitions": [{"partition_index": 9, "timestamp": -1}]},
                   {"name": "nothing", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
    ("metadata bad name", ApiKey.METADATA, 12, lambda node: {
        "topics": [{"topic_id": ZERO_UUID, "name": "bad/name"}, {"topic_id": ZERO_UUID, "name": "nothing"}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
    ("delete unknown", ApiKey.DELETE_TOPICS, 6, lambda node: {
        "topics": [{"name": "nothing", "topic_id": ZERO_UUID}], "timeout_ms": 30000}),
    ("delete unknown id", ApiKey.DELETE_TOPICS, 6, lambda node: {
        "topics": [{"name": None, "topic_id": uuid.uuid4().bytes}], "timeout_ms": 30000}),
    ("delete", ApiKey.DELETE_TOPICS, 6, lambda node: {
        "topics": [{"name": "orders", "topic_id": ZERO_UUID}], "timeout_ms": 30000}),
]  # fmt: skip


def _normalised(value: Any, node: int) -> Any:
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key == "error_message" or key == "message":
                result[key] = "<message>" if item else item
            elif key == "topic_id" and item != ZERO_UUID:
                result[key] = "<id>"
            elif key in ("node_id", "leader_id", "controller_id") and item == node:
                result[key] = "<node>"
            elif key == "resource_name" and item == str(node):
                result[key] = "<node>"
            elif key in ("brokers", "cluster_id", "throttle_time_ms"):
                continue  # the nodes' addresses and ids are each broker's own
            elif key == "configs" and isinstance(item, list):  # kbroker's own topic configs are its extension
                result[key] = [_config(c, node) for c in item if not str(c.get("name")).startswith("kbroker.")]
            else:
                result[key] = _normalised(item, node)
        return result
    if isinstance(value, list):
        return [_normalised(item, node) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


# Differences docs/compatibility.md explains: kbroker keeps data two weeks by default (Kafka one); Kafka 4.3
# writes min.insync.replicas as a cluster-wide dynamic default when it enables eligible leader replicas.
DOCUMENTED = {"retention.ms": "value", "min.insync.replicas": "config_source"}


def _config(entry: dict[str, Any], node: int) -> dict[str, Any]:
    normalised = _normalised(entry, node)
    if entry.get("name") in DOCUMENTED:
        normalised[DOCUMENTED[entry["name"]]] = "<documented>"
    return dict(normalised)


def _answers(bootstrap: str) -> dict[str, Any]:
    with RawClient(bootstrap) as raw:
        node = raw.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})["brokers"][0]["node_id"]  # fmt: skip
        answers = {}
        for label, api, version, body in REQUESTS:
            answers[label] = _normalised(raw.call(api, version, body(node)), node)
            if api is ApiKey.LIST_OFFSETS:  # Kafka answers unknown topics first: clients match topics by name
                answers[label]["topics"].sort(key=lambda topic: topic["name"])
            if label == "create":
                _wait_for_leaders(raw, "orders", 3)
        return answers


def _wait_for_leaders(raw: RawClient, topic: str, partitions: int) -> None:
    """Until each partition answers ListOffsets: Kafka leads a new topic's partitions a moment after creating it."""
    deadline = time.monotonic() + 30
    while True:
        body = {"replica_id": -1, "isolation_level": 0,
                "topics": [{"name": topic, "partitions": [{"partition_index": p, "timestamp": -1}
                                                          for p in range(partitions)]}]}  # fmt: skip
        answer = raw.call(ApiKey.LIST_OFFSETS, 8, body)
        if all(p["error_code"] == 0 for t in answer["topics"] for p in t["partitions"]):
            return
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)


@pytest.fixture(scope="module")
def kafka_answers() -> Iterator[dict[str, Any]]:
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef() as kafka:
        yield _answers(kafka.bootstrap)


def test_answers_are_kafkas(kafka_answers: dict[str, Any], tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path).start()
    try:
        ours = _answers(broker.bootstrap)
    finally:
        broker.stop()
    differences = {label: _differences(ours[label], kafka_answers[label]) for label, _, _, _ in REQUESTS}
    report = "\n".join(f"{label}: {found}" for label, found in differences.items() if found)
    assert not report, report


def _differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two answers differ, as `path: kbroker's value != Kafka's`."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in ours.keys() | theirs.keys():
            found += _differences(ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{path}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            where = a.get("name", i) if isinstance(a, dict) else i  # a config or topic by its name
            found += _differences(a, b, f"{path}[{where}]")
        return found
    return [] if ours == theirs else [f"{path or '.'}: {ours!r} != {theirs!r}"]
