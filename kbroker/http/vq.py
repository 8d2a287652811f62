"""Virtual queues over HTTP (/v1/vq): a thin layer over kbroker/vq's VirtualQueues.

  POST   /v1/vq/{queue}                        publish the body (headers: delay, tag)
  GET    /v1/vq/{queue}/records?consumer=NAME  the records after the consumer's position (or ?offset=)
  POST   /v1/vq/{queue}/ack                    move a consumer's position (409: a stale ack)
  GET    /v1/vq, /v1/vq/{queue}                queues with their depth and consumers' lag
  DELETE /v1/vq/{queue}                        the queue and its consumers
  DELETE /v1/vq/{queue}/consumers/{name}       one consumer

docs/gateway.md documents every answer.
"""

from __future__ import annotations

import base64
import time
from bisect import bisect_right
from typing import Any

from aiohttp import web

from kbroker.http.rest.body import read_json, require_object
from kbroker.http.rest.errors import RestError, unprocessable
from kbroker.log import KafkaStorageError, RecordTooLargeError
from kbroker.vq import QueueNotFound, VirtualQueues
from kbroker.vq.positions import AckOutOfRange, StaleAck, check_name
from kbroker.vq.records import DELIVER_AFTER_MS, DELIVER_AT, TAG, QueueRecord, parse_millis
from kbroker.vq.service import QueueInfo

QUEUE_NOT_FOUND = 40404
CONSUMER_NOT_FOUND = 40405
STALE_ACK = 40904
MAX_RECORDS = 10_000
MAX_TIMEOUT_MS = 30_000
MAX_LIST = 100_000


