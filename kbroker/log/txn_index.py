"""The aborted-transaction index of one partition (Kafka's TransactionIndex), fed by its producer state.

Each ABORT marker the partition's producer state applies (live or while it is rebuilt from
the log) adds (producer id, first offset, marker offset, LSO after the marker) to the list and
to `<segment base>.txnindex` of the segment holding the marker (txn_index_file.py). A read
committed fetch gets the entries overlapping what it returns (Kafka's collectAbortedTransactions).

The files are derived data. A producer-state snapshot at offset S promises that the files hold
every ABORT below S (UnifiedLog fsyncs them before writing it); a load keeps the entries below
the snapshot it starts from, cuts the rest, and the rebuild from S adds them again. Files of
segments deleted by retention go when the log start moves past them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path

import structlog

from kbroker.log.txn_index_file import (
    AbortedTxn,
    append_entries,
    fsync_file,
    index_path,
    list_index_files,
    read_entries,
)

log = structlog.get_logger(__name__)


def _last_offset(entry: AbortedTxn) -> int:
    return entry.last_offset


class TransactionIndex:
    """Aborted transactions of one partition, ordered by marker offset (event loop thread only)."""

    def __init__(self, directory: Path, aborted: list[AbortedTxn], first_segment_base: int) -> None:
        self.directory = directory
        self.aborted = aborted
        self._dirty: set[int] = set()  # segment bases whose .txnindex was written since the last sync
        self._pruned_below = first_segment_base

    @classmethod
    def load(cls, directory: Path, segment_bases: Sequence[int], below_offset: int) -> TransactionIndex:
        """The entries of the live segments' files with a marker below `below_offset`; other files go."""
        live = set(segment_bases)
        aborted: list[AbortedTxn] = []
        for base, path in list_index_files(directory):
            if base not in live:
                path.unlink(missing_ok=True)
            else:
                aborted.extend(read_entries(path, below_offset))
        return cls(directory, aborted, segment_bases[0])

    def add(self, entry: AbortedTxn, segment_base: int) -> None:
        """An ABORT marker of the segment starting at `segment_base` (in offset order)."""
        self.aborted.append(entry)
        append_entries(index_path(self.directory, segment_base), [entry])
        self._dirty.add(segment_base)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound): marker at or after the fetch
        offset, first offset below the bound; stops once an entry's LSO reaches the bound (Kafka's rule)."""
        found = []
        aborted = self.aborted
        for i in range(bisect_left(aborted, fetch_offset, key=_last_offset), len(aborted)):
            entry = aborted[i]
            if entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                break
        return found

    def sync(self) -> None:
        """fsync the files written since the last call (before a snapshot promises them); OSError raises."""
        for base in sorted(self._dirty):
            fsync_file(index_path(self.directory, base))
        self._dirty.clear()

    def prune(self, first_segment_base: int) -> None:
        """Forget the aborted transactions of deleted segments and remove their files."""
        if first_segment_base <= self._pruned_below:
            return
        self._pruned_below = first_segment_base
        del self.aborted[: bisect_left(self.aborted, first_segment_base, key=_last_offset)]
        try:
            for base, path in list_index_files(self.directory):
                if base < first_segment_base:
                    path.unlink(missing_ok=True)
                    self._dirty.discard(base)
        except OSError as error:
            log.warning("txn_index_prune_failed", directory=str(self.directory), error=str(error))
