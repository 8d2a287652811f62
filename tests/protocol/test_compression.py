"""Compression codecs: interoperability with other encoders, size caps, corrupt input."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc
import zlib
from typing import Any

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import compression
from protocol.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    XERIAL_HEADER,
    ZSTD,
    CompressionError,
    DecompressedSizeError,
    compress,
    decompress,
)
from protocol.errors import InvalidRecordError

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
PAYLOADS = {
    "empty": b"",
    "one byte": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 50,
    "random": os.urandom(5000),
    "mixed 300k": os.urandom(70_000) + b"abc" * 80_000,
}


# -- round trips and other encoders ---------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_round_trip(codec: int, name: str) -> None:
    data = PAYLOADS[name]
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_raw_snappy_round_trip(name: str) -> None:
    data = PAYLOADS[name]
    raw = compress(SNAPPY, data, snappy_xerial=False)
    assert not raw.startswith(XERIAL_HEADER[:8])
    assert decompress(SNAPPY, raw) == data


def test_decodes_kafka_python_xerial_and_raw_snappy() -> None:
    codec = pytest.importorskip("kafka.codec")
    if not codec.has_snappy():
        pytest.skip("kafka-python has no snappy library")
    data = PAYLOADS["mixed 300k"]
    xerial = codec.snappy_encode(data, xerial_compatible=True)
    raw = codec.snappy_encode(data, xerial_compatible=False)
    assert xerial.startswith(b"\x82SNAPPY\x00") and not raw.startswith(b"\x82SNAPPY\x00")
    assert decompress(SNAPPY, xerial) == data
    assert decompress(SNAPPY, raw) == data


def test_kafka_python_reads_our_xerial_snappy() -> None:
    codec = pytest.importorskip("kafka.codec")
    if not codec.has_snappy():
        pytest.skip("kafka-python has no snappy library")
    data = PAYLOADS["mixed 300k"]
    ours = compress(SNAPPY, data)
    assert ours.startswith(XERIAL_HEADER)
    assert codec.snappy_decode(ours) == data


def test_xerial_header_versions_are_not_checked() -> None:
    data = PAYLOADS["text"]
    framed = compress(SNAPPY, data)
    other_versions = framed[:8] + struct.pack(">ii", 2, 1) + framed[16:]
    assert decompress(SNAPPY, other_versions) == data


def test_gzip_interoperates_with_stdlib() -> None:
    data = PAYLOADS["mixed 300k"]
    assert decompress(GZIP, gzip.compress(data, mtime=0)) == data
    assert gzip.decompress(compress(GZIP, data)) == data


def test_gzip_concatenated_members() -> None:
    assert decompress(GZIP, gzip.compress(b"abc") + gzip.compress(b"def")) == b"abcdef"


@pytest.mark.parametrize("block_linked", [True, False])
@pytest.mark.parametrize("store_size", [True, False])
def test_lz4_interoperates_with_lz4_frame(block_linked: bool, store_size: bool) -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    data = PAYLOADS["mixed 300k"]
    theirs = lz4_frame.compress(data, block_linked=block_linked, store_size=store_size)
    assert compression.lz4_declared_size(theirs) == (len(data) if store_size else None)
    assert decompress(LZ4, theirs) == data
    assert lz4_frame.decompress(compress(LZ4, data)) == data


def test_our_lz4_frames_have_independent_blocks() -> None:
    # Kafka's Java Lz4BlockInputStream rejects frames whose blocks are linked.
    frame = compress(LZ4, PAYLOADS["mixed 300k"])
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flags = frame[4]
    assert flags >> 6 == 1 and flags & 0x20


@pytest.mark.parametrize("content_size", [True, False])
def test_zstd_interoperates_with_zstandard(content_size: bool) -> None:
    zstandard = pytest.importorskip("zstandard")
    data = PAYLOADS["mixed 300k"]
    theirs = zstandard.ZstdCompressor(write_content_size=content_size).compress(data)
    assert compression.zstd_declared_size(theirs) == (len(data) if content_size else None)
    assert decompress(ZSTD, theirs) == data
    assert zstandard.ZstdDecompressor().decompressobj().decompress(compress(ZSTD, data)) == data


def _frames(codec: int, data: bytes) -> list[bytes]:
    """Frames as several encoders write them, none declaring its content size (as Java's do not)."""
    frames = [compress(codec, data)]
    if codec == LZ4:
        lz4_frame = pytest.importorskip("lz4.frame")
        for block_size in (lz4_frame.BLOCKSIZE_MAX64KB, lz4_frame.BLOCKSIZE_MAX1MB, lz4_frame.BLOCKSIZE_MAX4MB):
            for checksums in (False, True):
                frames.append(
                    lz4_frame.compress(
                        data,
                        block_size=block_size,
                        store_size=False,
                        block_checksum=checksums,
                        content_checksum=checksums,
                    )
                )
    else:
        zstandard = pytest.importorskip("zstandard")
        for checksum in (False, True):
            compressor = zstandard.ZstdCompressor(write_content_size=False, write_checksum=checksum)
            frames.append(compressor.compress(data))
            frames.append(compressor.compress(data[: len(data) // 2]) + compressor.compress(data[len(data) // 2 :]))
    return frames


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_block_headers_bound_the_output(codec: int, name: str) -> None:
    """Without a declared size the output buffer is sized from the block headers: never too small."""
    data = PAYLOADS[name] + bytes(200_000)  # long zero runs: RLE blocks for zstd, a high ratio for both
    bound = compression.lz4_size_bound if codec == LZ4 else compression.zstd_size_bound
    for frame in _frames(codec, data):
        limit = bound(frame)
        assert limit is not None and len(data) <= limit <= len(data) + 4 * 1024 * 1024
        assert decompress(codec, frame) == data
    assert bound(b"junk" * 10) is None


# -- size caps (decompression bombs) -----------------------------------------------------

BOMB_SIZE = 32 * 1024 * 1024
CAP = 1024 * 1024
_ZEROS = bytes(1024 * 1024)


def _streamed(compressor: Any, finish: str) -> bytes:
    """Feed BOMB_SIZE zero bytes, a chunk at a time, to a streaming compressor."""
    parts = []
    for _ in range(BOMB_SIZE // len(_ZEROS)):
        output = compressor.compress(_ZEROS)
        if not isinstance(output, int):  # cramjam's compressors keep their output until finish()
            parts.append(bytes(output))
    return b"".join(parts) + bytes(getattr(compressor, finish)())


def _xerial_bomb() -> bytes:
    block = bytes(cramjam.snappy.compress_raw(_ZEROS[: compression.XERIAL_BLOCK_SIZE]))
    framed = len(block).to_bytes(4, "big") + block
    return XERIAL_HEADER + framed * (BOMB_SIZE // compression.XERIAL_BLOCK_SIZE)


@pytest.fixture(scope="module")
def bombs() -> dict[int, bytes]:
    return {
        GZIP: _streamed(zlib.compressobj(9, zlib.DEFLATED, 31), "flush"),
        SNAPPY: _xerial_bomb(),
        LZ4: _streamed(cramjam.lz4.Compressor(block_linked=False), "finish"),
        ZSTD: _streamed(cramjam.zstd.Compressor(), "finish"),
    }


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_bomb_is_capped_without_materialising_it(bombs: dict[int, bytes], codec: int) -> None:
    bomb = bombs[codec]
    assert len(bomb) < BOMB_SIZE // 10
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError):
            decompress(codec, bomb, max_size=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * CAP + 2 * len(bomb), peak


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_cap_is_inclusive(codec: int) -> None:
    data = b"abcdefgh" * 20_000
    encoded = compress(codec, data)
    assert decompress(codec, encoded, max_size=len(data)) == data
    with pytest.raises(DecompressedSizeError):
        decompress(codec, encoded, max_size=len(data) - 1)


def test_uncompressed_cap() -> None:
    with pytest.raises(DecompressedSizeError):
        decompress(NONE, b"x" * 11, max_size=10)


def test_raw_snappy_declaring_huge_length_is_rejected_before_allocating() -> None:
    block = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # declares 4 GiB - 1
    assert compression.snappy_raw_length(block) == 2**32 - 1
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError):
            decompress(SNAPPY, block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_lz4_frame_declaring_huge_content_size_is_rejected() -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    frame = bytearray(lz4_frame.compress(b"small", store_size=True))
    frame[6:14] = (2**40).to_bytes(8, "little")  # the header checksum no longer matches: not looked at
    with pytest.raises(DecompressedSizeError):
        decompress(LZ4, bytes(frame))


def test_zstd_frame_declaring_huge_content_size_is_rejected() -> None:
    zstandard = pytest.importorskip("zstandard")
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 100_000)
    declared = compression.zstd_declared_size(frame)
    assert declared == 100_000
    with pytest.raises(DecompressedSizeError):
        decompress(ZSTD, frame, max_size=declared - 1)


def test_output_larger_than_first_guess_grows() -> None:
    data = bytes(3 * 1024 * 1024)  # compresses far beyond the initial 8x guess
    for codec in (LZ4, ZSTD):
        assert decompress(codec, compress(codec, data)) == data


# -- corrupt input --------------------------------------------------------------------


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_truncated_input_raises(codec: int) -> None:
    encoded = compress(codec, PAYLOADS["mixed 300k"])
    for cut in (1, 7, len(encoded) // 2, len(encoded) - 1):
        with pytest.raises(CompressionError):
            decompress(codec, encoded[:cut])


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_raises(codec: int) -> None:
    with pytest.raises(CompressionError) as caught:
        decompress(codec, b"\x13\x37" * 40)
    assert isinstance(caught.value, InvalidRecordError)


@pytest.mark.parametrize(
    "stream",
    [
        XERIAL_HEADER[:12],
        XERIAL_HEADER + b"\x00\x00",
        XERIAL_HEADER + b"\xff\xff\xff\xff" + b"\x00",
        XERIAL_HEADER + b"\x00\x00\x00\x09" + b"\x00",
        XERIAL_HEADER + b"\x00\x00\x00\x02" + b"\x05\x00",
    ],
    ids=["short header", "short length", "negative length", "length past end", "block lies about size"],
)
def test_malformed_xerial_raises(stream: bytes) -> None:
    with pytest.raises(CompressionError):
        decompress(SNAPPY, stream)


def test_xerial_empty_stream_is_empty() -> None:
    assert decompress(SNAPPY, XERIAL_HEADER) == b""


@pytest.mark.parametrize("codec", [-1, 5, 6, 7])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"data")
    with pytest.raises(CompressionError):
        compress(codec, b"data")


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), data=st.binary(max_size=300))
def test_fuzz_decompress_only_raises_compression_error(codec: int, data: bytes) -> None:
    try:
        decompress(codec, data, max_size=1 << 20)
    except CompressionError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]),
    position=st.integers(0, 10_000),
    value=st.integers(0, 255),
)
def test_fuzz_mutated_streams(codec: int, position: int, value: int) -> None:
    encoded = bytearray(compress(codec, PAYLOADS["text"]))
    encoded[position % len(encoded)] = value
    try:
        decompress(codec, bytes(encoded), max_size=1 << 20)
    except CompressionError:
        pass
