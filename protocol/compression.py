"""Record batch compression codecs (attribute bits 0-2), with a cap on output.

Codecs: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. The native work is done by
``cramjam`` (snappy, lz4, zstd) and ``zlib`` (gzip).

Decoding is defensive: the output never grows past ``max_size`` bytes
(``MAX_DECOMPRESSED_SIZE`` unless told), sizes declared inside the data (raw
snappy preambles, lz4/zstd frame content sizes) are checked before anything is
allocated, and every failure raises ``CompressionError``, an
``InvalidRecordError``.

Formats, as Kafka clients write them:
- gzip: one or more gzip members (RFC 1952).
- snappy: either xerial framing (Java's ``SnappyOutputStream``: the magic
  ``\\x82SNAPPY\\x00``, two int32 versions, then int32-length-prefixed raw
  blocks) or one raw snappy block (franz-go, librdkafka may send this).
- lz4: the LZ4 frame format with independent blocks (Java rejects linked blocks).
- zstd: zstd frames.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import cramjam

from protocol.errors import InvalidRecordError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"  # version 1, compatible version 1
XERIAL_BLOCK_SIZE = 32 * 1024  # uncompressed bytes per block, as xerial writes

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"

_MIN_OUTPUT_GUESS = 64 * 1024
_GUESS_RATIO = 8
_GROWTH = 4

Buffer = bytes | bytearray | memoryview


class CompressionError(InvalidRecordError):
    """Compressed records could not be decoded (or encoded)."""


class DecompressedSizeError(CompressionError):
    """Decompressed output would exceed the allowed maximum."""


# -- public API ---------------------------------------------------------------


def decompress(codec: int, data: Buffer, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decode ``data`` compressed with ``codec``; never produce more than ``max_size`` bytes."""
    if codec == NONE:
        if len(data) > max_size:
            raise DecompressedSizeError(f"{len(data)} bytes exceed the limit of {max_size}")
        return bytes(data)
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise CompressionError(f"unknown compression codec {codec}")
    return decoder(data, max_size)


def compress(codec: int, data: Buffer, level: int | None = None, *, snappy_xerial: bool = True) -> bytes:
    """Encode ``data`` with ``codec`` in the format Kafka's Java client writes.

    Snappy is xerial-framed unless ``snappy_xerial`` is false (then one raw block).
    """
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return _gzip_compress(data, level)
        if codec == SNAPPY:
            return snappy_xerial_compress(data) if snappy_xerial else bytes(cramjam.snappy.compress_raw(data))
        if codec == LZ4:
            return _lz4_compress(data, level)
        if codec == ZSTD:
            return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))
    except cramjam.CompressionError as error:
        raise CompressionError(f"{CODEC_NAMES[codec]} compression failed: {error}") from error
    raise CompressionError(f"unknown compression codec {codec}")


# -- gzip -----------------------------------------------------------------------


