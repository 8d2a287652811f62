"""Size-prefixed framing: every request and response is int32 length + payload.

FrameReader is sans-io and shaped like asyncio.BufferedProtocol: the transport asks
get_buffer() for memory to receive into and reports buffer_updated(n).

Memory follows the bytes that actually arrive, never the length a peer announces:

- Between frames a reader holds nothing. Reads land in a staging buffer that many
  readers may share (one event loop receives into it and the reader consumes it before
  the next read), so an idle connection costs no buffer at all. Frames that arrived
  whole are copied out of it.
- A frame that has started but not finished gets a buffer of its own, and the socket
  receives straight into it. Up to `LAZY_FRAME_SIZE` (64 KiB) it is a bytearray sized
  to what has arrived (at least `initial_frame_buffer`, 16 KiB) that doubles as it
  fills. A larger frame gets an anonymous private memory map of the announced length:
  the kernel gives it pages only as bytes are written, so it costs what has arrived,
  never what was announced, and nothing is copied as it grows (a 1 MiB produce request
  is received with no copy at all); the window handed to the socket doubles as it fills.
- Maps of finished frames are reused for later large frames when nothing references them
  any more (`MapRecycler`, at most 32 MiB kept): their pages are already backed, so a steady
  stream of 1 MiB produce requests costs no page faults.
- Every byte a frame may hold (a bytearray's size, a map's window) is asked of a
  `FrameMemory` first (a broker-wide pool). When it grants nothing the reader is
  `starved`: the owner stops reading until memory is released. A frame handed out
  holds exactly len(frame) reserved bytes; whoever is done with it gives them back
  with `memory.release(len(frame))`.

The length is checked against `max_frame_size` before anything is allocated. Each
frame is returned writable (the broker rewrites batch offsets in place): a bytearray,
or a memoryview of its map.
"""

from __future__ import annotations

import mmap
import struct
from typing import Protocol

_LENGTH = struct.Struct(">i")

DEFAULT_STAGING_SIZE = 64 * 1024
INITIAL_FRAME_BUFFER = 16 * 1024
LAZY_FRAME_SIZE = 64 * 1024  # larger frames are received into a memory map that gets pages as bytes arrive
STARVED_STEP = 4096  # what a starved reader receives into if the transport reads anyway


class FrameError(ValueError):
    """The peer sent a frame length that is negative or above the maximum."""

    def __init__(self, message: str, size: int, first_bytes: bytes) -> None:
        super().__init__(message)
        self.size = size
        self.first_bytes = first_bytes  # the 4 length bytes as sent (to tell HTTP or TLS apart)


class FrameMemory(Protocol):
    def reserve(self, wanted: int, minimum: int) -> int:
        """Grant between `minimum` and `wanted` bytes, or 0 when fewer than `minimum` are free."""
        ...

    def release(self, size: int) -> None: ...


class Unbounded:
    """A FrameMemory that grants everything (for tools and tests)."""

    def reserve(self, wanted: int, minimum: int) -> int:
        return wanted

    def release(self, size: int) -> None:
        return None


Frame = bytearray | memoryview


class MapRecycler:
    """Maps of finished frames kept for the next large frames: their pages are already backed, so a
    reused map costs no page faults (a fresh one faults in every 4 KiB page as bytes arrive). A map is
    taken back only when nothing references its bytes any more (resizing a map with buffers exported
    fails), and at most `keep_bytes` are kept."""

    __slots__ = ("keep_bytes", "kept_bytes", "_free")

    def __init__(self, keep_bytes: int = 32 * 1024 * 1024) -> None:
        self.keep_bytes = keep_bytes
        self.kept_bytes = 0
        self._free: list[mmap.mmap] = []

    def take(self, size: int) -> mmap.mmap:
        free = self._free
        for i, candidate in enumerate(free):
            if size <= len(candidate) <= 2 * size:
                del free[i]
                self.kept_bytes -= len(candidate)
                return candidate
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)

    def give(self, frame: Frame) -> None:
        """Take back a finished frame's map if it was one and nothing else holds its bytes."""
        if type(frame) is not memoryview or type(frame.obj) is not mmap.mmap:
            return
        region = frame.obj
        frame.release()
        if self.kept_bytes + len(region) > self.keep_bytes:
            return
        try:
            region.resize(len(region))  # raises while any view of its bytes is alive
        except (BufferError, OSError, SystemError):
            return
        self._free.append(region)
        self.kept_bytes += len(region)


