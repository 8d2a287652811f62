"""Sending a connection's responses, with fetched record batches going out by os.sendfile.

A Fetch response carries its batches as FileChunk objects (a segment fd, a position
and a size) among the ordinary bytes chunks. uvloop has no loop.sendfile, so the
connection's ResponseWriter does it itself, and only when that is safe: when the
transport has nothing buffered, everything written before is already in the kernel,
so the response's bytes can go straight to the socket (os.writev for bytes,
os.sendfile for file ranges, the socket corked meanwhile so they leave as full
segments).

When the socket fills up in the middle (a slow reader), the rest of that response
is sent as the socket drains: a writability watch on a dup of the socket's fd (uvloop
refuses add_writer on a transport's own fd), with the segment fds dup'd too, so a
segment deleted meanwhile stays readable. Responses completed in the meantime wait
behind it, their file ranges read into bytes at once (`materialize`), and the
connection stops reading requests until it is done (`busy`).

When the transport still holds data, or the connection is TLS, file ranges are read
with one pread each and handed to the transport: the bytes on the wire always come
in response order. So are small responses (file ranges of at most DIRECT_MIN_BYTES in
all, a consumer keeping up with one partition): one pread and one write cost less than
corking, sendfile and uncorking (uvloop makes a socket object for each setsockopt).

A FileChunk's fd stays valid only while the event loop does not return to other work
(a segment may be deleted and its fd closed afterwards): the connection writes a
response's chunks in the same callback that produced them, or materializes them first.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from kbroker.log import FileRegion

log = structlog.get_logger(__name__)

TCP_CORK = getattr(socket, "TCP_CORK", 3)  # Linux
DIRECT_MIN_BYTES = 32 * 1024  # responses with fewer file bytes are read and written through the transport


class FileChunk:
    """A byte range of a segment file inside an encoded response (len() is its size)."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, region: FileRegion) -> None:
        self.fd = region.fd
        self.position = region.position
        self.size = region.size

    @classmethod
    def of(cls, fd: int, position: int, size: int) -> FileChunk:
        chunk = cls.__new__(cls)
        chunk.fd, chunk.position, chunk.size = fd, position, size
        return chunk

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The bytes, with one pread (a file that shrank underneath raises OSError)."""
        data = os.pread(self.fd, self.size, self.position)
        if len(data) != self.size:
            raise OSError(f"short read: {len(data)} of {self.size} bytes")
        return data


def has_file_chunks(chunks: Iterable[Any]) -> bool:
    return any(type(c) is FileChunk for c in chunks)


def file_bytes(chunks: Iterable[Any]) -> int:
    """How many bytes of the chunks are file ranges (0: none)."""
    return sum(c.size for c in chunks if type(c) is FileChunk)


def materialize(chunks: list[Any]) -> list[Any]:
    """The chunks with every FileChunk read into bytes."""
    return [c.read() if type(c) is FileChunk else c for c in chunks]


class ResponseWriter:
    """Writes one connection's responses in order (see the module docstring)."""

    __slots__ = ("transport", "_on_drained", "_rest", "_backlog", "_watch_fd", "_owned")

    def __init__(self, transport: Any, on_drained: Callable[[], None] | None = None) -> None:
        self.transport = transport
        self._on_drained = on_drained  # called when a response sent as the socket drained is done
        self._rest: list[Any] | None = None  # what is left of a response going out by sendfile
        self._backlog: list[Any] = []  # later responses' bytes, to write after it
        self._watch_fd = -1
        self._owned: list[int] = []  # dup'd segment fds held by self._rest

    @property
    def busy(self) -> bool:
        """A response is going out as the socket drains; later ones wait."""
        return self._rest is not None

    def write(self, chunks: list[Any]) -> None:
        """Write one response. Raises OSError when a file range cannot be read (close the connection)."""
        if self._rest is not None:
            self._backlog.extend(materialize(chunks))
            return
        transport = self.transport
        if not has_file_chunks(chunks):
            transport.writelines(chunks)
            return
        if file_bytes(chunks) < DIRECT_MIN_BYTES:
            transport.writelines(materialize(chunks))
            return
        sock = transport.get_extra_info("socket")
        fd = _socket_fd(sock)
        tls = transport.get_extra_info("sslcontext") is not None  # TLS bytes must go through the transport
        if fd is None or tls or transport.get_write_buffer_size() > 0 or transport.is_closing():
            transport.writelines(materialize(chunks))
            return
        rest, failed = _send_corked(sock, fd, chunks)
        if failed:
            transport.writelines(materialize(rest))  # the transport meets the error too and closes
        elif rest:
            self._send_when_writable(fd, rest)

    def _send_when_writable(self, fd: int, rest: list[Any]) -> None:
        try:
            self._watch_fd = os.dup(fd)
            for chunk in rest:
                if type(chunk) is FileChunk:
                    chunk.fd = os.dup(chunk.fd)  # nothing else uses a written response's chunks
                    self._owned.append(chunk.fd)
            asyncio.get_running_loop().add_writer(self._watch_fd, self._resume)
        except (OSError, RuntimeError) as error:
            log.warning("sendfile_wait_failed", error=str(error))
            self.close()
            self.transport.writelines(materialize(rest))
            return
        self._rest = rest

    def _resume(self) -> None:
        rest = self._rest
        if rest is None or self.transport.is_closing():
            self.close()
            return
        rest, failed = _send_corked(self.transport.get_extra_info("socket"), self._watch_fd, rest)
        if failed:
            self.close()
            self.transport.abort()
            return
        if rest:
            self._rest = rest
            return
        backlog = self._backlog
        self.close()
        if backlog:
            self.transport.writelines(backlog)
        if self._on_drained is not None:
            self._on_drained()

    def close(self) -> None:
        """Stop sending and release the dup'd fds (the connection is gone, or the response is done)."""
        if self._watch_fd >= 0:
            try:
                asyncio.get_running_loop().remove_writer(self._watch_fd)
            except RuntimeError:
                pass
            os.close(self._watch_fd)
            self._watch_fd = -1
        for fd in self._owned:
            os.close(fd)
        self._owned = []
        self._rest = None
        self._backlog = []


