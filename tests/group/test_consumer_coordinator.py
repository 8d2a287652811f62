"""Consumer-protocol groups (KIP-848): epochs, assignors, reconciliation, timers, static members, regex; fake clock."""

from __future__ import annotations

import pytest

from kbroker.group.assignors import range_, uniform
from kbroker.group.consumer_coordinator import (
    ConsumerCoordinatorConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
)
from kbroker.group.consumer_group import ConsumerGroupState, MemberState
from kbroker.group.group import ClassicGroup
from kbroker.group.member import Member
from protocol.errors import ErrorCode

E = ErrorCode
SESSION_MS = 45_000
REBALANCE_MS = 30_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Harness:
    def __init__(self, topics: dict[str, int] | None = None, **config: object) -> None:
        self.clock = Clock()
        self.topics = dict(topics if topics is not None else {"t": 6})
        self.groups: dict[str, ClassicGroup] = {}
        self.coordinator = ConsumerGroupCoordinator(
            ConsumerCoordinatorConfig(**config),  # type: ignore[arg-type]
            self.clock,
            self.groups,
            lambda: self.topics,
            lambda group_id: ConsumerGroupSettings(SESSION_MS, 5_000),
        )

    def join(self, member: str, topics: tuple[str, ...] = ("t",), **extra: object) -> ConsumerHeartbeatResult:
        request = ConsumerHeartbeat(
            "g",
            member,
            0,
            rebalance_timeout_ms=REBALANCE_MS,
            subscribed_topic_names=topics,
            owned={},
            **extra,  # type: ignore[arg-type]
        )
        return self.coordinator.heartbeat(request)

    def beat(self, member: str, epoch: int, owned: dict[str, frozenset[int]] | None = None, **extra: object):
        return self.coordinator.heartbeat(ConsumerHeartbeat("g", member, epoch, owned=owned, **extra))  # type: ignore[arg-type]

    @property
    def group(self):
        consumer = self.groups["g"].consumer
        assert consumer is not None
        return consumer


def parts(result: ConsumerHeartbeatResult, topic: str = "t") -> set[int]:
    assert result.assignment is not None
    return set(result.assignment.get(topic, frozenset()))


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    h = Harness()
    result = h.join("a")
    assert result.error is E.NONE and result.member_id == "a"
    assert result.member_epoch == 1 and result.heartbeat_interval_ms == 5_000
    assert parts(result) == set(range(6))
    assert h.group.state is ConsumerGroupState.STABLE and h.group.group_epoch == 1


def test_second_member_waits_until_the_first_revokes() -> None:
    h = Harness()
    h.join("a")
    b = h.join("b")
    assert b.member_epoch == 2 and parts(b) == set()  # everything still owned by a: unreleased
    assert h.group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    # a is told to keep half: it stays in epoch 1 until it stops reporting the others
    a = h.beat("a", 1, {"t": frozenset(range(6))})
    assert a.member_epoch == 1 and len(parts(a)) == 3
    kept = frozenset(parts(a))
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert h.group.state is ConsumerGroupState.RECONCILING
    # b still gets nothing while a holds them
    assert h.beat("b", 2, {}).assignment is None
    a = h.beat("a", 1, {"t": kept})
    assert a.member_epoch == 2 and a.assignment is None  # revoked: moves to the new epoch, same partitions
    b = h.beat("b", 2, {})
    assert parts(b) == set(range(6)) - kept and b.member_epoch == 2
    assert h.group.state is ConsumerGroupState.STABLE


def test_three_members_balance_two_each_and_are_sticky() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.join("c")
    target = h.group.target
    assert sorted(len(p["t"]) for p in target.values()) == [2, 2, 2]
    before = {m: set(a["t"]) for m, a in target.items()}
    h.coordinator.fence(h.group, "c")
    h.join("d")  # a fourth member joins after c left
    after = h.group.target
    assert before["a"] <= set(after["a"]["t"]) or set(after["a"]["t"]) <= before["a"]


def test_epoch_checks() -> None:
    h = Harness()
    h.join("a")
    assert h.beat("a", 5, {}).error is E.FENCED_MEMBER_EPOCH
    assert h.beat("a", 0, {}).error is E.INVALID_REQUEST  # a rejoin must send rebalance timeout and topics
    assert h.beat("x", 1, {}).error is E.UNKNOWN_MEMBER_ID
    assert h.coordinator.heartbeat(ConsumerHeartbeat("other", "x", 3)).error is E.GROUP_ID_NOT_FOUND
    assert h.beat("a", -3).error is E.INVALID_REQUEST
    assert h.beat("", 1).error is E.INVALID_REQUEST


def test_previous_epoch_is_accepted_when_the_answer_was_lost() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    a = h.beat("a", 1, {"t": frozenset(range(6))})
    kept = frozenset(parts(a))
    assert h.beat("a", 1, {"t": kept}).member_epoch == 2
    assert h.beat("a", 1, {"t": kept}).error is E.NONE  # the answer with epoch 2 was lost
    assert h.beat("a", 1, {"t": frozenset(range(6))}).error is E.FENCED_MEMBER_EPOCH


