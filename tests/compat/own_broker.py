"""A kbroker of the suite's own that a scenario may kill -9 and restart on the same port and data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.compat.clients.apiversions import advertised_apis
from tests.compat.support import wait_for_port


class OwnBroker:
    """``python -m kbroker serve`` with the given settings; ``KBROKER_SRC`` picks another source tree."""

    def __init__(self, data_dir: Path, port: int, args: list[str]) -> None:
        self.data_dir = data_dir
        self.port = port
        self.args = args
        self.log_path = data_dir.parent / f"kbroker-{port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30) -> OwnBroker:
        command = [sys.executable, "-m", "kbroker", "serve", "--listen", self.bootstrap]
        command += ["--data-dir", str(self.data_dir), *self.args]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=os.environ.get("KBROKER_SRC") or None
            )
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"kbroker exited with {self.process.returncode}; see {self.log_path}")
            try:
                wait_for_port("127.0.0.1", self.port, 1)
                advertised_apis(self.bootstrap)
                return self
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def kill9(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None

    def restart_after_kill9(self, down_s: float = 0.5) -> None:
        self.kill9()
        time.sleep(down_s)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
