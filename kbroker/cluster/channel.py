"""Requests from this broker to another one (Kafka's broker-to-broker channel): a follower's fetches, and what
a coordinator sends to the leaders of other brokers' partitions (WriteTxnMarkers, AddPartitionsToTxn).

One connection per destination broker, to the endpoint it registered for this broker's inter-broker
listener, with that listener's security (ChannelSecurity, kbroker/cluster/channel_security.py): TLS with the
broker's own keystore and truststore, then SASL with the broker's own credentials, so the other broker
sees this one's principal (a super user, or one with CLUSTER_ACTION on the cluster). Requests go one at a
time on it, each bounded by a timeout, on the project's codec (both ends are kbroker, so no ApiVersions
round). A failed or timed-out request closes the connection; the next one connects (and authenticates)
again to the address the broker registered by then. A SASL session with a lifetime (the other side's
connections.max.reauth.ms) is replaced by a new connection at 85% of it, rather than re-authenticated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from kbroker.cluster.channel_security import ChannelSecurity
from kbroker.cluster.znodes import BrokerEndpoint
from kbroker.scram import ScramFailure
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, encode_request_header, read_response_header, response_header_is_flexible
from protocol.schema import REQUESTS, RESPONSES

log = structlog.get_logger(__name__)

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
SESSION_RENEWAL = 0.85  # of a SASL session's lifetime: when to connect again (Kafka's clients re-authenticate then)


class BrokerUnreachableError(ConnectionError):
    """No live registration, no endpoint on the inter-broker listener, or the connection failed."""


class ChannelAuthenticationError(ConnectionError):
    """The other broker refused this one's SASL credentials (or could not prove it knew them)."""


class _Connection:
    def __init__(self, endpoint: BrokerEndpoint) -> None:
        self.endpoint = endpoint
        self.lock = asyncio.Lock()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.correlation_id = 0
        self.renew_at: float | None = None  # loop time to connect again before the SASL session expires

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class BrokerChannel:
    def __init__(
        self,
        client_id: str,
        endpoint_of: Callable[[int], BrokerEndpoint | None],
        security: ChannelSecurity | None = None,
    ) -> None:
        self.client_id = client_id
        self.endpoint_of = endpoint_of  # the destination's endpoint on the inter-broker listener, None if gone
        self.security = security or ChannelSecurity("PLAINTEXT")
        self._connections: dict[int, _Connection] = {}

    async def call(
        self, broker_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Send one request to `broker_id` and return its decoded answer. BrokerUnreachableError or
        TimeoutError when it could not be had (the connection is then closed)."""
        endpoint = self.endpoint_of(broker_id)
        if endpoint is None:
            raise BrokerUnreachableError(f"broker {broker_id} is not registered on the inter-broker listener")
        if endpoint.protocol != self.security.protocol:
            raise BrokerUnreachableError(
                f"broker {broker_id}'s listener {endpoint.listener} is {endpoint.protocol}, "
                f"this broker's is {self.security.protocol}"
            )
        connection = self._connections.get(broker_id)
        if connection is None or connection.endpoint != endpoint:
            if connection is not None:
                connection.close()
            connection = self._connections[broker_id] = _Connection(endpoint)
        async with connection.lock:
            try:
                async with asyncio.timeout(timeout_s):
                    return await self._call(connection, api_key, version, body)
            except (OSError, EOFError, asyncio.IncompleteReadError) as error:  # ChannelAuthenticationError too
                connection.close()
                raise BrokerUnreachableError(
                    f"broker {broker_id} at {endpoint.host}:{endpoint.port}: {error}"
                ) from error
            except BaseException:
                connection.close()
                raise

    async def _call(self, connection: _Connection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        renew_at = connection.renew_at
        if renew_at is not None and asyncio.get_running_loop().time() >= renew_at:
            connection.close()  # a new connection and session rather than re-authentication on this one
        if connection.writer is None or connection.writer.is_closing():
            endpoint = connection.endpoint
            tls = self.security.tls
            connection.reader, connection.writer = await asyncio.open_connection(
                endpoint.host, endpoint.port, ssl=tls, server_hostname=endpoint.host if tls is not None else None
            )
            connection.correlation_id, connection.renew_at = 0, None
            if self.security.mechanism is not None:
                await self._authenticate(connection)
        return await self._exchange(connection, api_key, version, body)

    async def _authenticate(self, connection: _Connection) -> None:
        """SaslHandshake v1, then SaslAuthenticate rounds until the mechanism is done (Kafka's client order)."""
        security = self.security
        assert security.mechanism is not None
        answer = await self._exchange(connection, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": security.mechanism})
        if answer["error_code"]:
            raise ChannelAuthenticationError(
                f"{ErrorCode(answer['error_code']).name}: {security.mechanism} (offered: {answer['mechanisms']})"
            )
        exchange = security.sasl_exchange()
        token: bytes | None = next(exchange)
        while token is not None:
            answer = await self._exchange(connection, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            if answer["error_code"]:
                raise ChannelAuthenticationError(f"{ErrorCode(answer['error_code']).name}: {answer['error_message']}")
            try:
                token = exchange.send(bytes(answer["auth_bytes"]))
            except StopIteration:
                token = None
            except ScramFailure as failure:
                raise ChannelAuthenticationError(str(failure)) from failure
        lifetime_ms = answer["session_lifetime_ms"]
        if lifetime_ms > 0:  # connections.max.reauth.ms on the other side (KIP-368)
            connection.renew_at = asyncio.get_running_loop().time() + lifetime_ms * SESSION_RENEWAL / 1000

    async def _exchange(
        self, connection: _Connection, api_key: int, version: int, body: dict[str, Any]
    ) -> dict[str, Any]:
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
