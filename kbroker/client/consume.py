"""Fetch records from chosen partitions and positions; group offsets (OffsetFetch, OffsetCommit)."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kbroker.client.admin import EARLIEST, LATEST, list_offsets
from kbroker.client.cluster import Cluster, TopicInfo, check
from kbroker.client.connection import KafkaError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import LOG_OVERHEAD, Record, RecordBatch

MAX_WAIT_MS = 500
PARTITION_MAX_BYTES = 1 << 20
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True)
class Consumed:
    topic: str
    partition: int
    record: Record


def complete_batches(data: bytes | memoryview) -> Iterator[RecordBatch]:
    """The whole batches of a Fetch answer; a broker may cut the last one short, which is skipped."""
    position, end = 0, len(data)
    while end - position >= LOG_OVERHEAD:
        size = LOG_OVERHEAD + _LENGTH.unpack_from(data, position + 8)[0]
        if position + size > end:
            return
        yield RecordBatch(data, position)
        position += size


class Consumer:
    """Reads one topic's partitions from given positions (no group membership: the partitions are assigned)."""

    def __init__(self, cluster: Cluster, topic: TopicInfo, positions: dict[int, int], reset: int = LATEST) -> None:
        self.cluster = cluster
        self.topic = topic
        self.positions = dict(positions)
        self.reset = reset  # where a partition goes after OFFSET_OUT_OF_RANGE: EARLIEST or LATEST

    def poll(self, max_wait_ms: int = MAX_WAIT_MS) -> list[Consumed]:
        """One Fetch per leader; the new records in offset order per partition."""
        out: list[Consumed] = []
        for leader, owned in self.cluster.leaders(self.topic, sorted(self.positions)).items():
            try:
                out.extend(self._fetch(leader, owned, max_wait_ms))
            except KafkaError as error:
                if not error.retriable:
                    raise
                self._refresh()
            except (ConnectionError, OSError):
                self.cluster.drop(leader)
                self._refresh()
        return out

    def _refresh(self) -> None:
        time.sleep(0.1)
        self.topic = self.cluster.topic(self.topic.name)

    def _fetch(self, leader: int, partitions: list[int], max_wait_ms: int) -> list[Consumed]:
        body = {
            "replica_id": -1,
            "max_wait_ms": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 50 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": self.topic.name,
                    "partitions": [
                        {"partition": p, "fetch_offset": self.positions[p], "partition_max_bytes": PARTITION_MAX_BYTES}
                        for p in partitions
                    ],
                }
            ],
            "forgotten_topics_data": [],
        }
        response = self.cluster.connection(leader).call(ApiKey.FETCH, body)
        check(response["error_code"], "fetch")
        out: list[Consumed] = []
        for topic in response["responses"]:
            for p in topic["partitions"]:
                partition, code = p["partition_index"], p["error_code"]
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self.positions[partition] = list_offsets(self.cluster, self.topic, [partition], self.reset)[
                        partition
                    ]
                    continue
                check(code, f"fetch {self.topic.name}[{partition}]")
                out.extend(self._records(partition, p["records"] or b""))
        return out

    def _records(self, partition: int, data: bytes | memoryview) -> Iterator[Consumed]:
        position = self.positions[partition]
        for batch in complete_batches(data):
            if batch.next_offset <= position:
                continue
            if not batch.is_control:
                for record in batch.records():
                    if record.offset >= position:
                        yield Consumed(self.topic.name, partition, record)
            position = batch.next_offset
            self.positions[partition] = position


def start_positions(cluster: Cluster, topic: TopicInfo, partitions: Iterable[int], spec: str) -> dict[int, int]:
    """Where to start: `earliest`, `latest`, an offset N, -N (N before the end), or @MS (first at or after a time)."""
    partitions = list(partitions)
    if spec in ("earliest", "beginning", "start", "oldest"):
        return list_offsets(cluster, topic, partitions, EARLIEST)
    if spec in ("latest", "end", "newest"):
        return list_offsets(cluster, topic, partitions, LATEST)
    if spec.startswith("@"):
        found = list_offsets(cluster, topic, partitions, int(spec[1:]))
        ends = list_offsets(cluster, topic, partitions, LATEST)
        return {p: found[p] if found[p] >= 0 else ends[p] for p in partitions}
    value = int(spec)
    if value >= 0:
        return dict.fromkeys(partitions, value)
    starts = list_offsets(cluster, topic, partitions, EARLIEST)
    ends = list_offsets(cluster, topic, partitions, LATEST)
    return {p: max(starts[p], ends[p] + value) for p in partitions}


# -- group offsets -----------------------------------------------------------------------------------------------


def committed_offsets(cluster: Cluster, group: str, topics: list[str] | None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of `group` (None topics: all the group has)."""

    def attempt() -> dict[tuple[str, int], int]:
        conn = cluster.coordinator(group)
        version = conn.version(ApiKey.OFFSET_FETCH)
        wanted = None
        if topics is not None:
            wanted = [{"name": t, "partition_indexes": sorted(cluster.topic(t).partitions)} for t in topics]
        if version >= 8:
            body = {"groups": [{"group_id": group, "topics": wanted}], "require_stable": True}
            result = conn.call(ApiKey.OFFSET_FETCH, body, version)["groups"][0]
            check(result["error_code"], f"offsets of group {group}")
            answered = result["topics"]
        else:
            body = {"group_id": group, "topics": wanted, "require_stable": True}
            response = conn.call(ApiKey.OFFSET_FETCH, body, version)
            check(response["error_code"], f"offsets of group {group}")
            answered = response["topics"]
        offsets = {}
        for t in answered:
            for p in t["partitions"]:
                check(p["error_code"], f"offsets of group {group} on {t['name']}[{p['partition_index']}]")
                if p["committed_offset"] >= 0:
                    offsets[(t["name"], p["partition_index"])] = p["committed_offset"]
        return offsets

    return cluster.retry(attempt)


def commit_offsets(cluster: Cluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit as a client outside any generation (Kafka's assign() + commitSync(): generation -1, no member id);
    the coordinator accepts that only while the group has no active members."""
    topics: dict[str, list[dict[str, object]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset, "committed_metadata": ""}
        )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }

    def attempt() -> None:
        for t in cluster.coordinator(group).call(ApiKey.OFFSET_COMMIT, body)["topics"]:
            for p in t["partitions"]:
                check(p["error_code"], f"commit of group {group} on {t['name']}[{p['partition_index']}]")

    cluster.retry(attempt)
