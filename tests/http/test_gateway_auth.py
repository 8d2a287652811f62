"""The HTTP gateway behind an authorizer: HTTP Basic against the Kafka listeners' PLAIN and SCRAM users,
then the same ACLs a Kafka client would need (kbroker/http/auth.py), with curl-like plain HTTP requests."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.process import BrokerProcess, free_port

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret";'
)
V2 = "application/vnd.kafka.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


class Gateway:
    def __init__(self, process: BrokerProcess, http_port: int, sasl_port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{http_port}"
        self.sasl_port = sasl_port

    def call(
        self, method: str, path: str, user: str | None, password: str | None = None, body: Any = None, ctype: str = V2
    ) -> tuple[int, Any, dict[str, str]]:
        headers = {"Content-Type": ctype, "Accept": JSON}
        if user is not None:
            secret = password if password is not None else f"{user}-secret"
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None, dict(response.headers)
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None, dict(error.headers)

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{self.sasl_port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-secret",
            }
        )


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    plain, sasl, http = free_port(), free_port(), free_port()
    process = BrokerProcess(
        tmp_path / "data",
        "--http-listen",
        f"127.0.0.1:{http}",
        "--config",
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "--config",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--config",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--config",
        "super.users=User:admin",
        port=plain,
        listen_flag=False,
    ).start()
    gateway = Gateway(process, http, sasl)
    deadline = time.monotonic() + 30
    while gateway.call("GET", "/ready", None)[0] != 200:
        assert time.monotonic() < deadline, process.log_text()
        time.sleep(0.05)
    try:
        yield gateway
    finally:
        process.stop()


def prepare(gateway: Gateway) -> None:
    """Topics granted and secret; alice may write and read granted and read group g1; carol is a SCRAM user."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = gateway.admin()
    for future in admin.create_topics([NewTopic("granted", 1, 1), NewTopic("secret", 1, 1)]).values():
        future.result(15)

    def allow(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)

    acls = [
        allow(ResourceType.TOPIC, "granted", AclOperation.WRITE),
        allow(ResourceType.TOPIC, "granted", AclOperation.READ),
        allow(ResourceType.GROUP, "g1", AclOperation.READ),
    ]
    for future in admin.create_acls(acls).values():
        future.result(15)
    carol = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"c-pw")
    for future in admin.alter_user_scram_credentials([carol]).values():
        future.result(15)


def test_basic_authentication_and_acls(gateway: Gateway) -> None:
    prepare(gateway)
    # authentication: /health and /ready are open, everything else needs a known user
    assert gateway.call("GET", "/health", None)[0] == 200
    status, body, headers = gateway.call("GET", "/topics", None)
    assert (status, body["error_code"]) == (401, 40101) and headers["WWW-Authenticate"].startswith("Basic")
    assert gateway.call("GET", "/topics", "alice", "wrong")[0] == 401
    assert gateway.call("GET", "/topics", "nobody", "x")[0] == 401
    # SCRAM users authenticate with their password (checked against the stored keys)
    assert gateway.call("GET", "/topics", "carol", "c-pw")[:2] == (200, [])
    assert gateway.call("GET", "/topics", "carol", "c-pw")[:2] == (200, [])  # remembered: no PBKDF2 again
    assert gateway.call("GET", "/topics", "carol", "nope")[0] == 401
    # metadata: only what alice may describe
    assert gateway.call("GET", "/topics", "alice")[:2] == (200, ["granted"])
    assert sorted(gateway.call("GET", "/topics", "admin")[1]) == ["granted", "secret"]
    status, body, _ = gateway.call("GET", "/topics/secret", "alice")
    assert (status, body["error_code"]) == (403, 40301)
    assert gateway.call("GET", "/topics/granted/partitions", "alice")[0] == 200
    # produce: WRITE on the topic
    records = {"records": [{"value": {"n": 1}}]}
    assert gateway.call("POST", "/topics/secret", "alice", body=records, ctype=JSON)[0] == 403
    status, body, _ = gateway.call("POST", "/topics/granted", "alice", body=records, ctype=JSON)
    assert status == 200 and body["offsets"][0]["offset"] == 0
    # consumer instances: READ on the group, READ on the topics subscribed to
    config = {"format": "json", "auto.offset.reset": "earliest"}
    assert gateway.call("POST", "/consumers/g2", "alice", body=config)[0] == 403
    status, created, _ = gateway.call("POST", "/consumers/g1", "alice", body=config)
    assert status == 200
    base = f"/consumers/g1/instances/{created['instance_id']}"
    assert gateway.call("POST", f"{base}/subscription", "alice", body={"topics": ["secret"]})[0] == 403
    assert gateway.call("POST", f"{base}/subscription", "alice", body={"topic_pattern": ".*"})[0] == 403
    assert gateway.call("POST", f"{base}/subscription", "alice", body={"topics": ["granted"]})[0] == 204
    got: list[Any] = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        status, batch, _ = gateway.call("GET", f"{base}/records?timeout=1000", "alice")
        assert status == 200
        got += batch
    assert [r["value"] for r in got] == [{"n": 1}]
    commit = {"offsets": [{"topic": "secret", "partition": 0, "offset": 1}]}
    assert gateway.call("POST", f"{base}/offsets", "alice", body=commit)[0] == 403
    # the WebSocket queue needs READ on the share group and its topics: refused before the upgrade
    assert gateway.call("GET", "/v1/queues/ws?group=g1&topics=secret", "alice")[0] == 403
    # cluster-wide views need DESCRIBE on the cluster
    assert gateway.call("GET", "/metrics", "alice")[0] == 403
    assert gateway.call("GET", "/v1/explain/groups", "admin")[0] == 200
    assert gateway.call("DELETE", base, "alice")[0] == 204
    assert "authorization_denied" in gateway.process.log_text()


def test_websocket_queue_produce_needs_write(gateway: Gateway) -> None:
    import asyncio

    import aiohttp

    prepare(gateway)

    async def run() -> list[dict[str, Any]]:
        auth = aiohttp.BasicAuth("alice", "alice-secret")
        async with aiohttp.ClientSession(auth=auth) as session:
            url = f"{gateway.url}/v1/queues/ws?group=g1&topics=granted"
            async with session.ws_connect(url) as ws:
                answers = [await ws.receive_json(timeout=10)]  # welcome
                for topic in ("secret", "granted"):
                    await ws.send_str(json.dumps({"type": "produce", "topic": topic, "value": "v", "ref": topic}))
                    answers.append(await ws.receive_json(timeout=10))
                return answers

    welcome, denied, produced = asyncio.run(run())
    assert welcome["type"] == "welcome"
    assert (denied["type"], denied["error_code"]) == ("error", 40301)
    assert produced["type"] == "produced" and produced["topic"] == "granted"
