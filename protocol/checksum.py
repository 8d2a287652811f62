"""CRC-32C, the checksum of record batches and of kbroker's own state files.

The `crc32c` package reads its own version through importlib.metadata when it is imported (about a
tenth of kbroker's start-up), so it loads at the first checksum rather than at start-up: use
`checksum.crc32c(data)`; after the first call that is the C function itself, found in this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crc32c import crc32c as crc32c


def __getattr__(name: str) -> Any:
    if name != "crc32c":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from crc32c import crc32c  # late: see the module docstring

    globals()["crc32c"] = crc32c  # from now on a plain module attribute: no further call comes here
    return crc32c
