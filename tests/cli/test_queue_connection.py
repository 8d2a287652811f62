"""The queue client's one kept-alive connection, against a stand-in HTTP server that counts connections."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kbroker.client.vq import GatewayUnreachable, QueueGateway


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless the answer says otherwise

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        server: Any = self.server
        if server.gone:  # the process is going away: the connection closes with no answer
            self.close_connection = True
            return
        value = self.rfile.read(int(self.headers["Content-Length"]))
        server.requests.append((self.client_address[1], value))
        body = json.dumps({"queue": "q", "partition": 0, "offset": len(server.requests) - 1}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if server.close_after_each:
            self.close_connection = True  # closed without "Connection: close": as an idle timeout would

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    httpd: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.requests = []
    httpd.close_after_each = False
    httpd.gone = False
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_publishes_share_one_connection(server: Any) -> None:
    gateway = QueueGateway(f"127.0.0.1:{server.server_address[1]}")
    offsets = [gateway.publish("q", f"v{i}".encode(), {})["offset"] for i in range(20)]
    gateway.close()
    assert offsets == list(range(20))
    assert [value for _, value in server.requests] == [f"v{i}".encode() for i in range(20)]
    assert len({port for port, _ in server.requests}) == 1


def test_a_connection_closed_while_idle_is_opened_again_and_nothing_is_sent_twice(server: Any) -> None:
    server.close_after_each = True
    gateway = QueueGateway(f"127.0.0.1:{server.server_address[1]}")
    for i in range(5):
        assert gateway.publish("q", f"v{i}".encode(), {})["offset"] == i
    gateway.close()
    assert [value for _, value in server.requests] == [f"v{i}".encode() for i in range(5)]
    assert len({port for port, _ in server.requests}) == 5


def test_a_gateway_gone_is_unreachable_not_retried_forever(server: Any) -> None:
    gateway = QueueGateway(f"127.0.0.1:{server.server_address[1]}")
    gateway.publish("q", b"first", {})
    server.gone = True
    server.shutdown()
    server.server_close()  # no listener: the second try (on a new connection) is refused
    with pytest.raises(GatewayUnreachable):
        gateway.publish("q", b"second", {})
    assert [value for _, value in server.requests] == [b"first"]
