"""Start a real kbroker process for tests, and talk raw protocol to it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from protocol.codec import decode, encode
from protocol.framing import frame_prefix
from protocol.headers import RequestHeader, encode_request_header, read_response_header, response_header_is_flexible
from protocol.schema import REQUESTS, RESPONSES
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        *args: str,
        port: int | None = None,
        preexec_fn: Callable[[], Any] | None = None,
        listen_flag: bool = True,
        log_dirs: Sequence[Path] = (),
    ) -> None:
        """`listen_flag=False`: no --listen (the args configure `listeners`, one of them on `port`).
        `log_dirs`: several data directories (log.dirs) after `data_dir`, instead of --data-dir."""
        self.preexec_fn = preexec_fn  # run in the child before exec (e.g. resource limits)
        self.port = port or free_port()
        self.listen_flag = listen_flag
        self.data_dir = data_dir
        self.log_dirs = (data_dir, *log_dirs)
        self.log_path = data_dir.parent / f"kbroker-{self.port}.log"
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "kbroker", "serve"]
        if len(self.log_dirs) > 1:
            cmd += ["--config", "log.dirs=" + ",".join(str(d) for d in self.log_dirs)]
        else:
            cmd += ["--data-dir", str(self.data_dir)]
        if self.listen_flag:
            cmd += ["--listen", self.bootstrap]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*cmd, *self.args], stdout=log, stderr=log, cwd=REPO, preexec_fn=self.preexec_fn
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kbroker exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        raise TimeoutError(f"kbroker did not listen within {timeout}s:\n{self.log_text()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class RawClient:
    """A minimal blocking Kafka client speaking our codec, for exact protocol checks."""

    def __init__(self, bootstrap: str, client_id: str | None = "raw-test") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request_bytes(
        self, api_key: int, version: int, body: dict[str, Any], correlation_id: int | None = None
    ) -> bytes:
        if correlation_id is None:
            self.correlation_id += 1
            correlation_id = self.correlation_id
        message = REQUESTS[api_key]
        flexible = message.is_flexible(version)
        header = encode_request_header(RequestHeader(api_key, version, correlation_id, self.client_id), flexible)
        payload = header + encode(message, version, body)
        return frame_prefix(len(payload)) + payload

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = int.from_bytes(self._read_exact(4), "big", signed=True)
        return self._read_exact(size)

    def read_response(self, api_key: int, version: int) -> tuple[int, dict[str, Any]]:
        message = RESPONSES[api_key]
        frame = self.read_frame()
        flexible = response_header_is_flexible(api_key, message.is_flexible(version))
        correlation_id, pos = read_response_header(frame, flexible)
        return correlation_id, decode(message, version, frame, pos, exact=True)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.send(self.request_bytes(api_key, version, body))
        correlation_id, response = self.read_response(api_key, version)
        assert correlation_id == self.correlation_id
        return response

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
