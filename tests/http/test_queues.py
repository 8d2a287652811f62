"""Queue streaming over WebSocket on the share-group engine, with aiohttp's WebSocket client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from tests.broker.conftest import create_topic, unique_topic
from tests.http.conftest import HttpBroker
from tests.http.test_metrics import scrape
from tests.process import RawClient


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("queues") / "data", "--config", "num.partitions=3").start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def new_topic(broker: HttpBroker) -> str:
    topic = unique_topic("queue")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
    return topic


class Client:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.messages: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(frame))

    async def next(self, timeout: float = 5.0) -> dict[str, Any] | None:
        try:
            message = await self.ws.receive(timeout=timeout)
        except TimeoutError:
            return None
        if message.type != aiohttp.WSMsgType.TEXT:
            return None
        frame = json.loads(message.data)
        (self.messages if frame["type"] == "message" else self.answers).append(frame)
        return dict(frame)


async def connect(session: aiohttp.ClientSession, broker: HttpBroker, group: str, topic: str) -> tuple[Client, str]:
    ws = await session.ws_connect(f"{broker.url}/v1/queues/ws?group={group}&topics={topic}")
    client = Client(ws)
    welcome = await client.next()
    assert welcome is not None and welcome["type"] == "welcome" and welcome["group"] == group
    return client, welcome["consumer"]


async def produce(client: Client, topic: str, count: int) -> None:
    for i in range(count):
        await client.send({"type": "produce", "ref": i, "topic": topic, "key": f"k{i}", "value": f"v{i}"})
    got = 0
    while got < count:
        frame = await client.next()
        assert frame is not None
        if frame["type"] == "produced":
            assert frame["error_code"] is None and frame["offset"] >= 0
            got += 1


def test_three_consumers_each_message_once(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")

    async def consume(client: Client, seen: list[str], total: int) -> None:
        while len(seen) < total:
            frame = await client.next(timeout=2.0)
            if frame is None:
                continue
            if frame["type"] == "message":
                seen.append(frame["id"])
                await client.send({"type": "ack", "id": frame["id"]})
            elif frame["type"] == "settled":
                assert frame["error"] is None, frame

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            consumers = [await connect(session, http_broker, group, topic) for _ in range(3)]
            assert len({c for _, c in consumers}) == 3  # server-assigned, distinct
            for client, _ in consumers:
                await client.send({"type": "credit", "n": 5})
            await asyncio.sleep(0.5)  # the share partitions start at the end (share.auto.offset.reset=latest)
            producer, _ = await connect(session, http_broker, unique_topic("producer"), topic)
            await produce(producer, topic, 60)
            seen: list[str] = []
            tasks = [asyncio.ensure_future(consume(client, seen, 60)) for client, _ in consumers]
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            assert len(seen) == 60 and len(set(seen)) == 60
            per_consumer = [len(client.messages) for client, _ in consumers]
            assert sum(per_consumer) == 60
            assert all(m["delivery_count"] == 1 for client, _ in consumers for m in client.messages)
            values = sorted(m["value"] for client, _ in consumers for m in client.messages)
            assert values == sorted(f"v{i}" for i in range(60))

    asyncio.run(run())


def test_credit_and_redelivery_after_disconnect(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            first, first_id = await connect(session, http_broker, group, topic)
            await first.send({"type": "credit", "n": 4})
            await asyncio.sleep(0.5)
            producer, _ = await connect(session, http_broker, unique_topic("producer"), topic)
            await produce(producer, topic, 10)
            while len(first.messages) < 4:
                assert await first.next() is not None
            assert await first.next(timeout=1.0) is None  # credit 4: no fifth message while 4 are held
            await first.send({"type": "ack", "id": first.messages[0]["id"]})
            frames = [await first.next(), await first.next()]
            assert {f["type"] for f in frames if f} == {"settled", "message"}  # one more after one ack
            assert len(first.messages) == 5
            held = {m["id"] for m in first.messages[1:]}
            await first.ws.close()  # the 4 un-acknowledged go back to the queue
            second, second_id = await connect(session, http_broker, group, topic)
            assert second_id != first_id
            await second.send({"type": "credit", "n": 100})
            while len(second.messages) < 9:
                assert await second.next() is not None, second.messages
            redelivered = {m["id"] for m in second.messages if m["delivery_count"] == 2}
            assert redelivered == held
            assert first.messages[0]["id"] not in {m["id"] for m in second.messages}
            await second.send({"type": "ack", "id": first.messages[0]["id"]})
            answer = await second.next()
            assert answer is not None and answer["type"] == "settled" and answer["error"]  # not held by it
            await second.send({"type": "credit", "n": "many"})
            answer = await second.next()
            assert answer is not None and answer["type"] == "error" and answer["error_code"] == 422
            # 10 produced, 1 acknowledged: 9 still to settle in the group's share partitions
            samples = scrape(http_broker)
            backlog = sum(v for (name, labels), v in samples.items()
                          if name == "kbroker_share_group_backlog" and ("group", group) in labels)  # fmt: skip
            assert backlog == 9
            for _ in range(2):  # a second consumer id cannot be taken while in use
                async with session.get(
                    f"{http_broker.url}/v1/queues/ws?group={group}&topics={topic}&consumer={second_id}"
                ) as r:
                    assert r.status == 409 and (await r.json())["error_code"] == 40901

    asyncio.run(run())


def test_bad_requests(http_broker: HttpBroker) -> None:
    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{http_broker.url}/v1/queues/ws?group=g") as response:
                assert response.status == 400 and (await response.json())["error_code"] == 400
            async with session.get(f"{http_broker.url}/v1/queues/ws?group=g&topics=nope") as response:
                assert response.status == 404 and (await response.json())["error_code"] == 40401

    asyncio.run(run())


def test_binary_frames_for_binary_payloads(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    payload = bytes(range(256))

    def frame(header: dict[str, Any], value: bytes) -> bytes:
        encoded = json.dumps(header).encode()
        return len(encoded).to_bytes(4, "big") + encoded + value

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"{http_broker.url}/v1/queues/ws?group={group}&topics={topic}&binary=1")
            assert json.loads((await ws.receive()).data)["type"] == "welcome"
            await ws.send_str(json.dumps({"type": "credit", "n": 10}))
            await asyncio.sleep(0.5)
            await ws.send_bytes(frame({"type": "produce", "ref": "b", "topic": topic, "partition": 0}, payload))
            await ws.send_str(
                json.dumps({"type": "produce", "ref": "t", "topic": topic, "partition": 0, "value": "hi"})
            )
            binary = text = None
            answers = []
            while binary is None or text is None or len(answers) < 2:
                message = await ws.receive(timeout=5)
                if message.type == aiohttp.WSMsgType.BINARY:
                    size = int.from_bytes(message.data[:4], "big")
                    binary = (json.loads(message.data[4 : 4 + size]), message.data[4 + size :])
                else:
                    data = json.loads(message.data)
                    if data["type"] == "message":
                        text = data
                    else:
                        answers.append(data)
            assert {a["ref"] for a in answers} == {"b", "t"} and all(a["error_code"] is None for a in answers)
            header, value = binary
            assert value == payload and "value" not in header and header["offset"] == 0
            assert text["value"] == "hi" and text["offset"] == 1  # UTF-8 values stay in text frames
            await ws.send_bytes(b"\x00\x00\x00\x09not json!")
            error = json.loads((await ws.receive(timeout=5)).data)
            assert error["type"] == "error" and error["error_code"] == 422
            await ws.close()

    asyncio.run(run())


def test_settling_many_ids_in_one_frame(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            client, _ = await connect(session, http_broker, group, topic)
            await client.send({"type": "credit", "n": 1})
            await asyncio.sleep(0.5)
            await produce(client, topic, 1)
            while not client.messages:
                assert await client.next() is not None
            ident = client.messages[0]["id"]
            await client.send({"type": "release", "ids": [ident, "bad-id"]})
            while True:  # the released message may come back before the answer
                frame = await client.next()
                assert frame is not None
                if frame["type"] == "settled":
                    break
            assert frame["ids"] == [ident, "bad-id"] and list(frame["errors"]) == ["bad-id"]
            while len(client.messages) < 2:
                assert await client.next() is not None
            assert client.messages[1]["id"] == ident and client.messages[1]["delivery_count"] == 2
            await client.send({"type": "ack", "ids": [ident]})
            frame = await client.next()
            assert frame == {"type": "settled", "ids": [ident], "action": "ack", "errors": {}}

    asyncio.run(run())
