"""The classic group state machine, driven by events and a fake clock."""

from __future__ import annotations

import pytest

from kbroker.group.config import GroupConfig
from kbroker.group.coordinator import JoinRequest, JoinResult, SyncResult
from kbroker.group.group import IllegalStateTransition
from kbroker.group.state import GroupState, parse_state
from protocol.errors import ErrorCode
from tests.group.fakes import REBALANCE_MS, SESSION_MS, Harness, Token

E = ErrorCode
S = GroupState


def state(h: Harness, group: str = "g") -> GroupState:
    return h.coordinator.groups[group].state


# -- states ---------------------------------------------------------------------


def test_state_transitions_follow_kafkas_table() -> None:
    assert S.EMPTY.can_become(S.PREPARING_REBALANCE)
    assert S.PREPARING_REBALANCE.can_become(S.COMPLETING_REBALANCE)
    assert S.PREPARING_REBALANCE.can_become(S.EMPTY)
    assert S.COMPLETING_REBALANCE.can_become(S.STABLE)
    assert S.STABLE.can_become(S.PREPARING_REBALANCE)
    assert not S.EMPTY.can_become(S.STABLE)
    assert not S.STABLE.can_become(S.COMPLETING_REBALANCE)
    assert not S.DEAD.can_become(S.EMPTY)
    assert parse_state("stable") is S.STABLE and parse_state("nope") is None


def test_illegal_transition_raises() -> None:
    h = Harness()
    h.new_member()
    h.offsets.apply_commit("x", {})
    with pytest.raises(IllegalStateTransition):
        h.coordinator.groups["x"].transition(S.STABLE, 0)


# -- join and sync ------------------------------------------------------------------


def test_v4_join_needs_member_id_then_completes_alone() -> None:
    h = Harness()
    member = h.new_member(client_id="app")
    assert member.startswith("app-")
    assert "g" in h.coordinator.groups and state(h) is S.EMPTY
    token = h.join(member)
    result = token.result
    assert isinstance(result, JoinResult) and result.error is E.NONE
    assert result.generation_id == 1 and result.leader_id == member and result.protocol_name == "range"
    assert result.members == [(member, None, b"m")]
    assert state(h) is S.COMPLETING_REBALANCE
    sync = h.sync(member, 1, assignments={member: b"a"})
    assert sync.result == SyncResult(E.NONE, b"a", "consumer", "range")
    assert state(h) is S.STABLE


def test_v3_join_gets_an_id_at_once() -> None:
    h = Harness()
    token = h.join("", v4=False)
    assert isinstance(token.result, JoinResult) and token.result.error is E.NONE
    assert token.result.member_id


def test_three_members_leader_gets_everyone_followers_nothing() -> None:
    h = Harness()
    ids = [h.new_member() for _ in range(3)]
    tokens = [h.join(m) for m in ids[:2]]
    assert not any(t.answered for t in tokens)  # waiting for the third
    assert state(h) is S.PREPARING_REBALANCE
    tokens.append(h.join(ids[2]))
    results = [t.result for t in tokens]
    leader = results[0].leader_id
    for member_id, result in zip(ids, results, strict=True):
        assert result.error is E.NONE and result.generation_id == 1 and result.leader_id == leader
        assert len(result.members) == (3 if member_id == leader else 0)
    follower = next(m for m in ids if m != leader)
    waiting = h.sync(follower, 1)
    assert not waiting.answered
    h.sync(leader, 1, {m: m.encode() for m in ids})
    assert waiting.result.assignment == follower.encode()
    assert state(h) is S.STABLE


def test_leader_sync_without_an_assignment_for_a_member_gives_it_empty_bytes() -> None:
    h = Harness()
    ids, gen = h.stable_group(1)
    other = h.new_member()
    a, b = h.join(ids[0]), h.join(other)
    h.sync(ids[0], gen + 1, {ids[0]: b"x"})
    assert h.sync(other, gen + 1).result.assignment == b""
    assert a.result.error is E.NONE and b.result.error is E.NONE


