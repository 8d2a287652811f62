"""`kbroker queue list|describe|publish|read|ack|delete|delete-consumer`: kbroker's virtual queues, over HTTP.

Each subcommand is one request to `/v1/vq` on kbroker's HTTP listener (docs/gateway.md), made with the
standard library's http.client (kbroker/client/vq.py). Apache Kafka has no virtual queues: these commands need a
kbroker broker started with an HTTP listener.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    UsageError,
    fail,
    group_parser,
    print_json,
    print_table,
)

if TYPE_CHECKING:
    from kbroker.client.vq import QueueGateway

HTTP_ENV = "KBROKER_HTTP"
PASSWORD_ENV = "KBROKER_HTTP_PASSWORD"
DEFAULT_HTTP = "127.0.0.1:8082"
DESCRIPTION = """\
kbroker's virtual queues (docs/gateway.md, "Virtual queues"): many small queues on one topic, each read by
named consumers whose positions the broker keeps. Each command is one request to /v1/vq on kbroker's HTTP
listener (kbroker serve --http-listen HOST:PORT). Apache Kafka has no virtual queues: these commands work
with kbroker only (a Kafka producer may still publish to a queue: see publish --help)."""
EPILOG = f"""\
--http HOST:PORT (else ${HTTP_ENV}, else {DEFAULT_HTTP}) picks the listener; an http:// or https://
URL works too (a TLS-terminating proxy). When the broker has an authorizer, the gateway asks for HTTP
Basic credentials of a Kafka user: --user NAME, with the password in ${PASSWORD_ENV} (never on the
command line).
Exit status: 0 done, 1 the gateway refused (its error_code and message are printed, e.g. 40404 for a queue
that does not exist, 40904 for a stale ack), 2 bad usage, 3 the gateway could not be reached.

