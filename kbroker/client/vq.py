"""A client of kbroker's virtual queues (`/v1/vq` on the broker's HTTP listener), for `kbroker queue`.

One method per endpoint (docs/gateway.md, "Virtual queues"); the standard library's http.client only,
over one kept-alive connection (a publish of many lines is one request per record, not one connection
per record). The answers are the gateway's JSON bodies as they come. A refusal raises GatewayError with the gateway's
`error_code` and message; a gateway that cannot be reached raises GatewayUnreachable.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.parse
from typing import Any

# the record headers a publish may set (kbroker/vq/records.py names them; the gateway turns the request
# headers of the same names into them)
TAG = "kbroker-tag"
DELIVER_AT = "kbroker-deliver-at"
DELIVER_AFTER_MS = "kbroker-deliver-after-ms"
TIMEOUT_S = 30.0  # for one answer, beyond a long poll's own wait


class GatewayError(Exception):
    """The gateway answered with an error: its HTTP status, `error_code` and `message`."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(f"{message} (error_code {code}, HTTP {status})")
        self.status = status
        self.code = code
        self.message = message


class GatewayUnreachable(Exception):
    """No answer: the connection was refused, timed out or closed before an answer."""


def base_url(address: str) -> str:
    """`HOST:PORT` (or an http:// or https:// URL, e.g. a TLS-terminating proxy) as the gateway's base URL."""
    if address.startswith(("http://", "https://")):
        parsed = urllib.parse.urlsplit(address)
        if not parsed.hostname:
            raise ValueError(f"--http {address!r}: expected HOST:PORT or http(s)://HOST[:PORT]")
        return address.rstrip("/")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http {address!r}: expected HOST:PORT")
    return f"http://{address}"


def _path_part(name: str) -> str:
    return urllib.parse.quote(name, safe="")


class QueueGateway:
    def __init__(self, address: str, user: str | None = None, password: str | None = None) -> None:
        self.url = base_url(address)
        self._prefix = urllib.parse.urlsplit(self.url).path  # a proxy may serve the gateway under a path
        self._connection: http.client.HTTPConnection | None = None
        self.headers: dict[str, str] = {}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"  # sent at once, not after a 401 challenge

    def list_queues(self, prefix: str = "", after: str = "", limit: int | None = None) -> Any:
        query = {"prefix": prefix or None, "after": after or None, "limit": limit}
        return self._call("GET", "/v1/vq", query)

    def describe(self, queue: str) -> Any:
        return self._call("GET", f"/v1/vq/{_path_part(queue)}")

    def publish(self, queue: str, value: bytes, headers: dict[str, str]) -> Any:
        headers = {"Content-Type": "application/octet-stream", **headers}
        return self._call("POST", f"/v1/vq/{_path_part(queue)}", body=value, headers=headers)

    def read(
        self, queue: str, consumer: str | None = None, offset: int | None = None, limit: int | None = None,
        timeout_ms: int | None = None,
    ) -> Any:  # fmt: skip
        query = {"consumer": consumer, "offset": offset, "max": limit, "timeout": timeout_ms}
        wait = (timeout_ms or 0) / 1000
        return self._call("GET", f"/v1/vq/{_path_part(queue)}/records", query, wait_s=wait)

    def ack(self, queue: str, consumer: str, offset: int, allow_rewind: bool = False) -> Any:
        body = json.dumps({"consumer": consumer, "offset": offset, "allow_rewind": allow_rewind}).encode()
        headers = {"Content-Type": "application/json"}
        return self._call("POST", f"/v1/vq/{_path_part(queue)}/ack", body=body, headers=headers)

    def delete_queue(self, queue: str) -> Any:
        return self._call("DELETE", f"/v1/vq/{_path_part(queue)}")

    def delete_consumer(self, queue: str, consumer: str) -> None:
        self._call("DELETE", f"/v1/vq/{_path_part(queue)}/consumers/{_path_part(consumer)}")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme == "https":
            return http.client.HTTPSConnection(
                parsed.hostname or "", parsed.port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=timeout)

    def _call(
        self, method: str, path: str, query: dict[str, Any] | None = None, body: bytes | None = None,
        headers: dict[str, str] | None = None, wait_s: float = 0.0,
    ) -> Any:  # fmt: skip
        target = self._prefix + path
        params = [(k, str(v)) for k, v in (query or {}).items() if v is not None]
        if params:
            target += "?" + urllib.parse.urlencode(params)
        status, raw = self._exchange(method, target, body, {**self.headers, **(headers or {})}, TIMEOUT_S + wait_s)
        if status >= 400:
            raise _refusal(status, raw)
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise GatewayError(status, status, f"the answer is not JSON ({self.url})") from None

    def _exchange(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes]:
        """One request and its answer. A kept-alive connection the gateway closed while idle (it reads no
        request on it, so nothing was done) is opened again once; any other failure is final."""
        reused = self._connection is not None
        for attempt in range(2):
            if self._connection is None:
                self._connection = self._connect(timeout)
            connection = self._connection
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.request(method, target, body=body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                self.close()
                if reused and attempt == 0:
                    continue
                raise GatewayUnreachable(f"{error} ({self.url})") from None
            except (OSError, http.client.HTTPException) as error:
                self.close()
                raise GatewayUnreachable(f"{getattr(error, 'reason', None) or error} ({self.url})") from None
            if response.will_close:
                self.close()
            return response.status, raw
        raise AssertionError("unreachable")


def _refusal(status: int, raw: bytes) -> GatewayError:
    """The gateway's {"error_code", "message"}; another body (a proxy's page) keeps the HTTP status as code."""
    try:
        body = json.loads(raw)
        return GatewayError(status, int(body["error_code"]), str(body["message"]))
    except (ValueError, KeyError, TypeError):
        text = raw.decode("utf-8", "replace").strip().splitlines()
        return GatewayError(status, status, text[0][:200] if text else http.client.responses.get(status, "error"))


def record_value(record: dict[str, Any]) -> bytes:
    """A record's value as the bytes published (the gateway sends non-UTF-8 values base64-encoded)."""
    value = record.get("value")
    if value is None:
        return b""
    if record.get("value_encoding") == "base64":
        return base64.b64decode(value)
    return str(value).encode()


def publish_headers(tag: str | None, deliver_at: int | None, deliver_after_ms: int | None) -> dict[str, str]:
    headers = {}
    for name, value in ((TAG, tag), (DELIVER_AT, deliver_at), (DELIVER_AFTER_MS, deliver_after_ms)):
        if value is not None:  # UTF-8 on the wire (http.client sends header text as Latin-1)
            headers[name] = str(value).encode().decode("latin-1")
    return headers
