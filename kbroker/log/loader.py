"""Startup of one partition directory: open its segments, recover after an unclean stop.

After a clean shutdown only the active segment's tail is read (and a bad
one still falls back to recovery). After an unclean stop every segment from
the one holding the recovery point onwards is scanned: header, magic,
CRC-32C, offsets strictly increasing (gaps allowed); indexes are rebuilt; a
damaged segment is cut at its first invalid byte. The segments after a
damaged or missing one are kept: the lost range becomes a gap, logged with
its offsets (`log_offset_gaps`), and reads skip it to the next batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from kbroker.log.config import LogConfig
from kbroker.log.files import OpenFiles
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
    segments_damaged: int = 0  # cut at an invalid byte though not the newest
    segments_salvaged: int = 0  # new segments holding the intact batches found after a damaged range
    gaps: list[tuple[int, int]] = field(default_factory=list)  # [from, to) offsets between segments
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
    files: OpenFiles | None = None,
) -> tuple[list[LogSegment], RecoveryStats]:
    """Open (and when needed recover) the segments of `directory`; the list is never empty."""
    started = time.perf_counter()
    segments = []
    try:
        for base in _remove_leftovers(directory):
            segments.append(LogSegment.open(directory, base, config, files))
    except OSError:
        for segment in segments:
            segment.close()
        raise
    stats = RecoveryStats()
    if not segments:
        segments.append(LogSegment.create(directory, log_start_offset, config, files))
        return segments, stats
    if clean_shutdown:
        try:
            segments[-1].ensure_indexes()
            _log_gaps(directory, segments, stats)
            return segments, stats
        except SegmentCorruptError as error:
            log.warning("clean_shutdown_log_invalid", directory=str(directory), error=str(error))
            recovery_point = min(recovery_point, segments[-1].base_offset)
    _recover(segments, recovery_point, stats)
    _log_gaps(directory, segments, stats)
    stats.duration_ms = (time.perf_counter() - started) * 1000
    log.info(
        "log_recovered",
        directory=str(directory),
        recovery_point=recovery_point,
        segments_scanned=stats.segments_scanned,
        bytes_scanned=stats.bytes_scanned,
        bytes_truncated=stats.bytes_truncated,
        segments_deleted=stats.segments_deleted,
        segments_damaged=stats.segments_damaged,
        segments_salvaged=stats.segments_salvaged,
        reason=stats.reason,
        duration_ms=round(stats.duration_ms, 3),
        scan_mb_per_s=round(stats.bytes_scanned / max(stats.duration_ms, 1e-3) / 1000, 1),
    )
    return segments, stats


def _log_gaps(directory: Path, segments: list[LogSegment], stats: RecoveryStats) -> None:
    """Find the offsets missing between consecutive segments and log them in one event.

    This broker has no compaction yet, so a segment ending below the next one's base offset
    means data was lost there (a deleted or damaged segment). Reads skip the gap."""
    for previous, segment in zip(segments, segments[1:], strict=False):
        end = previous.known_next_offset()
        if end is not None and end < segment.base_offset:
            stats.gaps.append((end, segment.base_offset))
    if stats.gaps:
        log.error(
            "log_offset_gaps",
            directory=str(directory),
            gaps=[list(gap) for gap in stats.gaps],
            offsets_missing=sum(to - start for start, to in stats.gaps),
        )


def _recover(segments: list[LogSegment], recovery_point: int, stats: RecoveryStats) -> None:
    """Scan from the segment holding the recovery point. A damaged segment is cut at its first
    invalid byte, and the intact batches found after the damage move to a new segment of their
    own (scanned next); the later segments stay. What was lost becomes a gap."""
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = i
    expected = None
    if first > 0:
        previous = segments[first - 1]
        previous.ensure_indexes()
        expected = previous.next_offset
    doomed: list[LogSegment] = []
    i = first
    while i < len(segments):
        segment = segments[i]
        i += 1
        if expected is not None and segment.base_offset < expected:
            # offsets already in the log before it: not a log this broker wrote
            stats.reason = f"segment {segment.base_offset} overlaps offsets below {expected}"
            doomed.append(segment)
            continue
        result = segment.recover()
        stats.segments_scanned += 1
        stats.bytes_scanned += result.bytes_scanned
        stats.bytes_truncated += result.bytes_truncated
        if result.salvaged_base is not None:  # intact batches after the damage: scanned next
            salvaged = LogSegment.open(segment.directory, result.salvaged_base, segment.config, segment.files)
            segments.insert(i, salvaged)
            stats.segments_salvaged += 1
        if result.reason is not None:
            stats.reason = result.reason
            if segment is not segments[-1]:
                stats.segments_damaged += 1
        expected = segment.next_offset
    # an empty segment stays only as the active one (its base offset keeps the log end offset)
    doomed += [s for s in segments[:-1] if s.size == 0 and s not in doomed]
    for segment in doomed:
        stats.bytes_truncated += segment.size
        stats.segments_deleted += 1
        segments.remove(segment)
        segment.destroy()
