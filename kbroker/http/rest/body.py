"""Reading request bodies: content types, JSON, and the embedded formats (binary = base64, json)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from aiohttp import web

from kbroker.http.rest.errors import UNSUPPORTED_MEDIA_TYPE, RestError, unprocessable

# embedded formats of produce bodies and consumer instances
BINARY, JSON = "binary", "json"
_FORMATS = {
    "application/vnd.kafka.binary.v2+json": BINARY,
    "application/vnd.kafka.json.v2+json": JSON,
}
_PLAIN = ("application/vnd.kafka.v2+json", "application/vnd.kafka+json", "application/json")


def embedded_format(request: web.Request) -> str:
    """The produce body's format from its Content-Type; 415 for anything else."""
    kind = request.content_type
    if kind not in _FORMATS:
        raise RestError(
            415,
            UNSUPPORTED_MEDIA_TYPE,
            f"HTTP 415 Unsupported Media Type: {kind or 'no Content-Type'}; produce with " + " or ".join(_FORMATS),
        )
    return _FORMATS[kind]


async def read_json(request: web.Request, *, plain: bool = True, optional: bool = False) -> Any:
    """The body as JSON; a plain REST body must say application/vnd.kafka.v2+json (or json)."""
    if plain and request.content_type not in _PLAIN and request.can_read_body:
        raise RestError(
            415, UNSUPPORTED_MEDIA_TYPE, f"HTTP 415 Unsupported Media Type: {request.content_type}; use {_PLAIN[0]}"
        )
    raw = await request.read()
    if not raw.strip():
        if optional:
            return {}
        raise RestError(400, 400, "request body is empty; a JSON object is expected")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RestError(400, 400, f"malformed JSON: {error}") from error
    except RecursionError:
        raise RestError(400, 400, "malformed JSON: nested too deeply") from None


def require_object(value: Any, what: str = "request body") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise unprocessable(f"{what} must be a JSON object")
    return value


def encode_embedded(fmt: str, value: Any, field: str) -> bytes | None:
    """A key or value from a produce body to the record's bytes."""
    if value is None:
        return None
    if fmt == BINARY:
        if not isinstance(value, str):
            raise unprocessable(f"{field} must be a base64 string in the binary format")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as error:
            raise unprocessable(f"{field} is not valid base64: {error}") from error
    return json.dumps(value, separators=(",", ":")).encode()


def decode_embedded(fmt: str, data: bytes | None) -> Any:
    """A record's key or value for a consumer of format `fmt`; ValueError when it is not JSON."""
    if data is None:
        return None
    if fmt == BINARY:
        return base64.b64encode(data).decode()
    return json.loads(data)
