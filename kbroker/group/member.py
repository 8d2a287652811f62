"""A classic group member as the coordinator knows it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None  # set for static members (KIP-345)
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's order of preference
    session_deadline: int = 0  # ms on the coordinator's clock
    assignment: bytes = b""
    # Opaque tokens of a JoinGroup / SyncGroup answer this member is waiting for (the runtime maps them to futures).
    awaiting_join: object | None = None
    awaiting_sync: object | None = None
    is_new: bool = False  # joined in the current rebalance (expires sooner if it never rejoins)
    metadata_by_name: dict[str, bytes] = field(init=False)

    def __post_init__(self) -> None:
        self.metadata_by_name = dict(self.protocols)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def update_protocols(self, protocols: list[tuple[str, bytes]]) -> None:
        self.protocols = protocols
        self.metadata_by_name = dict(protocols)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return self.protocols == protocols

    def metadata(self, protocol: str) -> bytes:
        return self.metadata_by_name.get(protocol, b"")

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name, _ in self.protocols if name in candidates)
