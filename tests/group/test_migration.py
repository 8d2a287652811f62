"""Online migration between the classic and the consumer protocol (KIP-848), pure, on a fake clock: a classic
group whose members move to the consumer protocol one by one and back, with classic members answered by
the consumer group meanwhile; no partition is ever held by two members."""

from __future__ import annotations

import struct

from kbroker.group.classic_members import ClassicMembers
from kbroker.group.config import GroupConfig
from kbroker.group.consumer_coordinator import (
    ConsumerCoordinatorConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    ConsumerHeartbeat,
)
from kbroker.group.consumer_group import ConsumerGroupState
from kbroker.group.coordinator import GroupCoordinator, JoinRequest, JoinResult, SyncRequest, SyncResult
from kbroker.group.embedded import assignment_bytes, parse_assignment, parse_subscription
from kbroker.group.migration import MigrationPolicy
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode

E = ErrorCode
TOPIC = "t"
PARTITIONS = 6
SESSION_MS = 10_000
REBALANCE_MS = 30_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def subscription(owned: set[int], version: int = 1) -> bytes:
    """ConsumerProtocolSubscription v1: topics, null user data, owned partitions."""
    name = TOPIC.encode()
    out = struct.pack(">hi", version, 1) + struct.pack(">h", len(name)) + name + struct.pack(">i", -1)
    if version >= 1:
        items = sorted(owned)
        out += struct.pack(">i", 1 if items else 0)
        if items:
            out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(items))
            out += b"".join(struct.pack(">i", p) for p in items)
    return out


class Cluster:
    """The two coordinators over one namespace of groups, wired as the runtime wires them."""

    def __init__(self, policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL) -> None:
        self.clock = Clock()
        self.groups: dict = {}
        self.policy = policy
        self.classic = GroupCoordinator(GroupConfig(min_session_timeout_ms=1000), self.clock, self.groups)
        self.consumers = ConsumerGroupCoordinator(
            ConsumerCoordinatorConfig(migration_policy=policy),
            self.clock,
            self.groups,
            lambda: {TOPIC: PARTITIONS},
            lambda group_id: ConsumerGroupSettings(45_000, 5_000),
        )
        self.members = ClassicMembers(self.consumers)
        self.replies: dict[object, object] = {}

    def settle(self) -> None:
        for token, result in [*self.classic.take_replies(), *self.consumers.replies]:
            self.replies[token] = result
        self.consumers.replies = []
        downgraded, self.consumers.downgraded = self.consumers.downgraded, set()
        for group_id in downgraded:
            self.classic.rebalance(self.groups[group_id], "downgrade")
        for token, result in self.classic.take_replies():
            self.replies[token] = result

    @property
    def holder(self):
        return self.groups["g"]

    def is_consumer_group(self) -> bool:
        holder = self.groups.get("g")
        return holder is not None and holder.consumer is not None and bool(holder.consumer.members)

    # classic requests, routed as GroupRuntime routes them
    def join(self, token: str, member_id: str, owned: set[int]) -> None:
        request = JoinRequest(
            "g", member_id, None, "consumer", [("range", subscription(owned))], SESSION_MS, REBALANCE_MS
        )
        if self.is_consumer_group():
            self.replies[token] = self.members.join(self.holder.consumer, request)
        else:
            self.classic.join(token, request)
        self.settle()

    def sync(self, token: str, member_id: str, generation: int, assignments: dict[str, bytes]) -> None:
        request = SyncRequest("g", member_id, None, generation, assignments, "consumer", "range")
        if self.is_consumer_group():
            self.replies[token] = self.members.sync(self.holder.consumer, request)
        else:
            self.classic.sync(token, request)
        self.settle()

    def heartbeat(self, member_id: str, generation: int) -> ErrorCode:
        if self.is_consumer_group():
            return self.members.heartbeat(self.holder.consumer, member_id, None, generation)
        return self.classic.heartbeat("g", member_id, None, generation)

    def leave(self, member_id: str) -> None:
        if self.is_consumer_group():
            self.members.leave(self.holder.consumer, [(member_id, None)])
        else:
            self.classic.leave("g", [(member_id, None)])
        self.settle()

    def consumer_beat(self, member_id: str, epoch: int, owned: set[int] | None = None):
        request = ConsumerHeartbeat(
            "g",
            member_id,
            epoch,
            rebalance_timeout_ms=REBALANCE_MS if epoch == 0 else -1,
            subscribed_topic_names=(TOPIC,) if epoch == 0 else None,
            owned={TOPIC: frozenset(owned or set())} if epoch == 0 or owned is not None else None,
        )
        result = self.consumers.heartbeat(request)
        self.settle()
        return result


