"""`kbroker queue`, run as a process against a kbroker process with an HTTP listener (virtual queues are
kbroker's own: Apache Kafka has none, so unlike the other client commands there is no run against Kafka).
What a confluent-kafka producer writes to the data topic, keyed by the queue name, is read with the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.http.conftest import HttpBroker, http_get
from tests.http.test_gateway_auth import JAAS
from tests.process import REPO, BrokerProcess, free_port

pytestmark = pytest.mark.timeout(240)


class QueueCli:
    """`python -m kbroker queue ...` with KBROKER_HTTP (and KBROKER_HTTP_PASSWORD) set, as a user's shell would."""

    def __init__(self, address: str, password: str | None = None) -> None:
        self.address = address
        self.password = password

    def run(self, *args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess[bytes]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        environ |= {"PYTHONPATH": str(REPO), "KBROKER_HTTP": self.address, **env}
        if self.password is not None:
            environ["KBROKER_HTTP_PASSWORD"] = self.password
        return subprocess.run([sys.executable, "-m", "kbroker", "queue", *args], input=stdin, capture_output=True,
                              timeout=90, env=environ, cwd=REPO)  # fmt: skip

    def ok(self, *args: str, stdin: bytes | None = None) -> bytes:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kbroker queue {' '.join(args)}: {result.stderr.decode()}"
        return result.stdout

    def json(self, *args: str, stdin: bytes | None = None) -> Any:
        return json.loads(self.ok(*args, "--format", "json", stdin=stdin))

    def refused(self, *args: str) -> str:
        """Runs a command the gateway refuses: exit status 1, one error line; that line."""
        result = self.run(*args)
        assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr.decode()
        [line] = result.stderr.decode().splitlines()
        return line


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("queue-cli") / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def cli(broker: HttpBroker) -> QueueCli:
    return QueueCli(f"127.0.0.1:{broker.http_port}")


def queue_name(prefix: str = "cli") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def values(body: dict[str, Any]) -> list[str]:
    return [r["value"] for r in body["records"]]


def position(cli: QueueCli, queue: str, consumer: str) -> tuple[int, int]:
    """(position, lag) of a consumer, as `queue describe` shows them."""
    [entry] = [c for c in cli.json("describe", queue)["consumers"] if c["consumer"] == consumer]
    return entry["position"], entry["lag"]


def test_publish_list_describe_read_ack_and_a_delayed_record(cli: QueueCli) -> None:
    queue = queue_name("cli/ü")  # a name that must be escaped in the URL path
    published = cli.run("publish", queue, "--tag", "blüe", stdin=b"one\ntwo\r\nthree\n")
    assert published.returncode == 0 and b"published 3 records" in published.stderr, published.stderr
    [delayed] = [json.loads(line) for line in cli.ok("publish", queue, "--value", "later", "--deliver-after-ms",
                                                     "3000", "--format", "json").splitlines()]  # fmt: skip
    assert delayed["queue"] == queue

    first = cli.json("read", queue, "--consumer", "w", "--max", "10")
    assert values(first) == ["one", "two", "three"]  # the delayed record holds the queue: not yet returned
    assert {r["tag"] for r in first["records"]} == {"blüe"} and first["consumer"] == "w"
    assert first["next_offset"] == delayed["offset"] and first["blocked_until"] > first["records"][-1]["timestamp"]

    [listed] = cli.json("list", "--prefix", queue)["queues"]
    assert (listed["queue"], listed["depth"], listed["consumers"]) == (queue, 4, [])  # a read is no ack
    text = cli.ok("read", queue, "--consumer", "w", "--max", "2", "--ack")
    assert text == b"one\ntwo\n"
    assert position(cli, queue, "w") == (first["records"][1]["offset"] + 1, 2)  # after "two": lag two records
    assert b"w" in cli.ok("list", "--prefix", queue) and b"LAG" in cli.ok("describe", queue)

    # a stale ack (backwards) is refused and changes nothing; --allow-rewind moves back
    assert "40904" in cli.refused("ack", queue, "--consumer", "w", "--offset", str(first["records"][0]["offset"]))
    assert position(cli, queue, "w")[1] == 2
    rewound = cli.json("ack", queue, "--consumer", "w", "--offset", "0", "--allow-rewind")
    assert (rewound["position"], rewound["previous"]) == (0, first["records"][1]["offset"] + 1)
    cli.ok("ack", queue, "--consumer", "w", "--offset", str(first["next_offset"]))
    assert position(cli, queue, "w") == (delayed["offset"], 1)

    # the delayed record comes once due: a long poll waits for it, never returns it early
    deadline = time.monotonic() + 60
    while True:
        body = cli.json("read", queue, "--consumer", "w", "--timeout", "2000")
        received_ms = time.time() * 1000
        if body["records"]:
            break
        assert body["blocked_until"] == first["blocked_until"] and time.monotonic() < deadline
    [record] = body["records"]
    assert record["value"] == "later" and record["timestamp"] + 3000 == first["blocked_until"] <= received_ms


def test_manual_reads_list_paging_and_binary_values(cli: QueueCli) -> None:
    prefix = queue_name("page")
    for name in ("a", "b", "c"):
        cli.ok("publish", f"{prefix}-{name}", "--value", name)
    paged = cli.run("list", "--prefix", prefix, "--limit", "2")
    assert paged.returncode == 0 and f"--after {prefix}-b".encode() in paged.stderr
    assert [line.split()[0] for line in paged.stdout.decode().splitlines()[1:]] == [f"{prefix}-a", f"{prefix}-b"]
    rest = cli.json("list", "--prefix", prefix, "--after", f"{prefix}-b")
    assert [q["queue"] for q in rest["queues"]] == [f"{prefix}-c"] and rest["truncated"] is False

    queue = f"{prefix}-c"
    offset = cli.json("read", queue, "--offset", "0")["records"][0]["offset"]
    cli.ok("publish", queue, stdin=b"\xff\xfe binary\n")
    manual = cli.json("read", queue, "--offset", str(offset + 1))
    assert manual["records"][0]["value_encoding"] == "base64" and "consumer" not in manual
    assert cli.ok("read", queue, "--offset", str(offset)) == b"c\n\xff\xfe binary\n"  # text: the bytes published


def test_delete_consumer_and_queue_and_what_does_not_exist(cli: QueueCli) -> None:
    queue = queue_name()
    cli.ok("publish", queue, stdin=b"m1\nm2\n")
    for consumer in ("keep", "drop/1 ü"):
        cli.ok("read", queue, "--consumer", consumer, "--ack")
    assert cli.ok("delete-consumer", queue, "drop/1 ü") == f"deleted consumer drop/1 ü of queue {queue}\n".encode()
    assert [c["consumer"] for c in cli.json("describe", queue)["consumers"]] == ["keep"]
    assert "40405" in cli.refused("delete-consumer", queue, "drop/1 ü")

    assert cli.json("delete", queue) == {"queue": queue, "deleted_consumers": ["keep"]}
    for args in (["describe", queue], ["read", queue, "--consumer", "keep"], ["delete", queue],
                 ["ack", queue, "--consumer", "keep", "--offset", "0"]):  # fmt: skip
        line = cli.refused(*args)
        assert "40404" in line and f"queue {queue} not found" in line, args
    assert cli.json("list", "--prefix", queue)["queues"] == []


def test_a_kafka_producer_keyed_by_the_queue_name_is_read_by_the_command(broker: HttpBroker, cli: QueueCli) -> None:
    queue = queue_name("kafka")
    cli.ok("publish", queue, "--value", "over http")  # creates the data topic with its partitions
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                         "compression.type": "lz4", "linger.ms": 20})  # fmt: skip
    for i in range(10):
        producer.produce("kbroker-vq", key=queue, value=f"kafka {i}".encode(), headers={"kbroker-tag": "k"})
        producer.produce("kbroker-vq", key=queue_name("noise"), value=b"noise")
    producer.produce("kbroker-vq", key=queue, value=b"\x00\x01 bytes")
    assert producer.flush(30) == 0
    assert cli.ok("read", queue, "--consumer", "c", "--ack") == b"\n".join(
        [b"over http", *[f"kafka {i}".encode() for i in range(10)], b"\x00\x01 bytes", b""]
    )
    described = cli.json("describe", queue)
    assert described["depth"] == 12 and described["consumers"][0]["lag"] == 0
    assert cli.json("read", queue, "--consumer", "c")["records"] == []


