"""Commit checks, fetch, deletion and expiry of committed offsets (pure, fake clock)."""

from __future__ import annotations

from kbroker.group.config import GroupConfig
from kbroker.group.group import CommittedOffset, parse_subscription_topics
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode
from tests.group.fakes import Harness

E = ErrorCode
RETENTION_MS = 60_000


def offset(value: int, ts: int = 0) -> CommittedOffset:
    return CommittedOffset(value, -1, "", ts)


def subscription(*topics: str) -> bytes:
    out = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return out + b"\xff\xff\xff\xff"


def test_simple_commit_creates_an_empty_group_without_protocol() -> None:
    h = Harness()
    assert h.offsets.validate_commit("simple", -1, "", None) is E.NONE
    h.offsets.apply_commit("simple", {("t", 0): offset(5)})
    group = h.coordinator.groups["simple"]
    assert group.state is GroupState.EMPTY and group.protocol_type is None
    assert h.offsets.fetch("simple", [("t", 0), ("t", 1)]) == {("t", 0): offset(5), ("t", 1): None}
    assert h.offsets.fetch("simple", None) == {("t", 0): offset(5)}
    assert h.offsets.fetch("unknown", None) == {}


def test_commit_checks_against_an_unknown_group() -> None:
    h = Harness()
    assert h.offsets.validate_commit("", -1, "", None) is E.NONE  # Kafka takes the empty group id (old clients)
    assert h.offsets.validate_commit("", -1, "", None, transactional=True) is E.INVALID_GROUP_ID
    assert h.offsets.validate_commit("nope", 3, "m", None) is E.ILLEGAL_GENERATION


def test_simple_commit_refused_while_the_group_has_members() -> None:
    h = Harness()
    ids, gen = h.stable_group(1)
    assert h.offsets.validate_commit("g", -1, "", None) is E.UNKNOWN_MEMBER_ID
    assert h.offsets.validate_commit("g", gen, "someone", None) is E.UNKNOWN_MEMBER_ID
    assert h.offsets.validate_commit("g", gen, ids[0], None) is E.NONE


def test_commit_while_completing_rebalance_is_refused() -> None:
    h = Harness()
    member = h.new_member()
    h.join(member)
    assert h.offsets.validate_commit("g", 1, member, None) is E.REBALANCE_IN_PROGRESS


def test_commit_while_preparing_rebalance_with_current_generation_is_accepted() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.join(h.new_member())
    assert h.coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert h.offsets.validate_commit("g", gen, ids[1], None) is E.NONE


def test_metadata_size_limit() -> None:
    h = Harness(GroupConfig(offset_metadata_max_bytes=4))
    assert h.offsets.metadata_fits(None) and h.offsets.metadata_fits("abcd")
    assert not h.offsets.metadata_fits("abcde")


def test_delete_group_only_when_empty() -> None:
    h = Harness()
    ids, _ = h.stable_group(1)
    assert h.offsets.delete_group("g") == (E.NON_EMPTY_GROUP, None)
    assert h.offsets.delete_group("nope") == (E.GROUP_ID_NOT_FOUND, None)
    assert h.offsets.delete_group("") == (E.GROUP_ID_NOT_FOUND, None)
    h.leave([(ids[0], None)])
    error, group = h.offsets.delete_group("g")
    assert error is E.NONE and group is not None and group.state is GroupState.DEAD
    assert "g" not in h.coordinator.groups


