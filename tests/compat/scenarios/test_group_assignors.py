"""Issue 5, scenario 6: the cooperative-sticky assignor and static membership (group.instance.id)."""

from __future__ import annotations

import time

import pytest

from tests.compat.clients.members import MemberConfig
from tests.compat.group_support import (
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


@pytest.mark.timeout(180)
def test_cooperative_sticky(compat: Compat) -> None:
    """Three members, one leaves: the two others keep every partition they held and split its partitions."""
    compat.need(ops=("group",), caps=("group.cooperative",))
    topic = compat.setup_topic("group-coop", PARTITIONS)
    config = MemberConfig(
        unique("group", compat), topic, session_timeout_ms=compat.session_timeout_ms, assignor="cooperative-sticky"
    )
    members = open_members(compat, config, 3)
    try:
        wait_balanced(members, PARTITIONS)
        first = keyed("first", 60, PARTITIONS)
        mark_all(members)
        compat.setup_produce(topic, first)
        assert_exactly_once(collect(members, len(first)), first)
        for m in members:
            m.member.commit()
        before = [set(m.assignment) for m in members[:2]]
        members[2].member.close()
        rest = members[:2]
        wait_balanced(rest, PARTITIONS, timeout_s=30)
        for kept, m in zip(before, rest, strict=True):
            assert kept <= m.assignment, f"{m.name} held {sorted(kept)}, now {sorted(m.assignment)}: not sticky"
        second = keyed("second", 60, PARTITIONS)
        mark_all(rest)
        compat.setup_produce(topic, second)
        assert_exactly_once(collect(rest, len(second)), second)
    finally:
        close_all(members)


@pytest.mark.timeout(180)
def test_static_membership(compat: Compat) -> None:
    """A static member that closes keeps its partitions for its session: no rebalance; back, it gets them again."""
    compat.need(ops=("group",), caps=("group.static",))
    topic = compat.setup_topic("group-static", PARTITIONS)
    group = unique("group", compat)
    config = MemberConfig(group, topic, session_timeout_ms=15000)
    ids = [f"{group}-a", f"{group}-b"]
    members = open_members(compat, config, 2, instance_ids=ids)
    try:
        wait_balanced(members, PARTITIONS)
        held = [set(m.assignment) for m in members]
        members[0].member.close()
        time.sleep(2)  # a dynamic member's LeaveGroup would have moved everything to the other by now
        members[1].refresh()
        assert members[1].assignment == held[1], "the static member's close started a rebalance"
        (back,) = open_members(compat, config, 1, instance_ids=[ids[0]])
        members[0] = back
        wait_for(members, lambda: members[0].assignment == held[0], 30, "the static member's partitions back")
        assert members[1].assignment == held[1]
        records = keyed("static", 30, PARTITIONS)
        mark_all(members)
        compat.setup_produce(topic, records)
        assert_exactly_once(collect(members, len(records)), records)
    finally:
        close_all(members)
