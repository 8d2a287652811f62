"""The queue checker of the fault runs, after Jepsen's total-queue checker: pure, no I/O.

Inputs: the producer's history (one `Attempt` per record, each with a unique value, its outcome and the
partition it was sent to) and everything read back from the beginning of every partition after the run
(`Read`: partition, offset, value). Judged by the values alone, as Jepsen does: a value's presence, how
often it was read, and the order of one producer's values in a partition's log. The offset a client reports
with an acknowledgement is not trusted: librdkafka's idempotent producer can report another offset for a
batch it had to retry, so `offset_differs` only counts such cases, it finds nothing.

Findings (each an error of the broker):
- lost: acknowledged, never read;
- duplicated: read more than once;
- reordered: per partition and producer, the log holds acknowledged values in another order than they
  were sent (one producer's sends to a partition are ordered: the idempotent producer keeps them so);
- misplaced: acknowledged for one partition, read only from another;
- unexpected: read, never attempted;
- failed_but_read: the client was told the write definitely failed, yet it was read.
Allowed, counted: recovered (not acknowledged, outcome unknown, read once: Jepsen's "recovered") and
unresolved (not acknowledged, never read).
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field


class Outcome(enum.Enum):
    ATTEMPTED = "attempted"  # sent, no answer at the end of the run
    ACKNOWLEDGED = "acknowledged"
    FAILED = "failed"  # definitely not written (never sent, or refused before any broker wrote it)
    INDETERMINATE = "indeterminate"  # an error after which the write may or may not be in the log


@dataclass(frozen=True)
class Attempt:
    value: str
    producer: str
    partition: int
    sequence: int  # the order of this producer's sends (its produce() calls)
    outcome: Outcome
    offset: int | None = None  # as the client reported it with the acknowledgement (not trusted)


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    value: str


ERRORS = ("lost", "duplicated", "reordered", "misplaced", "unexpected", "failed_but_read")


@dataclass
class Report:
    attempted: int = 0
    acknowledged: int = 0
    failed: int = 0
    indeterminate: int = 0  # INDETERMINATE and ATTEMPTED (no answer)
    read: int = 0  # records read back (duplicates included)
    lost: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)  # value -> times read
    reordered: dict[tuple[int, str], list[str]] = field(default_factory=dict)  # (partition, producer) -> examples
    misplaced: dict[str, tuple[int, list[int]]] = field(default_factory=dict)  # value -> (sent to, read from)
    unexpected: list[str] = field(default_factory=list)
    failed_but_read: list[str] = field(default_factory=list)
    recovered: int = 0
    unresolved: int = 0
    offset_differs: int = 0  # acknowledged at one offset, read at another (information, not an error)

    @property
    def valid(self) -> bool:
        return not any(self.errors().values())

    def errors(self) -> dict[str, int]:
        counts = {name: len(getattr(self, name)) for name in ERRORS}
        counts["reordered"] = sum(len(examples) for examples in self.reordered.values())  # records out of place
        return counts

    def counts(self) -> dict[str, int]:
        return {
            "attempted": self.attempted,
            "acknowledged": self.acknowledged,
            "failed": self.failed,
            "indeterminate": self.indeterminate,
            "read": self.read,
            **self.errors(),
            "recovered": self.recovered,
            "unresolved": self.unresolved,
            "offset_differs": self.offset_differs,
        }

    def render(self, examples: int = 5) -> str:
        lines = ["checker: " + ", ".join(f"{name} {count}" for name, count in self.counts().items())]
        shown: dict[str, object] = {
            "lost": self.lost,
            "duplicated": list(self.duplicated.items()),
            "reordered": list(self.reordered.items()),
            "misplaced": list(self.misplaced.items()),
            "unexpected": self.unexpected,
            "failed_but_read": self.failed_but_read,
        }
        for name, items in shown.items():
            assert isinstance(items, list)
            if items:
                lines.append(f"  {name} (first {min(examples, len(items))}): {items[:examples]}")
        lines.append("checker: " + ("valid" if self.valid else "INVALID: " + ", ".join(self._failed_names())))
        return "\n".join(lines)

    def _failed_names(self) -> list[str]:
        return [f"{name} {count}" for name, count in self.errors().items() if count]


def check(attempts: Iterable[Attempt], reads: Iterable[Read]) -> Report:
    """Judge a run: `attempts` is every record the producers tried, `reads` everything read back."""
    report = Report()
    by_value: dict[str, Attempt] = {}
    for attempt in attempts:
        if attempt.value in by_value:
            raise ValueError(f"value {attempt.value!r} attempted twice: values must be unique")
        by_value[attempt.value] = attempt
        report.attempted += 1
        if attempt.outcome is Outcome.ACKNOWLEDGED:
            report.acknowledged += 1
        elif attempt.outcome is Outcome.FAILED:
            report.failed += 1
        else:
            report.indeterminate += 1

    times_read: Counter[str] = Counter()
    read_at: dict[str, list[Read]] = defaultdict(list)
    log_order: dict[int, list[Read]] = defaultdict(list)
    for read in reads:
        report.read += 1
        times_read[read.value] += 1
        read_at[read.value].append(read)
        log_order[read.partition].append(read)

    for value, count in times_read.items():
        if count > 1:
            report.duplicated[value] = count
        sent = by_value.get(value)
        if sent is None:
            report.unexpected.append(value)
        elif sent.outcome is Outcome.FAILED:
            report.failed_but_read.append(value)
        elif sent.outcome is not Outcome.ACKNOWLEDGED:
            report.recovered += 1

    for value, attempt in by_value.items():
        if value in times_read:
            if attempt.outcome is Outcome.ACKNOWLEDGED:
                partitions = sorted({r.partition for r in read_at[value]})
                if attempt.partition not in partitions:
                    report.misplaced[value] = (attempt.partition, partitions)
                elif attempt.offset is not None and all(r.offset != attempt.offset for r in read_at[value]):
                    report.offset_differs += 1
        elif attempt.outcome is Outcome.ACKNOWLEDGED:
            report.lost.append(value)
        elif attempt.outcome is not Outcome.FAILED:
            report.unresolved += 1

    for partition, records in sorted(log_order.items()):
        _check_order(partition, sorted(records, key=lambda r: r.offset), by_value, report)
    return report


def _check_order(partition: int, records: list[Read], by_value: dict[str, Attempt], report: Report) -> None:
    """Per producer: the acknowledged values of this partition, in log order, must rise in send order."""
    last: dict[str, Attempt] = {}
    seen: set[str] = set()
    for record in records:
        attempt = by_value.get(record.value)
        if attempt is None or attempt.outcome is not Outcome.ACKNOWLEDGED or attempt.partition != partition:
            continue
        if record.value in seen:
            continue  # a duplicate: counted as such, its first place is its place
        seen.add(record.value)
        previous = last.get(attempt.producer)
        if previous is not None and attempt.sequence < previous.sequence:
            examples = report.reordered.setdefault((partition, attempt.producer), [])
            examples.append(
                f"{attempt.value} (sent #{attempt.sequence}) after {previous.value} at offset {record.offset}"
            )
        else:
            last[attempt.producer] = attempt
