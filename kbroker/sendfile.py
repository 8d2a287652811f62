"""Sending fetched record batches from the segment files with os.sendfile.

A Fetch response carries its batches as FileChunk objects (a segment fd, a position
and a size) among the ordinary bytes chunks. uvloop has no loop.sendfile, so
`write_chunks` does it itself, and only when that is safe: when the transport has
nothing buffered, everything written before is already in the kernel, so this
response's bytes go straight to the socket (os.writev for bytes, os.sendfile for
file ranges) in order. When the socket is full (a short write) or the transport
still holds data, the rest is read with one pread per range and handed to the
transport, which queues it behind what it has: the byte order on the wire is
always the response order.

A FileChunk's fd stays valid only while the event loop does not return to other
work (a segment may be deleted and its fd closed afterwards): the connection sends
a response's chunks in the same callback that produced them, or calls `materialize`
to turn them into bytes first.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from typing import Any

import structlog

from kbroker.log import FileRegion

log = structlog.get_logger(__name__)

TCP_CORK = getattr(socket, "TCP_CORK", 3)  # Linux


class FileChunk:
    """A byte range of a segment file inside an encoded response (len() is its size)."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, region: FileRegion) -> None:
        self.fd = region.fd
        self.position = region.position
        self.size = region.size

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


def materialize(chunks: list[Any]) -> list[Any]:
    """The chunks with every FileChunk read into bytes."""
    return [c.read() if type(c) is FileChunk else c for c in chunks]


def write_chunks(transport: Any, chunks: list[Any]) -> None:
    """Write a response's chunks to `transport`, sending file ranges with os.sendfile when it can.

    Raises OSError when a file range cannot be read (the connection must then be closed:
    part of the response may already be on the wire).
    """
    if not has_file_chunks(chunks):
        transport.writelines(chunks)
        return
    sock = transport.get_extra_info("socket")
    fd = _socket_fd(sock)
    tls = transport.get_extra_info("sslcontext") is not None  # TLS bytes must go through the transport
    if fd is None or tls or transport.get_write_buffer_size() > 0 or transport.is_closing():
        transport.writelines(materialize(chunks))
        return
    corked = _cork(sock, True)  # one stream of full segments, not a small packet per bytes chunk
    try:
        rest = _send_direct(fd, chunks)
    finally:
        if corked:
            _cork(sock, False)
    if rest:
        transport.writelines(materialize(rest))


def _socket_fd(sock: Any) -> int | None:
    if sock is None:
        return None
    try:
        return int(sock.fileno())
    except (OSError, ValueError):
        return None


def _cork(sock: Any, on: bool) -> bool:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CORK, 1 if on else 0)
    except (OSError, AttributeError):
        return False
    return True


def _send_direct(fd: int, chunks: list[Any]) -> list[Any]:
    """Send as much as the socket takes now; return what is left (a partly sent chunk cut to its rest)."""
    pending: list[Any] = []
    for i, chunk in enumerate(chunks):
        if type(chunk) is not FileChunk:
            pending.append(chunk)
            continue
        if pending:
            left = _writev(fd, pending)
            if left:
                return left + chunks[i:]
            pending = []
        sent = _sendfile(fd, chunk)
        if sent < chunk.size:
            rest = FileChunk.__new__(FileChunk)
            rest.fd, rest.position, rest.size = chunk.fd, chunk.position + sent, chunk.size - sent
            return [rest, *chunks[i + 1 :]]
    if pending:
        return _writev(fd, pending)
    return []


def _writev(fd: int, buffers: list[Any]) -> list[Any]:
    """os.writev until done or the socket is full; return the unsent remainder."""
    while buffers:
        try:
            sent = os.writev(fd, buffers)
        except (BlockingIOError, InterruptedError):
            return buffers
        except OSError:
            return buffers  # the transport will meet the error too and close the connection
        buffers = _drop(buffers, sent)
    return []


def _drop(buffers: list[Any], sent: int) -> list[Any]:
    for i, buffer in enumerate(buffers):
        size = len(buffer)
        if sent < size:
            return [memoryview(buffer)[sent:], *buffers[i + 1 :]]
        sent -= size
    return []


def _sendfile(fd: int, chunk: FileChunk) -> int:
    """Bytes of `chunk` sent (all of it unless the socket filled up or failed)."""
    done = 0
    while done < chunk.size:
        try:
            sent = os.sendfile(fd, chunk.fd, chunk.position + done, chunk.size - done)
        except (BlockingIOError, InterruptedError):
            return done
        except OSError as error:
            log.debug("sendfile_failed", error=str(error))
            return done
        if sent == 0:  # the file ended early: let pread report it
            return done
        done += sent
    return done
