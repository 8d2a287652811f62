"""Fetch against a real kbroker: long poll, min_bytes, KIP-74, errors, sessions, ordering, sendfile, idle CPU."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from tests.broker.conftest import (
    batch_of,
    create_topic,
    fetch,
    fetch_request,
    fetched_partition,
    produce,
    record_offsets,
    unique_topic,
)
from tests.process import BrokerProcess, RawClient


@pytest.fixture
def topic(raw: RawClient) -> str:
    name = unique_topic("fetch")
    create_topic(raw, name)
    return name


def _later(delay: float, action: Callable[[], Any]) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _produce_later(
    broker: BrokerProcess, delay: float, topic: str, records: bytes, partition: int = 0
) -> threading.Thread:
    def action() -> None:
        with RawClient(broker.bootstrap) as client:
            assert produce(client, topic, records, partition=partition)["error_code"] == 0

    return _later(delay, action)


def _timed_fetch(client: RawClient, partitions: list[tuple[str, int, int]], **kw: Any) -> tuple[float, dict[str, Any]]:
    begin = time.monotonic()
    response = fetch(client, partitions, **kw)
    return time.monotonic() - begin, response


@pytest.mark.parametrize("version", range(4, 13))
def test_every_version(raw: RawClient, topic: str, version: int) -> None:
    produce(raw, topic, batch_of(3))
    response = fetch(raw, [(topic, 0, 1)], version=version)
    part = fetched_partition(response, topic)
    assert part["error_code"] == 0
    assert part["high_watermark"] == 3
    assert part["last_stable_offset"] == 3
    assert part["log_start_offset"] == (0 if version >= 5 else -1)
    assert part["preferred_read_replica"] == -1
    assert part["aborted_transactions"] is None
    assert record_offsets(part["records"]) == [0, 1, 2]  # whole batches, starting before the fetch offset
    if version >= 7:
        assert response["session_id"] == 0 and response["error_code"] == 0


def test_fetch_at_log_end_is_empty(raw: RawClient, topic: str) -> None:
    produce(raw, topic, batch_of(2))
    part = fetched_partition(fetch(raw, [(topic, 0, 2)], max_wait_ms=0), topic)
    assert (part["error_code"], part["high_watermark"], bytes(part["records"])) == (0, 2, b"")


def test_long_poll_times_out_at_max_wait(raw: RawClient, topic: str) -> None:
    elapsed, response = _timed_fetch(raw, [(topic, 0, 0)], max_wait_ms=600, min_bytes=1)
    assert 0.55 <= elapsed < 1.5
    part = fetched_partition(response, topic)
    assert (part["error_code"], bytes(part["records"])) == (0, b"")


def test_long_poll_is_woken_by_an_append(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    producer = _produce_later(broker, 0.3, topic, batch_of(4))
    elapsed, response = _timed_fetch(raw, [(topic, 0, 0)], max_wait_ms=10_000, min_bytes=1)
    producer.join()
    assert 0.25 <= elapsed < 1.5
    assert record_offsets(fetched_partition(response, topic)["records"]) == [0, 1, 2, 3]


def test_long_poll_is_answered_when_its_topic_is_deleted(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    def delete() -> None:
        with RawClient(broker.bootstrap) as client:
            body = {"topics": [{"name": topic, "topic_id": bytes(16)}], "timeout_ms": 5000}
            answer = client.call(ApiKey.DELETE_TOPICS, 6, body)
            assert answer["responses"][0]["error_code"] == 0

    deleter = _later(0.3, delete)
    elapsed, response = _timed_fetch(raw, [(topic, 0, 0)], max_wait_ms=10_000, min_bytes=1)
    deleter.join()
    assert 0.25 <= elapsed < 1.5
    assert fetched_partition(response, topic)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_long_poll_across_partitions(broker: BrokerProcess, raw: RawClient) -> None:
    first, second = unique_topic("lp"), unique_topic("lp")
    create_topic(raw, first)
    create_topic(raw, second)
    producer = _produce_later(broker, 0.3, second, batch_of(2))
    elapsed, response = _timed_fetch(raw, [(first, 0, 0), (second, 0, 0)], max_wait_ms=10_000, min_bytes=1)
    producer.join()
    assert elapsed < 1.5
    assert bytes(fetched_partition(response, first)["records"]) == b""
    assert record_offsets(fetched_partition(response, second)["records"]) == [0, 1]


def test_min_bytes_waits_for_enough_data(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    small, large = batch_of(1), batch_of(20, value_size=100)
    assert len(small) < 1000 < len(small) + len(large)
    _produce_later(broker, 0.2, topic, small)
    producer = _produce_later(broker, 0.8, topic, large)
    elapsed, response = _timed_fetch(raw, [(topic, 0, 0)], max_wait_ms=10_000, min_bytes=1000)
    producer.join()
    assert 0.75 <= elapsed < 2.5, elapsed
    assert record_offsets(fetched_partition(response, topic)["records"]) == list(range(21))


def test_min_bytes_not_reached_answers_what_there_is_at_max_wait(raw: RawClient, topic: str) -> None:
    produce(raw, topic, batch_of(1))
    elapsed, response = _timed_fetch(raw, [(topic, 0, 0)], max_wait_ms=500, min_bytes=1_000_000)
    assert 0.45 <= elapsed < 1.5
    assert record_offsets(fetched_partition(response, topic)["records"]) == [0]


def test_first_batch_is_whole_even_above_max_bytes_kip_74(raw: RawClient) -> None:
    first, second = unique_topic("kip74"), unique_topic("kip74")
    create_topic(raw, first)
    create_topic(raw, second)
    big = batch_of(1, value_size=200_000)
    produce(raw, first, big)
    produce(raw, first, batch_of(1))
    produce(raw, second, batch_of(1))
    response = fetch(raw, [(first, 0, 0), (second, 0, 0)], max_bytes=1000, partition_max_bytes=1000)
    data = bytes(fetched_partition(response, first)["records"])
    assert data[16:] == big[16:]  # exactly the one oversized batch
    assert bytes(fetched_partition(response, second)["records"]) == b""  # nothing left of max_bytes
    assert fetched_partition(response, second)["high_watermark"] == 1


def test_partition_max_bytes_limits_each_partition(raw: RawClient, topic: str) -> None:
    batches = [batch_of(5, value_size=200) for _ in range(4)]
    for batch in batches:
        produce(raw, topic, batch)
    size = len(batches[0])
    response = fetch(raw, [(topic, 0, 0)], partition_max_bytes=2 * size + size // 2)
    assert record_offsets(fetched_partition(response, topic)["records"]) == list(range(10))
    response = fetch(raw, [(topic, 0, 0)], max_bytes=3 * size, partition_max_bytes=10 * size)
    assert record_offsets(fetched_partition(response, topic)["records"]) == list(range(15))


def test_every_requested_partition_is_answered(raw: RawClient, topic: str) -> None:
    missing = unique_topic("missing")
    produce(raw, topic, batch_of(2))
    response = fetch(raw, [(topic, 0, 0), (topic, 9, 0), (missing, 0, 0)], max_wait_ms=5000)
    assert fetched_partition(response, topic, 0)["error_code"] == 0
    for name, index in ((topic, 9), (missing, 0)):
        part = fetched_partition(response, name, index)
        assert part["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (part["high_watermark"], part["log_start_offset"]) == (-1, -1)


def test_offset_out_of_range(raw: RawClient, topic: str) -> None:
    produce(raw, topic, batch_of(3))
    elapsed, response = _timed_fetch(raw, [(topic, 0, 4)], max_wait_ms=5000)
    assert elapsed < 1  # an error answers at once
    part = fetched_partition(response, topic)
    assert part["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert part["high_watermark"] == -1
    assert fetched_partition(fetch(raw, [(topic, 0, -1)]), topic)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize(
    ("session_id", "epoch", "code"),
    [
        (0, -1, ErrorCode.NONE),  # sessionless (librdkafka, aiokafka, kafkajs)
        (0, 0, ErrorCode.NONE),  # asks for a session (Java, kafka-python): declined with id 0
        (77, -1, ErrorCode.NONE),  # closes a session: a full fetch
        (77, 3, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (0, 3, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
    ],
)
def test_fetch_sessions_are_declined(raw: RawClient, topic: str, session_id: int, epoch: int, code: int) -> None:
    produce(raw, topic, batch_of(1))
    response = fetch(raw, [(topic, 0, 0)], session_id=session_id, session_epoch=epoch)
    assert (response["error_code"], response["session_id"]) == (code, 0)
    if code == ErrorCode.NONE:
        assert record_offsets(fetched_partition(response, topic)["records"]) == [0]
    else:
        assert response["responses"] == []


def test_read_committed(raw: RawClient, topic: str) -> None:
    produce(raw, topic, batch_of(2))
    part = fetched_partition(fetch(raw, [(topic, 0, 0)], isolation_level=1), topic)
    assert part["aborted_transactions"] == []
    assert part["last_stable_offset"] == 2
    assert record_offsets(part["records"]) == [0, 1]


def test_leader_epoch_check(raw: RawClient, topic: str) -> None:
    request = fetch_request([(topic, 0, 0)])
    request["topics"][0]["partitions"][0]["current_leader_epoch"] = 3
    part = raw.call(ApiKey.FETCH, 12, request)["responses"][0]["partitions"][0]
    assert part["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
    request["topics"][0]["partitions"][0]["current_leader_epoch"] = 0
    assert raw.call(ApiKey.FETCH, 12, request)["responses"][0]["partitions"][0]["error_code"] == 0


def test_later_responses_queue_behind_a_waiting_fetch(raw: RawClient, topic: str) -> None:
    raw.send(raw.request_bytes(ApiKey.FETCH, 12, fetch_request([(topic, 0, 0)], max_wait_ms=700), correlation_id=1))
    raw.send(raw.request_bytes(ApiKey.METADATA, 9, {"topics": None}, correlation_id=2))
    begin = time.monotonic()
    first, _ = raw.read_response(ApiKey.FETCH, 12)
    second, _ = raw.read_response(ApiKey.METADATA, 9)
    assert (first, second) == (1, 2)
    assert time.monotonic() - begin >= 0.6


def test_pipelined_fetches_behind_a_waiting_one_get_their_data(raw: RawClient, topic: str) -> None:
    other = unique_topic("pipe")
    create_topic(raw, other)
    big = batch_of(1, value_size=300_000)
    produce(raw, other, big)
    # the second fetch has data at once but must wait for the first (long-polling) one
    raw.send(raw.request_bytes(ApiKey.FETCH, 12, fetch_request([(topic, 0, 0)], max_wait_ms=500), correlation_id=1))
    raw.send(raw.request_bytes(ApiKey.FETCH, 12, fetch_request([(other, 0, 0)]), correlation_id=2))
    assert raw.read_response(ApiKey.FETCH, 12)[0] == 1
    correlation_id, response = raw.read_response(ApiKey.FETCH, 12)
    assert correlation_id == 2
    assert bytes(fetched_partition(response, other)["records"])[16:] == big[16:]


def test_large_fetch_to_a_slow_reader(broker: BrokerProcess, raw: RawClient, topic: str) -> None:
    """More than the socket buffers hold: sendfile fills the socket, the rest follows through the transport."""
    batches = [batch_of(1, value_size=900_000, start_ts=i) for i in range(24)]
    for batch in batches:
        assert produce(raw, topic, batch)["error_code"] == 0
    with RawClient(broker.bootstrap) as client:
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        for _ in range(2):  # twice, back to back, pipelined
            client.send(client.request_bytes(ApiKey.FETCH, 12, fetch_request([(topic, 0, 0)])))
        time.sleep(0.5)  # let the broker hit a full socket
        for _ in range(2):
            _, response = client.read_response(ApiKey.FETCH, 12)
            data = bytes(fetched_partition(response, topic)["records"])
            fetched = list(iter_batches(data))
            assert [b.base_offset for b in fetched] == list(range(24))
            assert all(b.is_valid() for b in fetched)
            assert all(data_batch.view()[16:] == sent[16:] for data_batch, sent in zip(fetched, batches, strict=True))


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_waiting_consumers_cost_no_cpu(broker: BrokerProcess, topic: str) -> None:
    """Ten long polls in a row on ten connections: the broker process stays idle."""
    assert broker.proc is not None
    clients = [RawClient(broker.bootstrap) for _ in range(10)]
    try:
        request = fetch_request([(topic, 0, 0)], max_wait_ms=3000)
        for client in clients:
            client.send(client.request_bytes(ApiKey.FETCH, 12, request))
        time.sleep(0.3)
        before, begin = _cpu_seconds(broker.proc.pid), time.monotonic()
        time.sleep(2.0)
        used = _cpu_seconds(broker.proc.pid) - before
        wall = time.monotonic() - begin
        for client in clients:
            client.read_response(ApiKey.FETCH, 12)
    finally:
        for client in clients:
            client.close()
    assert used / wall < 0.03, f"{used:.3f}s of CPU in {wall:.2f}s with waiting fetches"


class _BufferingTransport:
    """Stands in for the uvloop transport: it owns a socket and buffers what it is given."""

    def __init__(self, sock: socket.socket, buffered: bytes = b"") -> None:
        self.sock = sock
        self.buffered = bytearray(buffered)
        self.aborted = False

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def get_write_buffer_size(self) -> int:
        return len(self.buffered)

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True

    def writelines(self, chunks: list[Any]) -> None:
        for chunk in chunks:
            assert isinstance(chunk, bytes | bytearray | memoryview), "file ranges must be read before buffering"
            self.buffered += chunk


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("already_buffered", [b"", b"earlier response"])
@pytest.mark.parametrize("send_buffer", [4096, 1 << 22])
def test_response_writer_keeps_the_byte_order(tmp_path: Any, already_buffered: bytes, send_buffer: int) -> None:
    """Direct sendfile, a socket that fills up (the rest follows as it drains), later responses
    queued behind, the segment fd closed meanwhile: the bytes arrive in response order."""
    import asyncio

    from kbroker.log import FileRegion
    from kbroker.sendfile import FileChunk, ResponseWriter

    content = os.urandom(600_000)
    path = tmp_path / "segment"
    path.write_bytes(content)
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    ours.setblocking(False)
    transport = _BufferingTransport(ours, already_buffered)
    received = bytearray()

    def receive() -> None:
        time.sleep(0.2)  # a slow reader: the send buffer fills first
        while chunk := theirs.recv(1 << 16):
            received.extend(chunk)

    async def run() -> tuple[int, int, bool]:
        fds_before = _open_fds()
        fd = os.open(path, os.O_RDONLY)
        drained: list[bool] = []
        writer = ResponseWriter(transport, lambda: drained.append(True))
        writer.write([b"head", FileChunk(FileRegion(fd, 10, 400_000)), b"middle", FileChunk(FileRegion(fd, 5, 7))])
        writer.write([b"second"])
        writer.write([b"third", FileChunk(FileRegion(fd, 500_000, 100_000))])
        os.close(fd)  # a segment deleted meanwhile: what is still to send must not depend on this fd
        deadline = time.monotonic() + 10
        while writer.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not writer.busy
        return fds_before, _open_fds(), bool(drained)

    reader = threading.Thread(target=receive)
    reader.start()
    try:
        fds_before, fds_after, drained = asyncio.run(run())
        ours.setblocking(True)
        ours.sendall(bytes(transport.buffered))  # what the transport sends after the direct writes
        ours.shutdown(socket.SHUT_WR)
        reader.join(10)
    finally:
        ours.close()
        theirs.close()
    expected = (
        already_buffered
        + b"head"
        + content[10:400_010]
        + b"middle"
        + content[5:12]
        + b"second"
        + b"third"
        + content[500_000:600_000]
    )
    assert bytes(received) == expected
    assert fds_after == fds_before  # every dup'd fd is closed again
    assert drained == (not already_buffered and send_buffer == 4096)  # the slow path was taken


def test_small_responses_are_read_and_go_through_the_transport(tmp_path: Any) -> None:
    """A response with a few KiB of file ranges (a consumer keeping up) is read and handed to the
    transport, in order, with no direct write and no cork; one with more goes out directly."""
    from kbroker.log import FileRegion
    from kbroker.sendfile import DIRECT_MIN_BYTES, FileChunk, ResponseWriter

    content = os.urandom(2 * DIRECT_MIN_BYTES)
    path = tmp_path / "segment"
    path.write_bytes(content)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.settimeout(5)
    corks: list[int] = []

    class Watched:  # the socket, with its setsockopt calls seen (a Unix socket has no TCP_CORK)
        def fileno(self) -> int:
            return ours.fileno()

        def setsockopt(self, level: int, option: int, value: int) -> None:
            corks.append(value)

    transport = _BufferingTransport(ours)
    transport.get_extra_info = lambda name: Watched() if name == "socket" else None  # type: ignore[method-assign]
    fd = os.open(path, os.O_RDONLY)
    try:
        writer = ResponseWriter(transport)
        small = DIRECT_MIN_BYTES - 100
        writer.write([b"head", FileChunk(FileRegion(fd, 3, 1024)), b"mid", FileChunk(FileRegion(fd, 0, small - 1024))])
        assert bytes(transport.buffered) == b"head" + content[3:1027] + b"mid" + content[: small - 1024]
        assert corks == []
        transport.buffered.clear()
        writer.write([b"big", FileChunk(FileRegion(fd, 0, DIRECT_MIN_BYTES))])  # straight to the socket
        assert transport.buffered == b""
        assert corks == [1, 0]
        received = bytearray()
        while len(received) < 3 + DIRECT_MIN_BYTES:
            received += theirs.recv(1 << 16)
        assert bytes(received) == b"big" + content[:DIRECT_MIN_BYTES]
    finally:
        os.close(fd)
        ours.close()
        theirs.close()


# -- real clients -------------------------------------------------------------------------------

RECORDS = 1000


def _expected(topic: str) -> list[tuple[bytes, bytes, list[tuple[str, str | bytes | None]], int]]:
    base = 1_700_000_000_000
    return [(b"key-%d" % i, b"value-%d" % i * 3, [("h", b"%d" % i)], base + i) for i in range(RECORDS)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_round_trip(broker: BrokerProcess, codec: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = unique_topic(f"ck-{codec}")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "acks": "all", "compression.type": codec, "linger.ms": 5}
    )
    failures: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(error)

    for key, value, headers, ts in _expected(topic):
        producer.produce(topic, value, key, timestamp=ts, headers=list(headers), on_delivery=delivered)
    assert producer.flush(30) == 0 and not failures
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < RECORDS and time.monotonic() < deadline:
            for message in consumer.consume(500, 1.0):
                assert message.error() is None, message.error()
                got.append(message)
    finally:
        consumer.close()
    assert [m.offset() for m in got] == list(range(RECORDS))
    assert [(m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in got] == _expected(topic)


def test_confluent_kafka_long_poll_gets_a_record_produced_later(broker: BrokerProcess, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "unused",
            "fetch.wait.max.ms": 5000,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        assert consumer.poll(1.0) is None
        begin = time.monotonic()
        _produce_later(broker, 1.0, topic, batch_of(1))
        message = consumer.poll(5.0)
        elapsed = time.monotonic() - begin
    finally:
        consumer.close()
    assert message is not None and message.error() is None and message.offset() == 0
    assert elapsed < 1.5


def test_kafka_python_round_trip(broker: BrokerProcess, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False, linger_ms=5)
    for key, value, headers, ts in _expected(topic):
        producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=200)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < RECORDS and time.monotonic() < deadline:
            for messages in consumer.poll(1000).values():
                got.extend(messages)
    finally:
        consumer.close()
    assert [m.offset for m in got] == list(range(RECORDS))
    assert [(m.key, m.value, list(m.headers), m.timestamp) for m in got] == _expected(topic)


def test_aiokafka_round_trip(broker: BrokerProcess, topic: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> list[Any]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="lz4")
        await producer.start()
        try:
            for key, value, headers, ts in _expected(topic):
                await producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await consumer.start()
        got: list[Any] = []
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            deadline = time.monotonic() + 30
            while len(got) < RECORDS and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=1000)).values():
                    got.extend(messages)
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(run())
    assert [m.offset for m in got] == list(range(RECORDS))
    assert [(m.key, m.value, list(m.headers), m.timestamp) for m in got] == _expected(topic)


def test_idle_cpu_with_a_waiting_librdkafka_consumer(broker: BrokerProcess, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    assert broker.proc is not None
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumer.poll(1.0)  # connected and long-polling (fetch.wait.max.ms 500)
        before, begin = _cpu_seconds(broker.proc.pid), time.monotonic()
        consumer.poll(3.0)
        used, wall = _cpu_seconds(broker.proc.pid) - before, time.monotonic() - begin
    finally:
        consumer.close()
    assert used / wall < 0.03, f"{used:.3f}s of CPU in {wall:.2f}s"


def test_fetch_of_nothing_answers_at_once(raw: RawClient) -> None:
    elapsed, response = _timed_fetch(raw, [], max_wait_ms=5000)
    assert elapsed < 1 and response["responses"] == [] and response["error_code"] == 0
