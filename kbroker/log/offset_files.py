"""Files named by a log offset and sealed with a CRC: producer-state snapshots and transaction checkpoints.

Both are derived state tied to one point of a partition log, named `<20-digit offset><suffix>`,
laid out as magic (4 bytes), version (int16), CRC-32C of the body (uint32), body.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from protocol import checksum

_PREFIX = struct.Struct(">4shI")


def offset_path(directory: Path, offset: int, suffix: str) -> Path:
    return directory / f"{offset:020d}{suffix}"


def list_offset_files(directory: Path, suffix: str) -> list[tuple[int, Path]]:
    """(offset, path) of the files with `suffix` in `directory`, newest first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        stem = name[: -len(suffix)]
        if name.endswith(suffix) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found, reverse=True)


def seal(magic: bytes, version: int, body: bytes) -> bytes:
    return _PREFIX.pack(magic, version, checksum.crc32c(body)) + body


def unseal(data: bytes, magic: bytes, version: int, min_body: int, error: type[ValueError], what: str) -> memoryview:
    """The body of a sealed file, or `error` when it is short, of another kind or version, or corrupt."""
    if len(data) < _PREFIX.size + min_body:
        raise error(f"{what} of {len(data)} bytes is truncated")
    found_magic, found_version, crc = _PREFIX.unpack_from(data)
    if found_magic != magic or found_version != version:
        raise error(f"not a version {version} {what} (magic {found_magic!r}, version {found_version})")
    body = memoryview(data)[_PREFIX.size :]
    if checksum.crc32c(body) != crc:
        raise error(f"{what} CRC mismatch")
    return body


def write_offset_file(path: Path, data: bytes, *, fsync: bool) -> Path:
    """Write through a temp file and a rename (fsynced first when asked)."""
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "wb") as file:
        file.write(data)
        if fsync:
            file.flush()
            os.fsync(file.fileno())
    os.replace(temp, path)
    return path


def read_offset_file(path: Path, error: type[ValueError]) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: {exc}") from exc