def gzip_decompress(data: Buffer, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decode concatenated gzip members, streaming so at most max_size + 1 bytes exist."""
    parts: list[bytes] = []
    produced = 0
    rest: Buffer = data
    while True:
        inflater = zlib.decompressobj(wbits=31)
        try:
            chunk = inflater.decompress(rest, max_size + 1 - produced)
        except zlib.error as error:
            raise CompressionError(f"gzip data is corrupt: {error}") from error
        produced += len(chunk)
        if produced > max_size:
            raise DecompressedSizeError(f"gzip output exceeds the limit of {max_size} bytes")
        parts.append(chunk)
        if not inflater.eof:
            raise CompressionError("gzip data is truncated")
        rest = inflater.unused_data
        # Like Java's GZIPInputStream, bytes after a member that do not start
        # another member are ignored.
        if rest[:2] != b"\x1f\x8b":
            return b"".join(parts)


def _gzip_compress(data: Buffer, level: int | None) -> bytes:
    deflater = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
    return deflater.compress(data) + deflater.flush()


# -- snappy ---------------------------------------------------------------------


def snappy_decompress(data: Buffer, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decode xerial-framed or raw snappy (detected by the xerial magic)."""
    view = memoryview(data)
    if view[:8] == XERIAL_MAGIC:
        return _xerial_decompress(view, max_size)
    size = snappy_raw_length(view)
    if size > max_size:
        raise DecompressedSizeError(f"snappy block declares {size} bytes, over the limit of {max_size}")
    output = bytearray(size)
    _snappy_block_into(view, memoryview(output), size)
    return bytes(output)


def snappy_raw_length(block: Buffer) -> int:
    """The uncompressed length a raw snappy block declares (its uvarint preamble)."""
    result = 0
    for index in range(min(len(block), 5)):
        byte = block[index]
        result |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            if result > 0xFFFFFFFF:
                break
            return result
    raise CompressionError("snappy block has a malformed length preamble")


def _xerial_blocks(view: memoryview) -> list[memoryview]:
    if len(view) < len(XERIAL_HEADER):
        raise CompressionError("xerial snappy header is truncated")
    blocks = []
    position = len(XERIAL_HEADER)
    end = len(view)
    while position < end:
        if end - position < 4:
            raise CompressionError("xerial snappy block length is truncated")
        length = int.from_bytes(view[position : position + 4], "big", signed=True)
        position += 4
        if length < 0 or length > end - position:
            raise CompressionError(f"xerial snappy block length {length} is out of bounds")
        blocks.append(view[position : position + length])
        position += length
    return blocks


def _xerial_decompress(view: memoryview, max_size: int) -> bytes:
    blocks = _xerial_blocks(view)
    sizes = []
    total = 0
    for block in blocks:
        size = snappy_raw_length(block)
        total += size
        if total > max_size:
            raise DecompressedSizeError(f"xerial snappy output exceeds the limit of {max_size} bytes")
        sizes.append(size)
    output = bytearray(total)
    out_view = memoryview(output)
    position = 0
    for block, size in zip(blocks, sizes, strict=True):
        _snappy_block_into(block, out_view[position : position + size], size)
        position += size
    return bytes(output)


def _snappy_block_into(block: memoryview, output: memoryview, size: int) -> None:
    try:
        written = cramjam.snappy.decompress_raw_into(block, output)
    except cramjam.DecompressionError as error:
        raise CompressionError(f"snappy data is corrupt: {error}") from error
    if written != size:
        raise CompressionError(f"snappy block declared {size} bytes but produced {written}")


def snappy_xerial_compress(data: Buffer) -> bytes:
    """Encode as Java's xerial SnappyOutputStream does: header, then length-prefixed blocks."""
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        parts.append(len(block).to_bytes(4, "big"))
        parts.append(block)
    return b"".join(parts)


# -- lz4 and zstd ---------------------------------------------------------------


def lz4_decompress(data: Buffer, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decode an LZ4 frame, rejecting a declared content size over the limit first."""
    declared = lz4_declared_size(data)
    bound = lz4_size_bound(data) if declared is None else None
    return _bounded_decompress(cramjam.lz4.decompress_into, "lz4", data, max_size, declared, bound)


def zstd_decompress(data: Buffer, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decode zstd frames, rejecting a declared frame content size over the limit first."""
    declared = zstd_declared_size(data)
    bound = zstd_size_bound(data) if declared is None else None
    return _bounded_decompress(cramjam.zstd.decompress_into, "zstd", data, max_size, declared, bound)


# Without a declared content size (Java's KafkaLZ4BlockOutputStream and zstd-jni's streams write
# none), the output buffer is sized from the blocks' headers: each block decompresses to at most
# the frame's block size (lz4) or 128 KiB (zstd), a stored block to its own size. One header read
# per block (64 KiB to 4 MiB of output), instead of guessing and zeroing 8x the input.

_LZ4_BLOCK_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_ZSTD_BLOCK_MAX = 128 << 10


def lz4_size_bound(data: Buffer) -> int | None:
    """An upper bound of what the LZ4 frames in ``data`` decompress to, from their block headers; None if unsure."""
    position, end, total = 0, len(data), 0
    while position < end:
        if end - position < 7 or bytes(data[position : position + 4]) != LZ4_FRAME_MAGIC:
            return None
        flags, block_id = data[position + 4], (data[position + 5] >> 4) & 0x07
        block_max = _LZ4_BLOCK_SIZES.get(block_id)
        if block_max is None:
            return None
        position += 7 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
        while True:
            if end - position < 4:
                return None
            word = int.from_bytes(data[position : position + 4], "little")
            position += 4
            if word == 0:
                break
            size = word & 0x7FFFFFFF
            total += size if word & 0x80000000 else block_max
            position += size + (4 if flags & 0x10 else 0)
        position += 4 if flags & 0x04 else 0
    return total


def zstd_size_bound(data: Buffer) -> int | None:
    """An upper bound of what the zstd frames in ``data`` decompress to, from their block headers; None if unsure."""
    position, end, total = 0, len(data), 0
    while position < end:
        if end - position < 6 or bytes(data[position : position + 4]) != ZSTD_FRAME_MAGIC:
            return None
        descriptor = data[position + 4]
        single_segment = bool(descriptor & 0x20)
        size_width = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        position += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03] + size_width
        while True:
            if end - position < 3:
                return None
            header = int.from_bytes(data[position : position + 3], "little")
            position += 3
            kind, size = (header >> 1) & 0x03, header >> 3
            if kind == 0:  # raw
                total, position = total + size, position + size
            elif kind == 1:  # RLE: one byte repeated size times
                total, position = total + size, position + 1
            elif kind == 2:  # compressed
                total, position = total + _ZSTD_BLOCK_MAX, position + size
            else:
                return None
            if header & 1:
                break
        position += 4 if descriptor & 0x04 else 0
    return total


def lz4_declared_size(data: Buffer) -> int | None:
    """The content size an LZ4 frame header declares, or None when absent."""
    if len(data) < 15 or bytes(data[:4]) != LZ4_FRAME_MAGIC:
        return None
    flags = data[4]
    if not flags & 0x08:
        return None
    return int.from_bytes(data[6:14], "little")


def zstd_declared_size(data: Buffer) -> int | None:
    """The content size the first zstd frame header declares, or None when absent."""
    if len(data) < 6 or bytes(data[:4]) != ZSTD_FRAME_MAGIC:
        return None
    descriptor = data[4]
    size_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    if size_flag == 0 and not single_segment:
        return None
    position = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    width = (1, 2, 4, 8)[size_flag]
    if len(data) < position + width:
        return None
    size = int.from_bytes(data[position : position + width], "little")
    return size + 256 if width == 2 else size


def _bounded_decompress(
    decompress_into: Callable[[Buffer, bytearray], int],
    name: str,
    data: Buffer,
    max_size: int,
    declared: int | None,
    bound: int | None = None,
) -> bytes:
    """Decode into a fixed buffer, growing it geometrically up to max_size + 1."""
    if declared is not None and declared > max_size:
        raise DecompressedSizeError(f"{name} frame declares {declared} bytes, over the limit of {max_size}")
    if declared is not None:
        capacity = declared + 1
    elif bound is not None:
        capacity = bound + 1
    else:
        capacity = max(_MIN_OUTPUT_GUESS, len(data) * _GUESS_RATIO)
    capacity = min(capacity, max_size + 1)
    while True:
        output = bytearray(capacity)
        try:
            written = decompress_into(data, output)
        except cramjam.DecompressionError as error:
            if not _is_output_full(error):
                raise CompressionError(f"{name} data is corrupt: {error}") from error
            if capacity > max_size:
                raise DecompressedSizeError(f"{name} output exceeds the limit of {max_size} bytes") from None
            capacity = min(capacity * _GROWTH, max_size + 1)
            continue
        if written > max_size:
            raise DecompressedSizeError(f"{name} output exceeds the limit of {max_size} bytes")
        if written == capacity:
            # The buffer filled exactly: there may be more output, so retry larger.
            capacity = min(capacity * _GROWTH, max_size + 1)
            continue
        del output[written:]
        return bytes(output)


def _is_output_full(error: Exception) -> bool:
    message = str(error)
    return "whole buffer" in message or "smaller than required" in message


def _lz4_compress(data: Buffer, level: int | None) -> bytes:
    compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
    compressor.compress(data if isinstance(data, bytes) else bytes(data))
    return bytes(compressor.finish())


_DECODERS: dict[int, Callable[[Buffer, int], bytes]] = {
    GZIP: gzip_decompress,
    SNAPPY: snappy_decompress,
    LZ4: lz4_decompress,
    ZSTD: zstd_decompress,
}
