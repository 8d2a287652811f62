"""The server-side assignors of consumer-protocol groups (KIP-848): `uniform` (the default) and `range`.

An assignor maps each member to partitions of the topics it subscribes to. Input: the members'
subscribed topics, the partition count of every subscribed topic, and the current target
assignment (for stickiness). Pure functions; names are the ones clients pass in
`group.remote.assignor` and brokers list in `group.consumer.assignors`.

- `uniform` spreads partitions so that member counts differ by at most one where subscriptions
  allow it, and keeps a member's partitions where it can (sticky), as Kafka's UniformAssignor.
- `range` gives each member of a topic a contiguous range of its partitions, members in id
  order, the first members one more when the count does not divide (Kafka's RangeAssignor;
  Kafka's keeps members' ranges sticky across changes, kbroker's recomputes them).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

from kbroker.group.consumer_group import Assignment

Subscriptions = Mapping[str, frozenset[str]]  # member id -> subscribed topics (names, regex matches resolved)
Assignor = Callable[[Subscriptions, Mapping[str, int], Mapping[str, Assignment]], dict[str, Assignment]]

UNIFORM = "uniform"
RANGE = "range"


def uniform(
    members: Subscriptions, partitions: Mapping[str, int], current: Mapping[str, Assignment]
) -> dict[str, Assignment]:
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    taken: set[tuple[str, int]] = set()
    # 1. keep what each member had and may still have, up to a fair share
    total = sum(partitions.get(t, 0) for t in {t for s in members.values() for t in s})
    ceiling = -(-total // len(members)) if members else 0
    for member_id in sorted(members):
        for topic, parts in sorted(current.get(member_id, {}).items()):
            if topic not in members[member_id]:
                continue
            for partition in sorted(parts):
                tp = (topic, partition)
                if partition < partitions.get(topic, 0) and tp not in taken and len(owned[member_id]) < ceiling:
                    owned[member_id].add(tp)
                    taken.add(tp)
    # 2. every free partition to the least loaded subscriber; partitions with fewer candidates first
    subscribers = {t: sorted(m for m, s in members.items() if t in s) for t in partitions}
    free = [(topic, p) for topic, count in partitions.items() if subscribers.get(topic) for p in range(count)]
    free = [tp for tp in free if tp not in taken]
    free.sort(key=lambda tp: (len(subscribers[tp[0]]), tp))
    heaps: dict[tuple[str, ...], list[tuple[int, str]]] = {}  # one per set of candidate members
    for tp in free:
        candidates = tuple(subscribers[tp[0]])
        heap = heaps.get(candidates)
        if heap is None:
            heap = heaps[candidates] = [(len(owned[m]), m) for m in candidates]
            heapq.heapify(heap)
        while True:  # counts change through other heaps too: skip stale entries
            count, chosen = heapq.heappop(heap)
            if count == len(owned[chosen]):
                break
            heapq.heappush(heap, (len(owned[chosen]), chosen))
        owned[chosen].add(tp)
        heapq.heappush(heap, (count + 1, chosen))
    # 3. balance: move partitions from the most to the least loaded member that can take them
    for _ in range(total):
        counts = [len(tps) for tps in owned.values()]
        if not counts or max(counts) - min(counts) <= 1:
            break
        moved = False
        for heavy in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[heavy]):
                light = min(subscribers[tp[0]], key=lambda m: (len(owned[m]), m))
                if len(owned[heavy]) - len(owned[light]) > 1:
                    owned[heavy].discard(tp)
                    owned[light].add(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            break
    return {m: _as_assignment(tps) for m, tps in owned.items()}


def range_(
    members: Subscriptions, partitions: Mapping[str, int], current: Mapping[str, Assignment]
) -> dict[str, Assignment]:
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for topic, count in partitions.items():
        subscribers = sorted(m for m, s in members.items() if topic in s)
        if not subscribers:
            continue
        share, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            length = share + (1 if index < extra else 0)
            owned[member_id].update((topic, p) for p in range(start, start + length))
            start += length
    return {m: _as_assignment(tps) for m, tps in owned.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform, RANGE: range_}


def _as_assignment(tps: set[tuple[str, int]]) -> Assignment:
    by_topic: dict[str, set[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, set()).add(partition)
    return {topic: frozenset(parts) for topic, parts in by_topic.items()}