def test_protocol_chosen_among_those_all_members_support() -> None:
    h = Harness()
    m1 = h.new_member(protocols=[("range", b"1"), ("roundrobin", b"1")])
    m2 = h.new_member(protocols=[("sticky", b"2"), ("roundrobin", b"2")])
    h.join(m1, protocols=[("range", b"1"), ("roundrobin", b"1")])
    token = h.join(m2, protocols=[("sticky", b"2"), ("roundrobin", b"2")])
    assert token.result.protocol_name == "roundrobin"
    leader_result = token.result if token.result.leader_id == m2 else None
    assert h.coordinator.groups["g"].protocol_name == "roundrobin"
    if leader_result is not None:
        assert sorted(md for _, _, md in leader_result.members) == [b"1", b"2"]


def test_inconsistent_protocols_rejected() -> None:
    h = Harness()
    h.stable_group(1)
    assert h.join("", protocols=[("other", b"")]).result.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("", protocol_type="connect").result.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert Harness().join("", protocols=[]).result.error is E.INCONSISTENT_GROUP_PROTOCOL


def test_join_validation() -> None:
    h = Harness()
    assert h.join("", group="").result.error is E.INVALID_GROUP_ID
    assert h.join("", session=10).result.error is E.INVALID_SESSION_TIMEOUT
    assert h.join("", session=10**9).result.error is E.INVALID_SESSION_TIMEOUT
    assert h.join("ghost").result.error is E.UNKNOWN_MEMBER_ID
    assert "g" not in h.coordinator.groups  # failed joins leave no group behind


def test_group_max_size() -> None:
    h = Harness(GroupConfig(max_size=1))
    h.new_member()
    assert h.join("").result.error is E.GROUP_MAX_SIZE_REACHED


