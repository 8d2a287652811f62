"""Request headers v0-v2 and response headers v0-v1.

Request header: api_key int16, api_version int16, correlation_id int32, then
(v1+) client_id as a nullable int16-length string in every header version,
then (v2, used with flexible request versions) a tagged-field section.
Response header: correlation_id int32, then (v1, flexible versions) a tagged
field section, except ApiVersions, whose response header is always v0 so
that a client can read it before it knows which versions the broker speaks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocol.api_keys import ApiKey
from protocol.primitives import Buffer, DecodeError, read_uvarint

_FIXED = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_CORRELATION = struct.Struct(">i")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def read_request_header_prefix(buf: Buffer) -> tuple[RequestHeader, int]:
    """Read the header fields common to v1 and v2 (everything but the tagged section).

    Returns the header and the position after client_id. Callers that know the
    request version is flexible then call skip_tagged_fields.
    """
    if len(buf) < _FIXED.size:
        raise DecodeError(f"request header truncated: {len(buf)} bytes")
    api_key, api_version, correlation_id = _FIXED.unpack_from(buf, 0)
    pos = _FIXED.size
    if len(buf) < pos + 2:
        raise DecodeError("request header truncated before client_id")
    length = _INT16.unpack_from(buf, pos)[0]
    pos += 2
    client_id: str | None
    if length < 0:
        if length != -1:
            raise DecodeError(f"invalid client_id length {length}")
        client_id = None
    else:
        end = pos + length
        if end > len(buf):
            raise DecodeError("client_id exceeds the frame")
        try:
            client_id = str(buf[pos:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"client_id is not UTF-8: {exc}") from None
        pos = end
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """Skip a tagged-field section (no header tags are defined that a broker needs)."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise DecodeError("header tagged field exceeds the frame")
    return pos


def encode_request_header(header: RequestHeader, flexible: bool) -> bytes:
    """Header v1 (or v2 when flexible); used by tests and tools that act as clients."""
    out = bytearray(_FIXED.pack(header.api_key, header.api_version, header.correlation_id))
    if header.client_id is None:
        out += b"\xff\xff"
    else:
        data = header.client_id.encode("utf-8")
        out += _INT16.pack(len(data)) + data
    if flexible:
        out += b"\x00"
    return bytes(out)


def response_header_is_flexible(api_key: int, flexible_body: bool) -> bool:
    return flexible_body and api_key != ApiKey.API_VERSIONS


def encode_response_header(correlation_id: int, flexible: bool) -> bytes:
    """Response header v0 (or v1, with an empty tagged-field section)."""
    prefix = _CORRELATION.pack(correlation_id)
    return prefix + b"\x00" if flexible else prefix


def read_response_header(buf: Buffer, flexible: bool) -> tuple[int, int]:
    """Correlation id and the position of the body (for clients and tests)."""
    if len(buf) < 4:
        raise DecodeError("response header truncated")
    correlation_id = _CORRELATION.unpack_from(buf, 0)[0]
    pos = 4
    if flexible:
        pos = skip_tagged_fields(buf, pos)
    return correlation_id, pos
