"""A virtual queue's record as read, and the delivery headers it may carry (pure).

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
    headers: list[Header]

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


def deliverable(records: Sequence[QueueRecord], now: int) -> tuple[list[QueueRecord], int | None]:
    """The records up to the first one not yet due (a queue is read in order: a delayed record holds
    the ones behind it), and when that one is due (None: none is held back)."""
    out: list[QueueRecord] = []
    for record in records:
        due = record.due_at
        if due is not None and due > now:
            return out, due
        out.append(record)
    return out, None
