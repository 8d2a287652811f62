"""Requests from this broker to another one (Kafka's broker-to-broker channel): what a coordinator sends to
the leaders of other brokers' partitions (WriteTxnMarkers).

One connection per destination broker, to the endpoint it registered for this broker's
inter.broker.listener.name; requests go one at a time on it, each bounded by a timeout, on the project's
codec (both ends are kbroker, so no ApiVersions round). A failed or timed-out request closes the connection;
the next one connects again to the address the broker registered by then. The inter-broker listener must
be PLAINTEXT: TLS and SASL between brokers are not implemented.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from kbroker.cluster.znodes import BrokerEndpoint
from protocol.codec import decode, encode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, encode_request_header, read_response_header, response_header_is_flexible
from protocol.schema import REQUESTS, RESPONSES

log = structlog.get_logger(__name__)

MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class BrokerUnreachableError(ConnectionError):
    """No live registration, no endpoint on the inter-broker listener, or the connection failed."""


class _Connection:
    def __init__(self, endpoint: BrokerEndpoint) -> None:
        self.endpoint = endpoint
        self.lock = asyncio.Lock()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.correlation_id = 0

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class BrokerChannel:
    def __init__(self, client_id: str, endpoint_of: Callable[[int], BrokerEndpoint | None]) -> None:
        self.client_id = client_id
        self.endpoint_of = endpoint_of  # the destination's endpoint on the inter-broker listener, None if gone
        self._connections: dict[int, _Connection] = {}

    async def call(
        self, broker_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Send one request to `broker_id` and return its decoded answer. BrokerUnreachableError or
        TimeoutError when it could not be had (the connection is then closed)."""
        endpoint = self.endpoint_of(broker_id)
        if endpoint is None:
            raise BrokerUnreachableError(f"broker {broker_id} is not registered on the inter-broker listener")
        if endpoint.protocol != "PLAINTEXT":
            raise BrokerUnreachableError(f"inter-broker listener {endpoint.listener} is {endpoint.protocol}")
        connection = self._connections.get(broker_id)
        if connection is None or connection.endpoint != endpoint:
            if connection is not None:
                connection.close()
            connection = self._connections[broker_id] = _Connection(endpoint)
        async with connection.lock:
            try:
                async with asyncio.timeout(timeout_s):
                    return await self._call(connection, api_key, version, body)
            except (OSError, EOFError, asyncio.IncompleteReadError) as error:
                connection.close()
                raise BrokerUnreachableError(
                    f"broker {broker_id} at {endpoint.host}:{endpoint.port}: {error}"
                ) from error
            except BaseException:
                connection.close()
                raise

    async def _call(self, connection: _Connection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        if connection.writer is None or connection.writer.is_closing():
            endpoint = connection.endpoint
            connection.reader, connection.writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        assert connection.reader is not None and connection.writer is not None
        connection.correlation_id += 1
        request = REQUESTS[api_key]
        header = RequestHeader(api_key, version, connection.correlation_id, self.client_id)
        payload = encode_request_header(header, request.is_flexible(version)) + encode(request, version, body)
        connection.writer.write(frame_prefix(len(payload)) + payload)
        await connection.writer.drain()
        size = int.from_bytes(await connection.reader.readexactly(4), "big", signed=True)
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"a response frame of {size} bytes")
        frame = await connection.reader.readexactly(size)
        response = RESPONSES[api_key]
        flexible = response_header_is_flexible(api_key, response.is_flexible(version))
        correlation_id, position = read_response_header(frame, flexible)
        if correlation_id != connection.correlation_id:
            raise ConnectionError(f"correlation id {correlation_id}, expected {connection.correlation_id}")
        result: dict[str, Any] = decode(response, version, frame, position, exact=True)
        return result

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
