"""The leader's replica state (kbroker/cluster/replica_state.py) and the follower's truncation rule
(kbroker/cluster/fetcher.py), pure, on a fake clock (times in ms passed in)."""

from __future__ import annotations

from collections.abc import Callable

from kbroker.cluster.fetcher import truncation_offset
from kbroker.cluster.replica_state import IsrChange, LeaderState, isr_summary

LAG = 1000


def leader(isr: tuple[int, ...] = (1, 2, 3), now: int = 0, epoch_start: int = 0) -> LeaderState:
    return LeaderState(
        leader_id=1,
        leader_epoch=4,
        replicas=(1, 2, 3),
        isr=isr,
        epoch_start_offset=epoch_start,
        lag_time_max_ms=LAG,
        now_ms=now,
    )


def test_high_watermark_is_the_least_log_end_over_the_isr() -> None:
    state = leader()
    assert state.high_watermark(10) == -1  # followers' offsets unknown until they fetch: it stays
    state.follower_fetched(2, 10, 10, now_ms=1)
    assert state.high_watermark(10) == -1
    state.follower_fetched(3, 7, 10, now_ms=1)
    assert state.high_watermark(10) == 7
    state.follower_fetched(3, 10, 12, now_ms=2)
    assert state.high_watermark(12) == 10  # follower 2 at 10
    # a replica outside the ISR does not hold it back
    shrunk = leader(isr=(1, 2))
    shrunk.follower_fetched(2, 12, 12, now_ms=1)
    shrunk.follower_fetched(3, 0, 12, now_ms=1)
    assert shrunk.high_watermark(12) == 12


def test_a_pending_expansion_counts_for_the_high_watermark() -> None:
    state = leader(isr=(1, 2))
    state.follower_fetched(2, 20, 20, now_ms=1)
    state.follower_fetched(3, 15, 20, now_ms=1)
    assert state.high_watermark(20) == 20
    state.isr_proposed((1, 2, 3))  # the maximal ISR: the joining follower counts while the write is out
    assert state.high_watermark(20) == 15
    state.isr_failed()
    assert state.high_watermark(20) == 20


def test_caught_up_time_follows_kafkas_rule() -> None:
    state = leader(now=0)
    # at the leader's log end: caught up now
    state.follower_fetched(2, 10, 10, now_ms=100)
    assert state.followers[2].last_caught_up_ms == 100
    # behind the current end, but at the end the leader had at its previous fetch: caught up as of then
    state.follower_fetched(2, 10, 15, now_ms=200)
    assert state.followers[2].last_caught_up_ms == 100
    state.follower_fetched(2, 15, 30, now_ms=300)
    assert state.followers[2].last_caught_up_ms == 200
    # behind both: not caught up
    state.follower_fetched(2, 20, 40, now_ms=400)
    assert state.followers[2].last_caught_up_ms == 200


def test_a_follower_not_caught_up_for_the_lag_time_leaves_the_isr() -> None:
    state = leader(now=0)
    state.follower_fetched(2, 10, 10, now_ms=0)
    state.follower_fetched(3, 10, 10, now_ms=0)
    assert state.isr_change(10, 10, now_ms=LAG) is None
    # follower 3 keeps fetching at the end, follower 2 stops (or falls behind)
    state.follower_fetched(3, 50, 50, now_ms=LAG + 1)
    assert state.out_of_sync(50, now_ms=LAG + 1) == [2]
    assert state.isr_change(50, 10, now_ms=LAG + 1) == ((1, 3), "isr_shrunk")
    # a follower at the leader's log end is in sync however long ago it fetched
    idle = leader(now=0)
    idle.follower_fetched(2, 10, 10, now_ms=0)
    idle.follower_fetched(3, 10, 10, now_ms=0)
    assert idle.out_of_sync(10, now_ms=10 * LAG) == []
    # the ISR members count as caught up when the leader takes over
    fresh = leader(now=5000)
    assert fresh.out_of_sync(10, now_ms=5000 + LAG) == []
    assert fresh.out_of_sync(10, now_ms=5001 + LAG) == [2, 3]


