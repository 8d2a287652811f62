"""`kbroker serve --config kbroker.testing.admin.enable=true`: the test controls of a broker process, over
HTTP, as a test in another language would use them."""

from __future__ import annotations

from pathlib import Path

from kafka import KafkaProducer

from tests.http.conftest import HttpBroker, http_json


def test_serve_with_testing_controls(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data", "--config", "kbroker.testing.admin.enable=true").start()
    try:
        base = f"{broker.url}/v1/testing"
        status, fault = http_json("POST", f"{base}/faults", {"kind": "fail", "api": 0, "error": 6, "count": 1})
        assert status == 201 and fault["error_code"] == 6
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retry_backoff_ms=10)
        assert producer.send("t", b"x").get(10).offset == 0
        producer.close()
        assert http_json("GET", f"{base}/faults")[1]["injected"] == 1
        assert http_json("POST", f"{base}/clock/advance", {"seconds": 60})[0] == 200
        assert http_json("GET", f"{base}/clock")[1]["offset_ms"] == 60_000
        assert http_json("POST", f"{base}/reset")[1]["topics"] == 1
    finally:
        assert broker.stop() == 0
    assert "testing_controls_enabled" in broker.log_text()


def test_serve_without_the_flag_has_no_controls(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data").start()
    try:
        assert http_json("GET", f"{broker.url}/v1/testing/faults")[0] == 404
        assert http_json("POST", f"{broker.url}/v1/testing/clock/advance", {"seconds": 1})[0] == 404
    finally:
        broker.stop()
    assert "testing_controls_enabled" not in broker.log_text()
