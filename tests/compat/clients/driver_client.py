"""Adapter for the out-of-process drivers (Java, Go, Node): one long-lived process speaking JSON lines.

Every driver implements the same commands (see docs/compatibility.md, "Driver protocol"): a request is one
JSON object ``{"op": ..., ...}`` on a line of stdin, the answer one JSON object on a line of stdout:
``{"ok": true, ...}`` or ``{"ok": false, "error": {"kind": ..., "message": ...}}``. Started with a single
op name instead of ``serve``, a driver runs that one command (arguments as JSON from argv or stdin) and
exits non-zero on error.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.compat.clients.adapter import (
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    OffsetSpec,
    Record,
    Start,
    TopicDescription,
)
from tests.compat.clients.members import (
    GroupDescription,
    GroupMemberDescription,
    Member,
    MemberConfig,
    MemberState,
    TxnProducer,
)

DRIVERS = Path(__file__).parent / "drivers"
_ids = itertools.count()


def member_config(r: dict[str, Any]) -> MemberConfig:
    """A MemberConfig from the fields of a member_open command."""
    return MemberConfig(
        group=r["group"],
        topic=r["topic"],
        session_timeout_ms=r["session_timeout_ms"],
        heartbeat_interval_ms=r["heartbeat_interval_ms"],
        assignor=r["assignor"],
        instance_id=r.get("instance_id"),
        isolation=r.get("isolation", "read_uncommitted"),
        reset=r.get("reset", "earliest"),
        protocol=r.get("protocol", "classic"),
        topic_regex=r.get("topic_regex"),
    )


@dataclass
class DriverMember(Member):
    """A member living in a driver process, addressed by id."""

    client: DriverClient
    id: str

    def take(self) -> MemberState:
        answer = self.client.call("member_take", id=self.id)
        error = answer.get("error")
        if error:
            raise ClientError(str(error.get("kind", "other")), str(error.get("message")))
        return MemberState([Consumed.from_json(r) for r in answer["records"]], {int(p) for p in answer["assignment"]})

    def commit(self, offsets: dict[int, int] | None = None) -> None:
        wire = None if offsets is None else {str(p): o for p, o in offsets.items()}
        self.client.call("member_commit", id=self.id, offsets=wire)

    def close(self) -> None:
        self.client.call("member_close", id=self.id)


@dataclass
class DriverTxn(TxnProducer):
    """A transactional producer living in a driver process."""

    client: DriverClient
    id: str

    def begin(self) -> None:
        self.client.call("txn_begin", id=self.id)

    def send(self, topic: str, records: Sequence[Record]) -> None:
        self.client.call("txn_send", id=self.id, topic=topic, records=[r.to_json() for r in records])

    def send_offsets(self, member: Member, group: str, topic: str, offsets: dict[int, int]) -> None:
        member_id = member.id if isinstance(member, DriverMember) and member.client is self.client else None
        wire = {str(p): o for p, o in offsets.items()}
        self.client.call("txn_offsets", id=self.id, member=member_id, group=group, topic=topic, offsets=wire)

    def commit(self) -> None:
        self.client.call("txn_commit", id=self.id)

    def abort(self) -> None:
        self.client.call("txn_abort", id=self.id)

    def close(self) -> None:
        self.client.call("txn_close", id=self.id)


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
        isolation: str = "read_uncommitted",
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
            isolation=isolation,
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

    def produce_idempotent(
        self, bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int = 0
    ) -> list[tuple[int, int]]:
        answer = self.call(
            "produce",
            timeout_s=180,
            bootstrap=bootstrap,
            topic=topic,
            records=[r.to_json() for r in records],
            acks="all",
            compression="none",
            idempotent=True,
            pace_ms=pace_ms,
        )
        return [(int(p), int(o)) for p, o in answer["offsets"]]

    def open_member(self, bootstrap: str, config: MemberConfig) -> Member:
        member_id = f"m{next(_ids)}"
        self.call("member_open", id=member_id, bootstrap=bootstrap, **config.to_json())
        return DriverMember(self, member_id)

    def describe_group(self, bootstrap: str, group: str, topic: str) -> GroupDescription:
        answer = self.call("describe_group", bootstrap=bootstrap, group=group, topic=topic)
        members = [
            GroupMemberDescription(m["member_id"], m.get("instance_id"), sorted(int(p) for p in m["partitions"]))
            for m in answer["members"]
        ]
        committed = {int(p): int(o) for p, o in answer["committed"].items() if int(o) >= 0}
        ends = {int(p): int(o) for p, o in answer["end_offsets"].items()}
        return GroupDescription(str(answer["state"]), members, committed, ends)

    def txn_producer(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60000) -> TxnProducer:
        producer_id = f"t{next(_ids)}"
        self.call(
            "txn_open", id=producer_id, bootstrap=bootstrap, transactional_id=transactional_id, timeout_ms=timeout_ms
        )
        return DriverTxn(self, producer_id)

    def spawn(self) -> Client:
        return DriverClient(name=f"{self.name} (own process)", command=self.command, missing=dict(self.missing))

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None
