"""Swapping cleaned segments in, crash-safely (Kafka's `.cleaned` / `.swap` rename protocol).

The cleaner writes a group of old segments, cleaned, to `<base>.log.cleaned` and fsyncs it;
renaming it to `<base>.log.swap` (then fsyncing the directory) marks it complete. The
partition then renames the replaced segments' files to `*.deleted` (their fds stay open for
fetches that hold a region of them) and the swap file to `<base>.log`. Whatever point a
crash stops this at, a start-up finds one of:

- a `.cleaned` file: the round did not finish; it goes, with any `.swap` at or above it;
- a `.swap` file: complete; every `.log` whose base offset lies in its offset range is one it
  replaces and goes (with that segment's index files), then the swap becomes the `.log`.

A segment's indexes are derived data: the new segment's are rebuilt from its log.
"""

from __future__ import annotations

import os
from pathlib import Path

import structlog

from kbroker.log.checkpoint import fsync_directory
from kbroker.log.scan import InvalidBatchError, iter_headers

log = structlog.get_logger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_LOG = ".log"
_SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex")


def _base(name: str, suffix: str) -> int | None:
    stem = name[: -len(suffix)]
    return int(stem) if name.endswith(suffix) and len(stem) == 20 and stem.isdigit() else None


def cleaned_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{_LOG}{CLEANED_SUFFIX}"


def swap_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{_LOG}{SWAP_SUFFIX}"


def mark_complete(cleaned: Path) -> Path:
    """`.cleaned` -> `.swap` (the cleaned file is fsynced already); return the swap path."""
    swap = cleaned.with_name(cleaned.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
    cleaned.rename(swap)
    fsync_directory(cleaned.parent)
    return swap


def install(swap: Path) -> Path:
    """`<base>.log.swap` -> `<base>.log` (the replaced files were renamed away first)."""
    final = swap.with_name(swap.name[: -len(SWAP_SUFFIX)])
    swap.rename(final)
    return final


def _next_offset(path: Path) -> int | None:
    fd = os.open(path, os.O_RDONLY)
    try:
        last = None
        try:
            for header in iter_headers(fd, 0, os.fstat(fd).st_size):
                last = header.next_offset
        except InvalidBatchError:
            return None
        return last
    finally:
        os.close(fd)


def recover_swaps(directory: Path) -> int:
    """Finish or undo an interrupted swap in `directory` (start-up, before segments load); return swaps installed."""
    names = os.listdir(directory)
    cleaned = [b for n in names if (b := _base(n, _LOG + CLEANED_SUFFIX)) is not None]
    swaps = sorted(b for n in names if (b := _base(n, _LOG + SWAP_SUFFIX)) is not None)
    lowest_cleaned = min(cleaned, default=None)
    for base in cleaned:
        cleaned_path(directory, base).unlink(missing_ok=True)
    installed = 0
    for base in swaps:
        swap = swap_path(directory, base)
        next_offset = None if lowest_cleaned is not None and base >= lowest_cleaned else _next_offset(swap)
        if next_offset is None:  # unfinished, or empty: the segments it replaces stay as they are
            swap.unlink(missing_ok=True)
            log.info("cleaned_segment_discarded", directory=str(directory), base_offset=base)
            continue
        replaced = sorted(
            b for n in os.listdir(directory) if (b := _base(n, _LOG)) is not None and base <= b < next_offset
        )
        for old in replaced:
            for suffix in _SEGMENT_FILES:
                (directory / f"{old:020d}{suffix}").unlink(missing_ok=True)
        for suffix in (".index", ".timeindex"):
            (directory / f"{base:020d}{suffix}").unlink(missing_ok=True)
        install(swap)
        installed += 1
        log.info("cleaned_segment_installed", directory=str(directory), base_offset=base, replaced=replaced)
    if cleaned or swaps:
        fsync_directory(directory)
    return installed