def test_leave_and_session_timeout_bump_the_group_epoch() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    epoch = h.group.group_epoch
    assert h.beat("b", -1).member_epoch == -1
    assert "b" not in h.group.members and h.group.group_epoch == epoch + 1
    h.clock.now += SESSION_MS - 1
    h.coordinator.tick()
    assert "a" in h.group.members
    h.clock.now += 1
    assert h.coordinator.next_deadline() == h.clock.now
    h.coordinator.tick()
    assert not h.group.members and h.group.state is ConsumerGroupState.EMPTY
    assert h.coordinator.fenced == [("g", "a", "session timeout")]


def test_member_that_never_revokes_is_fenced_after_its_rebalance_timeout() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat("a", 1, {"t": frozenset(range(6))})
    h.clock.now += REBALANCE_MS
    h.beat("b", 2, {})  # b keeps its session alive; a only ever reported everything
    h.coordinator.tick()
    assert "a" not in h.group.members
    assert h.coordinator.fenced == [("g", "a", "partitions not revoked in time")]
    b = h.beat("b", 2, {})
    assert b.member_epoch == h.group.group_epoch and parts(b) == set(range(6))


def test_static_member_leaves_with_minus_two_and_rejoins_with_its_partitions() -> None:
    h = Harness()
    h.join("a", instance_id="i-a")
    h.join("b", instance_id="i-b")
    a = h.beat("a", 1, {"t": frozenset(range(6))}, instance_id="i-a")
    h.beat("a", 1, {"t": frozenset(parts(a))}, instance_id="i-a")
    b = h.beat("b", 2, {}, instance_id="i-b")
    held = parts(b)
    epoch = h.group.group_epoch
    assert h.beat("b", -2, instance_id="i-b").member_epoch == -2
    assert h.group.group_epoch == epoch  # no rebalance: its partitions wait for it
    assert h.join("b2", instance_id="i-a").error is E.UNRELEASED_INSTANCE_ID
    back = h.join("b2", instance_id="i-b")
    assert back.error is E.NONE and parts(back) == held and back.member_epoch == epoch
    assert "b" not in h.group.members and h.group.static_members["i-b"] == "b2"
    assert h.beat("b", 2, {}, instance_id="i-b").error is E.FENCED_INSTANCE_ID
    # leaving for good with -1 removes it
    assert h.beat("b2", -1, instance_id="i-b").error is E.NONE
    assert "b2" not in h.group.members and h.group.group_epoch == epoch + 1


def test_static_member_that_does_not_come_back_expires() -> None:
    h = Harness()
    h.join("a", instance_id="i-a")
    h.beat("a", -2, instance_id="i-a")
    h.clock.now += SESSION_MS
    h.coordinator.tick()
    assert not h.group.members


def test_regex_subscription_picks_up_new_topics() -> None:
    h = Harness({"orders-1": 2, "other": 3})
    first = h.coordinator.heartbeat(
        ConsumerHeartbeat("g", "a", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="orders-.*", owned={})
    )
    assert first.assignment == {"orders-1": frozenset({0, 1})}
    h.topics["orders-2"] = 1
    h.clock.now += 1000  # topics are re-read at most once a second per group
    again = h.beat("a", 1, {"orders-1": frozenset({0, 1})})
    assert again.member_epoch == 2 and again.assignment == {"orders-1": frozenset({0, 1}), "orders-2": frozenset({0})}
    bad = h.coordinator.heartbeat(
        ConsumerHeartbeat("g", "b", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="(", owned={})
    )
    assert bad.error is E.INVALID_REGULAR_EXPRESSION


def test_new_partitions_bump_the_epoch() -> None:
    h = Harness()
    h.join("a")
    h.topics["t"] = 8
    assert h.beat("a", 1, {"t": frozenset(range(6))}).member_epoch == 1  # not re-read yet
    h.clock.now += 1000
    result = h.beat("a", 1, {"t": frozenset(range(6))})
    assert result.member_epoch == 2 and parts(result) == set(range(8))


def test_assignor_choice_and_unknown_assignor() -> None:
    h = Harness()
    assert h.join("a", server_assignor="sticky").error is E.UNSUPPORTED_ASSIGNOR
    h.join("a", server_assignor="range")
    assert h.group.assignor_name == "range"


def test_group_size_limit() -> None:
    h = Harness(max_size=1)
    h.join("a")
    result = h.join("b")
    assert result.error is E.GROUP_MAX_SIZE_REACHED


def test_empty_classic_group_is_upgraded_and_busy_one_refused() -> None:
    h = Harness()
    h.groups["g"] = ClassicGroup("g", protocol_type="consumer")
    assert h.join("a").error is E.NONE and h.groups["g"].consumer is not None
    busy = ClassicGroup("busy", protocol_type="consumer")
    busy.add(Member("m", None, "c", "h", 10_000, 10_000, "consumer", [("range", b"")]))
    h.groups["busy"] = busy
    request = ConsumerHeartbeat("busy", "a", 0, rebalance_timeout_ms=1, subscribed_topic_names=("t",), owned={})
    assert h.coordinator.heartbeat(request).error is E.GROUP_ID_NOT_FOUND


