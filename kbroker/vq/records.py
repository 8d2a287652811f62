"""A virtual queue's record as read, the delivery headers it may carry, reading in order (pure).

The headers are the share groups' own (docs/queues.md):
  kbroker-deliver-at        epoch milliseconds (ASCII decimal): not delivered before then
  kbroker-deliver-after-ms  milliseconds after the record's timestamp: not delivered before then
  kbroker-tag               a tag, carried and returned (no filtering on a virtual queue)
A header that does not parse as a non-negative integer is ignored (the record is due at once).
With both delay headers the later time wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from protocol.records import Header

DELIVER_AT = "kbroker-deliver-at"
DELIVER_AFTER_MS = "kbroker-deliver-after-ms"
TAG = "kbroker-tag"


@dataclass(frozen=True, slots=True)
class QueueRecord:
    offset: int
    timestamp: int
    value: bytes | None
    headers: tuple[Header, ...]

    @property
    def due_at(self) -> int | None:
        return due_at(self.timestamp, self.headers)

    @property
    def tag(self) -> str | None:
        for header in self.headers:
            if header.key == TAG and header.value is not None:
                return header.value.decode("utf-8", "replace")
        return None


def _millis(value: bytes | None) -> int | None:
    if value is None:
        return None
    text = value.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def due_at(timestamp: int, headers: Sequence[Header]) -> int | None:
    """When the record may be delivered (epoch ms), or None: at once."""
    due: int | None = None
    for header in headers:
        if header.key == DELIVER_AT:
            at = _millis(header.value)
        elif header.key == DELIVER_AFTER_MS:
            after = _millis(header.value)
            at = None if after is None else timestamp + after
        else:
            continue
        if at is not None and (due is None or at > due):
            due = at
    return due


def deliverable(
    entries: Sequence[tuple[int, QueueRecord | None]], now: int, start: int
) -> tuple[list[QueueRecord], int, int | None]:
    """(records, next offset, blocked until) of a read from `start` that found `entries` (offset, record;
    None: a record not to deliver: an aborted transaction's, or gone). A queue is read in order: a
    record not yet due holds the ones behind it, and the next offset stops at it."""
    out: list[QueueRecord] = []
    next_offset = start
    for offset, record in entries:
        if record is not None:
            due = record.due_at
            if due is not None and due > now:
                return out, offset, due
            out.append(record)
        next_offset = offset + 1
    return out, next_offset, None