def test_unknown_member_in_existing_group() -> None:
    h = Harness()
    ids, gen = h.stable_group(1)
    assert h.join("ghost").result.error is E.UNKNOWN_MEMBER_ID
    assert h.sync("ghost", gen).result.error is E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("ghost", gen) is E.UNKNOWN_MEMBER_ID
    assert h.leave([("ghost", None)]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert h.heartbeat("x", 1, group="nope") is E.UNKNOWN_MEMBER_ID
    assert h.sync("x", 1, group="nope").result.error is E.UNKNOWN_MEMBER_ID
    assert h.leave([("x", None)], group="nope") == (E.NONE, [E.UNKNOWN_MEMBER_ID])


def test_stale_generation() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    assert h.heartbeat(ids[0], gen - 1) is E.ILLEGAL_GENERATION
    assert h.sync(ids[1], gen + 5).result.error is E.ILLEGAL_GENERATION
    assert h.offsets.validate_commit("g", gen - 1, ids[0], None) is E.ILLEGAL_GENERATION
    assert h.offsets.validate_commit("g", gen, ids[0], None) is E.NONE


def test_sync_checks_protocol_type_and_name() -> None:
    h = Harness()
    member = h.new_member()
    h.join(member)
    assert h.sync(member, 1, protocol_type="connect").result.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(member, 1, protocol_name="sticky").result.error is E.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync(member, 1, protocol_type="consumer", protocol_name="range")
    assert ok.result.error is E.NONE


# -- rebalances -------------------------------------------------------------------


def test_new_member_triggers_rebalance_and_heartbeats_say_so() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    newcomer = h.new_member()
    waiting = h.join(newcomer)
    assert state(h) is S.PREPARING_REBALANCE and not waiting.answered
    assert h.heartbeat(ids[0], gen) is E.REBALANCE_IN_PROGRESS
    assert h.sync(ids[1], gen).result.error is E.REBALANCE_IN_PROGRESS
    rejoins = [h.join(m) for m in ids]
    assert all(t.result.generation_id == gen + 1 for t in [*rejoins, waiting])
    assert state(h) is S.COMPLETING_REBALANCE
    assert h.heartbeat(ids[0], gen + 1) is E.NONE  # allowed while completing


def test_rebalance_timeout_removes_members_that_did_not_rejoin() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.advance(1000)
    rejoin = h.join(ids[0], rebalance=5000)  # triggers the rebalance: ids[1] must rejoin within the timeout
    h.advance(4000)
    assert h.heartbeat(ids[1], gen) is E.REBALANCE_IN_PROGRESS  # still a member
    h.advance(REBALANCE_MS)
    assert rejoin.result.error is E.NONE and rejoin.result.generation_id == gen + 1
    assert list(h.coordinator.groups["g"].members) == [ids[0]]
    assert h.heartbeat(ids[1], gen + 1) is E.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_a_dead_member() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.advance(SESSION_MS // 2)
    assert h.heartbeat(ids[0], gen) is E.NONE
    h.advance(SESSION_MS // 2)  # ids[1] never heartbeats: its session ends, a rebalance starts
    assert ids[1] not in h.coordinator.groups["g"].members
    assert h.heartbeat(ids[0], gen) is E.REBALANCE_IN_PROGRESS
    rejoin = h.join(ids[0])
    assert rejoin.result.error is E.NONE and rejoin.result.members == [(ids[0], None, b"m")]
    assert rejoin.result.generation_id == gen + 1


def test_member_waiting_for_its_join_answer_does_not_expire() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    waiting = h.join(ids[0], rebalance=60_000)
    for _ in range(4):
        h.advance(SESSION_MS // 2)
        assert h.heartbeat(ids[1], gen) is E.REBALANCE_IN_PROGRESS
    assert not waiting.answered and ids[0] in h.coordinator.groups["g"].members


def test_last_member_leaving_empties_the_group() -> None:
    h = Harness()
    ids, gen = h.stable_group(1)
    assert h.leave([(ids[0], None)]) == (E.NONE, [E.NONE])
    group = h.coordinator.groups["g"]
    assert group.state is S.EMPTY and group.generation_id == gen + 1 and not group.members
    assert "g" in h.coordinator.dirty


def test_session_expiry_of_the_only_member_empties_the_group() -> None:
    h = Harness()
    h.stable_group(1)
    h.advance(SESSION_MS + 1)
    assert state(h) is S.EMPTY


def test_leader_leaving_mid_rebalance_a_remaining_member_leads() -> None:
    h = Harness()
    ids, gen = h.stable_group(3)
    leader = ids[0]
    newcomer = h.new_member()
    tokens = [h.join(newcomer), h.join(ids[1]), h.join(ids[2])]
    assert not any(t.answered for t in tokens)  # waiting for the leader to rejoin
    assert h.leave([(leader, None)]) == (E.NONE, [E.NONE])
    results = [t.result for t in tokens]
    assert all(r.error is E.NONE and r.generation_id == gen + 1 for r in results)
    new_leader = results[0].leader_id
    assert new_leader in {newcomer, ids[1], ids[2]}
    leader_result = next(r for r in results if r.member_id == new_leader)
    assert {m for m, _, _ in leader_result.members} == {newcomer, ids[1], ids[2]}


def test_leader_leaving_during_completing_rebalance_restarts_it() -> None:
    h = Harness()
    ids = [h.new_member() for _ in range(2)]
    joins = [h.join(m) for m in ids]
    leader = joins[0].result.leader_id
    follower = next(m for m in ids if m != leader)
    waiting = h.sync(follower, 1)
    h.leave([(leader, None)])
    assert waiting.result.error is E.REBALANCE_IN_PROGRESS
    rejoin = h.join(follower)
    assert rejoin.result.leader_id == follower and rejoin.result.generation_id == 2


def test_sync_timeout_removes_members_that_never_synced() -> None:
    h = Harness()
    ids = [h.new_member() for _ in range(2)]
    joins = [h.join(m, rebalance=4000) for m in ids]
    leader = joins[0].result.leader_id
    follower = next(m for m in ids if m != leader)
    waiting = h.sync(follower, 1)
    h.advance(4001)  # the leader never sends SyncGroup
    assert waiting.result.error is E.REBALANCE_IN_PROGRESS
    assert leader not in h.coordinator.groups["g"].members
    assert state(h) is S.PREPARING_REBALANCE


def test_follower_rejoin_in_stable_with_same_metadata_is_answered_at_once() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    again = h.join(ids[1])
    assert again.result.error is E.NONE and again.result.generation_id == gen and again.result.members == []
    assert state(h) is S.STABLE


def test_changed_subscription_rebalances() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    token = h.join(ids[1], protocols=[("range", b"new")])
    assert not token.answered and state(h) is S.PREPARING_REBALANCE


def test_pending_member_that_never_rejoins_expires() -> None:
    h = Harness()
    ids, gen = h.stable_group(1)
    h.new_member()  # MEMBER_ID_REQUIRED, never comes back
    assert h.coordinator.groups["g"].pending_members
    h.advance(SESSION_MS + 1)
    assert not h.coordinator.groups["g"].pending_members
    assert h.heartbeat(ids[0], gen) is E.UNKNOWN_MEMBER_ID  # the leader missed heartbeats too


def test_pending_member_can_leave() -> None:
    h = Harness()
    pending = h.new_member()
    assert h.leave([(pending, None)]) == (E.NONE, [E.NONE])
    assert not h.coordinator.groups["g"].pending_members


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=3000))
    a = h.join("", v4=False)
    h.advance(2000)
    b = h.join("", v4=False)
    h.advance(1500)  # the first delay ran out, but a member came: one more delay
    assert not a.answered and not b.answered
    h.advance(3000)
    assert a.result.error is E.NONE and b.result.error is E.NONE
    assert a.result.generation_id == b.result.generation_id == 1


def test_initial_delay_bounded_by_rebalance_timeout() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=3000))
    token = h.join("", v4=False, rebalance=1000)
    h.advance(1000)
    assert token.result is not None and token.result.error is E.NONE