examples:
  printf 'resize photo 17\\nresize photo 18\\n' | kbroker queue publish customer-42 --tag photos
  kbroker queue publish customer-42 --value 'send invoice' --deliver-after-ms 60000
  kbroker queue read customer-42 --consumer worker --max 10 --timeout 5000 --ack
  kbroker queue list --prefix customer-
  kbroker queue describe customer-42 --format json"""
PUBLISH_EPILOG = """\
Each line of stdin is one record (a trailing \\r is dropped), published as it arrives; --value publishes
one record and reads no stdin. Text output is a summary on stderr; --format json prints one line per
record, {"queue", "partition", "offset"}.
A Kafka producer publishes to a queue too: a record to the data topic (kbroker-vq by default) with the
queue name as key, and these headers if wanted."""
READ_EPILOG = """\
Reads the records after the consumer's position (--consumer), or from an offset (--offset, no consumer).
A read does not move the position: --ack acknowledges the answer's next_offset once the records are
printed (at-least-once: a crash before the ack reads them again). A record whose delivery time is ahead
stops the read there (the answer's blocked_until says when it is due); --timeout waits for one.
Text output: each record's value on a line (a value that is not UTF-8 as its bytes); a summary on stderr.
--format json: the gateway's answer (records with offset, timestamp, value, headers, tag)."""


def add_parser(commands: Any) -> None:
    queue, actions = group_parser(commands, "queue", "kbroker's virtual queues over its HTTP listener")
    queue.description, queue.epilog = DESCRIPTION, EPILOG
    queue.formatter_class = argparse.RawDescriptionHelpFormatter

    def action(name: str, help_text: str, run: Callable[[QueueGateway, argparse.Namespace], int],
               epilog: str | None = None) -> argparse.ArgumentParser:  # fmt: skip
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=help_text, description=help_text, epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )  # fmt: skip
        parser.set_defaults(handler=lambda args: with_gateway(args, run))
        return parser

    listing = action("list", "queues with their depth and their consumers' positions and lag", _list)
    listing.add_argument("--prefix", default="", metavar="P", help="only queues whose names start with P")
    listing.add_argument("--after", default="", metavar="NAME", help="only queues after NAME (to page on)")
    listing.add_argument("--limit", type=_at_least(1), metavar="N", help="at most N queues (gateway default 1000)")
    _add_options(listing)

    describe = action("describe", "one queue: its partition, depth and consumers' positions and lag", _describe)
    describe.add_argument("queue", metavar="QUEUE")
    _add_options(describe)

    publish = action("publish", "publish stdin lines (or --value) to a queue, one record each", _publish,
                     PUBLISH_EPILOG)  # fmt: skip
    publish.add_argument("queue", metavar="QUEUE")
    publish.add_argument("--value", metavar="TEXT", help="publish this one record instead of reading stdin")
    publish.add_argument("--tag", metavar="TAG", help="the kbroker-tag header of every record")
    publish.add_argument("--deliver-at", metavar="MS|DATETIME",
                         help="not delivered before this time: ms since the epoch, or ISO 8601 (kbroker-deliver-at)")  # fmt: skip
    publish.add_argument("--deliver-after-ms", type=_at_least(0), metavar="MS",
                         help="not delivered until MS after the record's timestamp (kbroker-deliver-after-ms)")  # fmt: skip
    _add_options(publish)

    read = action("read", "print a queue's records after a consumer's position (or from an offset)", _read,
                  READ_EPILOG)  # fmt: skip
    read.add_argument("queue", metavar="QUEUE")
    start = read.add_mutually_exclusive_group(required=True)
    start.add_argument("--consumer", metavar="NAME", help="read after this named consumer's position")
    start.add_argument("--offset", type=_at_least(0), metavar="O", help="read from offset O (no consumer)")
    read.add_argument("--max", type=_at_least(1), metavar="N", help="at most N records (gateway default 100)")
    read.add_argument("--timeout", type=_at_least(0), metavar="MS",
                      help="with no record to return, wait up to MS for one (default 0)")  # fmt: skip
    read.add_argument("--ack", action="store_true", help="acknowledge next_offset after printing (with --consumer)")
    _add_options(read)

    ack = action("ack", "move a consumer's position (--offset: the next record it reads)", _ack)
    ack.add_argument("queue", metavar="QUEUE")
    ack.add_argument("--consumer", required=True, metavar="NAME", help="the consumer")
    ack.add_argument("--offset", required=True, type=_at_least(0), metavar="N", help="its new position")
    ack.add_argument("--allow-rewind", action="store_true",
                     help="allow a position before the current one (the records are read again)")  # fmt: skip
    _add_options(ack)

    delete = action("delete", "delete a queue: its records and its consumers", _delete)
    delete.add_argument("queue", metavar="QUEUE")
    _add_options(delete)

    delete_consumer = action("delete-consumer", "delete one consumer of a queue (its position)", _delete_consumer)
    delete_consumer.add_argument("queue", metavar="QUEUE")
    delete_consumer.add_argument("consumer", metavar="NAME")
    _add_options(delete_consumer)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http", metavar="HOST:PORT", default=os.environ.get(HTTP_ENV) or DEFAULT_HTTP,
                        help=f"kbroker's HTTP listener (default ${HTTP_ENV}, else {DEFAULT_HTTP})")  # fmt: skip
    parser.add_argument("--user", metavar="NAME", help=f"HTTP Basic user; the password is read from ${PASSWORD_ENV}")
    parser.add_argument("--format", dest="output", choices=("text", "json"), default="text",
                        help="output: text or json (default text)")  # fmt: skip


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, got {value}")
        return value

    return parse


def with_gateway(args: argparse.Namespace, action: Callable[[QueueGateway, argparse.Namespace], int]) -> int:
    """Run `action` against the gateway of --http; refusals and an unreachable gateway become exit codes."""
    from kbroker.client.vq import GatewayError, GatewayUnreachable, QueueGateway

    password = os.environ.get(PASSWORD_ENV)
    if args.user is not None and password is None:
        return fail(f"--user {args.user} needs the password in ${PASSWORD_ENV}", EXIT_USAGE)
    try:
        gateway = QueueGateway(args.http, args.user, password)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        if getattr(args, "queue", None) == "":
            raise UsageError("QUEUE must not be empty")
        return action(gateway, args)
    except GatewayError as exc:
        return fail(str(exc), EXIT_FAILED)
    except GatewayUnreachable as exc:
        return fail(f"gateway unreachable: {exc}", EXIT_UNREACHABLE)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    finally:
        gateway.close()


def _consumer_rows(info: dict[str, Any]) -> list[tuple[Any, ...]]:
    consumers = info["consumers"] or [{"consumer": None, "position": None, "lag": None}]
    return [(info["queue"], info["partition"], info["depth"], c["consumer"], c["position"], c["lag"])
            for c in consumers]  # fmt: skip


