"""Startup of one partition directory: open its segments, recover after an unclean stop.

After a clean shutdown only the active segment's tail is read (and a bad
one still falls back to recovery). After an unclean stop every segment from
the one holding the recovery point onwards is scanned: header, magic,
CRC-32C, offsets increasing; indexes are rebuilt; the log is cut at the first
invalid byte and every later segment is removed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from kbroker.log.config import LogConfig
from kbroker.log.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    SegmentCorruptError,
)

log = structlog.get_logger(__name__)

_LEFTOVER_SUFFIXES = (DELETED_SUFFIX, ".cleaned", ".swap", ".tmp")


@dataclass(slots=True)
class RecoveryStats:
    """What a load did; all zero after a clean shutdown."""

    segments_scanned: int = 0
    bytes_scanned: int = 0
    bytes_truncated: int = 0
    segments_deleted: int = 0
    duration_ms: float = 0.0
    reason: str | None = None


def _base_offset(path: Path) -> int | None:
    stem = path.name[: -len(LOG_SUFFIX)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def _remove_leftovers(directory: Path) -> list[int]:
    """Delete temporary and half-deleted files; return the base offsets of the .log files."""
    bases = []
    logs = set()
    for path in directory.iterdir():
        if path.name.endswith(_LEFTOVER_SUFFIXES):
            path.unlink(missing_ok=True)
        elif path.name.endswith(LOG_SUFFIX) and (base := _base_offset(path)) is not None:
            bases.append(base)
            logs.add(path.name[: -len(LOG_SUFFIX)])
    for path in directory.iterdir():
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            if path.name.endswith(suffix) and path.name[: -len(suffix)] not in logs:
                path.unlink(missing_ok=True)
    return sorted(bases)


def load_segments(
    directory: Path,
    config: LogConfig,
    *,
    log_start_offset: int,
    recovery_point: int,
    clean_shutdown: bool,
) -> tuple[list[LogSegment], RecoveryStats]:
    """Open (and when needed recover) the segments of `directory`; the list is never empty."""
    started = time.perf_counter()
    segments = [LogSegment.open(directory, base, config) for base in _remove_leftovers(directory)]
    stats = RecoveryStats()
    if not segments:
        segments.append(LogSegment.create(directory, log_start_offset, config))
        return segments, stats
    if clean_shutdown:
        try:
            segments[-1].ensure_indexes()
            return segments, stats
        except SegmentCorruptError as error:
            log.warning("clean_shutdown_log_invalid", directory=str(directory), error=str(error))
            recovery_point = min(recovery_point, segments[-1].base_offset)
    _recover(segments, recovery_point, stats)
    stats.duration_ms = (time.perf_counter() - started) * 1000
    log.info(
        "log_recovered",
        directory=str(directory),
        recovery_point=recovery_point,
        segments_scanned=stats.segments_scanned,
        bytes_scanned=stats.bytes_scanned,
        bytes_truncated=stats.bytes_truncated,
        segments_deleted=stats.segments_deleted,
        reason=stats.reason,
        duration_ms=round(stats.duration_ms, 3),
        scan_mb_per_s=round(stats.bytes_scanned / max(stats.duration_ms, 1e-3) / 1000, 1),
    )
    return segments, stats


def _recover(segments: list[LogSegment], recovery_point: int, stats: RecoveryStats) -> None:
    """Scan from the segment holding the recovery point; cut at the first invalid byte."""
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = i
    expected = None
    if first > 0:
        previous = segments[first - 1]
        previous.ensure_indexes()
        expected = previous.next_offset
    i = first
    while i < len(segments):
        segment = segments[i]
        if expected is not None and segment.base_offset != expected:
            stats.reason = f"segment {segment.base_offset} does not follow offset {expected}"
            i -= 1
            break
        result = segment.recover()
        stats.segments_scanned += 1
        stats.bytes_scanned += result.bytes_scanned
        stats.bytes_truncated += result.bytes_truncated
        if result.reason is not None:
            stats.reason = result.reason
            break
        expected = segment.next_offset
        i += 1
    for segment in segments[i + 1 :]:
        stats.bytes_truncated += segment.size
        stats.segments_deleted += 1
        segment.destroy()
    del segments[i + 1 :]
    # an empty trailing segment stays only as the active one
    while len(segments) > 1 and segments[-1].size == 0:
        segments.pop().destroy()
        stats.segments_deleted += 1
