"""POST /topics/{topic} and /topics/{topic}/partitions/{partition}: records in, offsets out.

Records of one request going to one partition become one record batch (CreateTime now, no
compression, no producer id) appended through the partition's append path like a Produce request,
so every Kafka client reads them. Records without a partition go by Kafka's rules: keyed ones to
murmur2(key) modulo the partitions, unkeyed ones to one partition per request (sticky, rotating).
Each record gets an offsets entry: its partition and offset, or error_code and error.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kbroker.http.rest.body import embedded_format, encode_embedded, read_json, require_object
from kbroker.http.rest.errors import KAFKA_ERROR, KAFKA_RETRIABLE_ERROR, partition_not_found, unprocessable
from kbroker.http.rest.topics import Topics, answer, partition_index
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import AppendOrigin, KafkaStorageError, RecordTooLargeError
from protocol.partitioner import partition_for_key
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch

if TYPE_CHECKING:
    from kbroker.broker import Broker


class Produce:
    def __init__(self, broker: Broker, topics: Topics) -> None:
        self.broker = broker
        self.topics = topics
        self._sticky = itertools.count()

    async def to_topic(self, request: web.Request) -> web.Response:
        return await self._produce(request, request.match_info["topic"], None)

    async def to_partition(self, request: web.Request) -> web.Response:
        return await self._produce(request, request.match_info["topic"], partition_index(request))

    async def _produce(self, request: web.Request, topic: str, fixed: int | None) -> web.Response:
        fmt = embedded_format(request)
        body = require_object(await read_json(request, plain=False))
        partitions = self.topics.require(topic)
        if fixed is not None and not 0 <= fixed < partitions:
            raise partition_not_found(topic, fixed)
        records = body.get("records")
        if not isinstance(records, list) or not records:
            raise unprocessable("records must be a non-empty list")
        sticky = next(self._sticky) % partitions
        now = int(time.time() * 1000)
        by_partition: dict[int, list[tuple[int, SimpleRecord]]] = {}
        for position, item in enumerate(records):
            record = require_object(item, f"records[{position}]")
            key = encode_embedded(fmt, record.get("key"), f"records[{position}].key")
            value = encode_embedded(fmt, record.get("value"), f"records[{position}].value")
            partition = self._choose(topic, record, position, fixed, partitions, key, sticky)
            by_partition.setdefault(partition, []).append((position, SimpleRecord(key, value, timestamp=now)))
        offsets: list[dict[str, Any]] = [{}] * len(records)
        for partition, entries in by_partition.items():
            results = await self._append(topic, partition, [r for _, r in entries])
            for (position, _), result in zip(entries, results, strict=True):
                offsets[position] = result
        return answer({"offsets": offsets, "key_schema_id": None, "value_schema_id": None})

    def _choose(
        self, topic: str, record: dict[str, Any], position: int, fixed: int | None, partitions: int, key: bytes | None,
        sticky: int,
    ) -> int:  # fmt: skip
        if fixed is not None:
            return fixed
        asked = record.get("partition")
        if asked is not None:
            if not isinstance(asked, int) or isinstance(asked, bool):
                raise unprocessable(f"records[{position}].partition must be an integer")
            if not 0 <= asked < partitions:
                raise partition_not_found(topic, asked)
            return asked
        return partition_for_key(key, partitions) if key is not None else sticky

    async def _append(self, topic: str, partition: int, records: list[SimpleRecord]) -> list[dict[str, Any]]:
        return await append_records(self.broker, topic, partition, records)


async def append_records(
    broker: Broker, topic: str, partition: int, records: list[SimpleRecord]
) -> list[dict[str, Any]]:
    """Append `records` to the partition as one batch, acknowledged as acks=all; one offsets entry per record."""
    log = broker.logs.get_partition(topic, partition)
    if log is None or topic in INTERNAL_TOPICS:
        return _failed(records, partition, KAFKA_ERROR, f"cannot append to {topic}-{partition}")
    batch = bytearray(build_record_batch(records, partition_leader_epoch=0))
    try:
        if len(batch) > log.config.max_message_bytes:
            raise RecordTooLargeError(f"record batch of {len(batch)} bytes exceeds max.message.bytes")
        info = log.append_as_leader(RecordBatch(batch), AppendOrigin.CLIENT, leader_epoch=0)
        await log.wait_for_ack(info, -1)
    except RecordTooLargeError as error:
        return _failed(records, partition, KAFKA_ERROR, str(error))
    except KafkaStorageError as error:
        return _failed(records, partition, KAFKA_RETRIABLE_ERROR, f"storage error: {error}")
    return [
        {"partition": partition, "offset": info.base_offset + i, "error_code": None, "error": None}
        for i in range(len(records))
    ]


def _failed(records: list[SimpleRecord], partition: int, code: int, message: str) -> list[dict[str, Any]]:
    return [{"partition": partition, "offset": None, "error_code": code, "error": message} for _ in records]
