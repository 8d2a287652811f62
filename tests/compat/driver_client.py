"""Adapter for the out-of-process drivers (Java, Go, Node): one long-lived process speaking JSON lines.

Every driver implements the same commands (see docs/compatibility.md, "Driver protocol"): a request is one
JSON object ``{"op": ..., ...}`` on a line of stdin, the answer one JSON object on a line of stdout:
``{"ok": true, ...}`` or ``{"ok": false, "error": {"kind": ..., "message": ...}}``. Started with a single
op name instead of ``serve``, a driver runs that one command (arguments as JSON from argv or stdin) and
exits non-zero on error.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.compat.clients import (
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    OffsetSpec,
    Record,
    Start,
    TopicDescription,
)

DRIVERS = Path(__file__).parent / "drivers"


@dataclass
class DriverClient(Client):
    """A client whose driver runs as ``command serve``; restarted after a timeout or a crash."""

    command: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    _buffer: bytearray = field(default_factory=bytearray)

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self._buffer.clear()
            self.process = subprocess.Popen(
                [*self.command, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
            )
        return self.process

    def close(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                assert self.process.stdin is not None
                self.process.stdin.close()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None

    def call(self, op: str, timeout_s: float = 60.0, **args: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; raise ClientError when the driver reports one."""
        process = self._ensure()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({"op": op, **args}).encode() + b"\n")
        process.stdin.flush()
        line = self._read_line(process, timeout_s)
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            error = answer.get("error") or {}
            raise ClientError(str(error.get("kind", "other")), str(error.get("message", answer)))
        return answer

    def _read_line(self, process: subprocess.Popen[bytes], timeout_s: float) -> bytes:
        assert process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(remaining, 0))
            if not ready:
                self._kill(process)
                raise ClientError("timeout", f"{self.name} driver gave no answer within {timeout_s}s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._kill(process)
                raise ClientError("crash", f"{self.name} driver exited with {process.wait()}")
            self._buffer += chunk
        index = self._buffer.index(b"\n")
        line = bytes(self._buffer[:index])
        del self._buffer[: index + 1]
        return line

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        process.kill()
        process.wait()
        self.process = None

    # Operations ----------------------------------------------------------------------------------
    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        answer = self.call(
            "produce",
            bootstrap=bootstrap,
            topic=topic,
            records=[r.to_json() for r in records],
            acks=acks,
            compression=compression,
        )
        return [(int(p), int(o)) for p, o in answer["offsets"]]

    def consume(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        start: Start,
        max_records: int,
        timeout_s: float,
        reset: str = "earliest",
    ) -> ConsumeResult:
        answer = self.call(
            "consume",
            timeout_s=timeout_s + 60,
            bootstrap=bootstrap,
            topic=topic,
            partitions=list(partitions),
            start=start if isinstance(start, str) else {str(p): o for p, o in start.items()},
            max_records=max_records,
            timeout_ms=int(timeout_s * 1000),
            reset=reset,
        )
        positions = answer.get("positions")
        error = answer.get("error") or {}
        return ConsumeResult(
            records=[Consumed.from_json(r) for r in answer["records"]],
            positions=None if positions is None else {int(p): int(o) for p, o in positions.items()},
            error=error.get("kind"),
            error_message=error.get("message", ""),
        )

    def create_topic(self, bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
        self.call("create_topic", bootstrap=bootstrap, topic=topic, partitions=partitions, configs=configs)

    def describe_topic(self, bootstrap: str, topic: str) -> TopicDescription:
        answer = self.call("describe_topic", bootstrap=bootstrap, topic=topic)
        return TopicDescription(topic, sorted(int(p) for p in answer["partitions"]))

    def topic_configs(self, bootstrap: str, topic: str) -> dict[str, str]:
        configs = self.call("topic_configs", bootstrap=bootstrap, topic=topic)["configs"]
        return {str(k): str(v) for k, v in configs.items()}

    def alter_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        self.call("alter_config", bootstrap=bootstrap, topic=topic, key=key, value=value)

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        self.call("create_partitions", bootstrap=bootstrap, topic=topic, total=total)

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        self.call("delete_topic", bootstrap=bootstrap, topic=topic)

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        answer = self.call("list_offset", bootstrap=bootstrap, topic=topic, partition=partition, spec=spec)
        return int(answer["offset"])

    def delete_records(self, bootstrap: str, topic: str, partition: int, before: int) -> int:
        answer = self.call("delete_records", bootstrap=bootstrap, topic=topic, partition=partition, before=before)
        return int(answer["low_watermark"])

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        answer = self.call("partitions_for", bootstrap=bootstrap, topic=topic)
        return sorted(int(p) for p in answer["partitions"])