def test_a_follower_rejoins_once_at_the_high_watermark_and_the_epochs_start() -> None:
    state = leader(isr=(1, 2), epoch_start=30)
    state.follower_fetched(2, 40, 40, now_ms=1)
    state.follower_fetched(3, 25, 40, now_ms=1)
    assert not state.may_join(3, 25)  # below the start of the leader's epoch
    state.follower_fetched(3, 35, 40, now_ms=2)
    assert not state.may_join(3, 40)  # below the high watermark
    assert state.may_join(3, 35)
    assert state.isr_change(40, 35, now_ms=2) == ((1, 2, 3), "isr_expanded")
    assert not state.may_join(2, 35)  # already in


def test_one_isr_change_at_a_time_and_a_written_one_is_the_isr() -> None:
    state = leader(now=0)
    state.follower_fetched(2, 5, 5, now_ms=0)
    state.follower_fetched(3, 5, 5, now_ms=0)
    change = state.isr_change(100, 5, now_ms=LAG + 1)
    assert change == ((1,), "isr_shrunk")
    state.isr_proposed(change[0])
    assert state.isr_change(100, 5, now_ms=LAG + 2) is None
    assert state.maximal_isr == (1, 2, 3)  # a shrink counts only once written
    state.isr_written(change[0])
    assert state.isr == (1,) and state.pending_isr is None
    assert state.high_watermark(100) == 100


def test_an_unknown_replica_is_ignored() -> None:
    state = leader()
    assert not state.follower_fetched(9, 10, 10, now_ms=1)
    assert not state.may_join(9, 0)


def ends(entries: dict[int, int], log_end: int) -> Callable[[int], tuple[int, int]]:
    """The follower's end_offset_for: the largest epoch at or below the asked one, and where it ends."""

    def end_offset_for(epoch: int) -> tuple[int, int]:
        below = [e for e in sorted(entries) if e <= epoch]
        if not below:
            return -1, -1
        found = below[-1]
        later = [entries[e] for e in sorted(entries) if e > found]
        return found, later[0] if later else log_end

    return end_offset_for


def test_truncation_offset_follows_kafkas_rule() -> None:
    # the follower wrote epoch 0 to offset 70, the leader's epoch 0 ended at 50
    assert truncation_offset(0, 50, ends({0: 0}, 70), 70) == 50
    # the follower has epoch 2 (a leader that wrote nothing to it... or wrote 60-70) the leader never had:
    # the leader answers its epoch 1 ending at 60; the follower's epoch 1 ends at 55 -> 55
    assert truncation_offset(1, 60, ends({0: 0, 1: 40, 2: 55}, 70), 70) == 55
    # the leader (epochs 0 at 0, 1 at 20, 3 at 50) answers the follower's last epoch 2 with its epoch 1 ending
    # at 50; the follower (0 at 0, 2 at 30) never had epoch 1: it cuts to the end of its epoch 0, then asks
    # again with epoch 0, which the leader ends at 20
    assert truncation_offset(1, 50, ends({0: 0, 2: 30}, 70), 70) == 30
    assert truncation_offset(0, 20, ends({0: 0}, 30), 30) == 20
    # no epoch from the leader: its end offset, never past the follower's own end
    assert truncation_offset(-1, 40, ends({0: 0}, 70), 70) == 40
    assert truncation_offset(-1, 90, ends({0: 0}, 70), 70) == 70


def test_isr_summary_counts_and_names_a_few_partitions() -> None:
    changes = [IsrChange(("t", p), "isr_shrunk", (1, 2, 3), (1, 2)) for p in range(7)]
    changes.append(IsrChange(("u", 0), "isr_expanded", (1,), (1, 2)))
    changes.append(IsrChange(("u", 1), "isr_update_failed", (1,), (1, 3), "StaleStateError"))
    summary = isr_summary(changes)
    assert (summary["changes"], summary["partitions"]) == (9, 9)
    assert isr_summary(changes[:1] * 2)["partitions"] == 1  # one partition changed twice
    assert (summary["isr_shrunk"], summary["isr_expanded"], summary["isr_update_failed"]) == (7, 1, 1)
    assert summary["examples"] == [f"t-{p} [1, 2, 3]->[1, 2] isr_shrunk" for p in range(5)]
    tail = isr_summary(changes[7:])["examples"]
    assert tail == ["u-0 [1]->[1, 2] isr_expanded", "u-1 [1]->[1, 3] failed StaleStateError"]
