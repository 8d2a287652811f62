"""Produce records: Kafka's default partitioner, one record batch per partition, per-partition retries."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kbroker.client.cluster import Cluster, TopicInfo
from kbroker.client.connection import KafkaError
from protocol import compression
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.record_builder import SimpleRecord, build_record_batch

CODECS = {name: codec for codec, name in compression.CODEC_NAMES.items()}
ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
ATTEMPTS = 10


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (Utils.murmur2, seed 0x9747b28c) as a signed 32-bit int; the default partitioner's hash."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's Java client (and librdkafka's murmur2_random) picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@dataclass
class Produced:
    partition: int
    offset: int  # -1 with acks=0
    timestamp: int


class Producer:
    """Sends records of one topic; keyless records are spread round-robin, keyed ones by murmur2."""

    def __init__(self, cluster: Cluster, topic: str, acks: int = -1, codec: int = compression.NONE) -> None:
        self.cluster = cluster
        self.topic_name = topic
        self.acks = acks
        self.codec = codec
        self.topic: TopicInfo = cluster.topic(topic)
        self._round_robin = itertools.count(random.randrange(1 << 16))

    def choose_partition(self, record: SimpleRecord, partition: int | None) -> int:
        count = len(self.topic.partitions)
        if partition is not None:
            if partition not in self.topic.partitions:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=f"{self.topic_name}[{partition}]")
            return partition
        if record.key is not None:
            return partition_for_key(record.key, count)
        return next(self._round_robin) % count

    def send(self, records: Sequence[SimpleRecord], partition: int | None = None) -> list[Produced]:
        """Write `records` (one batch per partition); each record's partition and offset, in input order."""
        now = int(time.time() * 1000)
        for record in records:
            if record.timestamp < 0:
                record.timestamp = now
        placed = [self.choose_partition(r, partition) for r in records]
        by_partition: dict[int, list[int]] = {}
        for index, p in enumerate(placed):
            by_partition.setdefault(p, []).append(index)
        base_offsets = self._send_batches({p: [records[i] for i in idx] for p, idx in by_partition.items()})
        results: list[Produced] = [Produced(0, 0, 0)] * len(records)
        for p, indexes in by_partition.items():
            for position, index in enumerate(indexes):
                base = base_offsets[p]
                results[index] = Produced(p, base + position if base >= 0 else -1, records[index].timestamp)
        return results

    def _send_batches(self, batches: dict[int, list[SimpleRecord]]) -> dict[int, int]:
        pending = {p: build_record_batch(recs, compression_type=self.codec) for p, recs in batches.items()}
        done: dict[int, int] = {}
        for attempt in range(ATTEMPTS):
            retry: dict[int, KafkaError] = {}
            for leader, owned in self.cluster.leaders(self.topic, list(pending)).items():
                try:
                    results = self._produce(leader, {p: pending[p] for p in owned})
                except (ConnectionError, OSError) as exc:
                    self.cluster.drop(leader)
                    results = {p: (ErrorCode.NETWORK_EXCEPTION, -1, str(exc)) for p in owned}
                for p, (code, offset, message) in results.items():
                    if code == ErrorCode.NONE:
                        done[p] = offset
                        del pending[p]
                    elif ErrorCode(code).retriable:
                        retry[p] = KafkaError(code, message, f"produce to {self.topic_name}[{p}]")
                    else:
                        raise KafkaError(code, message, f"produce to {self.topic_name}[{p}]")
            if not pending:
                return done
            if attempt == ATTEMPTS - 1:
                raise next(iter(retry.values()))
            time.sleep(0.1 * (attempt + 1))
            self.topic = self.cluster.topic(self.topic_name)
        return done

    def _produce(self, leader: int, batches: dict[int, bytes]) -> dict[int, tuple[int, int, str | None]]:
        body = {
            "transactional_id": None,
            "acks": self.acks,
            "timeout_ms": 30000,
            "topic_data": [
                {
                    "name": self.topic_name,
                    "partition_data": [{"index": p, "records": batch} for p, batch in batches.items()],
                }
            ],
        }
        conn = self.cluster.connection(leader)
        if self.acks == 0:
            conn.send(ApiKey.PRODUCE, body)  # acks=0: the broker does not answer
            return {p: (ErrorCode.NONE, -1, None) for p in batches}
        response = conn.call(ApiKey.PRODUCE, body)
        return {
            p["index"]: (p["error_code"], p["base_offset"], p["error_message"])
            for t in response["responses"]
            for p in t["partition_responses"]
        }
