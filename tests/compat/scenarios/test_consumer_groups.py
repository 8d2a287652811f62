"""KIP-848 consumer groups (group.protocol=consumer) with real clients: the Java consumer 4.x,
confluent-kafka (librdkafka) and franz-go (its server-side balancer), against kbroker and
(KBROKER_BOOTSTRAP) Apache Kafka 4.3, with the same checks.

The broker assigns: members join one after the other and each join rebalances with revocation
first (a partition is never held by two members); a member that leaves or dies is replaced; a
static member that restarts under its group.instance.id within the session timeout gets its
partitions back without the others moving; a regex subscription picks up a topic created later;
offsets committed with member epochs are where a later member resumes. Timings allow for Apache
Kafka's defaults (45 s sessions, 5 s heartbeats); the suite's kbroker uses shorter ones
(conftest.KBROKER_ARGS).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.compat.clients.members import MemberConfig
from tests.compat.group_support import (
    Watched,
    assert_exactly_once,
    balanced,
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
NEEDS: dict[str, tuple[str, ...]] = {
    "ops": ("group",),
    "caps": ("group.consumer_protocol",),
    "apis": ("ConsumerGroupHeartbeat",),
}


def config(compat: Compat, topic: str, **extra: object) -> MemberConfig:
    return MemberConfig(unique("cgroup", compat), topic, protocol="consumer", **extra)  # type: ignore[arg-type]


# A member's view is its assignment as of its latest poll, so it can lag a rebalance by one poll (longer on a
# busy machine): a member that has already given a partition up may still show it while the next holder shows it.
VIEW_LAG_S = 5.0


class NeverShared:
    """Watches members' assignments: fails if a partition is seen held by two members at once for longer than
    the members' views can lag."""

    def __init__(self, members: list[Watched]) -> None:
        self.members = members

    def shared(self) -> bool:
        held = [p for m in self.members for p in m.assignment]
        return len(held) != len(set(held))

    def check(self) -> bool:
        deadline = time.monotonic() + VIEW_LAG_S
        while self.shared():
            views = [sorted(m.assignment) for m in self.members]
            assert time.monotonic() < deadline, f"a partition held twice for {VIEW_LAG_S} s: {views}"
            time.sleep(0.2)
            for m in self.members:
                m.refresh()
        return True

    def wait_balanced(self, timeout_s: float = 90, stable: Callable[[], bool] | None = None) -> None:
        """Until the members' own views are balanced and, given ``stable``, the broker says so too."""

        def done() -> bool:
            return self.check() and balanced(self.members, PARTITIONS) and (stable is None or stable())

        wait_for(self.members, done, timeout_s, "balance")


def consume_round(compat: Compat, topic: str, members: list[Watched], prefix: str) -> None:
    """60 records after the group is stable: each consumed once, by the member holding its partition."""
    records = keyed(prefix, 60, PARTITIONS)
    mark_all(members)
    compat.setup_produce(topic, records)
    assert_exactly_once(collect(members, len(records)), records)
    for m in members:
        got = {r.partition for r in m.since_mark()}
        assert got <= m.assignment, f"{m.name} holds {sorted(m.assignment)} but consumed from {sorted(got)}"