class ClassicClient:
    """A classic consumer with the eager protocol: gives everything up before it rejoins."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.member_id = ""
        self.generation = -1
        self.owned: set[int] = set()
        self.count = 0
        self.pending = ""

    def _token(self) -> str:
        self.count += 1
        return f"{self.name}-{self.count}"

    def join(self) -> JoinResult:
        """JoinGroup (again with the member id the coordinator asks for); the answer, or None while it waits."""
        self.owned = set()  # eager: revoked before rejoining
        self.pending = self._token()
        self.cluster.join(self.pending, self.member_id, self.owned)
        result = self.answer()
        if result is not None and result.error is E.MEMBER_ID_REQUIRED:
            self.member_id = result.member_id
            self.pending = self._token()
            self.cluster.join(self.pending, self.member_id, self.owned)
            result = self.answer()
        return result  # type: ignore[return-value]

    def answer(self) -> JoinResult | None:
        result = self.cluster.replies.get(self.pending)
        if isinstance(result, JoinResult) and result.error is E.NONE:
            self.member_id, self.generation = result.member_id, result.generation_id
        return result  # type: ignore[return-value]

    def sync(self, assignments: dict[str, bytes] | None = None) -> SyncResult | None:
        token = self._token()
        self.cluster.sync(token, self.member_id, self.generation, assignments or {})
        result = self.cluster.replies.get(token)
        if isinstance(result, SyncResult) and result.error is E.NONE:
            self.owned = set(parse_assignment(result.assignment).get(TOPIC, frozenset()))
        return result  # type: ignore[return-value]


def owners(cluster: Cluster, classic: list[ClassicClient], consumer: dict[str, set[int]]) -> list[int]:
    held = [p for c in classic for p in c.owned] + [p for parts in consumer.values() for p in parts]
    assert len(held) == len(set(held)), f"a partition held twice: {sorted(held)}"
    return sorted(held)


def start_classic_group(cluster: Cluster) -> tuple[ClassicClient, ClassicClient]:
    """Two classic members, a leading: a assigns partitions 0-2 to itself and 3-5 to b."""
    a, b = ClassicClient(cluster, "a"), ClassicClient(cluster, "b")
    assert a.join().leader_id == a.member_id
    a.sync({a.member_id: assignment_bytes({TOPIC: frozenset(range(PARTITIONS))}, 1)})
    assert b.join() is None  # waits: the group rebalances for it
    assert cluster.heartbeat(a.member_id, a.generation) is E.REBALANCE_IN_PROGRESS
    joined = a.join()
    assert joined is not None and joined.leader_id == a.member_id and len(joined.members) == 2
    assert b.answer() is not None and b.generation == a.generation
    plan = {a.member_id: {TOPIC: frozenset({0, 1, 2})}, b.member_id: {TOPIC: frozenset({3, 4, 5})}}
    token = b._token()
    cluster.sync(token, b.member_id, b.generation, {})
    a.sync({m: assignment_bytes(p, 1) for m, p in plan.items()})
    synced = cluster.replies[token]
    assert isinstance(synced, SyncResult) and synced.error is E.NONE
    b.owned = set(parse_assignment(synced.assignment)[TOPIC])
    assert cluster.holder.state is GroupState.STABLE
    assert owners(cluster, [a, b], {}) == list(range(PARTITIONS))
    return a, b


def rejoin_until_stable(
    cluster: Cluster, clients: list[ClassicClient], consumer: dict[str, tuple[int, set[int]]]
) -> None:
    """Classic members follow their heartbeat answers, consumer members heartbeat with what they own, until
    every partition is held once and nobody is asked to move."""
    for _ in range(20):
        moved = False
        for client in clients:
            if cluster.heartbeat(client.member_id, client.generation) is not E.NONE:
                moved = True
                joined = client.join()
                assert joined.error is E.NONE, joined
                synced = client.sync()
                assert synced is not None
                if synced.error is E.REBALANCE_IN_PROGRESS:
                    continue
                assert synced.error is E.NONE, synced
        for member_id, (epoch, held) in list(consumer.items()):
            result = cluster.consumer_beat(member_id, epoch, held)
            assert result.error is E.NONE, result
            if result.assignment is not None:
                new = set(result.assignment.get(TOPIC, frozenset()))
                moved = moved or new != held or result.member_epoch != epoch
                consumer[member_id] = (result.member_epoch, new)
            elif result.member_epoch != epoch:
                moved = True
                consumer[member_id] = (result.member_epoch, held)
        owners(cluster, clients, {m: h for m, (_, h) in consumer.items()})
        if not moved:
            return
    raise AssertionError("the group did not settle")


def test_upgrade_member_by_member_then_downgrade_when_the_last_consumer_member_leaves() -> None:
    cluster = Cluster()
    a, b = start_classic_group(cluster)
    generation = cluster.holder.generation_id
    # a is restarted with group.protocol=consumer: it leaves, the classic group rebalances (b alone)
    cluster.leave(a.member_id)
    rejoin_until_stable_classic(cluster, b)
    assert b.owned == set(range(PARTITIONS))
    # the new a joins with the consumer protocol: the live classic group becomes a consumer group
    first = cluster.consumer_beat("a2", 0)
    assert first.error is E.NONE
    consumer = cluster.holder.consumer
    assert consumer is not None and set(consumer.members) == {"a2", b.member_id}
    assert consumer.members[b.member_id].classic is not None
    assert consumer.members[b.member_id].member_epoch > generation - 1
    assert cluster.holder.state is GroupState.EMPTY and not cluster.holder.members  # no classic membership left
    held = {"a2": (first.member_epoch, set((first.assignment or {}).get(TOPIC, frozenset())))}
    rejoin_until_stable(cluster, [b], held)
    assert sorted(held["a2"][1] | b.owned) == list(range(PARTITIONS))
    assert held["a2"][1] and b.owned  # both have a share
    assert consumer.state is ConsumerGroupState.STABLE
    # b is restarted with the consumer protocol too
    cluster.leave(b.member_id)
    assert cluster.is_consumer_group()  # a2 remains: still a consumer group, now with no classic member
    second = cluster.consumer_beat("b2", 0)
    held["b2"] = (second.member_epoch, set((second.assignment or {}).get(TOPIC, frozenset())))
    rejoin_until_stable(cluster, [], held)
    assert sorted(held["a2"][1] | held["b2"][1]) == list(range(PARTITIONS))
    # rollback: b2 goes back to the classic protocol, then a2 leaves: only classic members remain
    cluster.consumer_beat("b2", -1)
    del held["b2"]
    b3 = ClassicClient(cluster, "b3")
    joined = b3.join()
    assert joined.error is E.NONE and joined.leader_id == "" and joined.members == []
    assert cluster.is_consumer_group() and cluster.holder.consumer.members[b3.member_id].classic is not None
    assert b3.sync() is not None
    rejoin_until_stable(cluster, [b3], held)
    assert sorted(held["a2"][1] | b3.owned) == list(range(PARTITIONS))
    epoch = cluster.holder.consumer.group_epoch
    cluster.consumer_beat("a2", -1)
    assert cluster.holder.consumer is None  # downgraded
    assert cluster.holder.state is GroupState.PREPARING_REBALANCE
    assert set(cluster.holder.members) == {b3.member_id}
    assert cluster.holder.generation_id == epoch == b3.generation  # the epoch its members were given
    assert cluster.heartbeat(b3.member_id, b3.generation) is E.REBALANCE_IN_PROGRESS
    rejoin_until_stable_classic(cluster, b3)
    assert cluster.holder.state is GroupState.STABLE and b3.owned == set(range(PARTITIONS))


def rejoin_until_stable_classic(cluster: Cluster, client: ClassicClient) -> None:
    """A lone classic member in a classic group: rejoin, lead, assign itself everything."""
    for _ in range(5):
        answer = cluster.heartbeat(client.member_id, client.generation)
        if answer is E.NONE and cluster.holder.state is GroupState.STABLE:
            return
        joined = client.join()
        assert joined.error is E.NONE, joined
        assert joined.leader_id == client.member_id
        client.sync({client.member_id: assignment_bytes({TOPIC: frozenset(range(PARTITIONS))}, 1)})
    raise AssertionError("the classic group did not settle")


def test_upgrade_refused_when_the_policy_forbids_it() -> None:
    cluster = Cluster(MigrationPolicy.DOWNGRADE)
    start_classic_group(cluster)
    result = cluster.consumer_beat("c", 0)
    assert result.error is E.GROUP_ID_NOT_FOUND
    assert cluster.holder.consumer is None and len(cluster.holder.members) == 2


def test_no_downgrade_when_the_policy_forbids_it() -> None:
    cluster = Cluster(MigrationPolicy.UPGRADE)
    a, b = start_classic_group(cluster)
    assert cluster.consumer_beat("c", 0).error is E.NONE
    cluster.consumer_beat("c", -1)
    assert cluster.holder.consumer is not None and len(cluster.holder.consumer.members) == 2


def test_classic_member_that_does_not_rejoin_in_time_is_fenced() -> None:
    cluster = Cluster()
    a, b = start_classic_group(cluster)
    assert cluster.consumer_beat("c", 0).error is E.NONE
    assert cluster.heartbeat(a.member_id, a.generation) is E.REBALANCE_IN_PROGRESS
    cluster.clock.now += REBALANCE_MS + 1
    assert cluster.heartbeat(b.member_id, b.generation) is E.REBALANCE_IN_PROGRESS
    cluster.consumers.tick()
    cluster.settle()
    assert a.member_id not in cluster.holder.consumer.members
    assert b.member_id in cluster.holder.consumer.members  # its rejoin deadline started later


def test_classic_requests_to_a_consumer_group_are_checked_as_kafka_checks_them() -> None:
    cluster = Cluster()
    a, b = start_classic_group(cluster)
    cluster.consumer_beat("c", 0)
    group = cluster.holder.consumer
    assert cluster.members.heartbeat(group, "nobody", None, 1) is E.UNKNOWN_MEMBER_ID
    assert cluster.members.heartbeat(group, "c", None, 1) is E.UNKNOWN_MEMBER_ID  # not a classic member
    assert cluster.members.heartbeat(group, a.member_id, None, a.generation + 7) is E.ILLEGAL_GENERATION
    wrong = JoinRequest(
        "g", a.member_id, None, "consumer", [("roundrobin", subscription(set()))], SESSION_MS, REBALANCE_MS
    )
    assert cluster.members.join(group, wrong).error is E.INCONSISTENT_GROUP_PROTOCOL  # b offers only range
    bad = JoinRequest("g", a.member_id, None, "consumer", [("range", b"\x00")], SESSION_MS, REBALANCE_MS)
    assert cluster.members.join(group, bad).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_embedded_protocol_round_trip() -> None:
    parsed = parse_subscription(subscription({1, 4}, version=1))
    assert parsed.topics == (TOPIC,) and parsed.owned == {TOPIC: frozenset({1, 4})}
    assert parse_subscription(subscription(set(), version=0)).owned == {}
    data = assignment_bytes({TOPIC: frozenset({5, 2}), "empty": frozenset()}, 3)
    assert data[:2] == b"\x00\x03" and parse_assignment(data) == {TOPIC: frozenset({2, 5})}
    assert parse_assignment(b"") == {}


def test_a_classic_members_metadata_survives_the_group_record() -> None:
    from kbroker.group.consumer_records import consumer_group_value, parse_consumer_group_value

    cluster = Cluster()
    start_classic_group(cluster)
    cluster.consumer_beat("c", 0)
    group = cluster.holder.consumer
    loaded = parse_consumer_group_value("g", consumer_group_value(group))
    for member_id, member in group.members.items():
        assert loaded.members[member_id].classic == member.classic
        assert loaded.members[member_id].assigned == member.assigned
    assert loaded.members["c"].classic is None


def test_upgrade_mid_rebalance_answers_the_waiting_members_rebalance_in_progress() -> None:
    cluster = Cluster()
    a, b = start_classic_group(cluster)
    b2 = ClassicClient(cluster, "b2")
    assert b2.join() is None  # a third member: the group rebalances and b2 waits for its JoinGroup answer
    assert cluster.holder.state is GroupState.PREPARING_REBALANCE
    assert cluster.consumer_beat("c", 0).error is E.NONE  # a consumer-protocol member arrives meanwhile
    waiting = b2.answer()
    assert waiting is not None and waiting.error is E.REBALANCE_IN_PROGRESS
    group = cluster.holder.consumer
    assert group is not None and b2.member_id in group.members and group.members[b2.member_id].assigned == {}
    held = {"c": (group.members["c"].member_epoch, set(group.members["c"].assigned.get(TOPIC, frozenset())))}
    rejoin_until_stable(cluster, [a, b, b2], held)
    assert sorted(a.owned | b.owned | b2.owned | held["c"][1]) == list(range(PARTITIONS))
