"""A fake clock and a small driver for the pure group coordinator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbroker.group.config import GroupConfig
from kbroker.group.coordinator import GroupCoordinator, JoinRequest, JoinResult, SyncRequest, SyncResult
from kbroker.group.offsets import GroupOffsets
from protocol.errors import ErrorCode

SESSION_MS = 10_000
REBALANCE_MS = 30_000


class FakeClock:
    def __init__(self, start: int = 1_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now


@dataclass(eq=False)
class Token:
    """Stands for a client waiting for one answer."""

    name: str
    result: Any = None

    @property
    def answered(self) -> bool:
        return self.result is not None


@dataclass
class Harness:
    config: GroupConfig = field(default_factory=GroupConfig)
    clock: FakeClock = field(default_factory=FakeClock)

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.config, self.clock)
        self.offsets = GroupOffsets(self.config, self.clock, self.coordinator.groups)

    def deliver(self) -> None:
        for token, result in self.coordinator.take_replies():
            assert isinstance(token, Token)
            assert token.result is None, f"{token.name} answered twice"
            token.result = result

    def advance(self, ms: int) -> None:
        self.clock.now += ms
        self.coordinator.tick()
        self.deliver()

    def join(
        self,
        member_id: str = "",
        group: str = "g",
        *,
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        session: int = SESSION_MS,
        rebalance: int = REBALANCE_MS,
        v4: bool = True,
        client_id: str = "c",
    ) -> Token:
        token = Token(f"join:{member_id or instance or 'new'}")
        request = JoinRequest(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=protocols if protocols is not None else [("range", b"m")],
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            require_known_member_id=v4,
            client_id=client_id,
            client_host="127.0.0.1",
        )
        self.coordinator.join(token, request)
        self.deliver()
        return token

    def new_member(self, group: str = "g", **kwargs: Any) -> str:
        """A v4 join without id: MEMBER_ID_REQUIRED, whose id is returned."""
        token = self.join("", group, **kwargs)
        result = token.result
        assert isinstance(result, JoinResult) and result.error is ErrorCode.MEMBER_ID_REQUIRED, result
        return result.member_id

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Token:
        token = Token(f"sync:{member_id}")
        request = SyncRequest(group, member_id, instance, generation, assignments or {}, protocol_type, protocol_name)
        self.coordinator.sync(token, request)
        self.deliver()
        return token

    def heartbeat(self, member_id: str, generation: int, group: str = "g", instance: str | None = None) -> ErrorCode:
        error = self.coordinator.heartbeat(group, member_id, instance, generation)
        self.deliver()
        return error

    def leave(self, leaving: list[tuple[str, str | None]], group: str = "g") -> tuple[ErrorCode, list[ErrorCode]]:
        result = self.coordinator.leave(group, leaving)
        self.deliver()
        return result

    def stable_group(self, count: int, group: str = "g") -> tuple[list[str], int]:
        """`count` members joined and synced; returns their ids (leader first) and the generation."""
        ids = [self.new_member(group) for _ in range(count)]
        tokens = [self.join(member_id, group) for member_id in ids]
        results = [t.result for t in tokens]
        assert all(isinstance(r, JoinResult) and r.error is ErrorCode.NONE for r in results), results
        generation = results[0].generation_id
        leader = results[0].leader_id
        ordered = [leader] + [m for m in ids if m != leader]
        syncs = [
            self.sync(m, generation, {x: x.encode() for x in ids} if m == leader else None, group=group)
            for m in ordered
        ]
        assert all(isinstance(s.result, SyncResult) and s.result.error is ErrorCode.NONE for s in syncs)
        return ordered, generation
