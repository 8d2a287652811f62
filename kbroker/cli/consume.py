"""`kbroker consume TOPIC`: print records, with a format template or as JSON lines."""

from __future__ import annotations

import argparse
import base64
import json
import re
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import EXIT_FAILED, EXIT_OK, UsageError, add_client_options, with_cluster

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster
    from kbroker.client.consume import Consumed

EPILOG = """\
--format placeholders: %t topic, %p partition, %o offset, %k key, %v value, %T timestamp (ms),
%h headers (k=v, comma-separated), %% a percent sign; \\n, \\t and \\\\ are escapes. Default '%v\\n'.
--format json prints one JSON object per record (key and value as text, or *_base64 when not UTF-8).

--offset: earliest, latest (the default), N (that offset), -N (N before the end), @MS (the first record
at or after that time, ms since the epoch). --group joins the consumer group (range assignor; consumers of
a group share its partitions; it leaves the group on exit): partitions with committed offsets start there,
and the positions reached are committed. --group with --partition reads those partitions outside the group
and commits to it, like a Kafka consumer using assign() (the group must then have no active members).

Stops after --count records, after --timeout-ms without a record, or on Ctrl-C (exit status 0; 1 when
--timeout-ms ends before --count records arrived).

examples:
  kbroker consume orders --from-beginning --count 10
  kbroker consume orders -f '%p/%o %k=%v %h\\n' --offset -5 --partition 0
  kbroker consume orders --group billing --format json --timeout-ms 2000"""

_PLACEHOLDER = re.compile(rb"%[tpokvTh%]|\\[nt\\]")
_ESCAPES = {b"\\n": b"\n", b"\\t": b"\t", b"\\\\": b"\\", b"%%": b"%"}


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "consume",
        help="print a topic's records",
        description="Print the records of TOPIC (all partitions, or --partition).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest offset (--offset earliest)"
    )
    parser.add_argument("-o", "--offset", metavar="SPEC", help="where to start: earliest, latest, N, -N or @MS")
    parser.add_argument("-p", "--partition", type=int, action="append", metavar="N",
                        help="read only this partition; repeatable (default: all)")  # fmt: skip
    parser.add_argument("-g", "--group", help="join this consumer group: read its share of partitions, commit")
    parser.add_argument("-n", "--count", type=int, help="exit after this many records")
    parser.add_argument("-f", "--format", default="%v\\n", metavar="TEMPLATE",
                        help="how to print each record: a template (see below) or json")  # fmt: skip
    parser.add_argument("--timeout-ms", type=int, help="exit when no record arrives for this long")
    parser.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                        help="read_committed: only committed transactions' records, up to the last stable offset")  # fmt: skip
    add_client_options(parser, formats=())
    parser.set_defaults(handler=lambda args: with_cluster(args, lambda c: consume(c, args)))


def render(template: bytes, item: Consumed) -> bytes:
    record = item.record

    def value(match: re.Match[bytes]) -> bytes:
        token = match.group(0)
        if token in _ESCAPES:
            return _ESCAPES[token]
        code = token[1:]
        if code == b"t":
            return item.topic.encode()
        if code == b"p":
            return str(item.partition).encode()
        if code == b"o":
            return str(record.offset).encode()
        if code == b"k":
            return record.key or b""
        if code == b"v":
            return record.value or b""
        if code == b"T":
            return str(record.timestamp).encode()
        return b",".join(h.key.encode() + b"=" + (h.value or b"") for h in record.headers)

    return _PLACEHOLDER.sub(value, template)


def _text(data: bytes | None, name: str, out: dict[str, Any]) -> None:
    if data is None:
        out[name] = None
        return
    try:
        out[name] = data.decode("utf-8")
    except UnicodeDecodeError:
        out[name + "_base64"] = base64.b64encode(data).decode()


def as_json(item: Consumed) -> bytes:
    record = item.record
    out: dict[str, Any] = {"topic": item.topic, "partition": item.partition, "offset": record.offset,
                           "timestamp": record.timestamp}  # fmt: skip
    _text(record.key, "key", out)
    _text(record.value, "value", out)
    headers = []
    for h in record.headers:
        header: dict[str, Any] = {"key": h.key}
        _text(h.value, "value", header)
        headers.append(header)
    out["headers"] = headers
    return json.dumps(out).encode() + b"\n"


def consume(cluster: Cluster, args: argparse.Namespace) -> int:
    if args.from_beginning and args.offset:
        raise UsageError("--from-beginning and --offset exclude each other")
    if args.count is not None and args.count < 0:
        raise UsageError("--count must be 0 or more")
    return _Reader(cluster, args).run()


