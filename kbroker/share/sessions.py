"""Share sessions (KIP-932): which partitions a member fetches, and the epoch of its next request.

Epoch 0 opens a session (replacing one the member had), -1 closes it, any other epoch must be the
session's next one: SHARE_SESSION_NOT_FOUND when there is no session, INVALID_SHARE_SESSION_EPOCH
when the epoch is wrong. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

SharePartitionKey = tuple[str, int]  # (topic name, partition)


@dataclass(eq=False)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    last_used: int = 0  # when a request last used it (ms)
    partitions: dict[SharePartitionKey, None] = field(default_factory=dict)  # ordered set


class ShareSessions:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def begin(self, group_id: str, member_id: str, epoch: int, now: int = 0) -> tuple[ErrorCode, ShareSession | None]:
        """The session a request at `epoch` belongs to; the epoch moves forward on success."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                return ErrorCode.SHARE_SESSION_LIMIT_REACHED, None
            opened = self.sessions[key] = ShareSession(group_id, member_id, last_used=now)
            return ErrorCode.NONE, opened
        session = self.sessions.get(key)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        session.last_used = max(session.last_used, now)
        if epoch == FINAL_EPOCH:
            return ErrorCode.NONE, session
        if epoch != session.next_epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        session.next_epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        return ErrorCode.NONE, session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def of_group(self, group_id: str) -> list[ShareSession]:
        return [s for (g, _), s in self.sessions.items() if g == group_id]

    def idle(self, before: int) -> list[ShareSession]:
        """Sessions not used since `before`."""
        return [s for s in self.sessions.values() if s.last_used < before]
