"""Reconciliation: how a member's assignment moves toward its target (Kafka's CurrentAssignmentBuilder).

A member keeps the partitions of its target it already has. Partitions it has but is no longer
to have must be revoked first: it stays in its epoch (UNREVOKED_PARTITIONS) and gets an assignment
without them; only once its heartbeat no longer lists them as owned does it move on. New
partitions are given only when no other member still owns them; while some are, the member takes
the target epoch with what is free and waits (UNRELEASED_PARTITIONS), and gets the rest at a later
heartbeat once released. Pure.
"""

from __future__ import annotations

from kbroker.group.consumer_group import Assignment, ConsumerMember, MemberState


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owners: dict[tuple[str, int], int],
    owned: Assignment | None,
) -> bool:
    """Advance `member` toward `target`; `owners` are other members' partitions, `owned` what the
    heartbeat reported (None: not sent). Returns whether the member changed."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return False
        return _next(member, member.member_epoch, target_epoch, target, owners, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return False
        return _next(member, member.member_epoch + 1, target_epoch, target, owners, owned)
    return _next(member, member.member_epoch, target_epoch, target, owners, owned)


def _still_owns(owned: Assignment | None, revoking: Assignment) -> bool:
    if owned is None:
        return True  # no news from the member: it may still hold them
    return any(owned.get(topic, frozenset()) & partitions for topic, partitions in revoking.items())


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owners: dict[tuple[str, int], int],
    owned: Assignment | None,
) -> bool:
    before = (member.state, member.member_epoch, member.assigned, member.pending_revocation)
    assigned: Assignment = {}
    revoking: Assignment = {}
    adding: Assignment = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        keep = current & wanted
        give_up = current - keep
        new = {p for p in wanted - keep if (topic, p) not in owners}
        unreleased = unreleased or len(new) < len(wanted - keep)
        if keep:
            assigned[topic] = keep
        if give_up:
            revoking[topic] = give_up
        if new:
            adding[topic] = frozenset(new)
    if revoking and _still_owns(owned, revoking):
        member.state = MemberState.UNREVOKED_PARTITIONS
        _set_epoch(member, epoch)
        member.assigned, member.pending_revocation = assigned, revoking
    else:
        for topic, partitions in adding.items():
            assigned[topic] = assigned.get(topic, frozenset()) | partitions
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        _set_epoch(member, target_epoch)
        member.assigned, member.pending_revocation = assigned, {}
    return before != (member.state, member.member_epoch, member.assigned, member.pending_revocation)


def _set_epoch(member: ConsumerMember, epoch: int) -> None:
    if epoch != member.member_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = epoch
