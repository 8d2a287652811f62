"""REST Proxy v2 against a real broker: aiohttp's client, curl, and confluent-kafka reading what
REST produced and REST reading what confluent-kafka produced."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker.conftest import create_topic, unique_topic
from tests.http.conftest import HttpBroker, http_json
from tests.process import RawClient

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    args = ("--config", "num.partitions=3", "--config", "consumer.instance.timeout.ms=1500",
            "--config", "kbroker.http.max.body.bytes=65536")  # fmt: skip
    process = HttpBroker(tmp_path_factory.mktemp("rest") / "data", *args).start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def new_topic(broker: HttpBroker, prefix: str = "rest") -> str:
    topic = unique_topic(prefix)
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
    return topic


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def call(
    session: aiohttp.ClientSession, method: str, url: str, body: Any = None, content_type: str = V2, **kw: Any
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    headers = {"Content-Type": content_type, **kw.pop("headers", {})}
    async with session.request(method, url, data=data, headers=headers, **kw) as response:
        text = await response.text()
        return response.status, json.loads(text) if text else None


def confluent_records(broker: HttpBroker, topic: str, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": unique_topic("cg"), "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append(message)
    finally:
        consumer.close()
    return out


def test_topics(http_broker: HttpBroker) -> None:
    topic = new_topic(http_broker)
    url = http_broker.url
    assert topic in http_json("GET", f"{url}/topics")[1]
    assert http_json("GET", f"{url}/brokers") == (200, {"brokers": [1]})
    status, body = http_json("GET", f"{url}/topics/{topic}")
    assert status == 200 and body["name"] == topic
    assert body["configs"]["cleanup.policy"] == "delete"
    assert [p["partition"] for p in body["partitions"]] == [0, 1, 2]
    assert body["partitions"][0]["replicas"] == [{"broker": 1, "leader": True, "in_sync": True}]
    assert http_json("GET", f"{url}/topics/{topic}/partitions")[1][2]["leader"] == 1
    assert http_json("GET", f"{url}/topics/{topic}/partitions/1")[1]["partition"] == 1
    assert http_json("GET", f"{url}/topics/no-such-topic") == (
        404,
        {"error_code": 40401, "message": "Topic no-such-topic not found."},
    )
    assert http_json("GET", f"{url}/topics/{topic}/partitions/7")[1]["error_code"] == 40402


def test_binary_produce_read_by_confluent_kafka(http_broker: HttpBroker) -> None:
    topic = new_topic(http_broker)
    records = [{"key": b64(b"key-%d" % i), "value": b64(b"\x00\xffvalue-%d" % i)} for i in range(20)]
    records.append({"value": b64(b"no key"), "partition": 2})

    async def run() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session:
            return await call(session, "POST", f"{http_broker.url}/topics/{topic}", {"records": records}, BINARY)

    status, body = asyncio.run(run())
    assert status == 200, body
    assert body["key_schema_id"] is None and len(body["offsets"]) == 21
    assert all(o["error_code"] is None and o["offset"] >= 0 for o in body["offsets"])
    assert body["offsets"][-1]["partition"] == 2
    rest_partition = {b"key-%d" % i: body["offsets"][i]["partition"] for i in range(20)}
    # the same keys through a Kafka client with Kafka's default (murmur2) partitioner land alike
    producer = Producer({"bootstrap.servers": http_broker.bootstrap, "partitioner": "murmur2_random"})
    kafka_partition: dict[bytes, int] = {}
    for key in rest_partition:
        producer.produce(
            topic,
            key=key,
            value=b"from kafka",
            on_delivery=lambda e, m: kafka_partition.__setitem__(m.key(), m.partition()),
        )
    producer.flush(30)
    assert kafka_partition == rest_partition
    messages = confluent_records(http_broker, topic, 41)
    from_rest = {m.key(): (m.value(), m.partition(), m.offset()) for m in messages if m.value() != b"from kafka"}
    for i in range(20):
        key = b"key-%d" % i
        assert from_rest[key] == (
            b"\x00\xffvalue-%d" % i,
            body["offsets"][i]["partition"],
            body["offsets"][i]["offset"],
        )
    assert from_rest[None][0] == b"no key"


def test_json_consumer_round_trip_commit_and_resume(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    url = http_broker.url

    async def run() -> None:
        async with aiohttp.ClientSession() as s:
            values = [{"n": i, "text": "ü"} for i in range(9)]
            status, body = await call(
                s,
                "POST",
                f"{url}/topics/{topic}/partitions/1",
                {"records": [{"key": i, "value": v} for i, v in enumerate(values)]},
                JSON,
            )
            assert status == 200 and [o["offset"] for o in body["offsets"]] == list(range(9))
            status, created = await call(
                s,
                "POST",
                f"{url}/consumers/{group}",
                {"format": "json", "auto.offset.reset": "earliest", "auto.commit.enable": "false"},
            )
            assert status == 200 and created["instance_id"]
            base = created["base_uri"]
            assert base == f"{url}/consumers/{group}/instances/{created['instance_id']}"
            assert (await call(s, "POST", f"{base}/subscription", {"topics": [topic]}))[0] == 204
            assert (await call(s, "GET", f"{base}/subscription"))[1] == {"topics": [topic]}
            got: list[Any] = []
            while len(got) < 9:
                status, records = await call(s, "GET", f"{base}/records?timeout=2000", headers={"Accept": JSON})
                assert status == 200
                got += records
            assert [r["value"] for r in got] == values and [r["key"] for r in got] == list(range(9))
            assert {(r["topic"], r["partition"]) for r in got} == {(topic, 1)}
            # commit the first 5 explicitly, then read the committed offsets back
            commit = {"offsets": [{"topic": topic, "partition": 1, "offset": 5}]}
            assert (await call(s, "POST", f"{base}/offsets", commit))[0] == 200
            status, committed = await call(
                s, "GET", f"{base}/offsets", {"partitions": [{"topic": topic, "partition": 1}]}
            )
            assert committed == {"offsets": [{"topic": topic, "partition": 1, "offset": 5, "metadata": ""}]}
            assert (await call(s, "DELETE", base))[0] == 204
            assert (await call(s, "GET", f"{base}/records"))[1]["error_code"] == 40403
            # a new instance of the group resumes at the committed offset
            status, created = await call(s, "POST", f"{url}/consumers/{group}", {"name": "second", "format": "json"})
            assert created["instance_id"] == "second"
            second = created["base_uri"]
            await call(s, "POST", f"{second}/subscription", {"topics": [topic]})
            status, records = await call(s, "GET", f"{second}/records?timeout=2000", headers={"Accept": JSON})
            assert [r["offset"] for r in records] == [5, 6, 7, 8]
            # seek and the format check
            await call(s, "POST", f"{second}/positions", {"offsets": [{"topic": topic, "partition": 1, "offset": 7}]})
            status, records = await call(s, "GET", f"{second}/records", headers={"Accept": JSON})
            assert [r["offset"] for r in records] == [7, 8]
            status, error = await call(s, "GET", f"{second}/records", headers={"Accept": BINARY})
            assert status == 406 and error["error_code"] == 40601
            assert (await call(s, "POST", f"{url}/consumers/{group}", {"name": "second"}))[1]["error_code"] == 40902
            await call(s, "DELETE", second)

    asyncio.run(run())
    # the committed offset is the group's own: a Kafka client sees it
    consumer = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": group})
    try:
        (committed,) = consumer.committed([TopicPartition(topic, 1)], timeout=10)
        assert committed.offset == 9  # auto commit of the second instance after its reads
    finally:
        consumer.close()


def test_rest_reads_what_confluent_kafka_produced_with_manual_assignment(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    producer = Producer({"bootstrap.servers": http_broker.bootstrap})
    for i in range(12):
        producer.produce(topic, key=b"k%d" % i, value=b"\x01binary-%d" % i, partition=i % 3)
    producer.flush(30)
    url = http_broker.url

    async def run() -> list[Any]:
        async with aiohttp.ClientSession() as s:
            _, created = await call(s, "POST", f"{url}/consumers/{group}", {"auto.offset.reset": "earliest"})
            base = created["base_uri"]
            parts = {"partitions": [{"topic": topic, "partition": p} for p in (0, 2)]}
            assert (await call(s, "POST", f"{base}/assignments", parts))[0] == 204
            assert (await call(s, "GET", f"{base}/assignments"))[1] == parts
            assert (await call(s, "POST", f"{base}/subscription", {"topics": [topic]}))[1]["error_code"] == 40903
            out: list[Any] = []
            for _ in range(10):
                _, records = await call(
                    s, "GET", f"{base}/records?timeout=500&max_bytes=1000000", headers={"Accept": BINARY}
                )
                out += records
                if len(out) >= 8:
                    break
            await call(s, "POST", f"{base}/positions/beginning", {"partitions": [{"topic": topic, "partition": 0}]})
            _, again = await call(s, "GET", f"{base}/records", headers={"Accept": BINARY})
            assert [r["offset"] for r in again] == [0, 1, 2, 3]
            await call(s, "DELETE", base)
            return out

    records = asyncio.run(run())
    assert sorted((r["partition"], r["offset"]) for r in records) == [(p, o) for p in (0, 2) for o in range(4)]
    for r in records:
        i = int(base64.b64decode(r["key"])[1:])
        assert base64.b64decode(r["value"]) == b"\x01binary-%d" % i and i % 3 == r["partition"]


def test_two_instances_share_the_partitions(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    url = http_broker.url

    async def run() -> None:
        async with aiohttp.ClientSession() as s:
            bases = []
            for name in ("a", "b"):
                _, created = await call(s, "POST", f"{url}/consumers/{group}", {"name": name})
                bases.append(created["base_uri"])
                await call(s, "POST", f"{created['base_uri']}/subscription", {"topics": [topic]})
            first = (await call(s, "GET", f"{bases[0]}/assignments"))[1]["partitions"]
            second = (await call(s, "GET", f"{bases[1]}/assignments"))[1]["partitions"]
            assert len(first) + len(second) == 3 and not {json.dumps(p) for p in first} & {
                json.dumps(p) for p in second
            }
            await call(s, "DELETE", bases[1])
            assert len((await call(s, "GET", f"{bases[0]}/assignments"))[1]["partitions"]) == 3
            await call(s, "DELETE", bases[0])

    asyncio.run(run())


def test_idle_instance_expires(http_broker: HttpBroker) -> None:
    url = http_broker.url
    status, created = http_json("POST", f"{url}/consumers/{unique_topic('g')}", {})
    assert status == 200
    assert http_json("GET", f"{created['base_uri']}/assignments")[0] == 200
    time.sleep(3.0)  # consumer.instance.timeout.ms=1500, swept once a second
    assert http_json("GET", f"{created['base_uri']}/assignments") == (
        404,
        {"error_code": 40403, "message": "Consumer instance not found."},
    )


def test_bad_input_gets_a_json_4xx(http_broker: HttpBroker) -> None:
    topic = new_topic(http_broker)
    url = f"{http_broker.url}/topics/{topic}"
    cases = [
        (b"{not json", BINARY, 400, 400),
        (json.dumps({"records": [{"value": "x"}]}).encode(), "text/plain", 415, 415),
        (json.dumps({"records": [{"value": "not base64!"}]}).encode(), BINARY, 422, 422),
        (json.dumps({"records": []}).encode(), BINARY, 422, 422),
        (json.dumps({"records": [{"value": 1, "partition": 9}]}).encode(), JSON, 404, 40402),
        (json.dumps([1, 2]).encode(), JSON, 422, 422),
        (b"[" * 70000, JSON, 413, 413),
        (b"[" * 60000 + b"]" * 60000, JSON, 413, 413),
        (b"[" * 30000 + b"]" * 30000, JSON, 400, 400),  # nested deeper than the parser goes
    ]
    for data, content_type, status, code in cases:
        got_status, body = http_json("POST", url, data, content_type)
        assert (got_status, body["error_code"]) == (status, code), (data[:40], body)
        assert body["message"]
    assert (
        http_json("POST", f"{http_broker.url}/topics/missing-topic", {"records": [{"value": 1}]}, JSON)[1]["error_code"]
        == 40401
    )
    assert http_json("GET", f"{http_broker.url}/nowhere")[0] == 404
    # the broker still serves
    assert http_json("POST", url, {"records": [{"value": {"ok": True}}]}, JSON)[0] == 200


def test_curl(http_broker: HttpBroker) -> None:
    topic = new_topic(http_broker)
    out = subprocess.run(
        ["curl", "-sS", "-X", "POST", "-H", f"Content-Type: {JSON}", "--data", '{"records":[{"key":"a","value":{"x":1}}]}',
         f"{http_broker.url}/topics/{topic}"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    produced = json.loads(out.stdout)
    assert produced["offsets"][0]["offset"] == 0 and produced["offsets"][0]["error_code"] is None
    listed = subprocess.run(["curl", "-sS", f"{http_broker.url}/topics"], capture_output=True, text=True, check=True)
    assert topic in json.loads(listed.stdout)


def test_json_consumer_stops_at_a_record_that_is_not_json(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    url = http_broker.url
    partition = f"{url}/topics/{topic}/partitions/0"
    assert http_json("POST", partition, {"records": [{"value": {"n": 1}}]}, JSON)[0] == 200
    assert http_json("POST", partition, {"records": [{"value": b64(b"\xffnot json")}]}, BINARY)[0] == 200
    assert http_json("POST", partition, {"records": [{"value": {"n": 3}}]}, JSON)[0] == 200

    async def run() -> None:
        async with aiohttp.ClientSession() as s:
            body = {"format": "json", "auto.offset.reset": "earliest"}
            base = (await call(s, "POST", f"{url}/consumers/{group}", body))[1]["base_uri"]
            await call(s, "POST", f"{base}/assignments", {"partitions": [{"topic": topic, "partition": 0}]})
            status, records = await call(s, "GET", f"{base}/records", headers={"Accept": JSON})
            assert status == 200 and [r["value"] for r in records] == [{"n": 1}]  # what came before it
            status, error = await call(s, "GET", f"{base}/records", headers={"Accept": JSON})
            assert status == 422 and "offset" not in error and f"{topic}-0@1" in error["message"]
            await call(s, "POST", f"{base}/positions", {"offsets": [{"topic": topic, "partition": 0, "offset": 2}]})
            status, records = await call(s, "GET", f"{base}/records", headers={"Accept": JSON})
            assert [r["value"] for r in records] == [{"n": 3}]
            await call(s, "DELETE", base)

    asyncio.run(run())


def test_records_max_bytes(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    url = http_broker.url
    records = [{"value": b64(bytes([i]) * 100)} for i in range(10)]
    assert http_json("POST", f"{url}/topics/{topic}/partitions/0", {"records": records}, BINARY)[0] == 200
    base = http_json("POST", f"{url}/consumers/{group}", {"auto.offset.reset": "earliest"})[1]["base_uri"]
    http_json("POST", f"{base}/assignments", {"partitions": [{"topic": topic, "partition": 0}]})
    offsets: list[int] = []
    sizes = []
    while len(offsets) < 10:
        status, got = http_json("GET", f"{base}/records?max_bytes=250&timeout=0")
        assert status == 200 and got
        sizes.append(len(got))
        offsets += [r["offset"] for r in got]
    assert offsets == list(range(10)) and max(sizes) == 2  # 2 x 100 bytes fit in 250, a third does not
    status, got = http_json("GET", f"{base}/records?max_bytes=10&timeout=0")
    assert got == []
    http_json("POST", f"{base}/positions/beginning", {"partitions": [{"topic": topic, "partition": 0}]})
    assert len(http_json("GET", f"{base}/records?max_bytes=1&timeout=0")[1]) == 1  # the first always goes
    http_json("DELETE", base)


def test_group_with_kafka_members_reads_but_cannot_commit(http_broker: HttpBroker) -> None:
    topic, group = new_topic(http_broker), unique_topic("group")
    url = http_broker.url
    assert (
        http_json("POST", f"{url}/topics/{topic}/partitions/0", {"records": [{"value": 1}, {"value": 2}]}, JSON)[0]
        == 200
    )
    member = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": group, "session.timeout.ms": 6000})
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment()
        body = {"format": "json", "auto.offset.reset": "earliest"}
        base = http_json("POST", f"{url}/consumers/{group}", body)[1]["base_uri"]
        http_json("POST", f"{base}/assignments", {"partitions": [{"topic": topic, "partition": 0}]})
        status, records = http_json("GET", f"{base}/records?timeout=0")
        assert status == 200 and [r["value"] for r in records] == [1, 2]  # auto commit failed, records answered
        status, error = http_json(
            "POST", f"{base}/offsets", {"offsets": [{"topic": topic, "partition": 0, "offset": 2}]}
        )
        assert status == 500 and error["error_code"] == 50002 and "UNKNOWN_MEMBER_ID" in error["message"]
        http_json("DELETE", base)
    finally:
        member.close()
