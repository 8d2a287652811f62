"""The classic group protocol at the edge (JoinGroup with session timeouts out of range, no protocols, another
protocol type, an unknown member, the empty group id, a static member; SyncGroup, Heartbeat and LeaveGroup of
unknown groups and members), answered by a fresh kbroker and a fresh Apache Kafka 4.3.1 and compared field for
field (tests/broker/side_by_side.py). Member ids the brokers make up are compared as `<member>`."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker import side_by_side
from tests.broker.side_by_side import Request, Step
from tests.process import RawClient

pytestmark = pytest.mark.timeout(300)

GROUP = "classic"


def _prepare(raw: RawClient) -> None:
    side_by_side.until_coordinator(raw, GROUP)
    side_by_side.until_coordinator(raw, "static")


def _join(member: str = "", *, group: str = GROUP, session: int = 10_000, instance: str | None = None,
          protocol_type: str = "consumer", protocols: list[str] | None = None) -> Any:  # fmt: skip
    """JoinGroup v9 (a new member is asked to join again with the member id it is given)."""

    def body(node: int) -> dict[str, Any]:
        return {"group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": 10_000,
                "member_id": member, "group_instance_id": instance,
                "protocol_type": protocol_type,
                "protocols": [{"name": p, "metadata": b""} for p in (["range"] if protocols is None else protocols)],
                "reason": None}  # fmt: skip

    return body


REQUESTS: list[Request | Step] = [
    _prepare,
    ("join with a short session", ApiKey.JOIN_GROUP, 9, _join(session=10)),
    ("join with a long session", ApiKey.JOIN_GROUP, 9, _join(session=10_000_000)),
    ("join without protocols", ApiKey.JOIN_GROUP, 9, _join(protocols=[])),
    ("join with an empty protocol type", ApiKey.JOIN_GROUP, 9, _join(protocol_type="")),
    ("join as an unknown member", ApiKey.JOIN_GROUP, 9, _join("stranger")),
    ("join the empty group id", ApiKey.JOIN_GROUP, 9, _join(group="")),
    ("join", ApiKey.JOIN_GROUP, 9, _join()),
    ("heartbeat of an unknown group", ApiKey.HEARTBEAT, 4, lambda node: {
        "group_id": "nobody", "generation_id": 0, "member_id": "m", "group_instance_id": None}),
    ("sync of an unknown member", ApiKey.SYNC_GROUP, 5, lambda node: {
        "group_id": GROUP, "generation_id": 0, "member_id": "stranger", "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range", "assignments": []}),
    ("leave of an unknown member", ApiKey.LEAVE_GROUP, 5, lambda node: {
        "group_id": GROUP, "members": [{"member_id": "stranger", "group_instance_id": None, "reason": None}]}),
    ("leave of no member", ApiKey.LEAVE_GROUP, 5, lambda node: {"group_id": GROUP, "members": []}),
    ("join another protocol type", ApiKey.JOIN_GROUP, 9, _join(protocol_type="connect")),
    ("static join", ApiKey.JOIN_GROUP, 9, _join(group="static", instance="i-1")),
]  # fmt: skip


def _adjust(label: str, answer: Any) -> Any:
    """A member id the broker made up is `<member>`; the leader's and members' ids likewise."""
    for key in ("member_id", "leader"):
        if isinstance(answer.get(key), str) and answer[key] not in ("", "stranger"):
            answer[key] = "<member>"
    for member in answer.get("members", []) or []:
        if isinstance(member.get("member_id"), str) and member["member_id"] not in ("", "stranger"):
            member["member_id"] = "<member>"
    return answer


kafka_answers, test_answers_are_kafkas = side_by_side.comparison(REQUESTS, adjust=_adjust)
