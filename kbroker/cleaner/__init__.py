"""Log compaction (Kafka's LogCleaner): keep each key's last record in `cleanup.policy=compact` topics.

Layers, from the bottom:

- `offset_map.py`: `OffsetMap`, key -> last offset over the dirty section (bounded, hashed keys).
- `txn_metadata.py`: `CleanedTransactionMetadata`, which batches belong to aborted transactions
  and which markers may go.
- `batch_writer.py`: re-encoding a batch's retained records (base offset, last offset delta,
  producer id, epoch, base sequence and codec kept; delete horizon set).
- `record_filter.py`: `RecordFilter`, the per-batch and per-record decisions.
- `segments.py`: one round in the worker thread: the map, then each group of segments into
  one `.cleaned` file (kbroker/log/swap.py swaps it in).
- `throttle.py`: the I/O rate limit.
- `log_cleaner.py`: choosing the dirtiest log, the worker thread, swap-in, the cleaner checkpoint.
- `runtime.py`: the broker's cleaner from its `log.cleaner.*` settings, its LogCleaner built once the
  broker holds a partition (start-up time).

Records are decoded here only; the produce and fetch paths never decode them.
"""

from typing import Any


def cleaner_enabled(config: Any) -> bool:
    """`log.cleaner.enable` with at least one `log.cleaner.threads`: read by the runtime before the cleaner
    loads, and by CleanerConfig (here, below both, so that neither imports the other)."""
    return bool(config.get_bool("log.cleaner.enable") and config.get_int("log.cleaner.threads") > 0)
