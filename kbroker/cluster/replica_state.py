"""The leader's view of a replicated partition, pure (Kafka's Partition and Replica state, no I/O, times in ms
given by the caller):

- each follower's log end offset, as its last fetch said (its fetch offset), unknown (-1) until it fetches
  under this leader epoch;
- its last caught-up time, by Kafka's rule: a fetch at or past the leader's log end offset at the time of
  that fetch catches it up now; one at or past the leader's log end offset at the time of its previous
  fetch catches it up as of that previous fetch;
- the high watermark: the least log end offset over the ISR (the leader's own included), never backwards;
  while an ISR change is being written the larger of the two ISRs counts (Kafka's maximal ISR), so the
  high watermark never covers less than both of them have;
- the ISR changes the leader proposes: shrink a follower not caught up for longer than
  replica.lag.time.max.ms (and not at the leader's log end), expand one whose log end offset reached the
  high watermark and the start offset of the leader's current epoch. One change is in flight at a time;
  the runtime writes it as a compare-and-set on the partition's state znode and reports the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerState:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_log_end: int = UNKNOWN_OFFSET


@dataclass
class LeaderState:
    """One partition this broker leads at `leader_epoch`."""

    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]  # as written in ZooKeeper
    epoch_start_offset: int  # where the leader's current epoch began (its log end offset when it became leader)
    lag_time_max_ms: int
    now_ms: int
    pending_isr: tuple[int, ...] | None = None  # an ISR change being written
    followers: dict[int, FollowerState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # as Kafka's leader resets its remote replicas: in-sync ones count as caught up now, offsets unknown
        for broker in self.replicas:
            if broker != self.leader_id:
                caught_up = self.now_ms if broker in self.isr else 0
                self.followers[broker] = FollowerState(broker, last_caught_up_ms=caught_up)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys(self.isr + self.pending_isr))

    def follower_fetched(self, broker_id: int, fetch_offset: int, leader_log_end: int, now_ms: int) -> bool:
        """A follower fetched from `fetch_offset` while the leader's log ended at `leader_log_end`. False
        when it is not a replica of the partition."""
        follower = self.followers.get(broker_id)
        if follower is None:
            return False
        if fetch_offset >= leader_log_end:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now_ms)
        elif fetch_offset >= follower.last_fetch_leader_log_end >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.last_fetch_leader_log_end = leader_log_end
        follower.last_fetch_ms = now_ms
        return True

    def high_watermark(self, leader_log_end: int) -> int:
        """The least log end offset over the (maximal) ISR: the caller moves the log's high watermark to it
        when it is higher (an unknown follower offset, -1, keeps it where it is)."""
        offset = leader_log_end
        for broker in self.maximal_isr:
            follower = self.followers.get(broker)
            if follower is not None and follower.log_end_offset < offset:
                offset = follower.log_end_offset
        return offset

    def out_of_sync(self, leader_log_end: int, now_ms: int) -> list[int]:
        """ISR followers not caught up for longer than replica.lag.time.max.ms (Kafka's isFollowerOutOfSync)."""
        late = []
        for broker in self.isr:
            follower = self.followers.get(broker)
            if follower is None:
                continue
            if follower.log_end_offset != leader_log_end and now_ms - follower.last_caught_up_ms > self.lag_time_max_ms:
                late.append(broker)
        return late

    def may_join(self, broker_id: int, high_watermark: int) -> bool:
        """A follower outside the ISR that may join it: its log end offset reached the high watermark and the
        start of the leader's current epoch (so it has every record of this epoch's leader below it)."""
        follower = self.followers.get(broker_id)
        return (
            follower is not None
            and broker_id not in self.isr
            and follower.log_end_offset >= high_watermark
            and follower.log_end_offset >= self.epoch_start_offset
        )

    def isr_change(self, leader_log_end: int, high_watermark: int, now_ms: int) -> tuple[tuple[int, ...], str] | None:
        """(the ISR to write, "isr_shrunk" or "isr_expanded"), or None: nothing to change, or a change is
        being written already."""
        if self.pending_isr is not None:
            return None
        late = set(self.out_of_sync(leader_log_end, now_ms))
        if late:
            return tuple(b for b in self.isr if b not in late), "isr_shrunk"
        joining = [b for b in self.replicas if self.may_join(b, high_watermark)]
        if joining:
            return tuple(self.isr) + tuple(joining), "isr_expanded"
        return None

    def isr_proposed(self, isr: tuple[int, ...]) -> None:
        self.pending_isr = isr

    def isr_written(self, isr: tuple[int, ...]) -> None:
        """The change was written (or the controller wrote another ISR at the same epoch: take it)."""
        self.pending_isr = None
        self.isr = isr

    def isr_failed(self) -> None:
        """The write lost a race or failed: decide again later, from a fresh read."""
        self.pending_isr = None


ISR_LOG_INTERVAL_S = 1.0
ISR_LOG_EXAMPLES = 5


@dataclass(frozen=True)
class IsrChange:
    """One partition's ISR write: `reason` isr_shrunk, isr_expanded or isr_update_failed (then `error`)."""

    partition: tuple[str, int]
    reason: str
    before: tuple[int, ...]
    after: tuple[int, ...]
    error: str | None = None


def isr_summary(changes: list[IsrChange]) -> dict[str, Any]:
    """One log event's fields for many ISR changes: counts per reason and the first few partitions."""
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.reason] = counts.get(change.reason, 0) + 1
    examples = [
        f"{c.partition[0]}-{c.partition[1]} {list(c.before)}->{list(c.after)}"
        + (f" {c.reason}" if c.error is None else f" failed {c.error}")
        for c in changes[:ISR_LOG_EXAMPLES]
    ]
    return {"changes": len(changes), "partitions": len({c.partition for c in changes}), **counts, "examples": examples}
