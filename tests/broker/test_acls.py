"""CreateAcls, DescribeAcls and DeleteAcls over the wire, their durability, and enforcement switched on
by authorizer.class.name (tests/broker/test_acls_vs_kafka.py compares all of it with Apache Kafka)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess, RawClient

STANDARD = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, CLUSTER, ANY = 2, 3, 4, 1
LITERAL, PREFIXED, MATCH, ANY_PATTERN = 3, 4, 2, 1
READ, WRITE, ALL, ANY_OP, DESCRIBE = 3, 4, 2, 1, 8
ALLOW, DENY, ANY_PERMISSION = 3, 2, 1


def creation(name: str, operation: int, principal: str = "User:alice", **fields: Any) -> dict[str, Any]:
    return {
        "resource_type": TOPIC,
        "resource_name": name,
        "resource_pattern_type": LITERAL,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": ALLOW,
    } | fields


def acl_filter(**fields: Any) -> dict[str, Any]:
    return {
        "resource_type_filter": ANY,
        "resource_name_filter": None,
        "pattern_type_filter": ANY_PATTERN,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY_OP,
        "permission_type": ANY_PERMISSION,
    } | fields


def describe(raw: RawClient, **fields: Any) -> list[tuple[Any, ...]]:
    response = raw.call(ApiKey.DESCRIBE_ACLS, 3, acl_filter(**fields))
    assert response["error_code"] == 0, response
    return sorted(
        (
            r["resource_type"],
            r["resource_name"],
            r["pattern_type"],
            a["principal"],
            a["operation"],
            a["permission_type"],
        )
        for r in response["resources"]
        for a in r["acls"]
    )


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as raw:
        created = raw.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation("t", READ), creation("u", READ)]})
        assert [r["error_code"] for r in created["results"]] == [ErrorCode.SECURITY_DISABLED] * 2
        described = raw.call(ApiKey.DESCRIBE_ACLS, 1, acl_filter())
        assert described["error_code"] == ErrorCode.SECURITY_DISABLED
        deleted = raw.call(ApiKey.DELETE_ACLS, 2, {"filters": [acl_filter()]})
        assert [r["error_code"] for r in deleted["filter_results"]] == [ErrorCode.SECURITY_DISABLED]


def test_acls_are_checked_created_described_deleted_and_survive_kill_9(
    start_broker: Callable[..., BrokerProcess],
) -> None:
    broker = start_broker("--config", STANDARD, "--config", "super.users=User:ANONYMOUS")
    with RawClient(broker.bootstrap) as raw:
        creations = [
            creation("orders", READ),
            creation("pay-", WRITE, "User:bob", resource_pattern_type=PREFIXED),
            creation("orders", ALL, "User:bob", permission_type=DENY, host="10.0.0.9"),
            creation("g", READ, resource_type=GROUP),
            creation("x", READ, resource_type=CLUSTER),  # only kafka-cluster names the cluster
            creation("", READ),
            creation("t", ANY_OP),
            creation("t", READ, resource_pattern_type=MATCH),
            creation("t", READ, "alice"),
            creation("orders", READ),  # a repeat succeeds and changes nothing
        ]
        results = raw.call(ApiKey.CREATE_ACLS, 2, {"creations": creations})["results"]
        assert [(r["error_code"], r["error_message"]) for r in results] == [
            (0, None),
            (0, None),
            (0, None),
            (0, None),
            (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
            (ErrorCode.INVALID_REQUEST, "Invalid operation ANY"),
            (ErrorCode.INVALID_REQUEST, "Invalid patternType MATCH"),
            (
                ErrorCode.INVALID_REQUEST,
                "Could not parse principal from `alice` (no colon is present separating the principal type "
                "from the principal name)",
            ),
            (0, None),
        ]
        everything = describe(raw)
        assert len(everything) == 4
        assert describe(raw, resource_type_filter=GROUP) == [(GROUP, "g", LITERAL, "User:alice", READ, ALLOW)]
        # MATCH: what applies to the topic pay-eu (the prefixed ACL), and to orders (two literal ACLs)
        assert [a[1] for a in describe(raw, resource_name_filter="pay-eu", pattern_type_filter=MATCH)] == ["pay-"]
        assert len(describe(raw, resource_name_filter="orders", pattern_type_filter=MATCH)) == 2
        assert describe(raw, principal_filter="User:bob", permission_type=DENY) == [
            (TOPIC, "orders", LITERAL, "User:bob", ALL, DENY)
        ]
        unknown = raw.call(ApiKey.DESCRIBE_ACLS, 3, acl_filter(operation=99))
        assert unknown["error_code"] == ErrorCode.INVALID_REQUEST
        deleted = raw.call(
            ApiKey.DELETE_ACLS,
            3,
            {"filters": [acl_filter(principal_filter="User:bob"), acl_filter(resource_name_filter="orders")]},
        )["filter_results"]
        # both filters match against the ACLs as they were: bob's DENY on orders is listed by both
        assert [len(r["matching_acls"]) for r in deleted] == [2, 2]
        assert describe(raw) == [(GROUP, "g", LITERAL, "User:alice", READ, ALLOW)]
        raw.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation("kept", WRITE)]})
    remaining = [(TOPIC, "kept", LITERAL, "User:alice", WRITE, ALLOW), (GROUP, "g", LITERAL, "User:alice", READ, ALLOW)]
    broker.kill()
    broker.start()
    with RawClient(broker.bootstrap) as raw:
        assert describe(raw) == remaining


def test_enforcement_and_allow_everyone_if_no_acl_found(start_broker: Callable[..., BrokerProcess]) -> None:
    denied = start_broker("--config", STANDARD)  # the PLAINTEXT client is User:ANONYMOUS, with no ACLs
    topic = unique_topic("acl")
    with RawClient(denied.bootstrap) as raw:
        created = raw.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation("t", READ)]})
        assert created["results"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert raw.call(ApiKey.DESCRIBE_ACLS, 3, acl_filter())["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        metadata = raw.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
        assert metadata["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        join = raw.call(
            ApiKey.JOIN_GROUP,
            5,
            {
                "group_id": "g",
                "session_timeout_ms": 10000,
                "rebalance_timeout_ms": 10000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}],
            },
        )
        assert join["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        init = raw.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1000,
                                                     "producer_id": -1, "producer_epoch": -1})  # fmt: skip
        assert init["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        scram = raw.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert scram["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        upsert = {"name": "u", "mechanism": 1, "iterations": 4096, "salt": b"s", "salted_password": b"p"}
        altered = raw.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [upsert]})
        assert [r["error_code"] for r in altered["results"]] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        log_dirs = raw.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert log_dirs["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        cluster = raw.call(
            ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}
        )
        assert cluster["cluster_authorized_operations"] == 0
    open_broker = start_broker("--config", STANDARD, "--config", "allow.everyone.if.no.acl.found=true")
    with RawClient(open_broker.bootstrap) as raw:
        metadata = raw.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
        assert metadata["topics"][0]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE  # auto-created: allowed
        created = raw.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation(topic, READ, "User:someone-else")]})
        assert created["results"][0]["error_code"] == 0  # the cluster has no ACL: allowed too
        # now the topic has an ACL (for someone else): ANONYMOUS may no longer describe it
        metadata = raw.call(ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        assert metadata["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        every = raw.call(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert topic not in [t["name"] for t in every["topics"]]


def test_create_topics_hides_configs_without_describe_configs(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker("--config", STANDARD, "--config", "allow.everyone.if.no.acl.found=true")
    topic = unique_topic("cfg")
    with RawClient(broker.bootstrap) as raw:
        # ANONYMOUS may CREATE the topic; with that ACL in place the topic has ACLs, so nothing else is allowed
        created = raw.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation(topic, 5, "User:ANONYMOUS")]})
        assert created["results"][0]["error_code"] == 0
        body = {
            "topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        result = raw.call(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]
        assert (result["error_code"], result["num_partitions"]) == (0, 2)
        assert (result["configs"], result["topic_config_error_code"]) == ([], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        again = raw.call(ApiKey.CREATE_TOPICS, 7, body | {"topics": [body["topics"][0] | {"name": topic + "-other"}]})
        assert again["topics"][0]["error_code"] == 0  # no ACL on that name: allow.everyone.if.no.acl.found
        assert again["topics"][0]["configs"]
