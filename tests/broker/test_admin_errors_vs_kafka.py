"""Topic and config admin requests at the edge (bad names, counts, configs, unknown topics), answered by a fresh
kbroker and a fresh Apache Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.side_by_side import ZERO_UUID, Request, Step

pytestmark = pytest.mark.timeout(300)

TOPIC, BROKER = 2, 4  # config resource types
SET, DELETE, APPEND = 0, 1, 2  # IncrementalAlterConfigs operations


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


REQUESTS: list[Request | Step] = [
    ("create", ApiKey.CREATE_TOPICS, 7, _create({"name": "orders", "num_partitions": 3})),
    lambda raw: side_by_side.wait_for_leaders(raw, "orders", 3),
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


# Differences docs/compatibility.md explains: kbroker keeps data two weeks by default (Kafka one); Kafka 4.3
# writes min.insync.replicas as a cluster-wide dynamic default when it enables eligible leader replicas.
DOCUMENTED = {"retention.ms": "value", "min.insync.replicas": "config_source"}


def _adjust(label: str, answer: Any) -> Any:
    """kbroker's own topic configs (`kbroker.*`) left out, the DOCUMENTED fields masked, ListOffsets' topics
    sorted (Kafka answers unknown topics first; clients match topics by name)."""
    for topic in answer.get("topics", []):
        if "configs" in topic:
            topic["configs"] = [c for c in topic["configs"] if not c["name"].startswith("kbroker.")]
            for config in topic["configs"]:
                if config["name"] in DOCUMENTED:
                    config[DOCUMENTED[config["name"]]] = "<documented>"
    if label.startswith("list offsets"):
        answer["topics"].sort(key=lambda topic: topic["name"])
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
