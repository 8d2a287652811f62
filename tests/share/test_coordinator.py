"""Share-group membership on a fake clock: join, epochs, assignment, leave, session timeout."""

from __future__ import annotations

from kbroker.share.coordinator import HeartbeatRequest, ShareCoordinatorConfig, ShareGroupCoordinator
from kbroker.share.group import simple_assignment
from protocol.errors import ErrorCode

TOPICS = {"t": 3, "u": 1}


def coordinator() -> ShareGroupCoordinator:
    return ShareGroupCoordinator(ShareCoordinatorConfig(session_timeout_ms=1000), lambda t: TOPICS.get(t, 0))


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = ("t",)) -> HeartbeatRequest:
    return HeartbeatRequest("g", member, epoch, None, topics)


def test_simple_assignor_spreads_partitions_and_shares_when_members_outnumber_them() -> None:
    assert simple_assignment({"a": ("t",), "b": ("t",)}, {"t": 3}) == {"a": {"t": (0, 2)}, "b": {"t": (1,)}}
    assert simple_assignment({"a": ("u",), "b": ("u",), "c": ("u",)}, {"u": 1}) == {
        "a": {"u": (0,)},
        "b": {"u": (0,)},
        "c": {"u": (0,)},
    }
    assert simple_assignment({"a": ("x",)}, {}) == {"a": {}}


def test_join_assigns_and_others_follow_at_their_next_heartbeat() -> None:
    c = coordinator()
    first = c.heartbeat(hb("a", 0), 0)
    assert (first.error, first.member_id, first.member_epoch, first.assignment) == (
        ErrorCode.NONE,
        "a",
        1,
        {"t": (0, 1, 2)},
    )
    assert c.heartbeat(hb("a", 1, None), 10).assignment is None  # unchanged: not repeated
    second = c.heartbeat(hb("b", 0), 20)
    assert (second.member_epoch, second.assignment) == (2, {"t": (1,)})
    again = c.heartbeat(hb("a", 1, None), 30)
    assert (again.member_epoch, again.assignment) == (2, {"t": (0, 2)})


def test_epoch_checks_and_leave() -> None:
    c = coordinator()
    c.heartbeat(hb("a", 0), 0)
    assert c.heartbeat(hb("a", 7, None), 0).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert c.heartbeat(hb("zz", 1, None), 0).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat(hb("a", 0, None), 0).error is ErrorCode.INVALID_REQUEST  # join needs topics
    left = c.heartbeat(hb("a", -1, None), 0)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    assert c.take_removed() == [("g", "a")]
    assert c.groups["g"].state == "Empty"


def test_session_timeout_removes_the_member() -> None:
    c = coordinator()
    c.heartbeat(hb("a", 0), 0)
    c.heartbeat(hb("b", 0), 500)
    assert c.next_deadline() == 1000
    c.tick(1000)
    assert c.take_removed() == [("g", "a")]
    result = c.heartbeat(hb("b", 2, None), 1100)
    assert result.assignment == {"t": (0, 1, 2)}
    assert result.member_epoch == c.groups["g"].group_epoch == 3


def test_a_new_partition_bumps_the_epoch() -> None:
    c = coordinator()
    c.heartbeat(hb("a", 0), 0)
    TOPICS["t"] = 4
    try:
        result = c.heartbeat(hb("a", 1, None), 10)
    finally:
        TOPICS["t"] = 3
    assert (result.member_epoch, result.assignment) == (2, {"t": (0, 1, 2, 3)})


def test_share_sessions_epochs() -> None:
    from kbroker.share.sessions import ShareSessions

    sessions = ShareSessions(max_sessions=1)
    assert sessions.begin("g", "a", 1)[0] is ErrorCode.SHARE_SESSION_NOT_FOUND
    error, session = sessions.begin("g", "a", 0, now=5)
    assert error is ErrorCode.NONE and session is not None
    assert sessions.begin("g", "b", 0)[0] is ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert sessions.begin("g", "a", 2)[0] is ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert sessions.begin("g", "a", 1, now=9)[0] is ErrorCode.NONE
    assert sessions.begin("g", "a", 2)[0] is ErrorCode.NONE
    assert [s.member_id for s in sessions.idle(10)] == ["a"] and sessions.idle(9) == []


def test_a_groups_own_session_timeout_and_heartbeat_interval() -> None:
    own = ShareCoordinatorConfig(session_timeout_ms=5000, heartbeat_interval_ms=2000)
    c = ShareGroupCoordinator(
        ShareCoordinatorConfig(session_timeout_ms=1000),
        lambda t: TOPICS.get(t, 0),
        lambda g: own if g == "g" else c.config,
    )
    assert c.heartbeat(hb("a", 0), 0).heartbeat_interval_ms == 2000
    c.tick(1000)
    assert c.take_removed() == []
    c.tick(5000)
    assert c.take_removed() == [("g", "a")]
