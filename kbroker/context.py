"""What a handler sees of one request: its header, version, the broker and the connection.

Authorization goes through the context, so that a handler's check is one line:
`ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id)` for one resource,
`ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, names)` for the subset of names allowed,
`ctx.require(...)` to answer the API's top-level error (GROUP_AUTHORIZATION_FAILED, ...) when denied,
`ctx.authorized_operations(...)` for include_*_authorized_operations. With no authorizer configured
everything is allowed, as in Kafka. Denials are logged as `authorization_denied` (one line per call).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbroker.auth.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    java_host_address,
    operations_bitfield,
)
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.sasl import SaslSession

# the error Kafka answers when an operation on a resource of this type is denied (AclEntry.authorizationError)
AUTHORIZATION_ERRORS = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: int
    client_host: str
    log: Any  # a structlog logger bound with connection, client, api and correlation id
    listener: str = "PLAINTEXT"  # the listener name the client connected through (Metadata answers with its address)
    principal: str = "User:ANONYMOUS"  # who the client is (the TLS certificate's subject, the SASL user)
    sasl: SaslSession | None = None  # the connection's SASL exchange, on SASL listeners
    request_size: int = 0  # the request's size in bytes (producer_byte_rate meters it)
    throttle_ms: int = 0  # a quota throttle the handler found (Fetch bytes, controller mutations; kbroker.quota)

    @property
    def client_address(self) -> str:
        """The client's IP address as Kafka writes it (what ACL hosts are compared with), without the port."""
        return java_host_address(self.client_host.rsplit(":", 1)[0].strip("[]"))

    def authorize(
        self, operation: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME, *, log: bool = True
    ) -> bool:
        """Whether the client may do `operation` on the resource (the cluster when no name is given)."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        if authorizer.authorize(self.principal, self.client_address, operation, resource_type, name):
            return True
        if log:
            self._denied(operation, resource_type, [name])
        return False

    def authorized(
        self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str], *, log: bool = True
    ) -> set[str]:
        """The names among `names` the client may do `operation` on (denials logged unless `log` is False)."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return set(names)
        wanted = set(names)
        allowed = authorizer.filter_authorized(self.principal, self.client_address, operation, resource_type, wanted)
        if log and len(allowed) < len(wanted):
            self._denied(operation, resource_type, sorted(wanted - allowed))
        return allowed

    def require(self, operation: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> None:
        """Raise the resource type's authorization error (the API's top-level error answer) unless allowed."""
        if not self.authorize(operation, resource_type, name):
            raise KafkaProtocolError(AUTHORIZATION_ERRORS[resource_type])

    def authorize_by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(
            self.principal, self.client_address, operation, resource_type
        )

    def authorized_operations(self, resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
        """The resource type's operations the client may do, as the authorized_operations bit field."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return operations_bitfield(list(SUPPORTED_OPERATIONS[resource_type]))
        return authorizer.authorized_operations(self.principal, self.client_address, resource_type, name)

    def _denied(self, operation: AclOperation, resource_type: ResourceType, names: list[str]) -> None:
        self.log.info(
            "authorization_denied",
            principal=self.principal,
            host=self.client_address,
            operation=operation.name,
            resource_type=resource_type.name,
            resources=len(names),
            first=names[:5],
        )
