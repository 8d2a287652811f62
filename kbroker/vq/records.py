"""A virtual queue's record as read, the delivery headers it may carry, reading in order (pure).

The headers are the share groups' own (docs/queues.md):
  kbroker-deliver-at        epoch milliseconds (ASCII decimal): not delivered before then
  kbroker-deliver-after-ms  milliseconds after the record's timestamp: not delivered before then
  kbroker-tag               a tag, carried and returned (no filtering on a virtual queue)
A header that is not a non-negative decimal integer fitting a Java long is ignored (the record is due at
once), as share groups ignore it (kbroker/share/record_headers.py).
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


MAX_LONG = (1 << 63) - 1


def parse_millis(value: bytes | None) -> int | None:
    """A delivery time's header value: ASCII decimal digits (spaces around allowed) that fit a Java long."""
    if value is None:
        return None
    text = value.strip()
    if not text.isdigit() or len(text) > 19:  # bytes.isdigit: ASCII digits only
        return None
    number = int(text)
    return number if number <= MAX_LONG else None


def due_at(timestamp: int, headers: Sequence[Header]) -> int | None:
    """When the record may be delivered (epoch ms), or None: at once."""
    due: int | None = None
    for header in headers:
        if header.key == DELIVER_AT:
            at = parse_millis(header.value)
        elif header.key == DELIVER_AFTER_MS:
            after = parse_millis(header.value)
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
