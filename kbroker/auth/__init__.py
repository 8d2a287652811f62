"""Authorization: Kafka's ACL model (acl), its durable store (store) and the StandardAuthorizer rules
(authorizer). Pure logic apart from the store's file; handlers reach it through RequestContext.authorize."""

from kbroker.auth.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kbroker.auth.authorizer import AUTHORIZER_CLASS_NAMES, Authorizer, parse_super_users
from kbroker.auth.store import AclStore

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "CLUSTER_NAME",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AclStore",
    "Authorizer",
    "PatternType",
    "ResourceType",
    "parse_super_users",
]
