"""Issue 5, scenarios 1, 2 and 4: members of one group share a topic's partitions; leaving, dying, two groups."""

from __future__ import annotations

import time

import pytest

from tests.compat.clients.members import MemberConfig
from tests.compat.group_support import (
    Watched,
    assert_exactly_once,
    close_all,
    collect,
    keyed,
    mark_all,
    open_members,
    unique,
    wait_balanced,
    wait_for,
)
from tests.compat.support import Compat

PARTITIONS = 6


def three_members(compat: Compat, topic: str) -> list[Watched]:
    config = MemberConfig(unique("group", compat), topic, session_timeout_ms=compat.session_timeout_ms)
    members = open_members(compat, config, 3)
    wait_balanced(members, PARTITIONS)
    return members


def check_first_round(compat: Compat, topic: str, members: list[Watched]) -> None:
    """60 records over 6 partitions: each consumed once, each by the member holding its partition."""
    first = keyed("first", 60, PARTITIONS)
    mark_all(members)
    compat.setup_produce(topic, first)
    records = collect(members, len(first))
    assert_exactly_once(records, first)
    for m in members:
        got = {r.partition for r in m.since_mark()}
        assert got == m.assignment, f"{m.name} holds {sorted(m.assignment)} but consumed from {sorted(got)}"
        assert len(m.assignment) == 2, f"6 partitions over 3 members: {m.name} holds {sorted(m.assignment)}"


@pytest.mark.timeout(180)
def test_three_members_share_partitions(compat: Compat) -> None:
    compat.need(ops=("group",))
    topic = compat.setup_topic("group-share", PARTITIONS)
    members = three_members(compat, topic)
    try:
        check_first_round(compat, topic, members)
    finally:
        close_all(members)


@pytest.mark.timeout(180)
def test_member_leaves(compat: Compat) -> None:
    compat.need(ops=("group",))
    topic = compat.setup_topic("group-leave", PARTITIONS)
    members = three_members(compat, topic)
    try:
        check_first_round(compat, topic, members)
        for m in members:
            m.member.commit()
        leaving, rest = members[2], members[:2]
        leaving.member.close()
        wait_balanced(rest, PARTITIONS, timeout_s=30)
        second = keyed("second", 60, PARTITIONS)
        mark_all(rest)
        compat.setup_produce(topic, second)
        assert_exactly_once(collect(rest, len(second)), second)
    finally:
        close_all(members)


@pytest.mark.timeout(240)
def test_member_killed(compat: Compat) -> None:
    """A member in a process of its own is killed (no LeaveGroup): after its session timeout the others take over."""
    compat.need(ops=("group",), caps=("group.kill",))
    topic = compat.setup_topic("group-kill", PARTITIONS)
    session_ms = compat.session_timeout_ms
    config = MemberConfig(unique("group", compat), topic, session_timeout_ms=session_ms)
    separate = compat.client.spawn()
    try:
        members = open_members(compat, config, 2) + open_members(compat, config, 1, client=separate)
        members[2].name = "separate"
        wait_balanced(members, PARTITIONS)
        check_first_round(compat, topic, members)
        for m in members:
            m.member.commit()
        rest = members[:2]
        separate.kill()
        killed_at = time.monotonic()
        wait_for(rest, lambda: sorted(p for m in rest for p in m.assignment) == list(range(PARTITIONS)), 60, "takeover")
        took = time.monotonic() - killed_at
        # Its heartbeats stop at the kill; the coordinator waits one session timeout (less one heartbeat at most).
        assert took >= (session_ms - 1000) / 1000, f"taken over after {took:.1f}s, before the session timeout"
        second = keyed("second", 60, PARTITIONS)
        mark_all(rest)
        compat.setup_produce(topic, second)
        assert_exactly_once(collect(rest, len(second)), second)
    finally:
        close_all(members[:2] if "members" in locals() else [])
        separate.kill()


@pytest.mark.timeout(120)
def test_two_groups_each_read_everything(compat: Compat) -> None:
    compat.need(ops=("group",))
    topic = compat.setup_topic("two-groups", 3)
    records = keyed("both", 30, 3)
    compat.setup_produce(topic, records)
    groups = [
        open_members(compat, MemberConfig(unique("group", compat), topic, compat.session_timeout_ms), 1)[0]
        for _ in range(2)
    ]
    try:
        for member in groups:
            assert_exactly_once(collect([member], len(records)), records)
    finally:
        close_all(groups)
