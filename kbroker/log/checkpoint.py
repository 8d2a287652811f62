"""Atomic small files: checkpoints (Kafka's text format) and metadata.

A checkpoint file reads:

    0                      <- version
    2                      <- entry count
    orders 0 1200          <- topic partition offset
    orders 1 1184
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

CHECKPOINT_VERSION = 0


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


MAX_FILE_NAME = 255  # NAME_MAX of common file systems


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync it, rename it over `path`, fsync the directory."""
    temp = path.with_name(path.name[: MAX_FILE_NAME - 4] + ".tmp")  # a 249-character topic's .json still fits
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_directory(path.parent)


def write_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_atomically(path, ("\n".join(lines) + "\n").encode())


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """The offsets in a checkpoint file; empty (and a warning) when it is missing or malformed."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    try:
        if int(lines[0]) != CHECKPOINT_VERSION:
            raise ValueError(f"version {lines[0]}")
        count = int(lines[1])
        entries = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
        if len(entries) != count:
            raise ValueError(f"{len(entries)} entries, header says {count}")
        return entries
    except (ValueError, IndexError) as error:
        log.warning("checkpoint_unreadable", path=str(path), error=str(error))
        return {}