def test_unreachable_gateway_exits_3_and_bad_usage_exits_2(cli: QueueCli) -> None:
    unreachable = cli.run("list", "--http", f"127.0.0.1:{free_port()}")
    assert unreachable.returncode == 3 and b"unreachable" in unreachable.stderr
    for args in (["read", "q"], ["read", "q", "--offset", "0", "--ack"], ["read", "q", "--consumer", "c", "--max", "0"],
                 ["ack", "q", "--consumer", "c"], ["list", "--http", "no-port"], ["describe", ""],
                 ["list", "--user", "alice"], ["publish", "q", "--deliver-at", "soon"], []):  # fmt: skip
        result = cli.run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr.decode()
    bound = cli.refused("read", "q", "--consumer", "c", "--max", "20000")  # the gateway's bound, not ours
    assert "max must be in [1, 10000]" in bound and "HTTP 400" in bound


def test_the_command_loads_no_broker_nor_kafka_client_code() -> None:
    """`kbroker queue` runs on http.client: neither asyncio nor aiohttp, the broker's modules nor the Kafka client."""
    probe = (
        "import sys\nfrom kbroker.cli import build_parser\n"
        "args = build_parser().parse_args(sys.argv[1:])\nimport kbroker.client.vq\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'aiohttp', 'kbroker'))))"
    )
    environ = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", probe, "queue", "list"], capture_output=True, text=True, env=environ,
                            timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert "kbroker.client.vq" in loaded and "kbroker.cli.queue" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("asyncio", "aiohttp")}, loaded
    assert not {m for m in loaded if m.startswith(("kbroker.http", "kbroker.vq", "kbroker.client.cluster"))}, loaded


