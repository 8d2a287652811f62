"""Group members and transactional producers: the parts of the adapter interface for groups and exactly-once.

A :class:`Member` is a consumer subscribed in a group that polls on its own, like a running application:
records it receives are buffered until the scenario takes them, its assignment is a snapshot refreshed by
every poll, and commits run between polls. A :class:`TxnProducer` is a producer with a transactional id,
already past InitProducerId. In-process clients build both on :class:`ThreadMember`; the drivers keep them
in their process under an id chosen here.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.compat.clients.adapter import ClientError, Consumed, Record


@dataclass(frozen=True)
class MemberConfig:
    """How a member joins: group, topic, timeouts, assignor, static instance id, isolation level."""

    group: str
    topic: str
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 500
    assignor: str = ""  # "" (range, or round robin for kafkajs which has no other), "roundrobin", "cooperative-sticky"
    instance_id: str | None = None
    isolation: str = "read_uncommitted"
    reset: str = "earliest"
    protocol: str = "classic"  # "consumer": group.protocol=consumer (KIP-848); assignor then names a server assignor
    topic_regex: str | None = None  # subscribe to this regex (broker-side with the consumer protocol), not the topic

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "session_timeout_ms": self.session_timeout_ms,
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "assignor": self.assignor,
            "instance_id": self.instance_id,
            "isolation": self.isolation,
            "reset": self.reset,
            "protocol": self.protocol,
            "topic_regex": self.topic_regex,
        }


@dataclass
class MemberState:
    """What a member received since the last look, and what it holds now."""

    records: list[Consumed]
    assignment: set[int]


class Member:
    """A group member polling in the background."""

    def take(self) -> MemberState:
        """The records received since the last call and the current assignment; raises what polling raised."""
        raise NotImplementedError

    def commit(self, offsets: dict[int, int] | None = None) -> None:
        """Commit these offsets (partition -> next offset to read), or the positions when None."""
        raise NotImplementedError

    def close(self) -> None:
        """Leave the group and release the consumer."""
        raise NotImplementedError


@dataclass
class GroupMemberDescription:
    member_id: str
    instance_id: str | None
    partitions: list[int]


@dataclass
class GroupDescription:
    """DescribeGroups, the group's committed offsets (OffsetFetch) and the topic's end offsets (ListOffsets)."""

    state: str
    members: list[GroupMemberDescription]
    committed: dict[int, int]
    end_offsets: dict[int, int]

    def lag(self) -> dict[int, int]:
        return {p: end - self.committed.get(p, 0) for p, end in self.end_offsets.items()}


class TxnProducer:
    """A transactional producer whose InitProducerId is done."""

    def begin(self) -> None:
        raise NotImplementedError

    def send(self, topic: str, records: Sequence[Record]) -> None:
        """Produce and wait for the acks (the records are in the log, uncommitted)."""
        raise NotImplementedError

    def send_offsets(self, member: Member, group: str, topic: str, offsets: dict[int, int]) -> None:
        """AddOffsetsToTxn + TxnOffsetCommit for the member's group (with its group metadata where the client can)."""
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


FENCED_NAMES = ("ProducerFenced", "InvalidProducerEpoch", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED")


def fenced_or_other(text: str) -> str:
    """The normalized error kind for a transactional failure message."""
    return "fenced" if any(name.lower() in text.lower() for name in FENCED_NAMES) else "other"


@dataclass
class ThreadMember(Member):
    """A member whose consumer lives on one thread; subclasses implement the ``_``-hooks, called on it."""

    config: MemberConfig
    bootstrap: str
    _tasks: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[bool, Any]]]] = field(default_factory=queue.Queue)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _buffer: list[Consumed] = field(default_factory=list)
    _assignment: set[int] = field(default_factory=set)
    _error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ThreadMember:
        opened: queue.Queue[BaseException | None] = queue.Queue()
        self._thread = threading.Thread(target=self._main, args=(opened,), daemon=True)
        self._thread.start()
        failure = opened.get(timeout=60)
        if failure is not None:
            raise ClientError("other", repr(failure))
        return self

    # Hooks, run on the member's thread -------------------------------------------------------------
    def _open(self) -> None:
        raise NotImplementedError

    def _poll(self) -> tuple[list[Consumed], set[int]]:
        """Poll once (briefly); the records and the assignment after the poll."""
        raise NotImplementedError

    def _commit(self, offsets: dict[int, int] | None) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    # Thread ------------------------------------------------------------------------------------------
    def _main(self, opened: queue.Queue[BaseException | None]) -> None:
        try:
            self._open()
        except BaseException as exc:
            opened.put(exc)
            return
        opened.put(None)
        while not self._stop.is_set():
            self._run_tasks()
            if self._stop.is_set():  # closed by the task just run
                break
            try:
                records, assignment = self._poll()
            except BaseException as exc:
                with self._lock:
                    self._error = exc
                time.sleep(0.1)
                continue
            with self._lock:
                self._buffer.extend(records)
                self._assignment = set(assignment)
        self._run_tasks()

    def _run_tasks(self) -> None:
        while True:
            try:
                task, answer = self._tasks.get_nowait()
            except queue.Empty:
                return
            try:
                answer.put((True, task()))
            except BaseException as exc:
                answer.put((False, exc))

    def on_thread(self, task: Callable[[], Any], timeout_s: float = 60.0) -> Any:
        """Run ``task`` on the member's thread between two polls and return its result."""
        if self._thread is None or not self._thread.is_alive():
            raise ClientError("other", "the member is closed")
        answer: queue.Queue[tuple[bool, Any]] = queue.Queue()
        self._tasks.put((task, answer))
        ok, value = answer.get(timeout=timeout_s)
        if not ok:
            if isinstance(value, ClientError):
                raise value
            raise ClientError(fenced_or_other(repr(value)), repr(value)) from value
        return value

    # Member ------------------------------------------------------------------------------------------
    def take(self) -> MemberState:
        with self._lock:
            if self._error is not None:
                error, self._error = self._error, None
                raise ClientError("other", repr(error)) from error
            records, self._buffer = self._buffer, []
            return MemberState(records, set(self._assignment))

    def commit(self, offsets: dict[int, int] | None = None) -> None:
        self.on_thread(lambda: self._commit(offsets))

    def close(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            return

        def close_and_stop() -> None:
            self._stop.set()  # no poll after the close
            self._close()

        try:
            self.on_thread(close_and_stop)
        finally:
            self._stop.set()
            self._thread.join(timeout=30)
