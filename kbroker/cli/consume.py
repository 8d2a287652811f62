"""`kbroker consume TOPIC`: print records, with a format template or as JSON lines."""

from __future__ import annotations

import argparse
import base64
import json
import re
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
at or after that time, ms since the epoch). With --group, partitions the group has committed offsets for
start there, and the positions reached are committed (as a client outside any generation, like a Kafka
consumer using assign() and commitSync(): the group must have no active members).

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
    parser.add_argument("-g", "--group", help="start from and commit to this consumer group's offsets")
    parser.add_argument("-n", "--count", type=int, help="exit after this many records")
    parser.add_argument("-f", "--format", default="%v\\n", metavar="TEMPLATE",
                        help="how to print each record: a template (see below) or json")  # fmt: skip
    parser.add_argument("--timeout-ms", type=int, help="exit when no record arrives for this long")
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
    from kbroker.client.admin import EARLIEST, LATEST
    from kbroker.client.consume import Consumer, commit_offsets, committed_offsets, start_positions

    if args.from_beginning and args.offset:
        raise UsageError("--from-beginning and --offset exclude each other")
    if args.count is not None and args.count < 0:
        raise UsageError("--count must be 0 or more")
    spec = "earliest" if args.from_beginning else (args.offset or "latest")
    topic = cluster.topic(args.topic)
    partitions = sorted(set(args.partition)) if args.partition else sorted(topic.partitions)
    try:
        positions = start_positions(cluster, topic, partitions, spec)
    except ValueError:
        raise UsageError(f"--offset {spec!r}: use earliest, latest, N, -N or @MS") from None
    if args.group:
        committed = committed_offsets(cluster, args.group, [args.topic])
        positions.update({p: committed[(args.topic, p)] for p in partitions if (args.topic, p) in committed})
    consumer = Consumer(cluster, topic, positions, reset=EARLIEST if spec == "earliest" else LATEST)
    emit = as_json if args.format == "json" else lambda item: render(args.format.encode(), item)
    out = sys.stdout.buffer
    seen = 0
    last_record = time.monotonic()
    committed_at = dict(consumer.positions)
    status = EXIT_OK
    try:
        while args.count is None or seen < args.count:
            batch = consumer.poll()
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
                    _rewind(consumer.positions, batch[index:])  # not printed: the group's next reader gets them
                    break
                out.write(emit(item))
                seen += 1
            out.flush()
            if args.group and consumer.positions != committed_at:
                commit_offsets(cluster, args.group, {(args.topic, p): o for p, o in consumer.positions.items()})
                committed_at = dict(consumer.positions)
    except KeyboardInterrupt:
        pass
    finally:
        out.flush()
    if args.group and consumer.positions != committed_at:
        commit_offsets(cluster, args.group, {(args.topic, p): o for p, o in consumer.positions.items()})
    print(f"consumed {seen} records", file=sys.stderr)
    return status


def _rewind(positions: dict[int, int], unprinted: list[Consumed]) -> None:
    """Move each partition back to its first record fetched but not printed."""
    for item in reversed(unprinted):
        positions[item.partition] = item.record.offset
