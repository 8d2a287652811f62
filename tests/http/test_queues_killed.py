"""A WebSocket queue consumer killed with SIGKILL mid-stream: its un-acknowledged messages are
redelivered to the other consumers of the group once their acquisition locks expire (a lost
connection keeps them for a reconnect until then; clients: the `websockets` library, sync and asyncio)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect

from tests.broker.conftest import create_topic, unique_topic
from tests.http.conftest import HttpBroker, http_json
from tests.process import REPO, RawClient

HOLDER = """
import json, sys
from websockets.sync.client import connect
ws = connect(sys.argv[1])
print(json.loads(ws.recv())["consumer"], flush=True)
ws.send(json.dumps({"type": "credit", "n": 5}))
while True:
    frame = json.loads(ws.recv())
    if frame["type"] == "message":
        print(frame["id"], flush=True)  # held, never acknowledged
"""


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("killed") / "data", "--config", "num.partitions=2",
                         "--config", "group.share.record.lock.duration.ms=3000").start()  # fmt: skip
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def test_killed_consumer_messages_go_to_the_others(http_broker: HttpBroker) -> None:
    topic, group = unique_topic("queue"), unique_topic("group")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)
    url = f"ws://127.0.0.1:{http_broker.http_port}/v1/queues/ws?group={group}&topics={topic}"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None
        holder_id = holder.stdout.readline().strip()
        assert holder_id.startswith("ws-")

        async def run() -> None:
            async with connect(url) as first, connect(url) as second:
                others = [first, second]
                for ws in others:
                    assert json.loads(await ws.recv())["type"] == "welcome"
                await asyncio.sleep(0.5)  # the holder's credit starts the share partitions (at the log end)
                status, body = http_json(
                    "POST",
                    f"{http_broker.url}/topics/{topic}",
                    {"records": [{"value": {"n": i}} for i in range(30)]},
                    "application/vnd.kafka.json.v2+json",
                )
                assert status == 200, body
                held = [holder.stdout.readline().strip() for _ in range(5)]  # type: ignore[union-attr]
                os.kill(holder.pid, signal.SIGKILL)
                holder.wait(10)
                for ws in others:
                    await ws.send(json.dumps({"type": "credit", "n": 3}))
                delivered: dict[str, int] = {}

                async def consume(ws: object) -> None:
                    while len(delivered) < 30:
                        frame = json.loads(await ws.recv())  # type: ignore[attr-defined]
                        if frame["type"] == "message":
                            assert frame["id"] not in delivered
                            delivered[frame["id"]] = frame["delivery_count"]
                            await ws.send(json.dumps({"type": "ack", "id": frame["id"]}))  # type: ignore[attr-defined]
                        else:
                            assert frame == {**frame, "type": "settled", "error": None}

                tasks = [asyncio.ensure_future(consume(ws)) for ws in others]
                done, pending = await asyncio.wait(tasks, timeout=45, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                for task in done:
                    task.result()
                assert len(delivered) == 30
                assert {i for i, count in delivered.items() if count == 2} == set(held)
                assert all(count == 1 for i, count in delivered.items() if i not in held)

        asyncio.run(run())
    finally:
        if holder.poll() is None:
            holder.kill()


def test_broker_kill_keeps_acknowledged_state(tmp_path_factory: pytest.TempPathFactory) -> None:
    """kill -9 of the broker: acknowledged messages never come back, unacknowledged ones do."""
    data = tmp_path_factory.mktemp("kill9") / "data"
    broker = HttpBroker(data).start()
    topic, group = unique_topic("queue"), unique_topic("group")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)

    def url(b: HttpBroker) -> str:
        return f"ws://127.0.0.1:{b.http_port}/v1/queues/ws?group={group}&topics={topic}"

    async def first_session() -> set[str]:
        async with connect(url(broker)) as ws:
            assert json.loads(await ws.recv())["type"] == "welcome"
            await ws.send(json.dumps({"type": "credit", "n": 100}))
            await asyncio.sleep(0.5)
            records = {"records": [{"value": {"n": i}} for i in range(10)]}
            assert (
                http_json("POST", f"{broker.url}/topics/{topic}", records, "application/vnd.kafka.json.v2+json")[0]
                == 200
            )
            ids = []
            while len(ids) < 10:
                frame = json.loads(await ws.recv())
                if frame["type"] == "message":
                    ids.append(frame["id"])
            for ident in ids[:6]:
                await ws.send(json.dumps({"type": "ack", "id": ident}))
                assert json.loads(await ws.recv()) == {"type": "settled", "id": ident, "action": "ack", "error": None}
            broker.kill()  # SIGKILL with 4 messages held
            return set(ids[6:])

    unacked = asyncio.run(first_session())
    restarted = HttpBroker(data)
    restarted.start()
    try:

        async def second_session() -> list[dict[str, object]]:
            async with connect(url(restarted)) as ws:
                assert json.loads(await ws.recv())["type"] == "welcome"
                await ws.send(json.dumps({"type": "credit", "n": 100}))
                got = []
                while True:
                    try:
                        frame = json.loads(await asyncio.wait_for(ws.recv(), 3))
                    except TimeoutError:
                        return got
                    if frame["type"] == "message":
                        got.append(frame)

        redelivered = asyncio.run(second_session())
        assert {m["id"] for m in redelivered} == unacked
    finally:
        restarted.stop()
