"""The server skeleton against a real kbroker process: negotiation, ordering, bad input, shutdown."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.process import REPO, BrokerProcess, RawClient


def advertised(response: dict) -> dict[int, tuple[int, int]]:
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_every_version(broker: BrokerProcess, version: int) -> None:
    with RawClient(broker.bootstrap) as client:
        body = {"client_software_name": "kbroker-tests", "client_software_version": "1.0"}
        response = client.call(ApiKey.API_VERSIONS, version, body)
    assert response["error_code"] == 0
    keys = advertised(response)
    assert keys[ApiKey.API_VERSIONS] == (0, 4)
    assert keys[ApiKey.METADATA][0] == 0


def test_too_new_api_versions_gets_v0_error_reply(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        # A v9 request: its body is unknown to us, so only the header is read.
        header = struct.pack(">hhih", ApiKey.API_VERSIONS, 9, 42, 3) + b"abc" + b"\x00"
        client.send(struct.pack(">i", len(header) + 2) + header + b"\x00\x00")
        correlation_id, response = client.read_response(ApiKey.API_VERSIONS, 0)
    assert correlation_id == 42
    assert response["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert response["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


def test_pipelined_requests_are_answered_in_order(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        data = b"".join(
            client.request_bytes(ApiKey.METADATA if i % 2 else ApiKey.API_VERSIONS, 1, {"topics": []}, correlation_id=i)
            for i in range(60)
        )
        client.send(data)
        seen = [client.read_response(ApiKey.METADATA if i % 2 else ApiKey.API_VERSIONS, 1)[0] for i in range(60)]
    assert seen == list(range(60))


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xff\xff\xff",  # negative length
        b"\x7f\xff\xff\xff" + b"x" * 100,  # larger than socket.request.max.bytes
        struct.pack(">i", 6) + b"\x00\x03\x00\x01\x00\x00",  # truncated header
        struct.pack(">ihhih", 10, 9999, 0, 1, 0),  # unknown API key
        struct.pack(">ihhih", 10, ApiKey.METADATA, 99, 1, 0),  # unsupported version
        struct.pack(">ihhih", 14, ApiKey.METADATA, 1, 1, 0) + b"\x7f\xff\xff\xff",  # absurd array count
    ],
    ids=["negative-length", "too-large", "truncated-header", "unknown-api", "unsupported-version", "bad-body"],
)
def test_bad_input_closes_only_that_connection(broker: BrokerProcess, garbage: bytes) -> None:
    with RawClient(broker.bootstrap) as good, RawClient(broker.bootstrap) as bad:
        bad.send(garbage)
        assert bad.closed_by_peer()
        assert good.call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    assert broker.alive()
    assert "connection_closed" in broker.log_text()


def test_connection_without_complete_frame_does_not_block_others(broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", broker.port)) as slow, RawClient(broker.bootstrap) as good:
        slow.sendall(struct.pack(">i", 1000) + b"partial")
        assert good.call(ApiKey.METADATA, 4, {"topics": [], "allow_auto_topic_creation": False})["brokers"]


def test_librdkafka_lists_metadata(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(timeout=10)
    assert list(metadata.brokers) == [1]
    assert metadata.cluster_id


def test_kafka_python_bootstraps(broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert isinstance(consumer.topics(), set)
    finally:
        consumer.close()


def test_aiokafka_bootstraps(broker: BrokerProcess) -> None:
    import aiokafka

    async def run() -> None:
        client = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await client.start()
        await client.stop()

    asyncio.run(run())


def test_sigterm_stops_cleanly_and_next_start_skips_recovery(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = BrokerProcess(data).start()
    assert first.stop(signal.SIGTERM) == 0
    assert (data / ".kafka_cleanshutdown").exists()
    assert "broker_stopped" in first.log_text()
    assert "fresh_directory=true" in first.log_text() and "clean_start" not in first.log_text()  # not "unclean"
    second = BrokerProcess(data).start()
    try:
        with RawClient(second.bootstrap) as client:
            assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
    finally:
        assert second.stop() == 0
    assert "clean_start=true" in second.log_text()


def test_start_up_objects_are_frozen_out_of_the_garbage_collector(broker: BrokerProcess) -> None:
    """The broker process freezes what start-up built (gc.freeze): a full collection, which stops the event
    loop, then scans only objects made later. The broker serves on as before."""
    (started,) = [line for line in broker.log_text().splitlines() if "broker_started" in line]
    frozen = re.search(r"gc_frozen=(\d+)", started)
    assert frozen is not None and int(frozen.group(1)) > 10_000, started
    with RawClient(broker.bootstrap) as client:
        assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0


def test_kcat_lists_metadata(broker: BrokerProcess) -> None:
    kcat = shutil.which("kcat")
    assert kcat, "kcat is installed by scripts/install_clients"
    result = subprocess.run([kcat, "-b", broker.bootstrap, "-L", "-J"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert [b["id"] for b in listing["brokers"]] == [1]
    assert listing["brokers"][0]["name"] == broker.bootstrap


def test_port_in_use_fails_before_the_data_directory_is_written(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = tmp_path / "data"
        result = subprocess.run(
            [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=REPO,
        )
    assert result.returncode == 1
    assert "broker_failed" in result.stderr and "in use" in result.stderr
    assert not (data / "meta.properties").exists()


def test_http_on_the_kafka_port_is_named_in_the_log(broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", broker.port)) as http:
        http.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        http.settimeout(5)
        assert http.recv(1) == b""
    assert "this looks like HTTP" in broker.log_text()
