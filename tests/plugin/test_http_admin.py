"""The test controls over HTTP (/v1/testing/*), for tests written in any language."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from kafka import KafkaProducer

from kbroker.testing import InProcessBroker

ADMIN = {"kbroker.testing.admin.enable": "true"}


def call(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_faults_clock_and_reset_over_http(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    broker = kbroker_factory(config=ADMIN, http=True)
    base = f"{broker.http_url}/v1/testing"
    status, fault = call(
        f"{base}/faults", "POST", {"kind": "fail", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2}
    )
    assert status == 201 and fault["api"] == "PRODUCE" and fault["remaining"] == 2
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=5, retry_backoff_ms=10)
    assert producer.send("orders", b"x").get(10).offset == 0  # after two refusals
    assert call(f"{base}/faults") == (200, {"faults": [], "unavailable": [], "injected": 2})

    status, _ = call(f"{base}/faults", "POST", {"kind": "delay", "api": "produce", "seconds": 0.25, "count": 1})
    assert status == 201
    started = time.perf_counter()
    producer.send("orders", b"y").get(10)
    assert time.perf_counter() - started >= 0.25

    assert call(f"{base}/unavailable", "POST", {"topic": "orders", "partition": 0})[0] == 200
    assert call(f"{base}/faults")[1]["unavailable"] == [{"topic": "orders", "partition": 0}]
    assert call(f"{base}/unavailable", "DELETE", {"topic": "orders", "partition": 0})[1]["unavailable"] == []

    before = call(f"{base}/clock")[1]["wall_ms"]
    status, advanced = call(f"{base}/clock/advance", "POST", {"seconds": 3600})
    assert status == 200 and advanced["wall_ms"] - before >= 3_600_000
    assert call(f"{base}/clock")[1]["offset_ms"] == 3_600_000

    assert call(f"{base}/connections/close", "POST")[1]["closed"] >= 1
    status, cleared = call(f"{base}/reset", "POST")
    assert status == 200 and cleared["topics"] == 1
    producer.close()


def test_bad_requests_are_422(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    base = f"{kbroker_factory(config=ADMIN, http=True).http_url}/v1/testing"
    for body in (
        {"kind": "fail", "api": "Produce", "error": "NO_SUCH_ERROR"},
        {"kind": "fail", "api": "NoSuchApi", "error": 6},
        {"kind": "explode", "api": "Produce"},
        {"kind": "fail", "api": "Produce", "error": 6, "count": 0},
        {"kind": "delay", "api": "Produce", "seconds": -1},
    ):
        status, answer = call(f"{base}/faults", "POST", body)
        assert status == 422, (body, answer)
    assert call(f"{base}/clock/advance", "POST", {"seconds": -5})[0] == 422
    assert call(f"{base}/unavailable", "POST", {"topic": "t"})[0] == 422


def test_controls_are_off_unless_enabled(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    """An HTTP listener without kbroker.testing.admin.enable=true has no /v1/testing routes."""
    broker = kbroker_factory(http=True)
    assert call(f"{broker.http_url}/health")[0] == 200
    assert call(f"{broker.http_url}/v1/testing/faults")[0] == 404
    assert call(f"{broker.http_url}/v1/testing/reset", "POST")[0] == 404
