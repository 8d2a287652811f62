"""Share-group members for the compatibility suite: Kafka's Java KafkaShareConsumer and confluent-kafka's
ShareConsumer behind one small interface (start, poll with an acknowledge type, close, crash).

The Java member is tests/compat/clients/drivers/java-share/ShareMember.java, compiled once per session
against the kafka-clients 4.4 jars the Java driver's build put in its target directory
(scripts/install_clients). One process per member, so a crash is a real kill -9 of the client.
The confluent-kafka member runs in a child Python process for the same reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.compat.clients.driver_client import DRIVERS
from tests.process import REPO as ROOT

JAVA_SOURCE = DRIVERS / "java-share" / "ShareMember.java"
JAVA_DEPS = DRIVERS / "java" / "target" / "kafka-4.4.0" / "deps"
_compiled: Path | None = None


@dataclass(frozen=True)
class Delivered:
    partition: int
    offset: int
    value: str
    delivery_count: int


def _java_classes() -> Path:
    """ShareMember.class, compiled once per session."""
    global _compiled
    if _compiled is None:
        if not (JAVA_DEPS / "kafka-clients-4.4.0.jar").exists():
            pytest.skip("the Java driver for kafka-clients 4.4.0 is not built (scripts/install_clients)")
        out = Path(tempfile.mkdtemp(prefix="share-member-"))
        subprocess.run(
            ["javac", "-nowarn", "-cp", f"{JAVA_DEPS}/*", "-d", str(out), str(JAVA_SOURCE)],
            check=True,
            capture_output=True,
        )
        _compiled = out
    return _compiled


class ShareMember:
    """One member process speaking JSON lines; the answer to "start" is read by the first `call` or `receive`."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, configs: dict[str, str] | None = None):
        self.kind = kind
        if kind == "java":
            classes = _java_classes()
            command = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", f"{classes}:{JAVA_DEPS}/*", "ShareMember"]
        else:
            command = [sys.executable, "-m", "tests.compat.clients.share_member_confluent"]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            start_new_session=True,
        )
        self.send("start", bootstrap=bootstrap, group=group, topic=topic, configs=configs or {})

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        self.send(op, **args)
        return self.receive()

    def send(self, op: str, **args: Any) -> None:
        """Send a command without waiting for its answer (members started or polled side by side)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.kind} share member exited ({self.process.poll()})")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"{self.kind} share member: {answer.get('error')}")
        return dict(answer)

    def poll(self, ack: str = "accept", timeout_ms: int = 1000) -> list[Delivered]:
        return self.polled(self.call("poll", ack=ack, timeout_ms=timeout_ms))

    @staticmethod
    def polled(answer: dict[str, Any]) -> list[Delivered]:
        return [Delivered(r["partition"], r["offset"], r["value"], r["delivery_count"]) for r in answer["records"]]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("close")
            finally:
                self.stop()

    def crash(self) -> None:
        """kill -9: no acknowledgement, no leave; the broker must notice by itself."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.crash()


def kafka_tool(main_class: str, *args: str) -> str:
    """Run one of Kafka's command-line tools (kafka-tools 4.3.1, resolved once by tests/kafka_ref.py);
    its standard output."""
    from tests.kafka_ref import ensure_tools

    tools, _ = ensure_tools()
    command = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{tools}/*", main_class, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