def test_uniform_assignor_balances_heterogeneous_subscriptions() -> None:
    members = {"a": frozenset({"x"}), "b": frozenset({"x", "y"}), "c": frozenset({"y"})}
    result = uniform(members, {"x": 4, "y": 2}, {})
    counts = sorted(sum(len(p) for p in a.values()) for a in result.values())
    assert counts == [2, 2, 2]
    assert set(result["a"]) == {"x"} and set(result["c"]) == {"y"}


@pytest.mark.parametrize("count,sizes", [(6, [2, 2, 2]), (7, [3, 2, 2]), (2, [1, 1, 0])])
def test_range_assignor(count: int, sizes: list[int]) -> None:
    members = {m: frozenset({"t"}) for m in "abc"}
    result = range_(members, {"t": count}, {})
    assert [len(result[m].get("t", ())) for m in "abc"] == sizes
    assert result["a"].get("t", frozenset()) == frozenset(range(sizes[0]))


def test_group_record_round_trip() -> None:
    from kbroker.group import records
    from kbroker.group.consumer_records import consumer_group_key, consumer_group_value, parse_consumer_group_value

    h = Harness()
    h.join("a", instance_id="i-a", server_assignor="range")
    h.join("b")
    h.beat("a", 1, {"t": frozenset(range(6))}, instance_id="i-a")
    group = h.group
    key = consumer_group_key("g")
    assert records.parse_key(key) == records.ConsumerGroupKey("g")
    loaded = parse_consumer_group_value("g", consumer_group_value(group))
    assert (loaded.group_epoch, loaded.assignment_epoch, loaded.assignor_name) == (2, 2, "range")
    assert loaded.target == group.target and loaded.static_members == {"i-a": "a"}
    for member_id, member in group.members.items():
        again = loaded.members[member_id]
        assert (again.member_epoch, again.state, again.assigned, again.pending_revocation) == (
            member.member_epoch,
            member.state,
            member.assigned,
            member.pending_revocation,
        )


def test_regexes_are_re2_as_in_kafka() -> None:
    import time

    from kbroker.group.consumer_coordinator import compile_regex, regex_matches

    topics = {"a" * 249: 1, "Orders-1": 1, "orders-2": 1}
    started = time.perf_counter()
    assert regex_matches("(a+)+b", topics) == []  # linear time: no catastrophic backtracking
    assert time.perf_counter() - started < 0.5
    assert regex_matches("(?i)orders-.*", topics) == ["Orders-1", "orders-2"]
    assert regex_matches("orders", topics) == []  # the whole name must match
    assert compile_regex(r"(a)\1") is None  # no backreferences in RE2 (nor RE2/J)
    assert compile_regex("(?=a)") is None  # nor lookaround
    h = Harness()
    request = ConsumerHeartbeat("g", "m", 0, rebalance_timeout_ms=1, subscribed_topic_regex=r"(t)\1", owned={})
    assert h.coordinator.heartbeat(request).error is E.INVALID_REGULAR_EXPRESSION


@pytest.mark.parametrize("seed", range(20))
def test_uniform_assignor_random_groups(seed: int) -> None:
    import random

    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(1, 12) for i in range(rng.randint(1, 6))}
    homogeneous = seed % 2 == 0
    members = {
        f"m{i}": frozenset(topics)
        if homogeneous
        else frozenset(rng.sample(sorted(topics), rng.randint(1, len(topics))))
        for i in range(rng.randint(1, 9))
    }
    result = uniform(members, topics, {})
    held = [(t, p) for a in result.values() for t, parts in a.items() for p in parts]
    subscribed = {t for s in members.values() for t in s}
    assert sorted(held) == sorted((t, p) for t in subscribed for p in range(topics[t]))  # each exactly once
    for member_id, assignment in result.items():
        assert set(assignment) <= members[member_id]
    counts = [sum(len(p) for p in a.values()) for a in result.values()]
    if homogeneous:
        assert max(counts) - min(counts) <= 1
    assert uniform(members, topics, result) == result  # nothing changed: nothing moves


def test_uniform_assignor_is_fast_enough_for_a_large_group() -> None:
    import time

    members = {f"m{i:03}": frozenset(f"t{j}" for j in range(100)) for i in range(100)}
    started = time.perf_counter()
    result = uniform(members, {f"t{j}": 12 for j in range(100)}, {})
    assert time.perf_counter() - started < 1.0
    assert {sum(len(p) for p in a.values()) for a in result.values()} == {12}


def test_version_0_lets_the_coordinator_choose_the_member_id() -> None:
    h = Harness()
    request = ConsumerHeartbeat("g", "", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",), owned={})
    assert h.coordinator.heartbeat(request).error is E.INVALID_REQUEST  # v1: the client names itself
    joined = h.coordinator.heartbeat(ConsumerHeartbeat(**{**request.__dict__, "api_version": 0}))
    assert joined.error is E.NONE and joined.member_id and joined.member_id in h.group.members