class VqRoutes:
    def __init__(self, queues: VirtualQueues, wait: Any) -> None:
        self.queues = queues
        self.wait = wait  # FetchWaiters.wait: a long-poll read sleeps until an append (or its timeout)

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/v1/vq", self.list_queues)
        app.router.add_post("/v1/vq/{queue}", self.publish)
        app.router.add_get("/v1/vq/{queue}", self.describe)
        app.router.add_delete("/v1/vq/{queue}", self.delete_queue)
        app.router.add_get("/v1/vq/{queue}/records", self.records)
        app.router.add_post("/v1/vq/{queue}/ack", self.ack)
        app.router.add_delete("/v1/vq/{queue}/consumers/{consumer}", self.delete_consumer)

    async def publish(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        headers: list[tuple[str, bytes | None]] = []
        for header in (DELIVER_AT, DELIVER_AFTER_MS):
            if header in request.headers:
                headers.append((header, str(_int_header(request, header)).encode()))
        if TAG in request.headers:
            headers.append((TAG, request.headers[TAG].encode()))
        value = await request.read()
        try:
            partition, offset = await self.queues.publish(queue, value, headers)
        except RecordTooLargeError as error:
            raise RestError(413, 413, str(error)) from error
        except KafkaStorageError as error:
            raise RestError(500, 50002, f"storage error: {error}") from error
        return web.json_response({"queue": queue, "partition": partition, "offset": offset})

    async def records(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        consumer = request.query.get("consumer")
        limit = _int_query(request, "max", 100, 1, MAX_RECORDS)
        timeout = _int_query(request, "timeout", 0, 0, MAX_TIMEOUT_MS)
        if consumer is not None and "offset" in request.query:
            raise RestError(400, 400, "give ?consumer=NAME or ?offset=N, not both")
        if consumer is None and "offset" not in request.query:
            raise RestError(400, 400, "give ?consumer=NAME (read after its position) or ?offset=N (a manual read)")
        offset = _int_query(request, "offset", 0, 0, 2**63 - 1)
        if consumer is not None:
            _name(consumer, "consumer")
        self._require(queue)
        deadline = time.monotonic() + timeout / 1000
        while True:  # a consumer's position may move while a long poll waits: looked up each time
            start = offset if consumer is None else self.queues.start_offset(queue, consumer)
            result = self.queues.read(queue, start, limit)
            left_ms = int((deadline - time.monotonic()) * 1000)
            if result.records or left_ms <= 0:
                break
            if result.blocked_until is not None:
                left_ms = min(left_ms, max(1, result.blocked_until - self.queues.clock()))
            await self.wait([(self.queues.config.topic, result.partition)], 1, left_ms)
        body: dict[str, Any] = {
            "queue": queue,
            "partition": result.partition,
            "records": [_record(r) for r in result.records],
            "next_offset": result.next_offset,
        }
        if consumer is not None:
            body["consumer"] = consumer
        if result.blocked_until is not None:
            body["blocked_until"] = result.blocked_until
        return web.json_response(body)

    async def ack(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        body = require_object(await read_json(request))
        consumer, offset, rewind = body.get("consumer"), body.get("offset"), body.get("allow_rewind", False)
        if not isinstance(consumer, str):
            raise unprocessable("consumer must be a string")
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise unprocessable("offset must be an integer (the next offset to read)")
        if not isinstance(rewind, bool):
            raise unprocessable("allow_rewind must be true or false")
        _name(consumer, "consumer")
        self._require(queue)
        try:
            result = await self.queues.ack(queue, consumer, offset, allow_rewind=rewind)
        except StaleAck as stale:
            raise RestError(409, STALE_ACK, f"{stale} (consumer {consumer})") from None
        except AckOutOfRange as error:
            raise unprocessable(str(error)) from None
        except KafkaStorageError as error:
            raise RestError(500, 50002, f"storage error: {error}") from error
        return web.json_response(
            {"queue": queue, "consumer": consumer, "position": result.position, "previous": result.previous}
        )

    async def describe(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        self._require(queue)
        return web.json_response(_info(self.queues.describe(queue)))

    async def list_queues(self, request: web.Request) -> web.Response:
        prefix = request.query.get("prefix", "")
        after = request.query.get("after", "")
        limit = _int_query(request, "limit", 1000, 1, MAX_LIST)
        names = self.queues.names(prefix)
        if after:
            names = names[bisect_right(names, after) :]
        listed = [_info(self.queues.describe(n)) for n in names[:limit]]
        return web.json_response({"queues": listed, "truncated": len(names) > limit})

    async def delete_queue(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        try:
            consumers = await self.queues.delete_queue(queue)
        except QueueNotFound:
            raise _queue_not_found(queue) from None
        except KafkaStorageError as error:
            raise RestError(500, 50002, f"storage error: {error}") from error
        return web.json_response({"queue": queue, "deleted_consumers": sorted(consumers)})

    async def delete_consumer(self, request: web.Request) -> web.Response:
        queue = _name(request.match_info["queue"], "queue")
        consumer = _name(request.match_info["consumer"], "consumer")
        try:
            deleted = await self.queues.delete_consumer(queue, consumer)
        except KafkaStorageError as error:
            raise RestError(500, 50002, f"storage error: {error}") from error
        if not deleted:
            raise RestError(404, CONSUMER_NOT_FOUND, f"queue {queue} has no consumer {consumer}")
        return web.Response(status=204)

    def _require(self, queue: str) -> None:
        if not self.queues.exists(queue):
            raise _queue_not_found(queue)


def _queue_not_found(queue: str) -> RestError:
    return RestError(404, QUEUE_NOT_FOUND, f"queue {queue} not found")


def _name(name: str, kind: str) -> str:
    problem = check_name(kind, name)
    if problem is not None:
        raise unprocessable(problem)
    return name


def _int_query(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RestError(400, 400, f"{name} must be an integer") from None
    if not low <= value <= high:
        raise RestError(400, 400, f"{name} must be in [{low}, {high}]")
    return value


def _int_header(request: web.Request, name: str) -> int:
    """A delay header as the records' readers take it (parse_millis); what they would ignore is refused."""
    value = parse_millis(request.headers[name].encode("utf-8", "surrogateescape"))
    if value is None:
        raise unprocessable(f"header {name} must be a non-negative integer (milliseconds) that fits a Java long")
    return value


def _text(data: bytes | None) -> tuple[str | None, bool]:
    if data is None:
        return None, False
    try:
        return data.decode(), False
    except UnicodeDecodeError:
        return base64.b64encode(data).decode(), True


def _record(record: QueueRecord) -> dict[str, Any]:
    value, encoded = _text(record.value)
    out: dict[str, Any] = {"offset": record.offset, "timestamp": record.timestamp, "value": value}
    if encoded:
        out["value_encoding"] = "base64"
    out["headers"] = {h.key: _text(h.value)[0] for h in record.headers}
    tag = record.tag
    if tag is not None:
        out["tag"] = tag
    return out


def _info(info: QueueInfo) -> dict[str, Any]:
    return {
        "queue": info.name,
        "partition": info.partition,
        "depth": info.depth,
        "consumers": [
            {"consumer": name, "position": position, "lag": lag}
            for name, (position, lag) in sorted(info.consumers.items())
        ],
    }