class FrameReader:
    __slots__ = (
        "max_frame_size",
        "memory",
        "initial_frame_buffer",
        "_staging",
        "_prefix",
        "_frame",
        "_size",
        "_filled",
        "_reserved",
        "_staged",
        "maps",
        "starved",
        "frames_read",
    )

    def __init__(
        self,
        max_frame_size: int,
        staging: bytearray | None = None,
        memory: FrameMemory | None = None,
        *,
        staging_size: int = DEFAULT_STAGING_SIZE,
        initial_frame_buffer: int = INITIAL_FRAME_BUFFER,
        maps: MapRecycler | None = None,
    ) -> None:
        self.max_frame_size = max_frame_size
        self.memory: FrameMemory = memory if memory is not None else Unbounded()
        self.initial_frame_buffer = initial_frame_buffer
        self._staging = staging if staging is not None else bytearray(staging_size)
        self._prefix = b""  # up to 3 bytes of a length that arrived without the rest
        self._frame: bytearray | mmap.mmap | None = None  # the frame being received
        self._size = 0  # its announced length
        self._filled = 0  # bytes of it received
        self._reserved = 0  # bytes of it reserved from memory (what it may hold so far)
        self._staged = 0  # prefix bytes copied to the staging buffer's start by get_buffer
        self.maps = maps if maps is not None else MapRecycler()
        self.starved = False  # the frame's reservation is full and memory granted nothing more
        self.frames_read = 0

    # ----- the BufferedProtocol side

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        frame = self._frame
        if frame is not None:
            if self._filled == self._reserved:
                self._grow(STARVED_STEP)  # the owner should have paused; take a small forced step
                frame = self._frame
                assert frame is not None
            return memoryview(frame)[self._filled : self._reserved]
        prefix = self._prefix
        self._staged = len(prefix)
        if prefix:
            self._staging[: len(prefix)] = prefix
        return memoryview(self._staging)[len(prefix) :]

    def buffer_updated(self, nbytes: int) -> list[Frame]:
        frame = self._frame
        if frame is None:
            return self._extract(self._staged + nbytes)
        self._filled += nbytes
        if self._filled < self._size:
            if self._filled == self._reserved:
                self._grow(0)
            return []
        self._frame = None
        self._reserved = 0
        self.frames_read += 1
        return [frame if type(frame) is bytearray else memoryview(frame)[: self._size]]

    def feed(self, data: bytes) -> list[Frame]:
        """Convenience for tests and non-buffered transports."""
        frames: list[Frame] = []
        view = memoryview(data)
        while view:
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            view = view[n:]
            del target
            frames.extend(self.buffer_updated(n))
        return frames

    # ----- state

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished frame received so far (0 between frames)."""
        if self._frame is not None:
            return self._filled
        return len(self._prefix)

    @property
    def held_bytes(self) -> int:
        """Bytes reserved from `memory` for the unfinished frame."""
        return self._reserved

    def retry_memory(self) -> bool:
        """Try again to grow a starved frame's reservation; True when it can receive again."""
        if self.starved:
            self._grow(0)
        return not self.starved

    def release(self) -> None:
        """Give back what the unfinished frame holds (the connection is closing)."""
        if self._frame is not None:
            self.memory.release(self._reserved)
            self._frame = None
            self._reserved = 0
        self._prefix = b""
        self.starved = False

    # ----- internals

    def _extract(self, end: int) -> list[Frame]:
        frames: list[Frame] = []
        staging = self._staging
        start = 0
        self._prefix = b""
        while end - start >= 4:
            size = _LENGTH.unpack_from(staging, start)[0]
            if size < 0 or size > self.max_frame_size:
                raise FrameError(
                    f"frame length {size} is outside 0..{self.max_frame_size}", size, bytes(staging[start : start + 4])
                )
            body = start + 4
            available = end - body
            if available >= size:
                self.memory.reserve(size, 0)  # already received: accounted even beyond the limit
                frames.append(staging[body : body + size])
                self.frames_read += 1
                start = body + size
                continue
            self._start_frame(size, staging, body, end)
            return frames
        self._prefix = bytes(staging[start:end])
        return frames

    def _start_frame(self, size: int, staging: bytearray, body: int, end: int) -> None:
        available = end - body
        wanted = min(size, max(2 * available, self.initial_frame_buffer))
        granted = self.memory.reserve(wanted, available + 1)
        if granted == 0:  # keep what arrived even so; receive more once memory is free
            granted = self.memory.reserve(available, 0)
            self.starved = True
        frame: bytearray | mmap.mmap
        if size > LAZY_FRAME_SIZE:
            frame = self.maps.take(size)
        else:
            frame = bytearray(granted)
        frame[:available] = staging[body:end]
        self._frame, self._size, self._filled, self._reserved = frame, size, available, granted
        if available == granted and not self.starved:
            self._grow(0)

    def _grow(self, forced: int) -> None:
        frame = self._frame
        assert frame is not None
        reserved = self._reserved
        wanted = min(self._size, max(2 * reserved, self.initial_frame_buffer)) - reserved
        extra = self.memory.reserve(wanted, 1)
        self.starved = extra == 0
        if self.starved and forced:
            extra = self.memory.reserve(min(forced, self._size - reserved), 0)
        if not extra:
            return
        self._reserved = reserved + extra
        if type(frame) is bytearray:
            grown = bytearray(reserved + extra)
            grown[:reserved] = frame
            self._frame = grown


def frame_prefix(size: int) -> bytes:
    return _LENGTH.pack(size)
