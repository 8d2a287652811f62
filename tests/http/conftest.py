"""A real kbroker process with its HTTP listener (REST Proxy v2, /health, /ready, /metrics)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.process import BrokerProcess, free_port


class HttpBroker(BrokerProcess):
    def __init__(self, data_dir: Any, *args: str) -> None:
        self.http_port = free_port()
        super().__init__(data_dir, "--http-listen", f"127.0.0.1:{self.http_port}", *args)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, timeout: float = 30.0) -> HttpBroker:
        super().start(timeout)
        deadline = time.monotonic() + timeout
        while True:  # the HTTP listener is up before the Kafka one; /ready says when both serve
            try:
                status, _ = http_get(f"{self.url}/ready")
                if status == 200:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"/ready never answered 200:\n{self.log_text()}")
            time.sleep(0.05)


def http_get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def http_json(method: str, url: str, body: Any = None, content_type: str = "application/vnd.kafka.v2+json") -> Any:
    """(status, decoded JSON body) of one request, with urllib (a plain HTTP client)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def http_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpBroker]:
    process = HttpBroker(tmp_path_factory.mktemp("http") / "data").start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()