class _Reader:
    """One `kbroker consume`: the partitions to read (given, all, or those the group assigns), printing, commits."""

    def __init__(self, cluster: Cluster, args: argparse.Namespace) -> None:
        from kbroker.client.admin import EARLIEST, LATEST
        from kbroker.client.consume import READ_COMMITTED, READ_UNCOMMITTED, Consumer
        from kbroker.client.membership import GroupMember

        self.cluster, self.args = cluster, args
        self.spec = "earliest" if args.from_beginning else (args.offset or "latest")
        topic = cluster.topic(args.topic)
        # --group without --partition subscribes (joins the group); with --partition it reads those, as assign().
        self.member = GroupMember(cluster, args.group, args.topic) if args.group and not args.partition else None
        partitions = self.member.join() if self.member else sorted(set(args.partition or topic.partitions))
        isolation = READ_COMMITTED if args.isolation_level == "read_committed" else READ_UNCOMMITTED
        reset = EARLIEST if self.spec == "earliest" else LATEST
        self.consumer = Consumer(cluster, topic, self._positions(partitions), reset, isolation)
        self.committed_at = dict(self.consumer.positions)

    def _positions(self, partitions: list[int]) -> dict[int, int]:
        """Start at the group's committed offsets, else where --offset says."""
        from kbroker.client.consume import committed_offsets, start_positions

        try:
            positions = start_positions(self.cluster, self.cluster.topic(self.args.topic), partitions, self.spec)
        except ValueError:
            raise UsageError(f"--offset {self.spec!r}: use earliest, latest, N, -N or @MS") from None
        if self.args.group:
            committed = committed_offsets(self.cluster, self.args.group, [self.args.topic])
            positions.update(
                {p: committed[(self.args.topic, p)] for p in partitions if (self.args.topic, p) in committed}
            )
        return positions

    def commit(self) -> None:
        from kbroker.client.connection import KafkaError
        from kbroker.client.consume import commit_offsets
        from kbroker.client.membership import REJOIN

        if not self.args.group or self.consumer.positions == self.committed_at:
            return
        offsets = {(self.args.topic, p): o for p, o in self.consumer.positions.items()}
        try:
            if self.member is None:
                commit_offsets(self.cluster, self.args.group, offsets)
            else:
                commit_offsets(self.cluster, self.args.group, offsets, self.member.generation, self.member.member_id)
        except KafkaError as error:
            if self.member is None or error.code not in REJOIN:
                raise
            return  # the group moved on: this member joins again and starts from what was committed
        self.committed_at = dict(self.consumer.positions)

    def rejoin_if_needed(self) -> None:
        if self.member is None or self.member.heartbeat():
            return
        self.commit()
        self.consumer.positions = self._positions(self.member.join())
        self.committed_at = dict(self.consumer.positions)

    def run(self) -> int:
        with _StopOnSignal() as stop:
            return self._run(stop)

    def _run(self, stop: _StopOnSignal) -> int:
        args, out = self.args, sys.stdout.buffer
        emit = as_json if args.format == "json" else lambda item: render(args.format.encode(), item)
        seen, status = 0, EXIT_OK
        last_record = time.monotonic()
        try:
            while (args.count is None or seen < args.count) and not stop.requested:
                self.rejoin_if_needed()
                batch = self.consumer.poll() if self.consumer.positions else _idle()
                if not batch:
                    if args.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= args.timeout_ms:
                        if args.count is not None:
                            print(f"kbroker: timed out after {seen} of {args.count} records", file=sys.stderr)
                            status = EXIT_FAILED
                        break
                    continue
                last_record = time.monotonic()
                for index, item in enumerate(batch):
                    if args.count is not None and seen >= args.count:
                        _rewind(self.consumer.positions, batch[index:])  # not printed: the group's next reader's
                        break
                    out.write(emit(item))
                    seen += 1
                out.flush()
                self.commit()
        except KeyboardInterrupt:
            pass
        finally:
            out.flush()
        self.commit()
        if self.member is not None:
            self.member.leave()
        print(f"consumed {seen} records", file=sys.stderr)
        return status


class _StopOnSignal:
    """Ctrl-C (SIGINT) or SIGTERM asks the loop to stop after the current fetch (at most MAX_WAIT_MS), so a
    record is never half printed nor a request half sent; a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> _StopOnSignal:
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:  # started ignoring it (in the background): keep so
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _idle() -> list[Consumed]:
    """No partition assigned (more members than partitions): wait a little instead of spinning."""
    time.sleep(0.2)
    return []


def _rewind(positions: dict[int, int], unprinted: list[Consumed]) -> None:
    """Move each partition back to its first record fetched but not printed."""
    for item in reversed(unprinted):
        positions[item.partition] = item.record.offset