def _socket_fd(sock: Any) -> int | None:
    if sock is None:
        return None
    try:
        return int(sock.fileno())
    except (OSError, ValueError):
        return None


def _send_corked(sock: Any, fd: int, chunks: list[Any]) -> tuple[list[Any], bool]:
    corked = _cork(sock, True)  # one stream of full segments, not a small packet per bytes chunk
    try:
        return _send_direct(fd, chunks)
    finally:
        if corked:
            _cork(sock, False)


def _cork(sock: Any, on: bool) -> bool:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CORK, 1 if on else 0)
    except (OSError, AttributeError):
        return False
    return True


def _send_direct(fd: int, chunks: list[Any]) -> tuple[list[Any], bool]:
    """Send as much as the socket takes now: (what is left, whether the socket or file failed).

    A partly sent chunk is cut to a new chunk holding its rest.
    """
    pending: list[Any] = []
    for i, chunk in enumerate(chunks):
        if type(chunk) is not FileChunk:
            pending.append(chunk)
            continue
        if pending:
            left, failed = _writev(fd, pending)
            if left:
                return left + chunks[i:], failed
            pending = []
        sent, failed = _sendfile(fd, chunk)
        if sent < chunk.size:
            return [FileChunk.of(chunk.fd, chunk.position + sent, chunk.size - sent), *chunks[i + 1 :]], failed
    if pending:
        return _writev(fd, pending)
    return [], False


def _writev(fd: int, buffers: list[Any]) -> tuple[list[Any], bool]:
    """os.writev until done or the socket is full: (the unsent remainder, whether it failed)."""
    while buffers:
        try:
            sent = os.writev(fd, buffers)
        except BlockingIOError:
            return buffers, False
        except OSError as error:
            log.debug("writev_failed", error=str(error))
            return buffers, True
        buffers = _drop(buffers, sent)
    return [], False


def _drop(buffers: list[Any], sent: int) -> list[Any]:
    for i, buffer in enumerate(buffers):
        size = len(buffer)
        if sent < size:
            return [memoryview(buffer)[sent:], *buffers[i + 1 :]]
        sent -= size
    return []


def _sendfile(fd: int, chunk: FileChunk) -> tuple[int, bool]:
    """(bytes of `chunk` sent, whether it failed): all of it unless the socket filled up or failed."""
    done = 0
    while done < chunk.size:
        try:
            sent = os.sendfile(fd, chunk.fd, chunk.position + done, chunk.size - done)
        except BlockingIOError:
            return done, False
        except OSError as error:
            log.debug("sendfile_failed", error=str(error))
            return done, True
        if sent == 0:  # the file ended early
            return done, True
        done += sent
    return done, False
