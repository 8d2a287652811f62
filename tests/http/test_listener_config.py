"""kbroker.http.listeners: accepted forms, and a bad one stops the broker with exit status 2 before it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbroker.config import ConfigError
from kbroker.http.listeners import parse_http_listener
from tests.process import REPO, free_port


def test_forms() -> None:
    assert parse_http_listener("http://127.0.0.1:8082") == ("127.0.0.1", 8082)
    assert parse_http_listener(" 127.0.0.1:0 ") == ("127.0.0.1", 0)
    assert parse_http_listener("http://:8082") == ("0.0.0.0", 8082)
    for bad in ("https://h:1", "http://h", "h:port", "http://h:1/path", "http://h:99999"):
        with pytest.raises(ConfigError, match="kbroker.http.listeners"):
            parse_http_listener(bad)


def test_bad_listener_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{free_port()}", "--data-dir", str(data),
           "--http-listen", "localhost:http"]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 2
    assert "kbroker.http.listeners" in result.stderr and "Traceback" not in result.stderr
    assert not data.exists()


def test_http_port_in_use_fails_the_start_before_anything_is_written(tmp_path: Path) -> None:
    import socket

    data = tmp_path / "data"
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        cmd = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{free_port()}", "--data-dir",
               str(data), "--http-listen", f"127.0.0.1:{port}"]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 1
    assert "broker_failed" in result.stderr and "Traceback" not in result.stderr
    assert not data.exists()
