"""What a handler sees of one request: its header, version, the broker and the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.sasl import SaslSession


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
