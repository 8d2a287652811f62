"""Producer id allocation (Kafka's ProducerIdManager): ids handed out from persisted blocks.

Kafka's controller hands brokers blocks of 1000 producer ids and records each
block durably before any id of it is used, so an id is never issued twice, even
across restarts (the unused rest of a block is skipped). kbroker does the same
with `<data-dir>/producer-id-block`, a small JSON file naming the last block,
replaced atomically (temp file, fsync, rename, fsync of the directory).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from kbroker.log import KafkaStorageError
from kbroker.log.checkpoint import write_atomically

if TYPE_CHECKING:
    pass

log = structlog.get_logger(__name__)

BLOCK_FILE = "producer-id-block"
BLOCK_SIZE = 1000
FORMAT_VERSION = 1


class ProducerIdManager:
    """Hands out producer ids; each new block is on disk before its first id is returned."""

    def __init__(self, data_dir: Path | str, block_size: int = BLOCK_SIZE) -> None:
        self.path = Path(data_dir) / BLOCK_FILE
        self.block_size = block_size
        # cluster mode: blocks come from the cluster (ZooKeeper), unique across brokers, instead of the file
        self.block_source: Callable[[], tuple[int, int] | None] | None = None
        self._next = 0
        self._block_end = -1  # last id of the current block; nothing allocated yet
        self._last_persisted_end = self._read_last_block_end()

    def _read_last_block_end(self) -> int:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return -1
        except (OSError, ValueError) as error:
            # never guess: reusing a producer id could make a new producer's batches look like duplicates
            raise KafkaStorageError(f"{self.path} is unreadable: {error}") from error
        if data.get("version") != FORMAT_VERSION or not isinstance(data.get("block_end"), int):
            raise KafkaStorageError(f"{self.path}: unexpected content {data!r}")
        return int(data["block_end"])

    def generate(self) -> int:
        """A producer id never returned before (KafkaStorageError if the next block cannot be persisted)."""
        if self._next > self._block_end:
            self._allocate_block()
        producer_id = self._next
        self._next += 1
        return producer_id

    def _allocate_block(self) -> None:
        if self.block_source is not None:
            block = self.block_source()
            if block is None:
                raise KafkaStorageError("no producer id block from the cluster yet")
            self._next, self._block_end = block
            return
        start = self._last_persisted_end + 1
        end = start + self.block_size - 1
        record = {"version": FORMAT_VERSION, "block_start": start, "block_end": end}
        try:
            write_atomically(self.path, json.dumps(record).encode())
        except OSError as error:
            raise KafkaStorageError(f"cannot persist producer id block: {error}") from error
        self._last_persisted_end = end
        self._next, self._block_end = start, end
        log.info("producer_id_block_allocated", block_start=start, block_end=end)