def test_offset_delete_respects_subscriptions() -> None:
    h = Harness()
    member = h.new_member(protocols=[("range", subscription("a"))])
    h.join(member, protocols=[("range", subscription("a"))])
    h.sync(member, 1, {member: b""})
    h.offsets.apply_commit("g", {("a", 0): offset(1), ("b", 0): offset(2)})
    error, errors = h.offsets.delete_offsets("g", [("a", 0), ("b", 0)])
    assert error is E.NONE and errors == {("a", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("b", 0): E.NONE}
    assert h.offsets.fetch("g", None) == {("a", 0): offset(1)}
    assert h.offsets.delete_offsets("nope", [("a", 0)]) == (E.GROUP_ID_NOT_FOUND, {})


def test_offset_delete_refused_for_non_consumer_groups_with_members() -> None:
    h = Harness()
    member = h.new_member(protocol_type="connect")
    h.join(member, protocol_type="connect")
    assert h.offsets.delete_offsets("g", [("a", 0)]) == (E.NON_EMPTY_GROUP, {})


def test_parse_subscription_topics() -> None:
    assert parse_subscription_topics(subscription("x", "yz")) == {"x", "yz"}
    assert parse_subscription_topics(b"\x00") is None
    assert parse_subscription_topics(b"\x00\x00\x00\x00\x00\x01\x00\x09ab") is None


def test_simple_group_offsets_expire_after_retention_from_the_commit() -> None:
    h = Harness(GroupConfig(offsets_retention_ms=RETENTION_MS))
    now = h.clock.now
    h.offsets.apply_commit("s", {("t", 0): offset(1, now), ("t", 1): offset(1, now + 30_000)})
    h.clock.now = now + RETENTION_MS
    expired, dead = h.offsets.expire()
    assert expired == [("s", ("t", 0))] and dead == []
    h.clock.now += 30_000
    expired, dead = h.offsets.expire()
    assert expired == [("s", ("t", 1))] and [g.group_id for g in dead] == ["s"]
    assert "s" not in h.coordinator.groups


def test_consumer_group_offsets_expire_from_when_it_became_empty() -> None:
    h = Harness(GroupConfig(offsets_retention_ms=RETENTION_MS))
    member = h.new_member(protocols=[("range", subscription("t"))])
    h.join(member, protocols=[("range", subscription("t"))])
    h.sync(member, 1, {member: b""})
    ids = [member]
    h.offsets.apply_commit("g", {("t", 0): offset(1, h.clock.now)})
    h.clock.now += RETENTION_MS * 2  # long after the commit, but the group still has a member
    h.heartbeat(ids[0], 1)
    assert h.offsets.expire() == ([], [])
    h.leave([(ids[0], None)])  # empty from now on
    h.clock.now += RETENTION_MS - 1
    assert h.offsets.expire() == ([], [])
    h.clock.now += 1
    expired, dead = h.offsets.expire()
    assert expired == [("g", ("t", 0))] and [g.group_id for g in dead] == ["g"]


def test_stable_consumer_group_expires_offsets_of_unsubscribed_topics() -> None:
    h = Harness(GroupConfig(offsets_retention_ms=RETENTION_MS))
    member = h.new_member(protocols=[("range", subscription("a"))])
    h.join(member, protocols=[("range", subscription("a"))])
    h.sync(member, 1, {member: b""})
    h.offsets.apply_commit("g", {("a", 0): offset(1, h.clock.now), ("old", 0): offset(1, h.clock.now)})
    h.clock.now += RETENTION_MS
    h.heartbeat(member, 1)
    expired, dead = h.offsets.expire()
    assert expired == [("g", ("old", 0))] and dead == []


def test_replayed_state_rebuilds_groups() -> None:
    from kbroker.group.offsets import GroupRecord

    h = Harness()
    h.offsets.load_group("g", GroupRecord("consumer", 7, "range", "m", 123))
    h.offsets.load_offset("g", ("t", 0), offset(3))
    h.offsets.load_offset("g", ("t", 1), offset(4))
    h.offsets.load_offset("g", ("t", 1), None)
    group = h.coordinator.groups["g"]
    assert group.generation_id == 7 and group.protocol_type == "consumer" and group.state is GroupState.EMPTY
    assert h.offsets.fetch("g", None) == {("t", 0): offset(3)}
    # the next generation continues from the stored one
    member = h.new_member()
    assert h.join(member).result.generation_id == 8
    h.offsets.load_group("g", None)
    assert "g" not in h.coordinator.groups


def test_offsets_of_deleted_topics_go_at_the_next_expiry_pass() -> None:
    h = Harness()
    h.offsets.apply_commit("s", {("gone", 0): offset(1, h.clock.now), ("kept", 0): offset(2, h.clock.now)})
    expired, dead = h.offsets.expire(lambda topic: topic != "gone")
    assert expired == [("s", ("gone", 0))] and dead == []
    assert h.offsets.fetch("s", None) == {("kept", 0): offset(2, h.clock.now)}
