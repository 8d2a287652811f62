"""Virtual queues with named consumers (/v1/vq), with aiohttp's HTTP client and a Kafka producer."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from confluent_kafka import Consumer, Producer

from tests.http.conftest import HttpBroker


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("vq") / "data").start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def queue_name(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Vq:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = f"{url}/v1/vq"

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.session.request(method, self.url + path, **kwargs) as response:
            body = await response.json() if response.status != 204 else None
            return response.status, body

    async def publish(self, queue: str, value: bytes | str, headers: dict[str, str] | None = None) -> int:
        status, body = await self.call("POST", f"/{queue}", data=value, headers=headers or {})
        assert status == 200, body
        return int(body["offset"])

    async def read(self, queue: str, **query: Any) -> dict[str, Any]:
        status, body = await self.call("GET", f"/{queue}/records", params={k: str(v) for k, v in query.items()})
        assert status == 200, body
        return dict(body)

    async def ack(self, queue: str, consumer: str, offset: int, allow_rewind: bool = False) -> tuple[int, Any]:
        return await self.call(
            "POST", f"/{queue}/ack", json={"consumer": consumer, "offset": offset, "allow_rewind": allow_rewind}
        )


def run(broker: HttpBroker, scenario: Any) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            await scenario(Vq(session, broker.url))

    asyncio.run(main())


def values(body: dict[str, Any]) -> list[str]:
    return [r["value"] for r in body["records"]]


def test_two_named_consumers_read_independently(http_broker: HttpBroker) -> None:
    queue, other = queue_name(), queue_name()

    async def scenario(vq: Vq) -> None:
        offsets = [await vq.publish(queue, f"m{i}") for i in range(5)]
        await vq.publish(other, "not mine")
        a = await vq.read(queue, consumer="alice", max=2)
        assert values(a) == ["m0", "m1"] and a["next_offset"] == offsets[1] + 1
        assert (await vq.ack(queue, "alice", a["next_offset"]))[0] == 200
        assert values(await vq.read(queue, consumer="alice", max=10)) == ["m2", "m3", "m4"]
        assert values(await vq.read(queue, consumer="bob", max=10)) == [f"m{i}" for i in range(5)]  # unaffected
        b = await vq.read(queue, consumer="bob", max=4)
        assert (await vq.ack(queue, "bob", b["next_offset"]))[0] == 200
        assert values(await vq.read(queue, consumer="bob")) == ["m4"]
        assert values(await vq.read(queue, consumer="alice")) == ["m2", "m3", "m4"]
        # a read does not move the position: only an ack does
        assert values(await vq.read(queue, consumer="alice")) == ["m2", "m3", "m4"]
        # a manual read from an offset, no consumer
        manual = await vq.read(queue, offset=offsets[3])
        assert values(manual) == ["m3", "m4"] and "consumer" not in manual
        # GET /v1/vq: depth and lag
        status, listed = await vq.call("GET", "", params={"prefix": queue})
        assert status == 200
        (entry,) = listed["queues"]
        assert entry["queue"] == queue and entry["depth"] == 5
        lags = {c["consumer"]: (c["position"], c["lag"]) for c in entry["consumers"]}
        assert lags == {"alice": (offsets[2], 3), "bob": (offsets[4], 1)}
        status, one = await vq.call("GET", f"/{queue}")
        assert status == 200 and one == entry
        # pages: after a name, limited
        prefix = queue_name("page")
        for i in range(5):
            await vq.publish(f"{prefix}-{i}", "x")
        status, page = await vq.call("GET", "", params={"prefix": prefix, "limit": "2", "after": f"{prefix}-1"})
        assert [q["queue"] for q in page["queues"]] == [f"{prefix}-2", f"{prefix}-3"] and page["truncated"]
        status, page = await vq.call("GET", "", params={"prefix": prefix, "after": f"{prefix}-3"})
        assert [q["queue"] for q in page["queues"]] == [f"{prefix}-4"] and not page["truncated"]

    run(http_broker, scenario)


def test_ack_rewind_and_stale_ack(http_broker: HttpBroker) -> None:
    queue = queue_name()

    async def scenario(vq: Vq) -> None:
        offsets = [await vq.publish(queue, f"m{i}") for i in range(4)]
        status, body = await vq.ack(queue, "c", offsets[2] + 1)
        assert status == 200 and body["position"] == offsets[2] + 1 and body["previous"] is None
        status, body = await vq.ack(queue, "c", offsets[1])  # backwards without allow_rewind: stale
        assert status == 409 and body["error_code"] == 40904 and str(offsets[2] + 1) in body["message"]
        assert values(await vq.read(queue, consumer="c")) == ["m3"]  # nothing changed
        status, body = await vq.ack(queue, "c", offsets[2] + 1)  # the same position again: fine
        assert status == 200
        status, body = await vq.ack(queue, "c", offsets[0], allow_rewind=True)
        assert status == 200 and body == {"queue": queue, "consumer": "c", "position": offsets[0],
                                          "previous": offsets[2] + 1}  # fmt: skip
        assert values(await vq.read(queue, consumer="c")) == ["m0", "m1", "m2", "m3"]
        status, body = await vq.ack(queue, "c", 10**12)  # past the log end
        assert status == 422
        for bad in ({"consumer": "c"}, {"consumer": 1, "offset": 0}, {"consumer": "c", "offset": "1"},
                    {"consumer": "c", "offset": 1, "allow_rewind": "yes"}):  # fmt: skip
            status, body = await vq.call("POST", f"/{queue}/ack", json=bad)
            assert status == 422, bad
        status, body = await vq.call(
            "POST", f"/{queue}/ack", data=b"{nope", headers={"Content-Type": "application/json"}
        )
        assert status == 400 and "malformed JSON" in body["message"]
        status, body = await vq.ack(queue_name("never"), "c", 0)
        assert status == 404 and body["error_code"] == 40404

    run(http_broker, scenario)


def test_deleting_a_queue_and_a_consumer(http_broker: HttpBroker) -> None:
    queue, kept = queue_name(), queue_name()

    async def scenario(vq: Vq) -> None:
        for i in range(3):
            await vq.publish(queue, f"old{i}")
        await vq.publish(kept, "stays")
        await vq.ack(queue, "a", (await vq.read(queue, consumer="a", max=1))["next_offset"])
        await vq.ack(queue, "b", (await vq.read(queue, consumer="b", max=2))["next_offset"])
        assert (await vq.call("DELETE", f"/{queue}/consumers/b"))[0] == 204
        status, body = await vq.call("DELETE", f"/{queue}/consumers/b")
        assert status == 404 and body["error_code"] == 40405
        assert values(await vq.read(queue, consumer="b")) == ["old0", "old1", "old2"]  # starts over
        status, body = await vq.call("DELETE", f"/{queue}")
        assert status == 200 and body == {"queue": queue, "deleted_consumers": ["a"]}
        for path in (f"/{queue}", f"/{queue}/records?consumer=a"):
            status, body = await vq.call("GET", path)
            assert status == 404 and body["error_code"] == 40404
        assert (await vq.call("DELETE", f"/{queue}"))[0] == 404
        status, listed = await vq.call("GET", "", params={"prefix": queue})
        assert listed["queues"] == []
        # published again: a new queue, without the old records or consumers
        offset = await vq.publish(queue, "new")
        assert values(await vq.read(queue, consumer="a")) == ["new"]
        assert values(await vq.read(queue, offset=0)) == ["new"]
        status, one = await vq.call("GET", f"/{queue}")
        assert one["depth"] == 1 and one["consumers"] == [] and offset > 0
        assert values(await vq.read(kept, consumer="a")) == ["stays"]  # another queue is untouched

    run(http_broker, scenario)


def test_delay_holds_the_queue_and_tags_are_returned(http_broker: HttpBroker) -> None:
    queue = queue_name()

    async def scenario(vq: Vq) -> None:
        await vq.publish(queue, "first", {"kbroker-tag": "blue"})
        await vq.publish(queue, "delayed", {"kbroker-deliver-after-ms": "1500"})
        await vq.publish(queue, "behind")
        body = await vq.read(queue, consumer="c")
        assert values(body) == ["first"] and body["records"][0]["tag"] == "blue"
        assert body["blocked_until"] > time.time() * 1000
        assert values(await vq.read(queue, offset=body["next_offset"])) == []  # a manual read waits too
        assert (await vq.ack(queue, "c", body["next_offset"]))[0] == 200
        begin = time.monotonic()
        later = await vq.read(queue, consumer="c", timeout=5000)  # a long poll ends when it is due
        assert values(later) == ["delayed", "behind"] and "blocked_until" not in later
        assert time.monotonic() - begin < 4
        at = int(time.time() * 1000) + 60_000
        await vq.publish(queue, "tomorrow", {"kbroker-deliver-at": str(at)})
        for bad in ("soon", "-1", "9223372036854775808", "\u00b2".encode().decode("latin-1")):  # ², as UTF-8 bytes
            status, body = await vq.call("POST", f"/{queue}", data=b"x", headers={"kbroker-deliver-at": bad})
            assert status == 422 and "fits a Java long" in body["message"], (bad, body)  # never stored
        held = await vq.read(queue, consumer="d", max=10)
        assert values(held) == ["first", "delayed", "behind"] and held["blocked_until"] == at

    run(http_broker, scenario)


def test_long_poll_wakes_on_publish(http_broker: HttpBroker) -> None:
    queue = queue_name()

    async def scenario(vq: Vq) -> None:
        await vq.publish(queue, "m0")
        await vq.ack(queue, "c", (await vq.read(queue, consumer="c"))["next_offset"])
        waiting = asyncio.ensure_future(vq.read(queue, consumer="c", timeout=10000))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        begin = time.monotonic()
        await vq.publish(queue, "m1")
        assert values(await waiting) == ["m1"] and time.monotonic() - begin < 2
        assert values(await vq.read(queue, consumer="c", timeout=200)) == ["m1"]

    run(http_broker, scenario)


def test_a_kafka_producer_keyed_by_the_queue_name_publishes_to_it(http_broker: HttpBroker) -> None:
    queue = queue_name("kafka")

    async def scenario(vq: Vq) -> None:
        await vq.publish(queue, "over http")  # creates the data topic
        producer = Producer({"bootstrap.servers": http_broker.bootstrap, "partitioner": "murmur2_random",
                             "compression.type": "lz4", "linger.ms": 20})  # fmt: skip
        for i in range(20):
            producer.produce("kbroker-vq", key=queue, value=f"kafka {i}".encode(), headers={"kbroker-tag": "k"})
            producer.produce("kbroker-vq", key=queue_name("noise"), value=b"noise")
        assert producer.flush(10) == 0
        body = await vq.read(queue, consumer="c", max=100)
        assert values(body) == ["over http"] + [f"kafka {i}" for i in range(20)]
        assert {r.get("tag") for r in body["records"][1:]} == {"k"}
        # and a Kafka consumer reads what was published over HTTP, in the queue's partition
        consumer = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": queue,
                             "auto.offset.reset": "earliest"})  # fmt: skip
        try:
            consumer.subscribe(["kbroker-vq"])
            seen: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(seen) < 21 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None and message.key() == queue.encode():
                    assert message.partition() == body["partition"]
                    seen.append(message.value())
            assert seen[0] == b"over http" and len(seen) == 21
        finally:
            consumer.close()

    run(http_broker, scenario)


def test_bad_requests(http_broker: HttpBroker) -> None:
    queue = queue_name()

    async def scenario(vq: Vq) -> None:
        await vq.publish(queue, "m")
        for path, status in ((f"/{queue}/records", 400), (f"/{queue}/records?consumer=a&offset=1", 400),
                             (f"/{queue}/records?consumer=a&max=0", 400), (f"/{queue}/records?offset=x", 400),
                             ("/" + "x" * 300 + "/records?consumer=a", 422),
                             (f"/{queue}/records?consumer=" + "y" * 300, 422), ("?limit=0", 400)):  # fmt: skip
            got, body = await vq.call("GET", path)
            assert got == status and "message" in body, (path, body)
        status, body = await vq.call("POST", f"/{queue}", data=b"x" * (2 * 1024 * 1024))  # > max.message.bytes
        assert status == 413 and "exceeds the limit" in body["message"]
        status, body = await vq.call("POST", f"/{queue}", data=b"x" * (9 * 1024 * 1024))  # > the body limit
        assert status == 413
        binary = bytes(range(256))
        offset = await vq.publish(queue, binary)
        (record,) = (await vq.read(queue, offset=offset))["records"]
        assert record["value_encoding"] == "base64"
        assert (await vq.read(queue, offset=offset))["records"][0]["value"] != ""

    run(http_broker, scenario)


def test_transactional_producers_are_read_committed(http_broker: HttpBroker) -> None:
    queue = queue_name("txn")

    async def scenario(vq: Vq) -> None:
        await vq.publish(queue, "before")
        producer = Producer({"bootstrap.servers": http_broker.bootstrap, "partitioner": "murmur2_random",
                             "transactional.id": queue})  # fmt: skip
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce("kbroker-vq", key=queue, value=b"aborted")
        producer.flush(10)
        assert values(await vq.read(queue, consumer="c")) == ["before"]  # the open transaction holds the rest
        producer.abort_transaction(10)
        producer.begin_transaction()
        producer.produce("kbroker-vq", key=queue, value=b"pending")
        producer.flush(10)
        body = await vq.read(queue, consumer="c")
        assert values(body) == ["before"]
        await vq.ack(queue, "c", body["next_offset"])
        producer.commit_transaction(10)
        body = await vq.read(queue, consumer="c")
        assert values(body) == ["pending"]  # the aborted record is never returned
        assert values(await vq.read(queue, offset=0)) == ["before", "pending"]

    run(http_broker, scenario)
