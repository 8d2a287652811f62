"""Every API a client with no ACL sends gets Kafka's authorization error in Kafka's place, and the connection
stays open: one request per API against a broker with an authorizer and no ACL for User:ANONYMOUS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.process import BrokerProcess, RawClient

T = ErrorCode.TOPIC_AUTHORIZATION_FAILED
G = ErrorCode.GROUP_AUTHORIZATION_FAILED
C = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
X = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
ZERO_ID = b"\x00" * 16


def top(r: dict[str, Any]) -> list[int]:
    return [r["error_code"]]


def partitions(
    key: str = "partitions", topics: str = "topics", code: str = "error_code"
) -> Callable[[dict[str, Any]], list[int]]:
    return lambda r: [p[code] for t in r[topics] for p in t[key]]


# api, version, request body, the error codes to look at, what they must be
CASES: list[tuple[ApiKey, int, dict[str, Any], Callable[[dict[str, Any]], list[int]], ErrorCode]] = [
    (
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
        partitions(),
        T,
    ),
    (
        ApiKey.METADATA,
        12,
        {"topics": [{"name": "t"}], "allow_auto_topic_creation": False},
        lambda r: [t["error_code"] for t in r["topics"]],
        T,
    ),
    (
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
        },
        partitions(),
        G,
    ),
    (ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None}, top, G),
    (
        ApiKey.OFFSET_FETCH,
        8,
        {"groups": [{"group_id": "g", "topics": None}]},
        lambda r: [g["error_code"] for g in r["groups"]],
        G,
    ),
    (
        ApiKey.FIND_COORDINATOR,
        4,
        {"key_type": 0, "coordinator_keys": ["g"]},
        lambda r: [c["error_code"] for c in r["coordinators"]],
        G,
    ),
    (ApiKey.FIND_COORDINATOR, 3, {"key_type": 1, "key": "tx"}, top, X),
    (ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"}, top, G),
    (ApiKey.LEAVE_GROUP, 5, {"group_id": "g", "members": [{"member_id": "m"}]}, top, G),
    (
        ApiKey.SYNC_GROUP,
        5,
        {
            "group_id": "g",
            "generation_id": 1,
            "member_id": "m",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
        top,
        G,
    ),
    (
        ApiKey.DESCRIBE_GROUPS,
        5,
        {"groups": ["g"], "include_authorized_operations": True},
        lambda r: [g["error_code"] for g in r["groups"]],
        G,
    ),
    (ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]}, lambda r: [g["error_code"] for g in r["results"]], G),
    (
        ApiKey.CREATE_TOPICS,
        7,
        {"topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 1000},
        lambda r: [t["error_code"] for t in r["topics"]],
        T,
    ),
    (
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": "t", "topic_id": ZERO_ID}], "timeout_ms": 1000},
        lambda r: [t["error_code"] for t in r["responses"]],
        T,
    ),
    (
        ApiKey.DELETE_RECORDS,
        2,
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 0}]}], "timeout_ms": 1000},
        partitions(),
        T,
    ),
    (ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": "tx", "transaction_timeout_ms": 1000}, top, X),
    (ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1000}, top, C),
    (
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        {
            "replica_id": -1,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}],
        },
        partitions(),
        T,
    ),
    (
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        {
            "v3_and_below_transactional_id": "tx",
            "v3_and_below_producer_id": 1,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
        },
        partitions("results_by_partition", "results_by_topic_v3_and_below", "partition_error_code"),
        X,
    ),
    (
        ApiKey.ADD_OFFSETS_TO_TXN,
        3,
        {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "group_id": "g"},
        top,
        X,
    ),
    (ApiKey.END_TXN, 3, {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "committed": True}, top, X),
    (
        ApiKey.WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": 1,
                    "producer_epoch": 0,
                    "transaction_result": True,
                    "topics": [{"name": "t", "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
        lambda r: [p["error_code"] for m in r["markers"] for t in m["topics"] for p in t["partitions"]],
        C,
    ),
    (
        ApiKey.TXN_OFFSET_COMMIT,
        3,
        {
            "transactional_id": "tx",
            "group_id": "g",
            "producer_id": 1,
            "producer_epoch": 0,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
        },
        partitions(),
        X,
    ),
    (
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}]},
        lambda r: [x["error_code"] for x in r["results"]],
        T,
    ),
    (
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
        lambda r: [x["error_code"] for x in r["results"]],
        C,
    ),
    (
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": "g",
                    "configs": [{"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}],
                }
            ],
            "validate_only": False,
        },
        lambda r: [x["error_code"] for x in r["responses"]],
        G,
    ),
    (
        ApiKey.ALTER_CONFIGS,
        2,
        {"resources": [{"resource_type": 2, "resource_name": "t", "configs": []}], "validate_only": False},
        lambda r: [x["error_code"] for x in r["responses"]],
        T,
    ),
    (ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None}, top, C),
    (
        ApiKey.CREATE_PARTITIONS,
        3,
        {"topics": [{"name": "t", "count": 2, "assignments": None}], "timeout_ms": 1000, "validate_only": False},
        lambda r: [x["error_code"] for x in r["results"]],
        T,
    ),
    (ApiKey.OFFSET_DELETE, 0, {"group_id": "g", "topics": []}, top, G),
    (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None}, top, C),
    (ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "t", "partition_indexes": [0]}]}, partitions(), T),
    (
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        {"transactional_ids": ["tx"]},
        lambda r: [s["error_code"] for s in r["transaction_states"]],
        X,
    ),
    (ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []}, top, C),
    (
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {"topics": [{"name": "t"}], "response_partition_limit": 100, "cursor": None},
        lambda r: [t["error_code"] for t in r["topics"]],
        T,
    ),
    (
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        {"group_id": "sg", "member_id": "m", "member_epoch": 0, "subscribed_topic_names": ["t"]},
        top,
        G,
    ),
    (
        ApiKey.SHARE_GROUP_DESCRIBE,
        1,
        {"group_ids": ["sg"], "include_authorized_operations": True},
        lambda r: [g["error_code"] for g in r["groups"]],
        G,
    ),
    (ApiKey.SHARE_FETCH, 1, {"group_id": "sg", "member_id": "m", "share_session_epoch": 0, "topics": []}, top, G),
    (ApiKey.SHARE_ACKNOWLEDGE, 1, {"group_id": "sg", "member_id": "m", "share_session_epoch": 1, "topics": []}, top, G),
    (
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        1,
        {"groups": [{"group_id": "sg", "topics": None}]},
        lambda r: [g["error_code"] for g in r["groups"]],
        G,
    ),
    (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "sg", "topics": []}, top, G),
    (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "sg", "topics": []}, top, G),
]

STANDARD = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def test_every_api_denied_with_kafkas_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    setup = BrokerProcess(data).start()  # no authorizer yet: make the topic the requests name
    with RawClient(setup.bootstrap) as raw:
        body = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 1000}
        assert raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == 0
    setup.stop()
    broker = BrokerProcess(data, "--config", STANDARD).start()
    try:
        failures = []
        with RawClient(broker.bootstrap) as raw:
            for api, version, body, codes, expected in CASES:
                try:
                    got = codes(raw.call(api, version, body))
                except (KeyError, OSError) as error:
                    raise AssertionError(f"{api.name} v{version}: {error!r}") from error
                if not got or any(code != expected for code in got):
                    failures.append(f"{api.name} v{version}: {got}, expected {expected.name}")
        assert not failures, failures
        assert "handler_failed" not in broker.log_text()
    finally:
        broker.stop()