@pytest.mark.timeout(300)
def test_members_join_one_by_one_with_revocation(compat: Compat) -> None:
    compat.need(**NEEDS)
    topic = compat.setup_topic("cgroup-join", PARTITIONS)
    cfg = config(compat, topic)
    members: list[Watched] = []
    try:
        members += open_members(compat, cfg, 1)
        wait_balanced(members, PARTITIONS, 60)
        consume_round(compat, topic, members, "one")
        for m in members:
            m.member.commit()
        watch = NeverShared(members)
        for count in (2, 3):
            members += open_members(compat, cfg, 1)
            members[-1].name = f"member{count - 1}"
            even = [PARTITIONS // count] * count
            # an incremental rebalance passes through covers that are not yet even (a new member holds one
            # partition while another still gives its second up): wait for the even one, within the deadline
            watch.wait_balanced(
                stable=lambda even=even, group=members: sorted(len(m.assignment) for m in group) == even
            )
            assert sorted(len(m.assignment) for m in members) == even
        consume_round(compat, topic, members, "three")
    finally:
        close_all(members)


@pytest.mark.timeout(300)
def test_member_leaves(compat: Compat) -> None:
    compat.need(**NEEDS)
    topic = compat.setup_topic("cgroup-leave", PARTITIONS)
    cfg = config(compat, topic)
    members = open_members(compat, cfg, 3)
    try:
        NeverShared(members).wait_balanced()
        consume_round(compat, topic, members, "first")
        for m in members:
            m.member.commit()
        members[2].member.close()
        rest = members[:2]
        NeverShared(rest).wait_balanced()
        assert sorted(len(m.assignment) for m in rest) == [3, 3]
        consume_round(compat, topic, rest, "second")
    finally:
        close_all(members[:2])


@pytest.mark.timeout(300)
def test_static_member_restarts_without_a_rebalance(compat: Compat) -> None:
    caps = ("group.consumer_protocol", "group.static", "group.consumer_static")
    compat.need(ops=("group",), caps=caps, apis=("ConsumerGroupHeartbeat",))
    topic = compat.setup_topic("cgroup-static", PARTITIONS)
    cfg = config(compat, topic)
    ids = [f"{cfg.group}-a", f"{cfg.group}-b"]
    members = open_members(compat, cfg, 2, instance_ids=ids)
    try:
        NeverShared(members).wait_balanced()
        kept, held = members[0], set(members[1].assignment)
        before = set(kept.assignment)
        members[1].member.close()  # a static member leaves "for a while" (member epoch -2)
        (back,) = open_members(compat, cfg, 1, instance_ids=[ids[1]])
        members[1] = back

        def returned() -> bool:
            assert kept.assignment == before, f"the other member moved: {sorted(before)} -> {sorted(kept.assignment)}"
            return back.assignment == held

        wait_for(members, returned, 60, "the static member's partitions back")
        consume_round(compat, topic, members, "static")
    finally:
        close_all(members)


@pytest.mark.timeout(300)
def test_regex_subscription_picks_up_a_new_topic(compat: Compat) -> None:
    compat.need(**NEEDS)
    first = compat.setup_topic("cgroup-regex", 2)
    later = f"{first}-later"
    cfg = config(compat, later, topic_regex=first.replace(".", "[.]") + ".*")  # the same in RE2/J, Go and Python
    (member,) = open_members(compat, cfg, 1)
    try:
        early = keyed("early", 10, 2)
        compat.setup_produce(first, early)
        assert_exactly_once(collect([member], len(early)), early)  # the regex matched the existing topic
        compat.setup_topic_named(later, 3)
        wait_for([member], lambda: member.assignment == {0, 1, 2}, 90, "the new topic's partitions")
        records = keyed("later", 30, 3)
        mark_all([member])
        compat.setup_produce(later, records)
        assert_exactly_once(collect([member], len(records)), records)
    finally:
        close_all([member])


@pytest.mark.timeout(300)
def test_commit_and_resume(compat: Compat) -> None:
    compat.need(**NEEDS)
    topic = compat.setup_topic("cgroup-commit", 2)
    cfg = config(compat, topic)
    first = keyed("first", 20, 2)
    compat.setup_produce(topic, first)
    (member,) = open_members(compat, cfg, 1)
    try:
        assert_exactly_once(collect([member], len(first)), first)
        member.member.commit({0: 7, 1: 10})  # OffsetCommit with the member's epoch
    finally:
        member.member.close()
    second = keyed("second", 10, 2)
    compat.setup_produce(topic, second)
    (again,) = open_members(compat, cfg, 1)
    try:
        records = collect([again], 3 + 10)
    finally:
        again.member.close()
    tail = [r for r in first if r.partition == 0][7:]
    assert_exactly_once(records, tail + second)


@pytest.mark.timeout(300)
def test_empty_classic_group_becomes_a_consumer_group(compat: Compat) -> None:
    """Upgrade: a classic member commits and leaves; a consumer-protocol member of the same group resumes there."""
    compat.need(**NEEDS)
    topic = compat.setup_topic("cgroup-upgrade", 2)
    cfg = config(compat, topic)
    classic = MemberConfig(cfg.group, topic, session_timeout_ms=compat.session_timeout_ms)
    first = keyed("first", 20, 2)
    compat.setup_produce(topic, first)
    (member,) = open_members(compat, classic, 1)
    try:
        assert_exactly_once(collect([member], len(first)), first)
        member.member.commit({0: 7, 1: 10})
    finally:
        member.member.close()
    second = keyed("second", 10, 2)
    compat.setup_produce(topic, second)
    (again,) = open_members(compat, cfg, 1)
    try:
        records = collect([again], 3 + 10)
    finally:
        again.member.close()
    assert_exactly_once(records, [r for r in first if r.partition == 0][7:] + second)


@pytest.mark.timeout(300)
def test_killed_member_is_replaced_after_its_session(compat: Compat) -> None:
    compat.need(ops=("group",), caps=("group.consumer_protocol", "group.kill"), apis=("ConsumerGroupHeartbeat",))
    topic = compat.setup_topic("cgroup-kill", PARTITIONS)
    cfg = config(compat, topic)
    separate = compat.client.spawn()
    members: list[Watched] = []
    try:
        members = open_members(compat, cfg, 2) + open_members(compat, cfg, 1, client=separate)
        NeverShared(members).wait_balanced()
        consume_round(compat, topic, members, "first")
        for m in members:
            m.member.commit()
        rest = members[:2]
        separate.kill()
        killed_at = time.monotonic()
        NeverShared(rest).wait_balanced(timeout_s=120)
        took = time.monotonic() - killed_at
        assert took >= 3, f"taken over {took:.1f}s after the kill: before any session timeout"
        consume_round(compat, topic, rest, "second")
    finally:
        close_all(members[:2])
        separate.kill()


def _listed(compat: Compat, group: str) -> dict[str, Any]:
    """The group as ListGroups (v5) lists it: its type (classic or consumer) and its state."""
    from tests.process import RawClient

    with RawClient(compat.bootstrap) as raw:
        listed = raw.call(16, 5, {"states_filter": [], "types_filter": []})
    return next((g for g in listed["groups"] if g["group_id"] == group), {})


def _group_type(compat: Compat, group: str) -> str:
    return str(_listed(compat, group).get("group_type"))


def _stable(compat: Compat, group: str) -> Callable[[], bool]:
    """Whether the broker has the group Stable: a consumer group is Stable once every member has reconciled
    with the latest target assignment. A classic member learns of a new epoch only from its next heartbeat
    (REBALANCE_IN_PROGRESS), then rejoins and, being eager, resumes its partitions from the committed offsets:
    until then its view still shows its old partitions, which with the newcomer's can look balanced."""
    return lambda: _listed(compat, group).get("group_state") == "Stable"


def _member_types(compat: Compat, group: str) -> list[int]:
    """ConsumerGroupDescribe (v1): each member's type, 0 classic, 1 consumer, sorted."""
    from tests.process import RawClient

    with RawClient(compat.bootstrap) as raw:
        described = raw.call(69, 1, {"group_ids": [group], "include_authorized_operations": False})
    return sorted(m["member_type"] for m in described["groups"][0]["members"])


def _restart(compat: Compat, members: list[Watched], index: int, config: MemberConfig) -> None:
    """Roll one member: every member commits what it read, the member closes, its replacement starts with
    another configuration (partitions that move resume from the commits)."""
    for m in members:
        m.member.commit()
    members[index].member.close()
    (members[index],) = open_members(compat, config, 1)
    members[index].name = f"member{index}-{config.protocol}"


@pytest.mark.timeout(300)
def test_rolling_upgrade_to_the_consumer_protocol_and_back(compat: Compat) -> None:
    """Online migration (KIP-848): two classic members are restarted one by one with group.protocol=consumer,
    the group stays live (a mixed group meanwhile: the classic member is answered by the consumer group),
    then rolled back one by one. After each step every record is read exactly once; the group's type is
    consumer once the first member has moved, classic again once the last consumer-protocol member left."""
    compat.need(**NEEDS)
    topic = compat.setup_topic("cgroup-migrate", PARTITIONS)
    group = unique("cgroup-migrate", compat)
    classic = MemberConfig(group, topic, session_timeout_ms=compat.session_timeout_ms)
    consumer = MemberConfig(group, topic, protocol="consumer")
    members = open_members(compat, classic, 2)
    try:
        NeverShared(members).wait_balanced()
        consume_round(compat, topic, members, "classic")
        assert _group_type(compat, group) == "classic"
        for index, step in ((0, "mixed"), (1, "consumer")):
            _restart(compat, members, index, consumer)
            NeverShared(members).wait_balanced(stable=_stable(compat, group))
            consume_round(compat, topic, members, f"upgrade-{step}")
            assert _group_type(compat, group) == "consumer", step
            assert _member_types(compat, group) == ([0, 1] if step == "mixed" else [1, 1]), step
        for index, step in ((0, "mixed-back"), (1, "classic-back")):
            _restart(compat, members, index, classic)
            NeverShared(members).wait_balanced(stable=_stable(compat, group))
            consume_round(compat, topic, members, f"rollback-{step}")
            if step == "mixed-back":
                assert _group_type(compat, group) == "consumer" and _member_types(compat, group) == [0, 1]
        assert _group_type(compat, group) == "classic"
    finally:
        close_all(members)
