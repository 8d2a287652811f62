"""A WebSocket queue consumer that reconnects with its previous consumer id resumes: what it held when
its connection was lost (a killed client, no close frame) stays locked to it until the locks expire,
and comes back to it on reconnecting; a clean close releases at once. Clients: the `websockets`
library (the killed holder) and aiohttp's WebSocket client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from tests.broker.conftest import create_topic, unique_topic
from tests.http.conftest import HttpBroker, http_json
from tests.process import REPO, RawClient

LOCK_MS = 6000

HOLDER = """
import json, sys
from websockets.sync.client import connect
ws = connect(sys.argv[1])
print(json.loads(ws.recv())["consumer"], flush=True)
ws.send(json.dumps({"type": "credit", "n": 3}))
while True:
    frame = json.loads(ws.recv())
    if frame["type"] == "message":
        print(frame["id"], flush=True)  # held, never acknowledged
"""


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("resume") / "data", "--config",
                         f"group.share.record.lock.duration.ms={LOCK_MS}").start()  # fmt: skip
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def produce(broker: HttpBroker, topic: str, count: int) -> None:
    records = {"records": [{"value": {"n": i}} for i in range(count)]}
    status, body = http_json("POST", f"{broker.url}/topics/{topic}", records, "application/vnd.kafka.json.v2+json")
    assert status == 200, body


async def frames(ws: aiohttp.ClientWebSocketResponse, until: float) -> list[dict[str, Any]]:
    """Every frame that arrives within `until` seconds."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + until
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await ws.receive(timeout=left)
        except TimeoutError:
            break
        if message.type != aiohttp.WSMsgType.TEXT:
            break
        got.append(json.loads(message.data))
    return got


async def connect(session: aiohttp.ClientSession, url: str) -> aiohttp.ClientWebSocketResponse:
    for _ in range(50):  # the broker may not have seen the previous connection go yet: 409 meanwhile
        try:
            return await session.ws_connect(url)
        except aiohttp.WSServerHandshakeError as error:
            if error.status != 409:
                raise
            await asyncio.sleep(0.1)
    raise AssertionError("still connected on another socket")


def test_reconnect_with_the_previous_id_resumes_its_messages(http_broker: HttpBroker) -> None:
    topic, group = unique_topic("queue"), unique_topic("group")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)  # one partition (num.partitions)
    base = f"ws://127.0.0.1:{http_broker.http_port}/v1/queues/ws?group={group}&topics={topic}"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, base + "&consumer=worker-7"], stdout=subprocess.PIPE,
                              text=True, cwd=REPO)  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "worker-7"

        async def run() -> None:
            async with aiohttp.ClientSession() as session:
                other = await session.ws_connect(base + "&consumer=other")
                assert (await other.receive_json())["type"] == "welcome"
                await asyncio.sleep(0.5)  # the holder's credit started the share partition (at the log end)
                produce(http_broker, topic, 5)
                held = [holder.stdout.readline().strip() for _ in range(3)]  # type: ignore[union-attr]
                os.kill(holder.pid, signal.SIGKILL)  # no close frame
                holder.wait(10)
                lost_at = time.monotonic()
                await other.send_json({"type": "credit", "n": 10})
                seen = [f for f in await frames(other, 2.0) if f["type"] == "message"]
                assert len(seen) == 2 and not {f["id"] for f in seen} & set(held)  # the held 3 stay locked
                for frame in seen:
                    await other.send_json({"type": "ack", "id": frame["id"]})
                    assert (await other.receive_json())["error"] is None

                resumed = await connect(session, base + "&consumer=worker-7")
                assert time.monotonic() - lost_at < LOCK_MS / 1000
                welcome = await resumed.receive_json()
                assert welcome["consumer"] == "worker-7" and welcome["resumed"] == 3
                again = [await resumed.receive_json() for _ in range(3)]  # before any credit is granted
                assert [f["id"] for f in again] == held and {f["delivery_count"] for f in again} == {1}
                await resumed.send_json({"type": "ack", "ids": held})
                settled = await resumed.receive_json()
                assert settled["type"] == "settled" and settled["errors"] == {}
                # every record went to exactly one consumer, once; nothing comes back after the lock time
                await asyncio.sleep(LOCK_MS / 1000 - (time.monotonic() - lost_at) + 0.5)
                await resumed.send_json({"type": "credit", "n": 10})
                assert [f for f in await frames(other, 1.0) if f["type"] == "message"] == []
                assert [f for f in await frames(resumed, 0.5) if f["type"] == "message"] == []
                await resumed.close()
                await other.close()

        asyncio.run(run())
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_clean_close_releases_at_once_and_nothing_is_resumed(http_broker: HttpBroker) -> None:
    topic, group = unique_topic("queue"), unique_topic("group")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)  # one partition (num.partitions)
    base = f"ws://127.0.0.1:{http_broker.http_port}/v1/queues/ws?group={group}&topics={topic}"

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            leaving = await session.ws_connect(base + "&consumer=leaver")
            assert (await leaving.receive_json())["resumed"] == 0
            await leaving.send_json({"type": "credit", "n": 2})
            await asyncio.sleep(0.5)
            produce(http_broker, topic, 2)
            taken = [f["id"] for f in await frames(leaving, 1.0) if f["type"] == "message"]
            assert len(taken) == 2
            await leaving.close()  # a close frame: released now, not at lock expiry
            other = await session.ws_connect(base + "&consumer=other")
            await other.receive_json()
            await other.send_json({"type": "credit", "n": 10})
            begin = time.monotonic()
            got = [f for f in await frames(other, 1.5) if f["type"] == "message"]
            assert sorted(f["id"] for f in got) == sorted(taken) and time.monotonic() - begin < LOCK_MS / 1000
            assert {f["delivery_count"] for f in got} == {2}
            back = await session.ws_connect(base + "&consumer=leaver")
            assert (await back.receive_json())["resumed"] == 0
            await back.close()
            await other.close()

    asyncio.run(run())
