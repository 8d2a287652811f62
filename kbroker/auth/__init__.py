"""Authorization: Kafka's ACL model (acl), its durable store (store) and the StandardAuthorizer rules
(authorizer). Pure logic apart from the store's file; handlers reach it through RequestContext.authorize."""

from typing import TYPE_CHECKING

from kbroker.auth.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kbroker.lazy_names import lazy_names

if TYPE_CHECKING:
    from kbroker.auth.authorizer import AUTHORIZER_CLASS_NAMES, Authorizer, parse_super_users
    from kbroker.auth.store import AclStore

# The authorizer and its store load at their first use, when `authorizer.class.name` is set: the request
# context needs only the ACL vocabulary (start-up time).
_AUTHORIZER_NAMES = {
    "AUTHORIZER_CLASS_NAMES": "kbroker.auth.authorizer",
    "Authorizer": "kbroker.auth.authorizer",
    "parse_super_users": "kbroker.auth.authorizer",
    "AclStore": "kbroker.auth.store",
}


__getattr__ = lazy_names(globals(), _AUTHORIZER_NAMES)


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
