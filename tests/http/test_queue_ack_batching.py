"""WebSocket queue acknowledgements that arrive while an earlier one is being made durable are made durable
together, with one write to __share_group_state, and each is still answered only after its write, in order.
The frames read ahead for that are bounded in bytes."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import WSMsgType

from kbroker.http.queues import READ_AHEAD_BYTES, ReadAhead, incoming
from kbroker.testing import InProcessBroker
from tests.broker.conftest import create_topic, unique_topic
from tests.process import RawClient

COUNT = 300


def test_pipelined_acks_share_durable_writes() -> None:
    with InProcessBroker(http=True, config={"num.partitions": 1}) as kbroker:
        topic, group = unique_topic("acks"), unique_topic("group")
        with RawClient(kbroker.bootstrap) as client:
            create_topic(client, topic)
        writes: list[int] = []

        async def run() -> None:
            async with aiohttp.ClientSession() as session:
                ws = await session.ws_connect(f"{kbroker.http_url}/v1/queues/ws?group={group}&topics={topic}")
                assert json.loads((await ws.receive(timeout=10)).data)["type"] == "welcome"
                await ws.send_str(json.dumps({"type": "credit", "n": COUNT}))
                await joined(kbroker, group, topic)  # the share partition starts at the log end: join first
                for i in range(COUNT):
                    await ws.send_str(json.dumps({"type": "produce", "ref": i, "topic": topic, "value": f"v{i}"}))
                ids: list[str] = []
                produced = 0
                while len(ids) < COUNT or produced < COUNT:
                    frame = json.loads((await ws.receive(timeout=10)).data)
                    if frame["type"] == "message":
                        ids.append(frame["id"])
                    elif frame["type"] == "produced":
                        assert frame["error"] is None
                        produced += 1
                slow_down_state_writes(kbroker, writes)
                for ident in ids:  # pipelined: no answer awaited before the next ack
                    await ws.send_str(json.dumps({"type": "ack", "id": ident}))
                answers: list[dict[str, Any]] = []
                while len(answers) < COUNT:
                    frame = json.loads((await ws.receive(timeout=30)).data)
                    assert frame["type"] == "settled", frame
                    answers.append(frame)
                assert [a["id"] for a in answers] == ids
                assert all(a["error"] is None and a["action"] == "ack" for a in answers)
                await ws.close()

        asyncio.run(run())
        # without batching every ack is its own 50 ms write; here those that queue up behind one share the next
        assert 1 <= len(writes) <= COUNT // 10, writes
        controls_broker = kbroker.controls.broker
        assert controls_broker is not None and controls_broker.shares is not None
        (share,) = [p for (g, t, _), p in controls_broker.shares.partitions.items() if g == group and t == topic]
        assert share.start_offset == COUNT  # every record acknowledged, the window moved past all of them


async def joined(kbroker: InProcessBroker, group: str, topic: str) -> None:
    """Until the socket's consumer has initialised the group's share partition (at the log end)."""
    broker = kbroker.controls.broker
    assert broker is not None
    for _ in range(1000):
        if broker.shares is not None and (group, topic, 0) in broker.shares.partitions:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the share partition was never initialised")


def slow_down_state_writes(kbroker: InProcessBroker, writes: list[int]) -> None:
    """Make each durable write of share state take 50 ms longer, and count them."""
    broker = kbroker.controls.broker
    assert broker is not None and broker.shares is not None
    store = broker.shares.store
    original = store.write

    async def slow(states: Any) -> None:
        writes.append(len(states))
        await asyncio.sleep(0.05)
        await original(states)

    store.write = slow  # type: ignore[method-assign]


def test_read_ahead_holds_at_most_its_budget() -> None:
    size = 400_000  # two fit in the 1 MiB budget, a third does not
    assert 2 * size <= READ_AHEAD_BYTES < 3 * size
    frame = json.dumps({"type": "credit", "n": 1, "pad": ""})
    frame = frame.replace('""', '"' + "x" * (size - len(frame)) + '"')
    assert len(frame) == size
    messages = [SimpleNamespace(type=WSMsgType.TEXT, data=frame) for _ in range(6)]
    messages.append(SimpleNamespace(type=WSMsgType.CLOSE, data=1000))

    class Socket:
        async def receive(self) -> Any:
            await asyncio.sleep(0)
            return messages.pop(0)

    async def settle() -> None:  # turns of the event loop, not time: the reader runs until it waits for room
        for _ in range(200):
            await asyncio.sleep(0)

    async def run() -> None:
        inbox = ReadAhead(Socket())  # type: ignore[arg-type]
        await settle()
        assert (inbox.frames.qsize(), inbox.queued) == (2, 2 * len(frame))
        await inbox.get()
        await settle()
        assert (inbox.frames.qsize(), inbox.queued) == (2, 2 * len(frame))
        kinds = []
        while (item := incoming(await inbox.get()))[0] != "end":
            kinds.append(item[0])
        assert kinds == ["text"] * 5 and item == ("end", True)
        inbox.close()

    asyncio.run(run())
