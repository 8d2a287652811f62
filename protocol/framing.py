"""Size-prefixed framing: every request and response is int32 length + payload.

FrameReader is sans-io and shaped like asyncio.BufferedProtocol: the transport
asks get_buffer() for memory to receive into and reports buffer_updated(n).
Small frames arrive in a shared staging buffer and are copied out; a frame
larger than the staging buffer gets its own bytearray, which the socket then
fills directly, so a 1 MiB produce request is received with no extra copy.
The length is checked against the maximum before anything is allocated.
Each frame is returned as a bytearray (writable: the broker rewrites batch
offsets in place).
"""

from __future__ import annotations

import struct

_LENGTH = struct.Struct(">i")

DEFAULT_STAGING_SIZE = 64 * 1024


class FrameError(ValueError):
    """The peer sent a frame length that is negative or above the maximum."""


class FrameReader:
    __slots__ = ("max_frame_size", "_staging", "_start", "_end", "_large", "_large_filled", "frames_read")

    def __init__(self, max_frame_size: int, staging_size: int = DEFAULT_STAGING_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._staging = bytearray(staging_size)
        self._start = 0  # first unconsumed byte in staging
        self._end = 0  # end of received bytes in staging
        self._large: bytearray | None = None  # a big frame being received in place
        self._large_filled = 0
        self.frames_read = 0

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        if self._large is not None:
            return memoryview(self._large)[self._large_filled :]
        if self._end == len(self._staging):
            self._compact()
        return memoryview(self._staging)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled < len(self._large):
                return []
            frame = self._large
            self._large = None
            self.frames_read += 1
            return [frame]
        self._end += nbytes
        return self._extract()

    def feed(self, data: bytes) -> list[bytearray]:
        """Convenience for tests and non-buffered transports."""
        frames: list[bytearray] = []
        view = memoryview(data)
        while view:
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            view = view[n:]
            frames.extend(self.buffer_updated(n))
        return frames

    @property
    def pending_bytes(self) -> int:
        if self._large is not None:
            return self._large_filled
        return self._end - self._start

    def _compact(self) -> None:
        remaining = self._end - self._start
        self._staging[:remaining] = self._staging[self._start : self._end]
        self._start, self._end = 0, remaining

    def _extract(self) -> list[bytearray]:
        frames: list[bytearray] = []
        staging = self._staging
        while self._end - self._start >= 4:
            size = _LENGTH.unpack_from(staging, self._start)[0]
            if size < 0 or size > self.max_frame_size:
                raise FrameError(f"frame length {size} is outside 0..{self.max_frame_size}")
            body_start = self._start + 4
            available = self._end - body_start
            if available >= size:
                frames.append(staging[body_start : body_start + size])
                self._start = body_start + size
                self.frames_read += 1
                continue
            if 4 + size > len(staging):
                # Too big for staging: give it a buffer of its own and receive into it.
                large = bytearray(size)
                large[:available] = staging[body_start : self._end]
                self._large, self._large_filled = large, available
                self._start = self._end = 0
            break
        if self._start == self._end:
            self._start = self._end = 0
        return frames


def frame_prefix(size: int) -> bytes:
    return _LENGTH.pack(size)
