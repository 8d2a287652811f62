"""REST Proxy v2 consumer instances: /consumers/{group}[/instances/{instance}/...].

Records are read straight from the partition logs (up to the high watermark, control batches
skipped), long-polling on the broker's fetch waiters for `timeout` ms when nothing is there;
offsets are committed to and fetched from the group coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from kbroker.http.rest.body import BINARY, JSON, decode_embedded, read_json, require_object
from kbroker.http.rest.errors import (
    CONSUMER_ALREADY_EXISTS,
    CONSUMER_FORMAT_MISMATCH,
    CONSUMER_INSTANCE_NOT_FOUND,
    ILLEGAL_STATE,
    INVALID_CONSUMER_CONFIG,
    RestError,
    unprocessable,
)
from kbroker.http.rest.instances import EARLIEST, LATEST, ConsumerInstance, ConsumerInstances, TopicPartition
from kbroker.http.rest.topics import Topics, answer
from kbroker.log import KafkaStorageError
from protocol.records import iter_batches

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger("kbroker.http.consumers")

DEFAULT_TIMEOUT_MS = 1000
MAX_INSTANCES = 10_000  # consumer instances of the gateway at once (each holds positions in memory)
MAX_TIMEOUT_MS = 30000
_ACCEPT = {"application/vnd.kafka.binary.v2+json": BINARY, "application/vnd.kafka.json.v2+json": JSON}


class Consumers:
    def __init__(self, broker: Broker, topics: Topics) -> None:
        self.broker = broker
        self.topics = topics
        self.instances = ConsumerInstances(broker.config.get_int("consumer.instance.timeout.ms") / 1000)
        self._sweeper: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="rest-consumer-expiry")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            gone = self.instances.expire(time.monotonic())
            if gone:
                log.info("rest_consumers_expired", instances=[f"{i.group}/{i.instance_id}" for i in gone])

    def _instance(self, request: web.Request) -> ConsumerInstance:
        group, name = request.match_info["group"], request.match_info["instance"]
        instance = self.instances.get(group, name, time.monotonic())
        if instance is None:
            raise RestError(404, CONSUMER_INSTANCE_NOT_FOUND, "Consumer instance not found.")
        return instance

    # -- instances ---------------------------------------------------------------------
    async def create(self, request: web.Request) -> web.Response:
        group = request.match_info["group"]
        body = require_object(await read_json(request, optional=True))
        name = body.get("name") or f"rest-consumer-{uuid.uuid4().hex}"
        fmt = str(body.get("format") or BINARY).lower()
        reset = str(body.get("auto.offset.reset") or LATEST).lower()
        auto_commit = str(body.get("auto.commit.enable", "true")).lower()
        if not isinstance(name, str) or fmt not in (BINARY, JSON) or reset not in (EARLIEST, LATEST):
            raise RestError(
                422, INVALID_CONSUMER_CONFIG, "name must be a string, format binary or json, auto.offset.reset "
                "earliest or latest",
            )  # fmt: skip
        if auto_commit not in ("true", "false"):
            raise RestError(422, INVALID_CONSUMER_CONFIG, "auto.commit.enable must be true or false")
        if len(self.instances.instances) >= MAX_INSTANCES:
            raise RestError(429, 42901, f"too many consumer instances ({MAX_INSTANCES}): delete idle ones")
        instance = ConsumerInstance(group, name, fmt, reset, auto_commit == "true", last_used=time.monotonic())
        if not self.instances.add(instance):
            raise RestError(
                409, CONSUMER_ALREADY_EXISTS, "Consumer with specified consumer ID already exists in the specified "
                "consumer group.",
            )  # fmt: skip
        base = f"{request.scheme}://{request.host}/consumers/{group}/instances/{name}"
        log.info("rest_consumer_created", group=group, instance=name, format=fmt)
        return answer({"instance_id": name, "base_uri": base})

    async def delete(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        self.instances.remove(instance.group, instance.instance_id)
        return web.Response(status=204)

    # -- subscription and assignment ----------------------------------------------------
    async def subscribe(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        body = require_object(await read_json(request))
        topics, pattern = body.get("topics"), body.get("topic_pattern")
        if instance.manual is not None:
            raise RestError(
                409, ILLEGAL_STATE, "Subscription to topics, partitions and pattern are mutually exclusive."
            )
        if (topics is None) == (pattern is None):
            raise unprocessable("give either topics (a list of names) or topic_pattern")
        if pattern is not None:
            try:
                instance.pattern, instance.topics = re.compile(str(pattern)), []
            except re.error as error:
                raise unprocessable(f"topic_pattern is not a regular expression: {error}") from error
        else:
            if not isinstance(topics, list) or not topics or not all(isinstance(t, str) for t in topics):
                raise unprocessable("topics must be a non-empty list of topic names")
            instance.topics, instance.pattern = list(topics), None
        return web.Response(status=204)

    async def subscription(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        topics = self.instances.assignment(instance, self._topic_counts()) if instance.pattern else []
        names = instance.topics if instance.pattern is None else sorted({t for t, _ in topics})
        return answer({"topics": names})

    async def unsubscribe(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        instance.topics, instance.pattern = [], None
        instance.positions.clear()
        return web.Response(status=204)

    async def assign(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        if instance.subscribed:
            raise RestError(
                409, ILLEGAL_STATE, "Subscription to topics, partitions and pattern are mutually exclusive."
            )
        partitions = self._partitions(require_object(await read_json(request)), "partitions")
        instance.manual = partitions
        return web.Response(status=204)

    async def assignments(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        assigned = self.instances.assignment(instance, self._topic_counts())
        return answer({"partitions": [{"topic": t, "partition": p} for t, p in assigned]})

    # -- positions --------------------------------------------------------------------
    async def seek(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        body = require_object(await read_json(request))
        for tp, offset in self._offsets(body):
            instance.positions[tp] = offset
        return web.Response(status=204)

    async def seek_to_beginning(self, request: web.Request) -> web.Response:
        return await self._seek_to(request, EARLIEST)

    async def seek_to_end(self, request: web.Request) -> web.Response:
        return await self._seek_to(request, LATEST)

    async def _seek_to(self, request: web.Request, where: str) -> web.Response:
        instance = self._instance(request)
        for tp in self._partitions(require_object(await read_json(request)), "partitions"):
            instance.positions[tp] = self._reset_offset(tp, where)
        return web.Response(status=204)

    # -- records --------------------------------------------------------------------------
    async def records(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        accept = request.headers.get("Accept", "")
        wanted = next((fmt for kind, fmt in _ACCEPT.items() if kind in accept), instance.format)
        if wanted != instance.format:
            raise RestError(
                406, CONSUMER_FORMAT_MISMATCH, "The requested embedded data format does not match the deserializer "
                "for this consumer instance",
            )  # fmt: skip
        timeout_ms = min(_query_int(request, "timeout", DEFAULT_TIMEOUT_MS), MAX_TIMEOUT_MS)
        max_bytes = _query_int(request, "max_bytes", instance.request_max_bytes)
        assigned = self.instances.assignment(instance, self._topic_counts())
        records = self._read(instance, assigned, max_bytes)
        if not records and assigned and timeout_ms > 0:
            await self.broker.fetch_waiters.wait(assigned, 1, timeout_ms)
            records = self._read(instance, self.instances.assignment(instance, self._topic_counts()), max_bytes)
        if instance.auto_commit and records:
            positions = {tp: instance.positions[tp] for tp in assigned if tp in instance.positions}
            try:
                await self._commit(instance.group, positions)
            except RestError as error:  # the records are answered all the same; the next read commits again
                log.warning("rest_auto_commit_failed", group=instance.group, instance=instance.instance_id,
                            error=error.message)  # fmt: skip
        return web.json_response(records, content_type=f"application/vnd.kafka.{instance.format}.v2+json")

    def _read(self, instance: ConsumerInstance, assigned: list[TopicPartition], max_bytes: int) -> list[Any]:
        out: list[Any] = []
        budget = max_bytes
        for tp in assigned:
            partition = self.broker.logs.get_log(*tp)
            if partition is None or budget <= 0:
                continue
            position = instance.positions.get(tp)
            if position is None or not partition.log_start_offset <= position <= partition.log_end_offset:
                position = self._initial_position(instance, tp)
            instance.positions[tp] = position
            if position >= partition.high_watermark:
                continue
            try:
                data = partition.read(position, budget, max_offset=partition.high_watermark).read()
            except KafkaStorageError as error:
                raise RestError(500, 50002, f"reading {tp[0]}-{tp[1]} failed: {error}") from error
            for batch in iter_batches(data):
                if batch.is_control:
                    instance.positions[tp] = max(instance.positions[tp], batch.next_offset)
                    continue
                for record in batch.records():
                    if record.offset < position or record.offset >= partition.high_watermark:
                        continue
                    size = len(record.value or b"") + len(record.key or b"")
                    if out and size > budget:  # max_bytes reached (the first record always goes)
                        return out
                    try:
                        key = decode_embedded(instance.format, record.key)
                        value = decode_embedded(instance.format, record.value)
                    except ValueError as error:
                        if out:  # answer what came before it; the next read stops here again
                            return out
                        raise unprocessable(
                            f"record {tp[0]}-{tp[1]}@{record.offset} is not JSON (use a binary consumer): {error}"
                        ) from error
                    out.append(
                        {"topic": tp[0], "key": key, "value": value, "partition": tp[1], "offset": record.offset}
                    )
                    instance.positions[tp] = record.offset + 1
                    budget -= size
            if budget <= 0:
                break
        return out

    def _initial_position(self, instance: ConsumerInstance, tp: TopicPartition) -> int:
        committed = self._groups_fetch(instance.group, [tp]).get(tp)
        partition = self.broker.logs.get_log(*tp)
        if committed is not None and partition is not None:
            if partition.log_start_offset <= committed.offset <= partition.log_end_offset:
                return committed.offset
        return self._reset_offset(tp, instance.offset_reset)

    def _reset_offset(self, tp: TopicPartition, where: str) -> int:
        partition = self.broker.logs.get_log(*tp)
        if partition is None:
            raise RestError(404, 40402, f"Partition {tp[1]} of topic {tp[0]} not found.")
        return partition.log_start_offset if where == EARLIEST else partition.high_watermark

    # -- offsets ------------------------------------------------------------------------
    async def commit(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        body = require_object(await read_json(request, optional=True))
        if body.get("offsets"):
            offsets = dict(self._offsets(body))
        else:  # no body: every consumed position
            offsets = dict(instance.positions)
        await self._commit(instance.group, offsets)
        return web.Response(status=200)

    async def committed(self, request: web.Request) -> web.Response:
        instance = self._instance(request)
        partitions = self._partitions(require_object(await read_json(request)), "partitions")
        found = self._groups_fetch(instance.group, partitions)
        offsets = [
            {"topic": t, "partition": p, "offset": c.offset, "metadata": c.metadata}
            for (t, p), c in found.items()
            if c is not None
        ]
        return answer({"offsets": offsets})

    async def _commit(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        from kbroker.group import group_runtime
        from kbroker.group.group import CommittedOffset
        from protocol.errors import ErrorCode, KafkaProtocolError

        if not offsets:
            return
        now = int(time.time() * 1000)
        try:
            runtime = group_runtime(self.broker, group)  # cluster mode: this broker's groups only
        except KafkaProtocolError as error:
            raise RestError(500, 50003, f"group coordinator not available: {error}") from error
        result = await runtime.commit(
            group, -1, "", None, {tp: CommittedOffset(offset, -1, "", now) for tp, offset in offsets.items()}
        )
        if result is not ErrorCode.NONE:
            raise RestError(500, 50002, f"Kafka error: {result.name} committing offsets of group {group}")

    def _groups_fetch(self, group: str, partitions: list[TopicPartition]) -> dict[TopicPartition, Any]:
        from kbroker.group import group_runtime
        from protocol.errors import KafkaProtocolError

        try:
            return group_runtime(self.broker, group).fetch(group, partitions)
        except KafkaProtocolError as error:
            raise RestError(500, 50003, f"group coordinator not available: {error}") from error

    # -- request bodies -----------------------------------------------------------------
    def _topic_counts(self) -> dict[str, int]:
        return {name: metadata.partitions for name, metadata in self.broker.logs.topics().items()}

    def _partitions(self, body: dict[str, Any], field: str) -> list[TopicPartition]:
        items = body.get(field)
        if not isinstance(items, list):
            raise unprocessable(f"{field} must be a list of {{topic, partition}} objects")
        out = []
        for n, item in enumerate(items):
            item = require_object(item, f"{field}[{n}]")
            topic, partition = item.get("topic"), item.get("partition")
            if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
                raise unprocessable(f"{field}[{n}] needs a topic (string) and a partition (integer)")
            count = self.topics.require(topic)
            if not 0 <= partition < count:
                raise RestError(404, 40402, f"Partition {partition} of topic {topic} not found.")
            out.append((topic, partition))
        return out

    def _offsets(self, body: dict[str, Any]) -> list[tuple[TopicPartition, int]]:
        items = body.get("offsets")
        partitions = self._partitions(body, "offsets")
        out = []
        for n, (tp, item) in enumerate(zip(partitions, items or [], strict=True)):
            offset = item.get("offset")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise unprocessable(f"offsets[{n}].offset must be a non-negative integer")
            out.append((tp, offset))
        return out


def _query_int(request: web.Request, name: str, default: int) -> int:
    text = request.query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise RestError(400, 400, f"query parameter {name} must be an integer, got {text!r}") from None
    if value < 0:
        raise RestError(400, 400, f"query parameter {name} must not be negative")
    return value
