"""Metadata, ApiVersions and DescribeCluster at the edge (auto-creation of good and bad names, topic ids that name
nothing, names and ids together, every topic, a version the broker does not know), answered by a fresh kbroker
and a fresh Apache Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py)."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.side_by_side import ZERO_UUID, Request, Step
from tests.process import RawClient

pytestmark = pytest.mark.timeout(300)

TOPIC = "atlas"


def _prepare(raw: RawClient) -> None:
    body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30000, "validate_only": False}  # fmt: skip
    assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    side_by_side.wait_for_leaders(raw, TOPIC, 2)


def _metadata(*topics: tuple[str | None, bytes], auto_create: bool = False, version: int = 12) -> Any:
    wanted = [{"name": name, "topic_id": tid} for name, tid in topics]
    return lambda node: {"topics": wanted, "allow_auto_topic_creation": auto_create,
                         "include_topic_authorized_operations": True}  # fmt: skip


def _all_topics(node: int) -> dict[str, Any]:
    return {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


REQUESTS: list[Request | Step] = [
    _prepare,
    ("metadata of a topic", ApiKey.METADATA, 12, _metadata((TOPIC, ZERO_UUID))),
    ("metadata of unknown topics", ApiKey.METADATA, 12, _metadata(("nothing", ZERO_UUID), ("bad/name", ZERO_UUID))),
    ("metadata of a topic id that names nothing", ApiKey.METADATA, 12, _metadata((None, bytes(range(1, 17))))),
    # Not compared: a topic with neither name nor id, which kbroker answers UNKNOWN_TOPIC_ID and Apache Kafka
    # 4.3.1 with UNKNOWN_SERVER_ERROR (-1) and no controller.
    ("auto-creation of bad names", ApiKey.METADATA, 12, _metadata(("bad/name", ZERO_UUID), ("x" * 250, ZERO_UUID),
                                                                  auto_create=True)),
    ("auto-creation of an internal name", ApiKey.METADATA, 12, _metadata(("__consumer_offsets", ZERO_UUID),
                                                                         auto_create=True)),
    ("every topic", ApiKey.METADATA, 12, _all_topics),
    ("api versions from a newer client", ApiKey.API_VERSIONS, 3, lambda node: {
        "client_software_name": "kbroker-test", "client_software_version": "1.0"}),
    ("describe cluster", ApiKey.DESCRIBE_CLUSTER, 1, lambda node: {
        "include_cluster_authorized_operations": True, "endpoint_type": 1}),
    ("describe cluster controllers", ApiKey.DESCRIBE_CLUSTER, 1, lambda node: {
        "include_cluster_authorized_operations": False, "endpoint_type": 2}),
    ("describe cluster a bad endpoint type", ApiKey.DESCRIBE_CLUSTER, 1, lambda node: {
        "include_cluster_authorized_operations": False, "endpoint_type": 7}),
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """Topics compared by name; every topic's list (Kafka may hold internal topics kbroker has not made yet) by
    the topics both must have; ApiVersions by its error and the APIs both serve with their versions."""
    if isinstance(answer.get("topics"), list):
        answer["topics"].sort(key=lambda topic: str(topic.get("name")))
        for topic in answer["topics"]:
            topic.get("partitions", []).sort(key=lambda p: p["partition_index"])
    if label == "every topic":
        answer["topics"] = [t for t in answer["topics"] if not str(t["name"]).startswith("__")]
    if label.startswith("api versions"):
        answer = {"error_code": answer["error_code"], "finalized_features_epoch": "<epoch>"}
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
