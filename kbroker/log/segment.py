"""One segment: `<base offset>.log` plus its `.index` and `.timeindex`.

The .log file holds record batches exactly as appended. `size` is the
number of valid bytes: a read never looks past it, and an append writes at
it with pwrite, so a failed write leaves nothing readable.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import structlog

from kbroker.log.checkpoint import fsync_directory
from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError, LogOfflineError
from kbroker.log.files import OpenFiles
from kbroker.log.index import OFFSET_ENTRY, IndexCorruptError, OffsetIndex, TimeIndex, write_index_file
from kbroker.log.scan import (
    MAX_RELATIVE_OFFSET,
    RECOVERY_CHUNK,
    BatchHeader,
    InvalidBatchError,
    find_batch_from,
    find_next_batch,
    iter_headers,
    last_batch_end,
    scan_and_index,
)

log = structlog.get_logger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"


class SegmentCorruptError(KafkaStorageError):
    """The log file itself (not just an index) is invalid outside a recovery scan."""


class AppendedBatch(NamedTuple):
    """A batch inside an append buffer: relative position, size, offsets, max timestamp."""

    relative_position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int


class SegmentRecovery(NamedTuple):
    bytes_scanned: int
    bytes_truncated: int  # lost: cut and not salvaged
    reason: str | None
    salvaged_base: int | None = None  # the new segment holding the intact batches after the damage


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _write_fully(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


class LogSegment:
    """A segment file and its indexes; the active one is the only one appended to."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        fd: int,
        size: int,
        created_ms: int,
        files: OpenFiles | None = None,
    ):
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self._fd = fd
        self.files = files  # the shared bound on open descriptors (None: keep the file open)
        self.size = size
        self.created_ms = created_ms
        name = segment_name(base_offset)
        self.log_path = directory / (name + LOG_SUFFIX)
        self.offset_index = OffsetIndex(directory / (name + INDEX_SUFFIX), base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(directory / (name + TIME_INDEX_SUFFIX), base_offset, config.segment_index_bytes)
        self.indexes_loaded = False
        self.indexes_durable = False  # index files fsynced with every entry (inactive segments)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_index_entry = 0
        self._scan_end = 0
        self.closed = False
        self.renamed_deleted = False
        if files is not None:
            files.opened(self)

    @property
    def fd(self) -> int:
        """The .log file's descriptor, reopened when the open-file bound closed it."""
        fd = self._fd
        if fd < 0:
            return self._reopen()
        files = self.files
        if files is not None and files.pressed:
            files.touch(self)
        return fd

    def _reopen(self) -> int:
        if self.closed:
            raise OSError(errno.EBADF, f"{self.log_path} is closed")
        self._fd = os.open(self.log_path, os.O_RDWR)
        if self.files is not None:
            self.files.opened(self)
        return self._fd

    def release_fd(self) -> None:
        """Close the descriptor until the next use (the open-file bound needs it)."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    # -- opening -------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig, files: OpenFiles | None = None) -> LogSegment:
        """A new empty segment (any stale files with its name are replaced)."""
        name = segment_name(base_offset)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (directory / (name + suffix)).unlink(missing_ok=True)
        fd = os.open(directory / (name + LOG_SUFFIX), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        segment = cls(directory, base_offset, config, fd, 0, now_ms(), files)
        segment.indexes_loaded = True
        return segment

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig, files: OpenFiles | None = None) -> LogSegment:
        """An existing segment; its indexes load (and are checked) on first use."""
        fd = os.open(directory / (segment_name(base_offset) + LOG_SUFFIX), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
        except OSError:
            os.close(fd)
            raise
        segment = cls(directory, base_offset, config, fd, size, now_ms(), files)
        segment.indexes_durable = True  # as found on disk; a rebuild clears this
        return segment

    # -- indexes -------------------------------------------------------
    def ensure_indexes(self) -> None:
        """Load and check the index files, or rebuild them from the log; learn the tail state."""
        if self.indexes_loaded:
            return
        try:
            self.offset_index.load(self.size)
            self.time_index.load(self.base_offset + (1 << 32))
            self._scan_tail()
            self._verify_time_index()
        except (IndexCorruptError, InvalidBatchError) as error:
            log.warning("index_rebuild", segment=str(self.log_path), reason=str(error))
            try:
                self.rebuild_indexes()
            except InvalidBatchError as log_error:
                raise SegmentCorruptError(f"{self.log_path}: {log_error}") from log_error
        self.indexes_loaded = True

    def _scan_tail(self) -> None:
        """Walk the headers after the last offset index entry to learn next offset and max timestamp."""
        entry_offset, position = self.offset_index.last_entry()
        last = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = last if last else (-1, self.base_offset)
        self.next_offset = self.base_offset
        self.bytes_since_index_entry = self.size - position
        for header in iter_headers(self.fd, position, self.size):
            if header.position == position and position > 0 and header.base_offset != entry_offset:
                raise IndexCorruptError(f"{self.offset_index.path.name}: last entry does not match the log")
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.base_offset
            self.next_offset = header.next_offset

    def known_next_offset(self) -> int | None:
        """The offset after the last batch (None: the log is unreadable), reading as little as
        possible: the last offset index entry and the headers after it when the indexes are not loaded."""
        if not self.indexes_loaded:
            peeked = self._peek_next_offset()
            if peeked is not None:
                return peeked
        try:
            self.ensure_indexes()
        except SegmentCorruptError:
            return None
        return self.next_offset

    def _peek_next_offset(self) -> int | None:
        try:
            fd = os.open(self.offset_index.path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                entry = os.pread(fd, OFFSET_ENTRY.size, size - OFFSET_ENTRY.size) if size >= OFFSET_ENTRY.size else b""
            finally:
                os.close(fd)
            relative, position = OFFSET_ENTRY.unpack(entry) if len(entry) == OFFSET_ENTRY.size else (0, 0)
            if position > 0 and position >= self.size:
                return None
            next_offset = self.base_offset
            for header in iter_headers(self.fd, position, self.size):
                if header.position == position and position > 0 and header.base_offset != self.base_offset + relative:
                    return None
                next_offset = header.next_offset
            return next_offset
        except (OSError, InvalidBatchError):
            return None

    def _verify_time_index(self) -> None:
        last = self.time_index.last_entry()
        if last is None:
            return
        timestamp, offset = last
        header = self._find_batch(offset)
        if header is None or header.base_offset != offset or header.max_timestamp != timestamp:
            raise IndexCorruptError(f"{self.time_index.path.name}: last entry does not match the log")

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes by walking every batch header of the log; all or nothing."""
        saved = self._save_state()
        try:
            error = self._scan(verify_crc=False)
            if error is not None:
                raise error
        except BaseException:
            self._restore_state(saved)
            raise
        try:
            self.write_indexes(fsync=False)
        except OSError as write_error:  # derived data: written again at the next flush or close
            log.warning("index_write_failed", segment=str(self.log_path), error=str(write_error))

    def index_in_memory(self) -> None:
        """Build both indexes from the log in memory only, writing no file: for a segment not yet
        in its place (the cleaner's, whose index file names still belong to the segment it replaces)."""
        error = self._scan(verify_crc=False)
        if error is not None:
            raise SegmentCorruptError(f"{self.log_path}: {error}")

    def _scan(self, verify_crc: bool) -> InvalidBatchError | None:
        """Fresh indexes and tail state from a walk of the whole file; the error that stopped it."""
        self.offset_index = OffsetIndex(self.offset_index.path, self.base_offset, self.config.segment_index_bytes)
        self.time_index = TimeIndex(self.time_index.path, self.base_offset, self.config.segment_index_bytes)
        self.indexes_durable = False
        result = scan_and_index(
            self.fd,
            self.size,
            self.base_offset,
            self.config.index_interval_bytes,
            self.offset_index,
            self.time_index,
            verify_crc=verify_crc,
        )
        self.next_offset = result.next_offset
        self.max_timestamp = result.max_timestamp
        self.offset_of_max_timestamp = result.offset_of_max_timestamp
        self.bytes_since_index_entry = result.bytes_since_index_entry
        self._scan_end = result.valid_end
        self.indexes_loaded = True
        return result.error

    def _save_state(self) -> tuple:
        return (
            self.offset_index,
            self.time_index,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.bytes_since_index_entry,
            self.indexes_durable,
            self.indexes_loaded,
        )

    def _restore_state(self, saved: tuple) -> None:
        (
            self.offset_index,
            self.time_index,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.bytes_since_index_entry,
            self.indexes_durable,
            self.indexes_loaded,
        ) = saved

    def _track(self, position: int, size: int, base_offset: int, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, base_offset
        if self.bytes_since_index_entry >= self.config.index_interval_bytes:
            self.offset_index.append(base_offset, position)
            if self.max_timestamp >= 0:
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index_entry = 0
        self.bytes_since_index_entry += size
        self.next_offset = last_offset + 1

    def write_indexes(self, fsync: bool) -> None:
        """Write index entries not yet in the files (in the calling thread)."""
        if not self.indexes_loaded:
            return  # the files on disk are all there is
        for index in (self.offset_index, self.time_index):
            position, data = index.pending()
            count = len(index)
            if data or fsync or index.written == 0:
                write_index_file(index.path, position, data, fsync)
            index.mark_written(count)

    def on_become_inactive(self) -> None:
        """Record the final max timestamp and write the indexes (called on roll)."""
        self.ensure_indexes()
        self.indexes_durable = False
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        try:
            self.write_indexes(fsync=False)
        except OSError as error:  # derived data: the next flush or a recovery writes it
            log.warning("index_write_failed", segment=str(self.log_path), error=str(error))

    # -- recovery ------------------------------------------------------
    def recover(self) -> SegmentRecovery:
        """Check every batch (CRC, offsets increasing from the base offset), rebuild the indexes, cut at the first bad byte."""
        error = self._scan(verify_crc=True)
        valid_end = self._scan_end
        cut = self.size - valid_end
        salvaged = self._salvage(valid_end) if error is not None else None
        lost = cut if salvaged is None else salvaged[1] - valid_end
        if cut:
            os.ftruncate(self.fd, valid_end)
            self.size = valid_end
        self.write_indexes(fsync=True)
        os.fsync(self.fd)
        self.indexes_durable = True
        return SegmentRecovery(valid_end, lost, error.reason if error else None, salvaged and salvaged[0])

    def _salvage(self, damaged_at: int) -> tuple[int, int] | None:
        """Copy the intact batches after a damaged range into a new segment named by the first one's
        base offset, before the cut: (its base offset, where it started here), or None when there are none."""
        found = find_next_batch(
            self.fd, damaged_at + 1, self.size, self.next_offset, self.base_offset + MAX_RELATIVE_OFFSET
        )
        if found is None:
            return None
        position, base = found
        path = self.directory / (segment_name(base) + LOG_SUFFIX)
        if path.exists():
            return None  # copied by an earlier recovery that stopped before the cut; it is loaded already
        temp = path.with_name(path.name + ".tmp")
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for at in range(position, self.size, RECOVERY_CHUNK):
                chunk = os.pread(self.fd, min(RECOVERY_CHUNK, self.size - at), at)
                if not chunk:
                    raise OSError(errno.EIO, f"{self.log_path}: short read at {at}")
                _write_fully(out, chunk, at - position)
            os.fsync(out)
        finally:
            os.close(out)
        temp.rename(path)
        fsync_directory(self.directory)
        return base, position

    # -- append --------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[AppendedBatch]) -> None:
        """Write `data` (whole batches) at the end; on failure cut back and raise KafkaStorageError."""
        position = self.size
        try:
            _write_fully(self.fd, data, position)
        except OSError as error:
            try:
                os.ftruncate(self.fd, position)
            except OSError as truncate_error:
                raise LogOfflineError(f"{self.log_path}: append failed ({error}), cut failed too") from truncate_error
            raise KafkaStorageError(f"{self.log_path}: append failed: {error}") from error
        self.size = position + len(data)
        for batch in batches:
            self._track(
                position + batch.relative_position,
                batch.size,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )

    def index_room(self) -> int:
        """How many more index entries fit before the segment must roll."""
        return min(
            self.offset_index.max_entries - len(self.offset_index), self.time_index.max_entries - len(self.time_index)
        )

    # -- reads ---------------------------------------------------------
    def _find_batch(self, offset: int) -> BatchHeader | None:
        """Header of the first batch whose last offset is >= offset, or None."""
        entry_offset, position = self.offset_index.lookup(offset)
        return find_batch_from(self.fd, position, self.size, offset, entry_offset if position > 0 else None)

    def find_batch(self, offset: int) -> BatchHeader | None:
        """Header of the first batch whose last offset is >= offset, or None (past this segment)."""
        self.ensure_indexes()
        try:
            return self._find_batch(offset)
        except (IndexCorruptError, InvalidBatchError) as error:
            log.warning("index_rebuild", segment=str(self.log_path), reason=str(error))
        try:
            self.rebuild_indexes()
            return self._find_batch(offset)
        except (IndexCorruptError, InvalidBatchError) as error:
            raise SegmentCorruptError(f"{self.log_path}: unreadable: {error}") from error

    def read(
        self, offset: int, max_bytes: int, max_position: int, min_one_batch: bool
    ) -> tuple[BatchHeader, int] | None:
        """(first batch, byte count) of whole batches from the batch holding `offset`.

        At most `max_bytes` unless the first batch alone is larger (then exactly that
        batch when `min_one_batch`), never past `max_position`.
        """
        first = self.find_batch(offset)
        limit = min(max_position, self.size)
        if first is None or first.position >= limit:
            return None
        wanted_end = first.position + max(max_bytes, 0)
        if wanted_end >= limit:
            return first, limit - first.position
        if first.end > wanted_end:
            return (first, first.size) if min_one_batch else None
        start = max(first.end, self.offset_index.floor_position(wanted_end))
        try:
            end = last_batch_end(self._fd, start, limit, wanted_end)  # open: find_batch just used it
        except InvalidBatchError as error:
            raise SegmentCorruptError(f"{self.log_path}: unreadable: {error}") from error
        return first, end - first.position

    def position_of(self, offset: int) -> int:
        """File position of the batch holding `offset` (the size when past the end)."""
        header = self.find_batch(offset)
        return self.size if header is None else header.position

    def find_by_timestamp(self, timestamp: int, start_offset: int) -> BatchHeader | None:
        """The first batch at or after `start_offset` whose max timestamp is >= `timestamp`."""
        self.ensure_indexes()
        if self.max_timestamp < timestamp:
            return None
        first = self.find_batch(max(self.time_index.lookup_below(timestamp), start_offset))
        if first is None:
            return None
        try:
            for header in iter_headers(self.fd, first.position, self.size):
                if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
                    return header
        except InvalidBatchError as error:
            raise SegmentCorruptError(f"{self.log_path}: unreadable: {error}") from error
        return None

    def largest_timestamp(self) -> int:
        """Max record timestamp, or the file's modification time when no batch has one (retention)."""
        self.ensure_indexes()
        if self.max_timestamp > 0:
            return self.max_timestamp
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def pread(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def truncate_to(self, offset: int) -> int:
        """Cut the batches whose last offset is at or past `offset` (file and indexes); the bytes cut."""
        header = self.find_batch(offset)
        if header is None:
            return 0
        cut = self.size - header.position
        os.ftruncate(self.fd, header.position)
        self.size = header.position
        self.rebuild_indexes()  # the entries past the cut go; a header walk of what is left
        return cut

    # -- lifecycle -----------------------------------------------------
    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.files is not None:
                self.files.forget(self)
            self.release_fd()

    def mark_deleted(self) -> None:
        """Rename the files to *.deleted; the fd stays open for readers until `destroy`.

        From then on `destroy` removes only the renamed files: a segment replaced by a
        cleaned one with the same base offset must not take the new files with it.
        """
        if self.files is not None:  # open now, outside the bound: the renamed file cannot be reopened by name
            if self._fd < 0 and not self.closed:
                self._reopen()
            self.files.forget(self)
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            try:
                path.rename(path.with_name(path.name + DELETED_SUFFIX))
            except FileNotFoundError:
                pass
        self.renamed_deleted = True

    def destroy(self) -> None:
        """Close the fd and remove the files (only the *.deleted ones once renamed)."""
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            if not self.renamed_deleted:
                path.unlink(missing_ok=True)
            path.with_name(path.name + DELETED_SUFFIX).unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