def test_next_deadline_and_idle_groups() -> None:
    h = Harness()
    assert h.coordinator.next_deadline() is None
    ids, _ = h.stable_group(1)
    member = h.coordinator.groups["g"].members[ids[0]]
    assert h.coordinator.next_deadline() == member.session_deadline


def test_unload_answers_waiting_clients_not_coordinator() -> None:
    h = Harness()
    ids, _ = h.stable_group(1)
    waiting = h.join(h.new_member())
    h.coordinator.unload()
    h.deliver()
    assert waiting.result.error is E.NOT_COORDINATOR


# -- static membership ---------------------------------------------------------------


def test_static_member_joins_without_member_id_required() -> None:
    h = Harness()
    token = h.join("", instance="i-1")
    assert token.result.error is E.NONE and token.result.member_id.startswith("i-1-")
    assert token.result.members == [(token.result.member_id, "i-1", b"m")]


def static_group(h: Harness) -> tuple[str, str, int]:
    a, b = h.join("", instance="i-1"), None
    leader = a.result.member_id
    # a second static member joins: rebalance
    b = h.join("", instance="i-2")
    a = h.join(leader, instance="i-1")
    gen = a.result.generation_id
    follower = b.result.member_id
    h.sync(leader, gen, {leader: b"A", follower: b"B"}, instance="i-1")
    assert h.sync(follower, gen, instance="i-2").result.assignment == b"B"
    return leader, follower, gen


def test_static_follower_restart_keeps_assignment_without_rebalance() -> None:
    h = Harness()
    leader, follower, gen = static_group(h)
    restart = h.join("", instance="i-2")
    new_id = restart.result.member_id
    assert restart.result.error is E.NONE and new_id != follower and restart.result.generation_id == gen
    assert state(h) is S.STABLE
    assert h.sync(new_id, gen, instance="i-2").result.assignment == b"B"
    # the old incarnation is fenced
    assert h.heartbeat(follower, gen, instance="i-2") is E.FENCED_INSTANCE_ID
    assert h.offsets.validate_commit("g", gen, follower, "i-2") is E.FENCED_INSTANCE_ID
    assert h.join(follower, instance="i-2").result.error is E.FENCED_INSTANCE_ID


