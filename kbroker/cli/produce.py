"""`kbroker produce TOPIC`: one record per line of stdin."""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import EXIT_OK, UsageError, add_client_options, parse_pairs, with_cluster

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster

MAX_BATCH_RECORDS = 1000
MAX_BATCH_BYTES = 512 * 1024
EPILOG = """\
Each line of stdin is one record (a trailing \\r is dropped). Lines are sent as they arrive: what is already
buffered goes in one request, so piping a file is fast and typing a line sends it at once.

examples:
  echo hello | kbroker produce greetings
  printf 'k1:v1\\nk2:v2\\n' | kbroker produce orders --key-separator : --header source=shell
  kbroker produce orders --partition 2 --acks 1 --compression zstd --format json < lines.txt"""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "produce",
        help="write stdin lines to a topic",
        description="Write each line of stdin to TOPIC as one record.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("-k", "--key-separator", metavar="SEP",
                        help="split each line at the first SEP into key and value (a line without SEP has no key)")  # fmt: skip
    parser.add_argument("-H", "--header", action="append", default=[], metavar="KEY=VALUE",
                        help="a header on every record; repeatable")  # fmt: skip
    parser.add_argument("-p", "--partition", type=int, help="write every record to this partition "
                        "(default: murmur2 of the key as Kafka's partitioner, round-robin without key)")  # fmt: skip
    parser.add_argument("--acks", choices=("all", "-1", "1", "0"), default="all", help="acks (default all)")
    parser.add_argument("-z", "--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none",
                        help="batch compression (default none)")  # fmt: skip
    add_client_options(parser)
    parser.set_defaults(handler=lambda args: with_cluster(args, lambda c: produce(c, args)))


def stdin_chunks(fd: int) -> Iterator[list[bytes]]:
    """Lines of `fd` in chunks: whatever is readable without waiting (bounded), then the next lines."""
    pending = b""
    lines: list[bytes] = []
    size = 0
    while True:
        if lines and (size >= MAX_BATCH_BYTES or len(lines) >= MAX_BATCH_RECORDS or not _readable(fd)):
            yield lines
            lines, size = [], 0
            continue
        data = os.read(fd, 1 << 16)
        if not data:
            break
        *complete, pending = (pending + data).split(b"\n")
        for line in complete:
            lines.append(line[:-1] if line.endswith(b"\r") else line)
            size += len(line)
    if pending:
        lines.append(pending[:-1] if pending.endswith(b"\r") else pending)
    if lines:
        yield lines


def _readable(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def produce(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.produce import ACKS, CODECS, Producer
    from protocol.record_builder import SimpleRecord

    headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header").items()]
    separator = args.key_separator.encode() if args.key_separator else None
    if args.key_separator == "":
        raise UsageError("--key-separator must not be empty")
    producer = Producer(cluster, args.topic, acks=ACKS[args.acks], codec=CODECS[args.compression])
    total = 0
    partitions: set[int] = set()
    for lines in stdin_chunks(sys.stdin.fileno()):
        records = []
        for line in lines:
            key: bytes | None = None
            if separator is not None and separator in line:
                key, line = line.split(separator, 1)
            records.append(SimpleRecord(key=key, value=line, headers=headers))
        results = producer.send(records, args.partition)
        total += len(results)
        partitions.update(r.partition for r in results)
        if args.output == "json":
            for r in results:
                sys.stdout.write(json.dumps({"topic": args.topic, "partition": r.partition, "offset": r.offset,
                                             "timestamp": r.timestamp}) + "\n")  # fmt: skip
            sys.stdout.flush()
    if args.output == "text":
        where = ", ".join(map(str, sorted(partitions))) or "-"
        print(f"produced {total} records to {args.topic} (partitions {where})", file=sys.stderr)
    return EXIT_OK
