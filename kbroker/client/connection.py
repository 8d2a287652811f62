"""One blocking connection to one broker: framing, correlation ids, API version negotiation."""

from __future__ import annotations

import socket
from typing import Any

from protocol.api_keys import ApiKey, api_name
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, encode_request_header, read_response_header, response_header_is_flexible
from protocol.schema import REQUESTS, RESPONSES

CLIENT_SOFTWARE = ("kbroker-cli", "0.1.0")


# Versions this client does not use although the codec knows them: OffsetCommit and OffsetFetch v10 name
# topics only by id (KIP-848 clients), and this client names them.
_HIGHEST_USED: dict[int, int] = {ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9}


class KafkaError(Exception):
    """A broker answered with an error code (or a request could not be made); `code` is Kafka's."""

    def __init__(self, code: int, message: str | None = None, context: str = "") -> None:
        self.code = ErrorCode(code)
        self.message = message or self.code.message
        where = f"{context}: " if context else ""
        super().__init__(f"{where}{self.code.name}: {self.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable


class BrokerConnection:
    """A socket to one broker. `call` sends one request and reads its response (one at a time)."""

    def __init__(self, host: str, port: int, client_id: str = "kbroker-cli", timeout_s: float = 30.0) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._negotiate()

    def close(self) -> None:
        self.sock.close()

    def _negotiate(self) -> None:
        """ApiVersions at our highest version; a broker that does not know it answers v0 with its range."""
        version = REQUESTS[ApiKey.API_VERSIONS].valid.high
        body = {"client_software_name": CLIENT_SOFTWARE[0], "client_software_version": CLIENT_SOFTWARE[1]}
        response = self.call(ApiKey.API_VERSIONS, body, version)
        if response["error_code"] == ErrorCode.UNSUPPORTED_VERSION:
            spans = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
            low, high = spans.get(ApiKey.API_VERSIONS, (0, 0))
            response = self.call(ApiKey.API_VERSIONS, body, max(low, min(high, version)))
        if response["error_code"]:
            raise KafkaError(response["error_code"], context="ApiVersions")
        self.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}

    def version(self, api_key: int) -> int:
        """The highest version of `api_key` both sides speak."""
        ours = REQUESTS[api_key].valid
        theirs = self.api_versions.get(api_key)
        if theirs is None or theirs[1] < ours.low or theirs[0] > ours.high:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"the broker does not offer {api_name(api_key)}")
        return min(ours.high, theirs[1], _HIGHEST_USED.get(api_key, ours.high))

    def send(self, api_key: int, body: dict[str, Any], version: int | None = None) -> int:
        """Send one request without reading an answer (a Produce with acks=0 gets none); its version."""
        if version is None:
            version = self.version(api_key)
        self._correlation_id += 1
        request = REQUESTS[api_key]
        header = RequestHeader(api_key, version, self._correlation_id, self.client_id)
        payload = encode_request_header(header, request.is_flexible(version)) + encode(request, version, body)
        self.sock.sendall(frame_prefix(len(payload)) + payload)
        return version

    @property
    def closed(self) -> bool:
        return self.sock.fileno() < 0

    def call(self, api_key: int, body: dict[str, Any], version: int | None = None) -> dict[str, Any]:
        try:
            version = self.send(api_key, body, version)
            frame = self._read_frame()
        except BaseException:  # Ctrl-C or an error mid-request: the stream is out of step, never reuse it
            self.close()
            raise
        response = RESPONSES[api_key]
        flexible = response_header_is_flexible(api_key, response.is_flexible(version))
        correlation_id, pos = read_response_header(frame, flexible)
        if correlation_id != self._correlation_id:
            self.close()
            raise ConnectionError(
                f"answer {correlation_id} to request {self._correlation_id} from {self.host}:{self.port}"
            )
        return decode(response, version, frame, pos)

    def _read_frame(self) -> bytes:
        size = int.from_bytes(self._read_exact(4), "big", signed=True)
        return self._read_exact(size)

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        while view:
            got = self.sock.recv_into(view)
            if not got:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            view = view[got:]
        return bytes(buf)
