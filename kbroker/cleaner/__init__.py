"""Log compaction (Kafka's LogCleaner): keep each key's last record in `cleanup.policy=compact` topics.

Layers, from the bottom:

- `offset_map.py`: `OffsetMap`, key -> last offset over the dirty section (bounded, hashed keys).
- `txn_metadata.py`: `CleanedTransactionMetadata`, which batches belong to aborted transactions
  and which markers may go.
- `batch_writer.py`: re-encoding a batch's retained records (base offset, last offset delta,
  producer id, epoch, base sequence and codec kept; delete horizon set).
- `record_filter.py`: `RecordFilter`, the per-batch and per-record decisions.
- `segments.py`: cleaning a group of segments into one `.cleaned` file.
- `manager.py` / `thread.py`: choosing the dirtiest log, the cleaner checkpoint, the worker
  thread with its I/O throttle.

Records are decoded here only; the produce and fetch paths never decode them.
"""
