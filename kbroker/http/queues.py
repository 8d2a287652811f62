"""Queue streaming over WebSocket on the share-group engine: GET /v1/queues/ws?group=G&topics=a,b.

The server assigns a consumer id (or takes `consumer=ID` to resume under a previous one) and
announces it; the consumer is a member of share group G for the engine (kbroker/share): it
acquires records from every partition of the topics, so each record goes to one consumer at a
time, under the group's acquisition lock and delivery-count limit. Flow control is credit: the
client grants how many un-acknowledged messages it may hold; messages are pushed while it has
credit. Each message is acknowledged (`ack`), released (`release`: redelivered) or rejected
(`reject`: archived) by its id. Closing the socket (a close frame) releases whatever was not
acknowledged; a socket lost without one (network, a killed client) leaves its messages locked to
its consumer id until their acquisition locks expire, as a Kafka share consumer that vanished: a
reconnect presenting that id within that time gets them again (same ids, same delivery counts)
and may settle them. The same socket produces (`produce`, answered with its offset). Frames are
JSON text; docs/gateway.md has the format.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import WSMsgType, web

from kbroker.http.auth import may_write
from kbroker.http.rest.errors import RestError, topic_not_found, unprocessable
from kbroker.http.rest.produce import append_records
from kbroker.log import KafkaStorageError
from kbroker.share.partition import AcknowledgementBatch, AcknowledgeType, AcquiredRecords
from kbroker.share.reader import acquire_from_log, batches_covering
from protocol.partitioner import partition_for_key
from protocol.record_builder import SimpleRecord
from protocol.records import iter_batches

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.share.runtime import ShareRuntime

log = structlog.get_logger("kbroker.http.queues")

BROKER_KEY: web.AppKey[Any] = web.AppKey("broker")
CONSUMERS_KEY: web.AppKey[set[tuple[str, str]]] = web.AppKey("queue_consumers")  # (group, consumer id) connected
MAX_CREDIT = 10_000
ACK_BATCH = 1_000  # acknowledgement frames settled by one durable write at most
READ_AHEAD_BYTES = 1024 * 1024  # frames read ahead of the one being handled (at least one, whatever its size)
READ_BYTES = 1024 * 1024
_ACKS = {"ack": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def _text(data: bytes | None) -> tuple[Any, str | None]:
    """(value, encoding): UTF-8 text as is, anything else base64."""
    if data is None:
        return None, None
    try:
        return data.decode(), None
    except UnicodeDecodeError:
        return base64.b64encode(data).decode(), "base64"


def pack_binary_frame(header: dict[str, Any], payload: bytes) -> bytes:
    """A binary frame: 4-byte big-endian length of the JSON header, the header, then the raw value."""
    encoded = json.dumps(header).encode()
    return len(encoded).to_bytes(4, "big") + encoded + payload


def unpack_binary_frame(data: bytes) -> tuple[dict[str, Any], bytes]:
    if len(data) < 4:
        raise unprocessable("a binary frame starts with the 4-byte length of its JSON header")
    size = int.from_bytes(data[:4], "big")
    if size > len(data) - 4:
        raise unprocessable("the binary frame's JSON header is longer than the frame")
    try:
        header = json.loads(data[4 : 4 + size])
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise unprocessable(f"the binary frame's header is not JSON: {error}") from error
    if not isinstance(header, dict):
        raise unprocessable("the binary frame's header is a JSON object")
    return header, bytes(data[4 + size :])


def _settled(frame: dict[str, Any], idents: list[Any], errors: dict[str, str]) -> dict[str, Any]:
    if "ids" in frame:
        return {"type": "settled", "ids": idents, "action": frame["type"], "errors": errors}
    return {"type": "settled", "id": idents[0], "action": frame["type"], "error": errors.get(str(idents[0]))}


class QueueSession:
    """One WebSocket consumer: its credit, the messages it holds, the pusher."""

    def __init__(self, broker: Broker, runtime: ShareRuntime, ws: web.WebSocketResponse, group: str,
                 topics: list[str], consumer: str, binary: bool = False) -> None:  # fmt: skip
        self.broker = broker
        self.binary = binary  # values that are not UTF-8 go as binary frames (header + raw bytes)
        self.runtime = runtime
        self.ws = ws
        self.group = group
        self.topics = topics
        self.consumer = consumer
        self.credit = 0
        self.held: set[tuple[str, int, int]] = set()
        self.wake = asyncio.Event()
        self.may_write: Callable[[str], bool] = lambda topic: True  # WRITE on the topic (kbroker.http.auth)

    def keys(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for topic in self.topics:
            metadata = self.broker.logs.topic(topic)
            if metadata is not None:
                out.extend((topic, p) for p in range(metadata.partitions))
        return out

    async def push(self) -> None:
        """Send messages while there is credit; wait for appends, releases or credit otherwise."""
        try:
            await self._push()
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception:  # a failure here ends this consumer, never the broker
            log.exception("queue_push_failed", group=self.group, consumer=self.consumer)
            await self.ws.close(code=1011, message=b"internal error")

    async def _push(self) -> None:
        while not self.ws.closed:
            sent = await self._deliver() if self.credit > len(self.held) else 0
            if sent:
                continue
            self.wake.clear()
            waiter = asyncio.ensure_future(self.broker.fetch_waiters.wait(self.keys(), 1, 1000))
            woken = asyncio.ensure_future(self.wake.wait())
            try:
                await asyncio.wait([waiter, woken], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (waiter, woken):
                    task.cancel()

    async def _deliver(self) -> int:
        sent = 0
        now = self.runtime.clock()
        for topic, index in self.keys():
            room = self.credit - len(self.held)
            if room <= 0:
                break
            share = self.runtime.share_partition(self.group, topic, index)
            partition_log = self.broker.logs.get_log(topic, index)
            if share is None or partition_log is None:
                continue
            # record-limit mode: exactly `room` records, so the credit is never exceeded
            ranges, data = acquire_from_log(
                share, partition_log, self.consumer, now, room, READ_BYTES, whole_batches=False
            )
            if not ranges:
                continue
            self.runtime.notify_lock_added(now + share.config.record_lock_duration_ms)
            wanted = {o: r.delivery_count for r in ranges for o in range(r.first_offset, r.last_offset + 1)}
            gaps = set(wanted)
            for batch in iter_batches(data):
                if batch.is_control:
                    continue
                for record in batch.records():
                    count = wanted.get(record.offset)
                    if count is None:
                        continue
                    gaps.discard(record.offset)
                    await self._send_message(topic, index, record, count)
                    sent += 1
            if gaps:  # acquired offsets without a record (control batches): settled at once
                batches = [AcknowledgementBatch(o, o, (AcknowledgeType.GAP,)) for o in sorted(gaps)]
                share.acknowledge(self.consumer, batches, now)
                self.runtime.after_acknowledge(self.group, topic, index)
        return sent

    async def _send_message(self, topic: str, index: int, record: Any, delivery_count: int) -> None:
        key, key_encoding = _text(record.key)
        value, value_encoding = _text(record.value)
        raw = self.binary and value_encoding is not None
        message: dict[str, Any] = {
            "type": "message",
            "id": f"{topic}/{index}/{record.offset}",
            "topic": topic,
            "partition": index,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": key,
            "value": value,
            "headers": {h.key: _text(h.value)[0] for h in record.headers},
            "delivery_count": delivery_count,
        }
        if key_encoding:
            message["key_encoding"] = key_encoding
        if value_encoding and not raw:
            message["value_encoding"] = value_encoding
        self.held.add((topic, index, record.offset))
        if raw:
            del message["value"]
            await self.ws.send_bytes(pack_binary_frame(message, record.value or b""))
        else:
            await self.ws.send_str(json.dumps(message))

    # -- client frames ------------------------------------------------------------------
    async def handle(self, frame: dict[str, Any]) -> dict[str, Any] | None:
        kind = frame.get("type")
        if kind == "credit":
            n = frame.get("n")
            if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_CREDIT:
                raise unprocessable(f"credit n must be an integer in [0, {MAX_CREDIT}]")
            self.credit = n
            self.wake.set()
            return None
        if kind in _ACKS:  # (the serving loop hands acks to `settle` itself, with those queued behind them)
            (answer,) = await self.settle([(frame, _ACKS[str(kind)])])
            return answer
        if kind == "produce":
            return await self._produce(frame)
        raise unprocessable(f"unknown frame type {kind!r}: credit, ack, release, reject or produce")

    async def settle(self, frames: list[tuple[dict[str, Any], AcknowledgeType]]) -> list[dict[str, Any]]:
        """Settle the ack/release/reject frames that arrived together, in order, with one durable write
        (__share_group_state) for all of them, as one frame of `ids` is; each answered only after it."""
        done: list[tuple[dict[str, Any], list[Any], dict[str, str]] | dict[str, Any]] = []
        changed = False
        for frame, how in frames:
            many = "ids" in frame
            idents = frame.get("ids") if many else [frame.get("id")]
            if not isinstance(idents, list) or not idents or len(idents) > MAX_CREDIT:
                error = unprocessable(f"ids must be a non-empty list of at most {MAX_CREDIT} message ids")
                done.append({"type": "error", "error_code": error.code, "message": error.message})
                continue
            errors: dict[str, str] = {}
            for ident in idents:
                refused = self._settle_one(str(ident), how)
                if refused is not None:
                    errors[str(ident)] = refused
            changed = changed or len(errors) < len(idents)
            done.append((frame, idents, errors))
        if changed:
            try:  # the settlements are durable before they are answered
                await self.runtime.persist(self.group)
            except KafkaStorageError as failure:
                for item in done:
                    if isinstance(item, tuple):
                        _, idents, errors = item
                        errors.update({str(i): f"not made durable: {failure}" for i in idents if str(i) not in errors})
        self.wake.set()
        return [item if isinstance(item, dict) else _settled(*item) for item in done]

    def _settle_one(self, ident: str, how: AcknowledgeType) -> str | None:
        parts = ident.rsplit("/", 2)
        try:
            key = (parts[0], int(parts[1]), int(parts[2]))
        except (IndexError, ValueError):
            return f"bad message id {ident!r}"
        share = self.runtime.partitions.get((self.group, key[0], key[1]))
        if key not in self.held or share is None:
            return "not held by this consumer (unknown, already settled or lock expired)"
        code = share.acknowledge(self.consumer, [AcknowledgementBatch(key[2], key[2], (how,))], self.runtime.clock())
        self.held.discard(key)
        self.runtime.after_acknowledge(self.group, key[0], key[1])
        if code != 0:
            return f"{code.name}: the acquisition lock expired, the message went back to the queue"
        return None

    async def _produce(self, frame: dict[str, Any], raw_value: bytes | None = None) -> dict[str, Any]:
        topic = frame.get("topic")
        if not isinstance(topic, str):
            raise unprocessable("produce needs a topic")
        if not self.may_write(topic):
            raise RestError(403, 40301, f"Not authorized: WRITE on TOPIC {topic}")
        metadata = self.broker.logs.topic(topic)
        if metadata is None:
            raise topic_not_found(topic)
        key = None if frame.get("key") is None else str(frame["key"]).encode()
        value = (
            raw_value if raw_value is not None else None if frame.get("value") is None else str(frame["value"]).encode()
        )
        partition = frame.get("partition")
        if partition is None:
            partition = partition_for_key(key, metadata.partitions) if key is not None else 0
        if not isinstance(partition, int) or not 0 <= partition < metadata.partitions:
            raise unprocessable(f"partition must be in [0, {metadata.partitions})")
        now = int(time.time() * 1000)
        (result,) = await append_records(self.broker, topic, partition, [SimpleRecord(key, value, timestamp=now)])
        return {"type": "produced", "ref": frame.get("ref"), "topic": topic, **result}

    async def handle_binary(self, data: bytes) -> dict[str, Any] | None:
        """A binary frame: a produce whose value is the bytes after the JSON header."""
        header, value = unpack_binary_frame(data)
        if header.get("type") != "produce":
            raise unprocessable("a binary frame carries a produce (its value after the JSON header)")
        return await self._produce(header, value)

    def still_held(self) -> list[tuple[str, int, list[AcquiredRecords]]]:
        """What a previous connection of this consumer id holds still (its locks not expired): per partition."""
        out: list[tuple[str, int, list[AcquiredRecords]]] = []
        for topic, index in self.keys():
            share = self.runtime.partitions.get((self.group, topic, index))
            if share is None:
                continue
            ranges = []
            for offset in share.acquired_offsets(self.consumer):
                state = share.state_of(offset)
                ranges.append(AcquiredRecords(offset, offset, state[1] if state else 1))
            if ranges:
                out.append((topic, index, ranges))
        return out

    async def resend(self, held: list[tuple[str, int, list[AcquiredRecords]]]) -> int:
        """Send again what a previous connection held (before any new message; credit is not checked)."""
        sent = 0
        for topic, index, ranges in held:
            partition_log = self.broker.logs.get_log(topic, index)
            if partition_log is None:
                continue
            counts = {r.first_offset: r.delivery_count for r in ranges}
            for batch in iter_batches(batches_covering(partition_log, ranges)):
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.offset in counts:
                        await self._send_message(topic, index, record, counts[record.offset])
                        sent += 1
        return sent

    def release_all(self) -> int:
        released = self.runtime.release_member(self.group, self.consumer)
        self.held.clear()
        return released


async def queue_socket(request: web.Request) -> web.StreamResponse:
    from kbroker.share import share_runtime
    from protocol.errors import KafkaProtocolError

    broker: Broker = request.app[BROKER_KEY]
    group = request.query.get("group", "")
    topics = [t for t in request.query.get("topics", "").split(",") if t]
    if not group or not topics:
        raise RestError(400, 400, "give ?group=GROUP&topics=a,b")
    for topic in topics:
        if broker.logs.topic(topic) is None:
            raise topic_not_found(topic)
    try:
        runtime = share_runtime(broker)
    except KafkaProtocolError as error:
        raise RestError(503, 50301, f"share coordinator not available: {error}") from error
    consumer = request.query.get("consumer") or f"ws-{uuid.uuid4().hex}"
    connected: set[tuple[str, str]] = request.app[CONSUMERS_KEY]
    if (group, consumer) in connected:
        raise RestError(409, 40901, f"consumer {consumer} of group {group} is connected on another socket")
    connected.add((group, consumer))
    try:
        return await _serve_socket(request, broker, runtime, group, topics, consumer)
    finally:
        connected.discard((group, consumer))


async def _serve_socket(
    request: web.Request, broker: Broker, runtime: ShareRuntime, group: str, topics: list[str], consumer: str
) -> web.StreamResponse:
    ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=1024 * 1024)
    await ws.prepare(request)
    binary = request.query.get("binary", "").lower() in ("1", "true")
    session = QueueSession(broker, runtime, ws, group, topics, consumer, binary)
    session.may_write = lambda topic: may_write(request, broker, topic)
    held = session.still_held()
    resumed = sum(len(ranges) for _, _, ranges in held)
    welcome = {"type": "welcome", "consumer": consumer, "group": group, "topics": topics, "resumed": resumed}
    await ws.send_str(json.dumps(welcome))
    await session.resend(held)
    log.info("queue_consumer_connected", group=group, consumer=consumer, topics=topics, resumed=resumed)
    pusher = asyncio.get_running_loop().create_task(session.push(), name=f"queue-push-{consumer}")
    inbox = ReadAhead(ws)
    goodbye = False  # lost without a close frame (network, a killed client): what it holds stays locked to its id
    try:
        later: Incoming | None = None
        while True:
            item = later if later is not None else incoming(await inbox.get())
            later = None
            if item[0] == "end":
                goodbye = item[1]  # a close frame: the client said goodbye, release at once
                break
            if item[0] == "ack":  # with the acks that came right behind it: one durable write for all
                acks = [item[1]]
                while len(acks) < ACK_BATCH and inbox.ready():
                    item = incoming(inbox.get_nowait())
                    if item[0] != "ack":
                        later = item
                        break
                    acks.append(item[1])
                answers: list[dict[str, Any] | None] = list(await session.settle(acks))
            else:
                answers = [await answer_to(session, item)]
            for answer in answers:
                if answer is not None:
                    await ws.send_str(json.dumps(answer))
    except asyncio.CancelledError:
        goodbye = True  # the broker is stopping
        raise
    finally:
        inbox.close()
        pusher.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionResetError):
            await pusher
        if goodbye:
            released = session.release_all()
            log.info("queue_consumer_disconnected", group=group, consumer=consumer, released=released)
        else:
            log.info("queue_consumer_lost", group=group, consumer=consumer, held=len(session.held),
                     code=ws.close_code)  # fmt: skip
    return ws


# What a socket's frame is to the serving loop: ("end", said goodbye), ("ack", (frame, how)), ("text", frame),
# ("binary", data), ("answer", an answer already decided: malformed JSON), ("skip", None).
Incoming = tuple[str, Any]


def incoming(message: Any) -> Incoming:
    if message is None:  # the read-ahead failed
        return ("end", False)
    if message.type == WSMsgType.CLOSE:
        return ("end", True)
    if message.type in (WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
        return ("end", False)
    if message.type == WSMsgType.BINARY:
        return ("binary", message.data)
    if message.type != WSMsgType.TEXT:
        return ("skip", None)
    try:
        frame = json.loads(message.data)
    except (json.JSONDecodeError, RecursionError) as error:
        return ("answer", {"type": "error", "message": f"malformed JSON: {error}"})
    if not isinstance(frame, dict):
        refused = unprocessable("a frame is a JSON object")
        return ("answer", {"type": "error", "error_code": refused.code, "message": refused.message})
    kind = frame.get("type")
    how = _ACKS.get(kind) if isinstance(kind, str) else None
    return ("ack", (frame, how)) if how is not None else ("text", frame)


async def answer_to(session: QueueSession, item: Incoming) -> dict[str, Any] | None:
    kind, body = item
    try:
        if kind == "binary":
            return await session.handle_binary(body)
        if kind == "text":
            return await session.handle(body)
    except RestError as error:
        return {"type": "error", "error_code": error.code, "message": error.message}
    return body if kind == "answer" else None


class ReadAhead:
    """The socket's frames read while the one before is handled (so acknowledgements that arrive during a
    durable write are settled together by the next), up to READ_AHEAD_BYTES of them: always one frame, more
    while they fit, so a client that writes faster than it is served costs bounded memory."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self.frames: asyncio.Queue[Any] = asyncio.Queue()
        self.queued = 0  # bytes of the frames in `frames`
        self.room = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._read(), name="queue-read-ahead")

    async def _read(self) -> None:
        try:
            await self._read_frames()
        except Exception as error:  # not expected (aiohttp answers a broken socket with an ERROR message)
            log.error("queue_read_failed", error=repr(error))
            self.frames.put_nowait((None, 0))  # the serving loop ends, as for a lost socket

    async def _read_frames(self) -> None:
        while True:
            message = await self.ws.receive()
            size = len(message.data) if isinstance(message.data, (str, bytes)) else 0
            while self.queued and self.queued + size > READ_AHEAD_BYTES:
                self.room.clear()
                await self.room.wait()
            self.queued += size
            self.frames.put_nowait((message, size))
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return

    def ready(self) -> bool:
        return not self.frames.empty()

    async def get(self) -> Any:
        return self._taken(await self.frames.get())

    def get_nowait(self) -> Any:
        return self._taken(self.frames.get_nowait())

    def _taken(self, entry: tuple[Any, int]) -> Any:
        message, size = entry
        self.queued -= size
        self.room.set()
        return message

    def close(self) -> None:
        self.task.cancel()
