"""The authorizer: Kafka's StandardAuthorizer rules over the ACLs of an `AclStore`.

For one action (an operation on a named resource, by a principal from a host):
- a principal listed in `super.users` may do anything;
- the ACLs that apply to the resource are its LITERAL ones with the exact name, the LITERAL ones
  named "*", and the PREFIXED ones whose name starts the resource's name;
- of those, an ACL matches when its principal is the client's or "User:*", its host the client's
  address or "*", and its operation the action's or ALL. An ALLOW ACL for READ, WRITE, DELETE or
  ALTER also allows DESCRIBE, one for ALTER_CONFIGS also DESCRIBE_CONFIGS; a DENY ACL denies only
  its own operation (or ALL);
- any matching DENY denies; otherwise any matching ALLOW allows; otherwise, when the resource has
  no ACL at all (whoever it names), `allow.everyone.if.no.acl.found` decides (default: deny), and
  when it has some, the action is denied.

`authorize_by_resource_type` answers whether the principal may do the operation on at least one
resource of a type (Kafka's Authorizer.authorizeByResourceType, used by InitProducerId for
idempotent producers with WRITE on some topic).
"""

from __future__ import annotations

from collections.abc import Iterable

from kbroker.auth.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    operations_bitfield,
)
from kbroker.auth.store import AclStore
from kbroker.config import BrokerConfig
from kbroker.config_defs import ConfigError

# Authorizer class names Kafka accepts for `authorizer.class.name`; either turns enforcement on here.
AUTHORIZER_CLASS_NAMES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)

_IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


def parse_super_users(value: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (User:admin;User:CN=broker,O=Example)."""
    users = set()
    for item in value.split(";"):
        item = item.strip()
        if item:
            if ":" not in item:
                raise ValueError(f"invalid principal {item!r} in super.users: expected Type:name")
            users.add(item)
    return frozenset(users)


def new_authorizer(config: BrokerConfig) -> Authorizer | None:
    """The authorizer `authorizer.class.name` asks for, with the ACLs of the data directory; None when unset."""
    if not config.get_str("authorizer.class.name"):
        return None
    try:
        super_users = parse_super_users(config.get_str("super.users"))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    store = AclStore.load(config.data_dir)
    return Authorizer(store, super_users, config.get_bool("allow.everyone.if.no.acl.found"))


def _result(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> bool | None:
    """True (allow) or False (deny) if `acl` matches the action, None if it does not apply."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    allow = acl.permission is AclPermissionType.ALLOW
    if acl.operation is not AclOperation.ALL:
        if allow and operation is AclOperation.DESCRIBE:
            if acl.operation not in _IMPLIES_DESCRIBE:
                return None
        elif allow and operation is AclOperation.DESCRIBE_CONFIGS:
            if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        elif acl.operation is not operation:
            return None
    return allow


class Authorizer:
    def __init__(self, store: AclStore, super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False):
        self.store = store
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        found_any = False
        allowed = False
        for acl in self.store.applicable(resource_type, name):
            found_any = True
            result = _result(acl, principal, host, operation)
            if result is False:
                return False
            if result:
                allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not found_any

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The resource type's supported operations this principal may do, as the protocol's bit field."""
        return operations_bitfield(
            [
                op
                for op in SUPPORTED_OPERATIONS[resource_type]
                if self.authorize(principal, host, op, resource_type, name)
            ]
        )

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether some resource of `resource_type` allows `operation`: an ALLOW ACL not covered by a DENY one."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True  # super users, and no ACLs at all with allow.everyone.if.no.acl.found
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for acl in self.store.of_type(resource_type):
            if acl.host != host and acl.host != WILDCARD:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation is not operation and acl.operation is not AclOperation.ALL:
                continue
            if acl.permission is AclPermissionType.DENY:
                if acl.pattern_type is PatternType.LITERAL and acl.name == WILDCARD:
                    return False
                deny[acl.pattern_type].add(acl.name)
            elif acl.pattern_type is PatternType.LITERAL and acl.name == WILDCARD:
                wildcard_allow = True
            else:
                allow[acl.pattern_type].add(acl.name)
        if wildcard_allow:
            return True
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type is PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:end] in deny[PatternType.PREFIXED] for end in range(1, len(name) + 1)):
                    return True
        return False

    def filter_authorized(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> set[str]:
        return {n for n in set(names) if self.authorize(principal, host, operation, resource_type, n)}