def test_static_leader_restart_before_v9_is_answered_as_a_follower() -> None:
    """Kafka: a Stable group does not rebalance for a returning static leader; before JoinGroup v9
    the leader named in the answer is its previous member id, so it does not assign again."""
    h = Harness()
    leader, follower, gen = static_group(h)
    restart = h.join("", instance="i-1")
    result = restart.result
    assert result.error is E.NONE and result.generation_id == gen and state(h) is S.STABLE
    assert result.leader_id == leader != result.member_id and result.members == []
    assert h.sync(result.member_id, gen, instance="i-1").result.assignment == b"A"


def test_static_restart_with_new_metadata_keeps_the_assignment() -> None:
    """A restarted consumer's subscription no longer lists the partitions it owned: Kafka keeps the
    group Stable as long as the selected protocol does not change."""
    h = Harness()
    leader, follower, gen = static_group(h)
    token = Token("join:changed-metadata")
    request = JoinRequest("g", "", "i-2", "consumer", [("range", b"other")], SESSION_MS, REBALANCE_MS, True, False)
    h.coordinator.join(token, request)
    h.deliver()
    assert token.result.error is E.NONE and token.result.generation_id == gen and state(h) is S.STABLE
    assert h.sync(token.result.member_id, gen, instance="i-2").result.assignment == b"B"


def test_static_member_not_rejoining_stays_through_the_rebalance() -> None:
    h = Harness()
    leader, follower, gen = static_group(h)
    dynamic = h.new_member()
    joined = h.join(dynamic)  # rebalance; the static members stay alive but do not rejoin in time
    while not joined.answered:
        h.heartbeat(leader, gen, instance="i-1")
        h.heartbeat(follower, gen, instance="i-2")
        h.advance(5000)
    assert joined.result.error is E.NONE and joined.result.leader_id == dynamic
    assert len(joined.result.members) == 3
    group = h.coordinator.groups["g"]
    assert set(group.static_members) == {"i-1", "i-2"}
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == gen + 1
    # their next heartbeat tells them the generation moved on; they rejoin
    assert h.heartbeat(follower, gen, instance="i-2") is E.ILLEGAL_GENERATION


def test_static_leave_by_instance_id() -> None:
    h = Harness()
    leader, follower, gen = static_group(h)
    assert h.leave([("", "i-2")]) == (E.NONE, [E.NONE])
    assert h.leave([("wrong", "i-1")]) == (E.NONE, [E.FENCED_INSTANCE_ID])
    assert h.leave([("", "i-9")]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert state(h) is S.PREPARING_REBALANCE


def test_static_restart_fences_a_waiting_join() -> None:
    h = Harness()
    leader, follower, gen = static_group(h)
    h.join(h.new_member())  # rebalance: the follower rejoins and waits
    waiting = h.join(follower, instance="i-2")
    h.join("", instance="i-2")
    assert waiting.result.error is E.FENCED_INSTANCE_ID


def test_static_leader_restart_with_v9_skips_the_assignment() -> None:
    h = Harness()
    leader, follower, gen = static_group(h)
    token = Token("join:v9")
    request = JoinRequest("g", "", "i-1", "consumer", [("range", b"m")], SESSION_MS, REBALANCE_MS, True, True)
    h.coordinator.join(token, request)
    h.deliver()
    result = token.result
    assert result.error is E.NONE and result.skip_assignment and result.generation_id == gen
    assert result.leader_id == result.member_id and len(result.members) == 2
    assert state(h) is S.STABLE
    assert h.sync(result.member_id, gen, instance="i-1").result.assignment == b"A"