def test_addresses_values_and_headers() -> None:
    from kbroker.client.vq import base_url, publish_headers, record_value

    assert base_url("broker:8082") == "http://broker:8082" and base_url("[::1]:8082") == "http://[::1]:8082"
    assert base_url("https://proxy.example/kbroker/") == "https://proxy.example/kbroker"
    for bad in ("broker", "broker:http", ":8082", "broker:0", "http://"):
        with pytest.raises(ValueError):
            base_url(bad)
    assert record_value({"value": "\u00fc"}) == "\u00fc".encode() and record_value({"value": None}) == b""
    assert record_value({"value": "/wA=", "value_encoding": "base64"}) == b"\xff\x00"
    headers = publish_headers("bl\u00fce", None, 1500)  # UTF-8 bytes, as http.client sends header text as Latin-1
    assert headers == {"kbroker-tag": "bl\u00fce".encode().decode("latin-1"), "kbroker-deliver-after-ms": "1500"}


# -- a gateway with authentication --------------------------------------------------------------------------------


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[str]:
    """A broker with an authorizer: its gateway asks for HTTP Basic (admin is a super user, alice is not)."""
    plain, sasl, http = free_port(), free_port(), free_port()
    process = BrokerProcess(
        tmp_path / "data", "--http-listen", f"127.0.0.1:{http}",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "--config", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--config", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--config", "super.users=User:admin", port=plain, listen_flag=False,
    ).start()  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while http_get(f"http://127.0.0.1:{http}/ready")[0] != 200:  # /ready needs no credentials
            assert time.monotonic() < deadline, process.log_text()
            time.sleep(0.05)
        yield f"127.0.0.1:{http}"
    finally:
        process.stop()


def test_basic_auth_with_user_and_the_password_from_the_environment(secured: str) -> None:
    queue = queue_name()
    admin = QueueCli(secured, "admin-secret")
    admin.ok("publish", queue, "--value", "secret work", "--user", "admin")
    assert admin.ok("read", queue, "--consumer", "c", "--user", "admin") == b"secret work\n"

    assert "40101" in QueueCli(secured, "wrong").refused("describe", queue, "--user", "admin")
    assert "40101" in QueueCli(secured).refused("describe", queue)  # no credentials
    assert "40301" in QueueCli(secured, "alice-secret").refused("describe", queue, "--user", "alice")  # no ALTER
    no_password = QueueCli(secured).run("describe", queue, "--user", "admin")
    assert no_password.returncode == 2 and b"KBROKER_HTTP_PASSWORD" in no_password.stderr
