"""Kafka's ACL model: resource types, pattern types, operations, permissions, bindings and filters.

Codes are the wire values of Kafka's ResourceType, PatternType, AclOperation and AclPermissionType.
An `AclBinding` is one ACL (a resource pattern plus an access control entry); an `AclBindingFilter`
selects ACLs for DescribeAcls and DeleteAcls with Kafka's matching rules (ResourcePatternFilter and
AccessControlEntryFilter): ANY matches every value, a null name / principal / host matches any, and
the MATCH pattern type selects every ACL that would apply to the named resource (the literal name,
the literal wildcard "*", and every prefix).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD = "*"  # a literal resource name or host matching every one
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# The operations each concrete resource type supports (Kafka's AclEntry.supportedOperations): what
# include_*_authorized_operations reports on.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


E = TypeVar("E", bound=IntEnum)


def _code(enum: type[E], value: object) -> E:
    """An enum member for a wire code; codes Kafka does not know read as UNKNOWN (0), as its fromCode does."""
    try:
        return enum(int(value))  # type: ignore[call-overload]
    except ValueError:
        return enum(0)


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not (permission) do what (operation) to which resources."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def from_wire(cls, data: dict[str, object], pattern_key: str = "resource_pattern_type") -> AclBinding:
        return cls(
            _code(ResourceType, data["resource_type"]),
            str(data["resource_name"]),
            _code(PatternType, data[pattern_key]),
            str(data["principal"]),
            str(data["host"]),
            _code(AclOperation, data["operation"]),
            _code(AclPermissionType, data["permission_type"]),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "resource_type": self.resource_type.name,
            "name": self.name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }

    @classmethod
    def from_json(cls, data: dict[str, str]) -> AclBinding:
        return cls(
            ResourceType[data["resource_type"]],
            data["name"],
            PatternType[data["pattern_type"]],
            data["principal"],
            data["host"],
            AclOperation[data["operation"]],
            AclPermissionType[data["permission"]],
        )

    def __str__(self) -> str:
        return (
            f"{self.resource_type.name}:{self.pattern_type.name}:{self.name} {self.permission.name} "
            f"{self.principal} {self.operation.name} from {self.host}"
        )


def creation_error(acl: AclBinding) -> str | None:
    """Why Kafka refuses to create `acl` (INVALID_REQUEST), or None (AclApis and AclControlManager's checks)."""
    if acl.resource_type is ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if ":" not in acl.principal:
        return (
            f"Could not parse principal from `{acl.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )
    return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which ACLs a DescribeAcls or DeleteAcls filter selects; None fields match anything."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def from_wire(cls, data: dict[str, object]) -> AclBindingFilter:
        def text(key: str) -> str | None:
            value = data[key]
            return None if value is None else str(value)

        return cls(
            _code(ResourceType, data["resource_type_filter"]),
            text("resource_name_filter"),
            _code(PatternType, data["pattern_type_filter"]),
            text("principal_filter"),
            text("host_filter"),
            _code(AclOperation, data["operation"]),
            _code(AclPermissionType, data["permission_type"]),
        )

    def unknown_part(self) -> str | None:
        """Kafka refuses a filter with an UNKNOWN element (INVALID_REQUEST): which part, or None."""
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is AclOperation.UNKNOWN or self.permission is AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type is not acl.resource_type:
            return False
        pattern = self.pattern_type
        if pattern not in (PatternType.ANY, PatternType.MATCH) and pattern is not acl.pattern_type:
            return False
        if self.name is None:
            return True
        if pattern is PatternType.ANY or pattern is acl.pattern_type:
            return self.name == acl.name
        # MATCH: every ACL that applies to the resource named by the filter
        if acl.pattern_type is PatternType.LITERAL:
            return self.name == acl.name or acl.name == WILDCARD
        return self.name.startswith(acl.name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not acl.operation:
            return False
        return self.permission is AclPermissionType.ANY or self.permission is acl.permission


def java_host_address(address: str) -> str:
    """A client's IP as Java's InetAddress.getHostAddress writes it, which is what Kafka compares ACL hosts
    with: IPv4 as is (an IPv4-mapped IPv6 address too), IPv6 in full without leading zeros (0:0:0:0:0:0:0:1)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return ":".join(f"{int(group, 16):x}" for group in ip.exploded.split(":"))
    return str(ip)


def operations_bitfield(operations: list[AclOperation] | set[AclOperation]) -> int:
    """Operations as the int32 bit field the authorized_operations fields carry (bit n: operation code n)."""
    bits = 0
    for operation in operations:
        bits |= 1 << int(operation)
    return bits
