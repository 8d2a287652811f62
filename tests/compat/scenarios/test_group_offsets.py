"""Issue 5, scenarios 3 and 5: committed offsets survive a close and restart; describe a group and its lag."""

from __future__ import annotations

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.clients.members import MemberConfig
from tests.compat.group_support import (
    assert_exactly_once,
    collect,
    keyed,
    open_members,
    unique,
)
from tests.compat.support import Compat, assert_dense, by_partition


def consume_commit_restart(compat: Compat, topic: str, group: str, between: object = None) -> None:
    """20 records over 2 partitions; commit 7 of partition 0 and all of partition 1; close; 10 more; restart.

    The restarted member reads partition 0 from 7 (the uncommitted tail again) and partition 1 from 10,
    and nothing else. ``between`` (a callable) runs after the close, e.g. to restart the broker."""
    config = MemberConfig(group, topic, session_timeout_ms=compat.session_timeout_ms)
    first = keyed("first", 20, 2)
    compat.setup_produce(topic, first)
    (member,) = open_members(compat, config, 1)
    try:
        assert_exactly_once(collect([member], len(first)), first)
        member.member.commit({0: 7, 1: 10})
    finally:
        member.member.close()
    if callable(between):
        between()
    second = keyed("second", 10, 2)
    compat.setup_produce(topic, second)
    (again,) = open_members(compat, config, 1)
    try:
        records = collect([again], 3 + 10)
    finally:
        again.member.close()
    parts = by_partition(records)
    assert_dense(parts[0], start=7)
    assert_dense(parts[1], start=10)
    tail = [r for r in first if r.partition == 0][7:]
    assert_exactly_once(records, tail + second)


@pytest.mark.timeout(120)
def test_resume_after_commit_close_restart(compat: Compat) -> None:
    compat.need(ops=("group",))
    topic = compat.setup_topic("group-resume", 2)
    consume_commit_restart(compat, topic, unique("group", compat))


@pytest.mark.timeout(120)
def test_describe_group_and_lag(compat: Compat) -> None:
    compat.need(ops=("group", "describe_group"))
    topic = compat.setup_topic("group-describe", 3)
    group = unique("group", compat)
    records = keyed("lag", 30, 3)
    compat.setup_produce(topic, records)
    (member,) = open_members(compat, MemberConfig(group, topic, session_timeout_ms=compat.session_timeout_ms), 1)
    try:
        assert_exactly_once(collect([member], len(records)), records)
        member.member.commit({0: 10, 1: 4, 2: 10})
        live = compat.client.describe_group(compat.bootstrap, group, topic)
        assert live.state.replace("_", "").lower() == "stable", live
        assert len(live.members) == 1, live
        assert live.members[0].partitions == [0, 1, 2], live
        assert live.committed == {0: 10, 1: 4, 2: 10}
        assert live.end_offsets == {0: 10, 1: 10, 2: 10}
        assert live.lag() == {0: 0, 1: 6, 2: 0}
    finally:
        member.member.close()
    compat.setup_produce(topic, [Record(b"k", b"more", partition=2)])
    gone = compat.client.describe_group(compat.bootstrap, group, topic)
    assert gone.state.replace("_", "").lower() == "empty", gone
    assert gone.members == []
    assert gone.lag() == {0: 0, 1: 6, 2: 1}
