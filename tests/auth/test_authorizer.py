"""The authorizer's rules, case by case as Kafka's StandardAuthorizer decides them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbroker.auth import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AclStore,
    Authorizer,
    PatternType,
    ResourceType,
    parse_super_users,
)
from kbroker.auth.acl import creation_error, operations_bitfield

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    principal: str = ALICE,
    *,
    resource_type: ResourceType = TOPIC,
    pattern: PatternType = LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls: AclBinding, super_users: str = "", allow_if_no_acl: bool = False) -> Authorizer:
    store = AclStore()
    store.add(acls)
    return Authorizer(store, parse_super_users(super_users), allow_if_no_acl)


def allowed(auth: Authorizer, operation: AclOperation, name: str, principal: str = ALICE, host: str = HOST) -> bool:
    return auth.authorize(principal, host, operation, TOPIC, name)


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(authorizer(), Op.READ, "t")
    assert allowed(authorizer(allow_if_no_acl=True), Op.READ, "t")


def test_allow_everyone_applies_only_to_resources_without_any_acl() -> None:
    # an ACL for bob on "t" means "t" has ACLs: alice is denied even with allow.everyone.if.no.acl.found
    auth = authorizer(acl("t", Op.READ, principal=BOB), allow_if_no_acl=True)
    assert not allowed(auth, Op.READ, "t")
    assert allowed(auth, Op.READ, "other")
    # a prefixed or wildcard ACL counts as an ACL on the resource too
    auth = authorizer(acl("t", Op.READ, principal=BOB, pattern=PREFIXED), allow_if_no_acl=True)
    assert not allowed(auth, Op.WRITE, "topic")
    auth = authorizer(acl("*", Op.READ, principal=BOB), allow_if_no_acl=True)
    assert not allowed(auth, Op.READ, "anything")


def test_super_users_may_do_anything_even_against_deny() -> None:
    auth = authorizer(acl("t", Op.ALL, DENY, "User:admin"), super_users=" User:admin ; User:CN=broker,O=x ;")
    assert allowed(auth, Op.DELETE, "t", "User:admin")
    assert allowed(auth, Op.READ, "t", "User:CN=broker,O=x")
    assert not allowed(auth, Op.READ, "t", BOB)
    with pytest.raises(ValueError):
        parse_super_users("admin")


def test_deny_wins_over_allow() -> None:
    auth = authorizer(acl("t", Op.READ), acl("t", Op.READ, DENY))
    assert not allowed(auth, Op.READ, "t")
    auth = authorizer(acl("*", Op.ALL), acl("t", Op.WRITE, DENY, pattern=PREFIXED))
    assert not allowed(auth, Op.WRITE, "topic")
    assert allowed(auth, Op.READ, "topic")
    assert allowed(auth, Op.WRITE, "other")
    # a wildcard principal's DENY applies to alice too
    auth = authorizer(acl("t", Op.READ), acl("t", Op.READ, DENY, "User:*"))
    assert not allowed(auth, Op.READ, "t")


def test_implied_operations_come_from_allow_acls_only() -> None:
    for operation in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert allowed(authorizer(acl("t", operation)), Op.DESCRIBE, "t"), operation
    for operation in (Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        assert not allowed(authorizer(acl("t", operation)), Op.DESCRIBE, "t"), operation
    assert allowed(authorizer(acl("t", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Op.DESCRIBE_CONFIGS)), Op.ALTER_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Op.READ)), Op.WRITE, "t")
    # DENY READ does not deny DESCRIBE: describe is allowed by the ALLOW WRITE
    auth = authorizer(acl("t", Op.WRITE), acl("t", Op.READ, DENY))
    assert allowed(auth, Op.DESCRIBE, "t")
    assert not allowed(auth, Op.READ, "t")
    # DENY DESCRIBE denies describe even when READ is allowed
    assert not allowed(authorizer(acl("t", Op.READ), acl("t", Op.DESCRIBE, DENY)), Op.DESCRIBE, "t")
    # ALL allows and denies everything
    assert allowed(authorizer(acl("t", Op.ALL)), Op.ALTER_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Op.ALL), acl("t", Op.ALL, DENY)), Op.DESCRIBE, "t")


def test_resource_patterns() -> None:
    auth = authorizer(acl("orders", Op.READ), acl("pay-", Op.WRITE, pattern=PREFIXED), acl("*", Op.DESCRIBE))
    assert allowed(auth, Op.READ, "orders")
    assert not allowed(auth, Op.READ, "orders2")  # a literal name is not a prefix
    assert not allowed(auth, Op.READ, "order")
    assert allowed(auth, Op.WRITE, "pay-eu")
    assert allowed(auth, Op.WRITE, "pay-")
    assert not allowed(auth, Op.WRITE, "pay")
    assert allowed(auth, Op.DESCRIBE, "anything")
    # a PREFIXED "*" is a prefix of names starting with "*" only
    auth = authorizer(acl("*", Op.READ, pattern=PREFIXED))
    assert not allowed(auth, Op.READ, "t")
    assert allowed(auth, Op.READ, "*t")
    # resource types are separate
    assert not authorizer(acl("t", Op.READ)).authorize(ALICE, HOST, Op.READ, GROUP, "t")


def test_principals_and_hosts() -> None:
    auth = authorizer(acl("t", Op.READ, principal="User:*"), acl("t", Op.WRITE, host="10.0.0.2"))
    assert allowed(auth, Op.READ, "t", BOB)
    assert allowed(auth, Op.READ, "t", "User:ANONYMOUS")
    assert not allowed(auth, Op.WRITE, "t", host=HOST)
    assert allowed(auth, Op.WRITE, "t", host="10.0.0.2")
    assert not allowed(auth, Op.WRITE, "t", BOB, host="10.0.0.2")
    # principals compare exactly (type and name)
    assert not allowed(authorizer(acl("t", Op.READ, principal="User:Alice")), Op.READ, "t")


def test_authorized_operations_bitfield() -> None:
    auth = authorizer(acl("t", Op.READ), acl("t", Op.ALTER_CONFIGS))
    expected = operations_bitfield([Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS])
    assert auth.authorized_operations(ALICE, HOST, TOPIC, "t") == expected
    everything = authorizer(super_users="User:alice").authorized_operations(ALICE, HOST, CLUSTER, "kafka-cluster")
    assert everything == sum(1 << c for c in (5, 7, 8, 9, 10, 11, 12))


def by_type(*acls: AclBinding, allow_if_no_acl: bool = False, principal: str = ALICE) -> bool:
    return authorizer(*acls, allow_if_no_acl=allow_if_no_acl).authorize_by_resource_type(
        principal, HOST, Op.WRITE, TOPIC
    )


def test_authorize_by_resource_type() -> None:
    # the cases of Kafka's AuthorizerTest.testAuthorizeByResourceType*
    assert not by_type()
    assert by_type(allow_if_no_acl=True)
    assert by_type(acl("t", Op.WRITE))
    assert by_type(acl("t", Op.ALL))
    assert not by_type(acl("t", Op.READ))
    assert not by_type(acl("t", Op.WRITE, principal=BOB))
    assert by_type(acl("t", Op.WRITE, principal="User:*"))
    assert not by_type(acl("t", Op.WRITE, host="10.9.9.9"))
    # a literal allow denied by the same literal, or by a prefix of it
    assert not by_type(acl("t", Op.WRITE), acl("t", Op.WRITE, DENY))
    assert not by_type(acl("topic", Op.WRITE), acl("top", Op.WRITE, DENY, pattern=PREFIXED))
    assert not by_type(acl("topic", Op.WRITE, pattern=PREFIXED), acl("to", Op.WRITE, DENY, pattern=PREFIXED))
    # a longer deny does not cover a shorter allowed prefix
    assert by_type(acl("top", Op.WRITE, pattern=PREFIXED), acl("topic", Op.WRITE, DENY, pattern=PREFIXED))
    # a literal deny does not cover a prefixed allow
    assert by_type(acl("t", Op.WRITE, pattern=PREFIXED), acl("t", Op.WRITE, DENY))
    # wildcards: a wildcard deny wins, a wildcard allow allows
    assert by_type(acl("*", Op.WRITE), acl("t", Op.WRITE, DENY))
    assert not by_type(acl("*", Op.WRITE), acl("*", Op.WRITE, DENY))
    assert not by_type(acl("t", Op.WRITE), acl("*", Op.ALL, DENY))
    # super users
    store = AclStore()
    assert Authorizer(store, frozenset({ALICE})).authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)


FILTER_ANY = dict(
    resource_type=ResourceType.ANY,
    name=None,
    pattern_type=PatternType.ANY,
    principal=None,
    host=None,
    operation=Op.ANY,
    permission=AclPermissionType.ANY,
)


def make_filter(**fields: object) -> AclBindingFilter:
    return AclBindingFilter(**(FILTER_ANY | fields))  # type: ignore[arg-type]


def test_filters() -> None:
    literal, prefixed, wildcard = acl("pay-eu", Op.READ), acl("pay-", Op.WRITE, pattern=PREFIXED), acl("*", Op.READ)
    group = acl("g", Op.READ, principal=BOB, resource_type=GROUP)
    acls = [literal, prefixed, wildcard, group]

    def select(**fields: object) -> list[AclBinding]:
        return [a for a in acls if make_filter(**fields).matches(a)]

    assert select() == acls
    assert select(resource_type=GROUP) == [group]
    assert select(name="pay-eu") == [literal]  # ANY: exact names only
    assert select(name="pay-eu", pattern_type=PatternType.MATCH) == [literal, prefixed, wildcard]
    assert select(name="pay-", pattern_type=PREFIXED) == [prefixed]
    assert select(pattern_type=PREFIXED) == [prefixed]
    assert select(name="pay-", pattern_type=LITERAL) == []
    assert select(principal=BOB) == [group]
    assert select(operation=Op.WRITE) == [prefixed]
    assert select(permission=DENY) == []
    assert select(host="*", operation=Op.READ) == [literal, wildcard, group]
    assert make_filter(operation=Op.UNKNOWN).unknown_part() == "Unknown entryFilter."
    assert make_filter(pattern_type=PatternType.UNKNOWN).unknown_part() == "Unknown patternFilter."
    assert make_filter().unknown_part() is None


def test_creation_checks() -> None:
    assert creation_error(acl("t", Op.READ)) is None
    assert creation_error(acl("x", Op.ALTER, resource_type=CLUSTER)) == (
        "The only valid name for the CLUSTER resource is kafka-cluster"
    )
    assert creation_error(acl("kafka-cluster", Op.ALTER, resource_type=CLUSTER)) is None
    assert creation_error(acl("", Op.READ)) == "Invalid empty resource name"
    assert creation_error(acl("t", Op.ANY)) == "Invalid operation ANY"
    assert creation_error(acl("t", Op.READ, AclPermissionType.ANY)) == "Invalid permissionType ANY"
    assert creation_error(acl("t", Op.READ, pattern=PatternType.MATCH)) == "Invalid patternType MATCH"
    assert creation_error(acl("t", Op.READ, resource_type=ResourceType.ANY)) == "Invalid resourceType ANY"
    assert "Could not parse principal" in (creation_error(acl("t", Op.READ, principal="alice")) or "")


def test_store_is_durable_and_deduplicates(tmp_path: Path) -> None:
    store = AclStore.load(tmp_path)
    assert store.add([acl("t", Op.READ), acl("t", Op.READ), acl("p", Op.WRITE, pattern=PREFIXED)]) == 2
    assert store.add([acl("t", Op.READ)]) == 0
    again = AclStore.load(tmp_path)
    assert list(again) == list(store)
    assert again.remove([acl("p", Op.WRITE, pattern=PREFIXED)]) == 1
    third = AclStore.load(tmp_path)
    assert list(third) == [acl("t", Op.READ)]
    assert list(third.applicable(TOPIC, "pq")) == []
    assert not list(tmp_path.glob("*.tmp"))


def test_hosts_are_written_as_java_writes_them() -> None:
    from kbroker.auth.acl import java_host_address

    assert java_host_address("10.0.0.1") == "10.0.0.1"
    assert java_host_address("::1") == "0:0:0:0:0:0:0:1"
    assert java_host_address("fe80::1:abcd") == "fe80:0:0:0:0:0:1:abcd"
    assert java_host_address("::ffff:10.1.2.3") == "10.1.2.3"
    assert java_host_address("?") == "?"
