"""Hostile clients against a real kbroker process: announced-but-unsent frames, slow senders, connection floods."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from protocol.api_keys import ApiKey
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess, RawClient

MiB = 2**20


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def produce_and_consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, b"value-%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(bytes(message.value() or b""))
    finally:
        consumer.close()
    return values


def test_announced_huge_frames_cost_what_arrived(start_broker: Callable[..., BrokerProcess]) -> None:
    """200 connections announce 100 MiB frames and send 4 bytes: the broker holds what arrived, not 20 GiB,
    and a normal client keeps producing and consuming meanwhile."""
    broker = start_broker()
    assert broker.proc is not None
    with RawClient(broker.bootstrap) as warm:
        warm.call(ApiKey.API_VERSIONS, 3, {})
    before = rss_bytes(broker.proc.pid)
    hostile = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(200)]
    try:
        for sock in hostile:
            sock.sendall(struct.pack(">i", 100 * MiB) + b"abcd")
        topic = unique_topic("hostile")
        values = produce_and_consume(broker.bootstrap, topic, 200)
        assert values == [b"value-%d" % i for i in range(200)]
        during = rss_bytes(broker.proc.pid)
        for sock in hostile:  # still open: nothing closed them, they just cost little
            sock.setblocking(False)
            try:
                assert sock.recv(1) != b""
            except BlockingIOError:
                pass
    finally:
        for sock in hostile:
            sock.close()
    print(f"broker RSS {before / MiB:.1f} MiB before, {during / MiB:.1f} MiB with 200 announced 100 MiB frames")
    assert during < 160 * MiB, f"RSS {during / MiB:.0f} MiB"
    assert during - before < 64 * MiB
    assert broker.alive()


def test_slowloris_is_closed_by_the_request_deadline(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(
        "--config", "kbroker.request.receive.timeout.ms=2000", "--config", "connections.max.idle.ms=600000"
    )
    with socket.create_connection(("127.0.0.1", broker.port)) as slow, RawClient(broker.bootstrap) as good:
        slow.sendall(struct.pack(">i", 1000))
        began = time.monotonic()
        slow.settimeout(0.5)
        closed = False
        while time.monotonic() - began < 8:
            try:
                slow.sendall(b"x")  # one byte every half second: active, but the request never completes
                if slow.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
        took = time.monotonic() - began
        assert closed and 1.9 < took < 4.5, took
        assert good.call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0  # other connections are untouched
    assert "request not received in time" in broker.log_text()


def test_connections_over_max_connections_are_refused_and_counted(
    start_broker: Callable[..., BrokerProcess],
) -> None:
    broker = start_broker("--config", "max.connections=5")
    clients = [RawClient(broker.bootstrap) for _ in range(5)]
    try:
        for client in clients:
            assert client.call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
        refused = [RawClient(broker.bootstrap) for _ in range(3)]
        for client in refused:
            assert client.closed_by_peer()
            client.close()
        assert clients[0].call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
        clients.pop().close()
        time.sleep(0.2)
        with RawClient(broker.bootstrap) as again:  # a freed place is taken again
            assert again.call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    finally:
        for client in clients:
            client.close()
    log = broker.log_text()
    assert "connection_refused" in log and "max.connections reached" in log
    assert "refused_total=1" in log  # the first refusal is logged at once; the rest are counted in the summary
