"""ACL, SCRAM and quota admin requests at the edge, on a broker without an authorizer (ACL requests refused,
unknown and malformed SCRAM users and mechanisms, bad quota keys, values and filters), answered by a fresh
kbroker and a fresh Apache Kafka 4.3.1 and compared field for field (tests/broker/side_by_side.py)."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.side_by_side import Request, Step

pytestmark = pytest.mark.timeout(300)

TOPIC_RESOURCE, LITERAL, READ, ALLOW = 2, 3, 3, 3  # ACL enums (Kafka's ids)
SCRAM_256, SCRAM_512 = 1, 2


def _acl_filter() -> dict[str, Any]:
    return {"resource_type_filter": TOPIC_RESOURCE, "resource_name_filter": None, "pattern_type_filter": LITERAL,
            "principal_filter": None, "host_filter": None, "operation": READ, "permission_type": ALLOW}  # fmt: skip


def _upsert(name: str, mechanism: int, iterations: int, salt: bytes = b"salt", password: bytes = b"x" * 32) -> Any:
    entry = {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": password}
    return lambda node: {"deletions": [], "upsertions": [entry]}


def _quota(entity: list[tuple[str, str | None]], *ops: tuple[str, float, bool], validate_only: bool = False) -> Any:
    body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                         "ops": [{"key": k, "value": v, "remove": r} for k, v, r in ops]}],
            "validate_only": validate_only}  # fmt: skip
    return lambda node: body


def _describe_quotas(*components: tuple[str, int, str | None], strict: bool = False) -> Any:
    wanted = [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components]
    return lambda node: {"components": wanted, "strict": strict}


REQUESTS: list[Request | Step] = [
    ("describe acls without an authorizer", ApiKey.DESCRIBE_ACLS, 3, lambda node: _acl_filter()),
    ("create acls without an authorizer", ApiKey.CREATE_ACLS, 3, lambda node: {"creations": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": "t", "resource_pattern_type": LITERAL,
         "principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW}]}),
    ("delete acls without an authorizer", ApiKey.DELETE_ACLS, 3, lambda node: {"filters": [_acl_filter()]}),
    ("describe unknown scram users", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, lambda node: {
        "users": [{"name": "nobody"}, {"name": ""}]}),
    ("describe every scram user", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, lambda node: {"users": None}),
    ("upsert with few iterations", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, _upsert("alice", SCRAM_256, 10)),
    ("upsert with too many iterations", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, _upsert("alice", SCRAM_256, 20000)),
    ("upsert an unknown mechanism", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, _upsert("alice", 7, 4096)),
    ("upsert an empty name", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, _upsert("", SCRAM_256, 4096)),
    ("upsert", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, _upsert("alice", SCRAM_512, 4096)),
    # Kafka's broker describes SCRAM credentials and quotas from its metadata cache, a moment after the controller
    lambda raw: side_by_side.until(raw, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "alice"}]},
                                   lambda a: a["results"][0]["error_code"] == 0),
    ("describe a scram user", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, lambda node: {"users": [{"name": "alice"}]}),
    ("delete a credential that does not exist", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda node: {
        "deletions": [{"name": "alice", "mechanism": SCRAM_256}], "upsertions": []}),
    ("upsert and delete one user", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda node: {
        "deletions": [{"name": "bob", "mechanism": SCRAM_256}],
        "upsertions": [{"name": "bob", "mechanism": SCRAM_256, "iterations": 4096, "salt": b"s",
                        "salted_password": b"p" * 32}]}),
    ("quota with an unknown key", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "alice")], ("no.such", 1.0, False))),
    ("quota with a negative value", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "alice")],
                                                                          ("producer_byte_rate", -5.0, False))),
    ("quota with a fractional rate", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("client-id", "c")],
                                                                           ("producer_byte_rate", 1.5, False))),
    ("quota of an unknown entity type", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("group", "g")],
                                                                              ("producer_byte_rate", 1.0, False))),
    ("quota of an entity twice", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "a"), ("user", "b")],
                                                                       ("producer_byte_rate", 1.0, False))),
    ("quota validated only", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "alice")],
                                                                   ("producer_byte_rate", 1024.0, False),
                                                                   validate_only=True)),
    ("quota", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "alice"), ("client-id", None)],
                                                    ("consumer_byte_rate", 2048.0, False))),
    lambda raw: side_by_side.until(raw, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("user", 0, "alice"))(0),
                                   lambda a: bool(a["entries"])),
    ("remove a quota never set", ApiKey.ALTER_CLIENT_QUOTAS, 1, _quota([("user", "carol")],
                                                                       ("producer_byte_rate", 0.0, True))),
    ("describe quotas", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("user", 0, "alice"))),
    ("describe quotas strictly", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("user", 0, "alice"),
                                                                                    strict=True)),
    ("describe quotas of an unknown type", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("group", 1, None))),
    ("describe quotas with a bad match", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("user", 7, None))),
    ("describe quotas twice one type", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, _describe_quotas(("user", 1, None),
                                                                                          ("user", 2, None))),
    ("sasl handshake on a plaintext listener", ApiKey.SASL_HANDSHAKE, 1, lambda node: {"mechanism": "PLAIN"}),
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """Quota entities' components, DescribeClientQuotas' entries and SCRAM users compared in order (Kafka lists
    them in hash order)."""
    for entry in answer.get("entries") or []:
        entry["entity"].sort(key=lambda component: component["entity_type"])
    if isinstance(answer.get("entries"), list):
        answer["entries"].sort(key=repr)
    if isinstance(answer.get("results"), list):
        answer["results"].sort(key=lambda result: str(result.get("user")))
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
