"""The leader epoch cache of one partition (Kafka's LeaderEpochFileCache): epoch -> start offset.

Each entry says "epoch E wrote its first batch at offset S". The entries rise in both epoch and
start offset. A follower uses them to find where its log diverged from the leader's
(OffsetForLeaderEpoch, Fetch's DivergingEpoch): `end_offset_for(epoch)` is the start offset of
the next higher epoch, or the log end offset for the latest.

The cache lives in `leader-epoch-checkpoint` in the partition directory, in the checkpoint text
format (version 0, a count, one "epoch start_offset" line each), rewritten atomically whenever
it changes. A new epoch is recorded before its first batch is written, so after a crash the file
may name an epoch whose data never reached the disk: opening the log drops entries at or above
the recovered log end offset (`truncate_from_end`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

import structlog

from kbroker.log.checkpoint import write_atomically

log = structlog.get_logger(__name__)

CHECKPOINT_FILE = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """The epochs of one partition, in memory and in `<directory>/leader-epoch-checkpoint`."""

    def __init__(self, directory: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = directory / CHECKPOINT_FILE
        self.entries: list[EpochEntry] = list(entries or [])
        self.enabled = True  # False once the partition is deleted: nothing is written any more

    @classmethod
    def load(cls, directory: Path) -> LeaderEpochCache:
        """Read the checkpoint; a missing file is an empty cache, an unreadable one too (with a warning)."""
        return cls(directory, read_entries(directory / CHECKPOINT_FILE))

    # -- queries ------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote `offset` (the entry starting at or below it), or -1."""
        at = bisect_right([entry.start_offset for entry in self.entries], offset)
        return self.entries[at - 1].epoch if at else UNDEFINED_EPOCH

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka answers OffsetForLeaderEpoch: the latest epoch ends at the log end
        offset; an older one at the start of the next higher epoch, reported with the highest epoch
        at or below the requested one (the requested one itself when it is older than every entry);
        an unknown higher epoch, or -1, has no end: (-1, -1)."""
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested == self.latest_epoch:
            return requested, log_end_offset
        epochs = [entry.epoch for entry in self.entries]
        higher = bisect_right(epochs, requested)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        end = self.entries[higher].start_offset
        if higher == 0:
            return requested, end
        return epochs[higher - 1], end

    # -- changes ------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` (before the batch is written); True if it changed.
        Entries it contradicts (an epoch at or above it, or starting at or after it) are removed."""
        if epoch < 0 or start_offset < 0:
            return False
        if self.entries:
            latest = self.entries[-1]
            if latest.epoch == epoch and start_offset >= latest.start_offset:
                return False
        kept = [e for e in self.entries if e.epoch < epoch and e.start_offset < start_offset]
        removed = self.entries[len(kept) :]
        if any(e.epoch >= epoch for e in removed):  # (a lower epoch starting here had no data: no news)
            log.warning(
                "leader_epoch_entries_replaced",
                path=str(self.path),
                epoch=epoch,
                start_offset=start_offset,
                removed=[(e.epoch, e.start_offset) for e in removed],
            )
        self.entries = [*kept, EpochEntry(epoch, start_offset)]
        self.flush()
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to `end_offset`: drop the epochs that start at or after it."""
        if end_offset < 0 or not self.entries or self.entries[-1].start_offset < end_offset:
            return
        starts = [entry.start_offset for entry in self.entries]
        self.entries = self.entries[: bisect_left(starts, end_offset)]
        self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start moved to `start_offset`: the epochs starting at or below it collapse into the
        latest of them, which now starts there."""
        starts = [entry.start_offset for entry in self.entries]
        below = bisect_right(starts, start_offset)
        if below == 0 or (below == 1 and starts[0] == start_offset):
            return
        self.entries = [EpochEntry(self.entries[below - 1].epoch, start_offset), *self.entries[below:]]
        self.flush()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self.flush()

    def flush(self) -> None:
        if not self.enabled:
            return
        lines = [str(CHECKPOINT_VERSION), str(len(self.entries))]
        lines += [f"{entry.epoch} {entry.start_offset}" for entry in self.entries]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode())

    def __repr__(self) -> str:
        return f"LeaderEpochCache({[(e.epoch, e.start_offset) for e in self.entries]})"


def read_entries(path: Path) -> list[EpochEntry]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    try:
        if int(lines[0]) != CHECKPOINT_VERSION:
            raise ValueError(f"version {lines[0]}")
        count = int(lines[1])
        entries = []
        for line in lines[2 : 2 + count]:
            epoch, offset = line.split(" ")
            entries.append(EpochEntry(int(epoch), int(offset)))
        if len(entries) != count:
            raise ValueError(f"{len(entries)} entries, header says {count}")
        for before, after in zip(entries, entries[1:], strict=False):
            if after.epoch <= before.epoch or after.start_offset <= before.start_offset:
                raise ValueError(f"entries out of order: {before} then {after}")
        return entries
    except (ValueError, IndexError) as error:
        log.warning("leader_epoch_checkpoint_unreadable", path=str(path), error=str(error))
        return []