def _list(gateway: QueueGateway, args: argparse.Namespace) -> int:
    body = gateway.list_queues(args.prefix, args.after, args.limit)
    if args.output == "json":
        print_json(body)
    else:
        rows = [row for info in body["queues"] for row in _consumer_rows(info)]
        print_table(rows, ("QUEUE", "PARTITION", "DEPTH", "CONSUMER", "POSITION", "LAG"))
    if body["truncated"] and body["queues"]:
        print(f"more queues follow: list them with --after {body['queues'][-1]['queue']}", file=sys.stderr)
    return EXIT_OK


def _describe(gateway: QueueGateway, args: argparse.Namespace) -> int:
    info = gateway.describe(args.queue)
    if args.output == "json":
        print_json(info)
        return EXIT_OK
    consumers = info["consumers"]
    print(f"queue {info['queue']}: partition {info['partition']}, depth {info['depth']}, {len(consumers)} consumers")
    if consumers:
        print_table([(c["consumer"], c["position"], c["lag"]) for c in consumers], ("CONSUMER", "POSITION", "LAG"))
    return EXIT_OK


def _deliver_at(text: str | None) -> int | None:
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    from kbroker.cli.group import parse_datetime_ms

    try:
        return parse_datetime_ms(text)
    except UsageError:
        raise UsageError(f"--deliver-at {text!r}: expected ms since the epoch or YYYY-MM-DDTHH:mm:SS[.sss]") from None


def _publish(gateway: QueueGateway, args: argparse.Namespace) -> int:
    from kbroker.cli.produce import stdin_chunks
    from kbroker.client.vq import publish_headers

    headers = publish_headers(args.tag, _deliver_at(args.deliver_at), args.deliver_after_ms)
    values = [[args.value.encode()]] if args.value is not None else stdin_chunks(sys.stdin.fileno())
    offsets: list[int] = []
    partition = None
    try:
        for chunk in values:
            for value in chunk:
                answer = gateway.publish(args.queue, value, headers)
                partition = answer["partition"]
                offsets.append(answer["offset"])
                if args.output == "json":
                    print(json.dumps(answer), flush=True)
    finally:
        if args.output == "text":
            where = f" (partition {partition}, offsets {offsets[0]} to {offsets[-1]})" if offsets else ""
            print(f"published {len(offsets)} records to queue {args.queue}{where}", file=sys.stderr)
    return EXIT_OK


def _read(gateway: QueueGateway, args: argparse.Namespace) -> int:
    from kbroker.client.vq import record_value

    if args.ack and args.consumer is None:
        raise UsageError("--ack acknowledges a consumer's read: it needs --consumer")
    body = gateway.read(args.queue, args.consumer, args.offset, args.max, args.timeout)
    records = body["records"]
    if args.output == "json":
        print_json(body)
    else:
        out = sys.stdout.buffer
        for record in records:
            out.write(record_value(record) + b"\n")
        out.flush()
        summary = f"read {len(records)} records from queue {args.queue} (partition {body['partition']}), "
        summary += f"next offset {body['next_offset']}"
        if "blocked_until" in body:
            due = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(body["blocked_until"] / 1000))
            summary += f"; the next record is due at {due} (blocked_until {body['blocked_until']})"
        print(summary, file=sys.stderr)
    if args.ack and records:  # printed first: at-least-once
        answer = gateway.ack(args.queue, args.consumer, body["next_offset"])
        print(f"acknowledged: consumer {args.consumer} at position {answer['position']}", file=sys.stderr)
    return EXIT_OK


def _ack(gateway: QueueGateway, args: argparse.Namespace) -> int:
    answer = gateway.ack(args.queue, args.consumer, args.offset, args.allow_rewind)
    if args.output == "json":
        print_json(answer)
    else:
        previous = "none" if answer["previous"] is None else answer["previous"]
        print(f"consumer {answer['consumer']} of queue {answer['queue']}: position {answer['position']} "
              f"(was {previous})")  # fmt: skip
    return EXIT_OK


def _delete(gateway: QueueGateway, args: argparse.Namespace) -> int:
    answer = gateway.delete_queue(args.queue)
    if args.output == "json":
        print_json(answer)
    else:
        consumers = ", ".join(answer["deleted_consumers"]) or "none"
        print(f"deleted queue {answer['queue']} (consumers deleted: {consumers})")
    return EXIT_OK


def _delete_consumer(gateway: QueueGateway, args: argparse.Namespace) -> int:
    gateway.delete_consumer(args.queue, args.consumer)
    if args.output == "json":
        print_json({"queue": args.queue, "consumer": args.consumer, "deleted": True})
    else:
        print(f"deleted consumer {args.consumer} of queue {args.queue}")
    return EXIT_OK
