"""Helpers of the group and transaction scenarios: watching members, waiting for a balanced group, checks."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tests.compat.clients.adapter import Client, Consumed, Record
from tests.compat.clients.members import Member, MemberConfig
from tests.compat.support import Compat, now_ms

_names = itertools.count()


def unique(kind: str, compat: Compat) -> str:
    name = compat.client.name.split(" ")[0]
    return f"compat-{kind}-{name}-{next(_names)}-{now_ms() % 1000000}"


@dataclass
class Watched:
    """A member and everything it received, with its latest assignment."""

    member: Member
    name: str = ""
    records: list[Consumed] = field(default_factory=list)
    assignment: set[int] = field(default_factory=set)
    mark: int = 0

    def refresh(self) -> None:
        state = self.member.take()
        self.records.extend(state.records)
        self.assignment = state.assignment

    def since_mark(self) -> list[Consumed]:
        return self.records[self.mark :]


def open_members(
    compat: Compat,
    config: MemberConfig,
    count: int,
    client: Client | None = None,
    instance_ids: Sequence[str | None] | None = None,
) -> list[Watched]:
    out = []
    for i in range(count):
        own = config
        if instance_ids is not None:
            own = MemberConfig(**{**config.__dict__, "instance_id": instance_ids[i]})
        out.append(Watched((client or compat.client).open_member(compat.bootstrap, own), name=f"member{i}"))
    return out


def wait_for(members: Iterable[Watched], done: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Refresh the members until ``done()``; the seconds it took."""
    members = list(members)
    start = time.monotonic()
    while True:
        for m in members:
            m.refresh()
        if done():
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            state = {m.name: sorted(m.assignment) for m in members}
            raise AssertionError(f"{what} not reached within {timeout_s}s: assignments {state}")
        time.sleep(0.2)


def balanced(members: Sequence[Watched], partitions: int) -> bool:
    """Every member holds partitions, no partition twice, all partitions held."""
    held = [p for m in members for p in m.assignment]
    return all(m.assignment for m in members) and sorted(held) == list(range(partitions))


def wait_balanced(members: Sequence[Watched], partitions: int, timeout_s: float = 60) -> float:
    return wait_for(members, lambda: balanced(members, partitions), timeout_s, "a balanced assignment")


def mark_all(members: Iterable[Watched]) -> None:
    """Start counting received records from now (call before producing what ``collect`` waits for)."""
    for m in members:
        m.refresh()
        m.mark = len(m.records)


def collect(members: Sequence[Watched], count: int, timeout_s: float = 60, grace_s: float = 0.5) -> list[Consumed]:
    """The records received since the members' marks, once ``count`` arrived (and ``grace_s`` more for extras)."""

    def total() -> int:
        return sum(len(m.since_mark()) for m in members)

    wait_for(members, lambda: total() >= count, timeout_s, f"{count} records")
    time.sleep(grace_s)
    for m in members:
        m.refresh()
    return [r for m in members for r in m.since_mark()]


def assert_exactly_once(records: Sequence[Consumed], expected: Sequence[Record]) -> None:
    """Each expected value consumed once, no (partition, offset) twice, nothing else."""
    positions = Counter((r.partition, r.offset) for r in records)
    repeated = [p for p, n in positions.items() if n > 1]
    assert not repeated, f"records consumed more than once: {repeated[:10]}"
    got = Counter(r.value for r in records)
    want = Counter(r.value for r in expected)
    assert got == want, f"missing {list((want - got).elements())[:10]}, extra {list((got - want).elements())[:10]}"


def keyed(prefix: str, count: int, partitions: int) -> list[Record]:
    """``count`` records spread round-robin over ``partitions``, values ``prefix-i``."""
    return [Record(f"k{i}".encode(), f"{prefix}-{i}".encode(), partition=i % partitions) for i in range(count)]


def close_all(members: Iterable[Watched]) -> None:
    for m in members:
        try:
            m.member.close()
        except Exception:  # a member of a killed process, or already closed
            pass
