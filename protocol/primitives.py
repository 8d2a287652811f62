"""Primitive wire types: fixed-width integers, varints, strings, bytes.

Decoders take (buffer, position) and return (value, new_position); encoders
append to a Writer. Every length and count is checked against the bytes that
remain before anything is allocated, so malformed input fails fast with
DecodeError and never with a large allocation or a hang.
"""

from __future__ import annotations

import struct
from typing import Any

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

# Chunks at least this large are handed to the transport as they are, not copied.
ZERO_COPY_THRESHOLD = 16 * 1024


class DecodeError(ValueError):
    """The bytes do not form a valid message of the expected API and version."""


class Writer:
    """Accumulates an encoded message as a list of chunks.

    Small values are appended to a bytearray; large record blobs are kept as
    separate chunks (bytes, memoryview, or any object with __len__ that the
    transport knows how to send, such as a file region), so the encoder never
    copies them.
    """

    __slots__ = ("buf", "chunks", "size")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.chunks: list[Any] = []
        self.size = 0  # bytes in self.chunks (not counting self.buf)

    def write(self, data: Buffer) -> None:
        self.buf += data

    def write_blob(self, blob: Any) -> None:
        """Append a records blob: a buffer, or a list/tuple of buffers or regions."""
        if isinstance(blob, list | tuple):
            for part in blob:
                self.write_blob(part)
            return
        if isinstance(blob, bytes | bytearray | memoryview) and len(blob) < ZERO_COPY_THRESHOLD:
            self.buf += blob
            return
        if self.buf:
            self.chunks.append(bytes(self.buf))
            self.size += len(self.buf)
            self.buf = bytearray()
        self.chunks.append(blob)
        self.size += len(blob)

    def __len__(self) -> int:
        return self.size + len(self.buf)

    def finish(self) -> list[Any]:
        """The encoded message as chunks; the writer must not be used afterwards."""
        if self.buf:
            self.chunks.append(bytes(self.buf))
            self.size += len(self.buf)
            self.buf = bytearray()
        return self.chunks

    def getvalue(self) -> bytes:
        return join_chunks(self.finish())


def join_chunks(chunks: list[Any]) -> bytes:
    return b"".join(bytes(c) if not isinstance(c, bytes | bytearray | memoryview) else c for c in chunks)


def blob_length(blob: Any) -> int:
    if blob is None:
        return -1
    if isinstance(blob, list | tuple):
        return sum(len(part) for part in blob)
    return len(blob)


# -- varints ---------------------------------------------------------------
#
# The one implementation of the protocol's variable-length integers. Unsigned varints frame the
# flexible versions (compact lengths, tagged fields); zigzag varints and varlongs are the fields of
# records (protocol.records, protocol.record_walk, protocol.record_builder). The zigzag decoders
# read as Java's ByteUtils does: at most 5 bytes (10 for a varlong), the value wrapped to 32 (64)
# bits like Java's int (long), so a record means here exactly what it means to Kafka.

_UINT32_MASK = 0xFFFFFFFF
_UINT64_MASK = 0xFFFFFFFFFFFFFFFF


def read_uvarint(buf: Buffer, pos: int, max_shift: int = 28) -> tuple[int, int]:
    """Unsigned LEB128 as used by the protocol: at most 5 bytes (32 bits), or 10 with max_shift=63."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > max_shift:
            raise DecodeError(f"varint longer than {max_shift // 7 + 1} bytes")


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"unsigned varint cannot encode {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag varint (a record's int32 field): at most 5 bytes, wrapped to 32 bits as Java does."""
    raw, pos = read_uvarint(buf, pos)
    raw &= _UINT32_MASK
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag varlong (a record's int64 field): at most 10 bytes, wrapped to 64 bits as Java does."""
    raw, pos = read_uvarint(buf, pos, 63)
    raw &= _UINT64_MASK
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` zigzag-encoded (any value of the int32 or int64 range)."""
    raw = ((value << 1) ^ (value >> 63)) & _UINT64_MASK
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


# -- fixed width -------------------------------------------------------------


def read_fixed(fmt: struct.Struct, buf: Buffer, pos: int) -> tuple[Any, int]:
    end = pos + fmt.size
    if end > len(buf):
        raise DecodeError(f"truncated: needed {fmt.size} bytes at {pos}, {len(buf) - pos} remain")
    return fmt.unpack_from(buf, pos)[0], end


def take(buf: Buffer, pos: int, length: int) -> tuple[memoryview, int]:
    """A view of `length` bytes at `pos`, checked against what remains."""
    end = pos + length
    if length < 0 or end > len(buf):
        raise DecodeError(f"length {length} at {pos} exceeds the {len(buf) - pos} bytes that remain")
    return memoryview(buf)[pos:end], end
