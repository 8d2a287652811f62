"""What the client commands share: the bootstrap option, output as text or JSON, errors as exit codes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "KBROKER_BOOTSTRAP"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3

OVERVIEW = f"""\
client commands (any Kafka-protocol broker; --bootstrap, else ${BOOTSTRAP_ENV}, else {DEFAULT_BOOTSTRAP}):
  kbroker topic create|list|describe|alter-config|delete ...
  kbroker produce TOPIC            one record per stdin line (--key-separator, --header, --partition)
  kbroker consume TOPIC            print records (--from-beginning, --offset, --group, --count, --format)
  kbroker group list|describe|reset-offsets|delete ...
  kbroker share-group list|describe|reset-offsets|delete-offsets|delete ...
  kbroker cluster info
  kbroker queue list|describe|publish|read|ack|delete ...
                                   kbroker's virtual queues (not Kafka's): needs kbroker's HTTP listener
                                   (--http, else $KBROKER_HTTP, else 127.0.0.1:8082)
  --format json gives JSON on stdout. Exit status: 0 done, 1 the broker refused or the operation failed
  (the message names Kafka's error), 2 bad usage, 3 no broker reachable."""


def add_client_options(parser: argparse.ArgumentParser, formats: Sequence[str] = ("text", "json")) -> None:
    parser.add_argument(
        "-b",
        "--bootstrap",
        metavar="HOST:PORT[,...]",
        default=os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP,
        help=f"brokers to bootstrap from (default ${BOOTSTRAP_ENV}, else {DEFAULT_BOOTSTRAP})",
    )
    if formats:
        parser.add_argument(
            "--format",
            dest="output",
            choices=formats,
            default=formats[0],
            help=f"output: {' or '.join(formats)} (default {formats[0]})",
        )


def add_reset_arguments(reset: argparse.ArgumentParser, offsets: str, shift_by: bool, execute_help: str) -> None:
    """GROUP, the scope (--topic or --all-topics), the target and --dry-run/--execute of a reset-offsets
    command, as Kafka's group tools take them; `offsets` names what the group keeps ("offsets", "start
    offsets"). Kafka's share-group tool has no --shift-by."""
    reset.add_argument("group", metavar="GROUP")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                       help="a topic, optionally with partitions; repeatable")  # fmt: skip
    scope.add_argument("--all-topics", action="store_true", help=f"every topic the group has {offsets} for")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="to the log start offset")
    target.add_argument("--to-latest", action="store_true", help="to the log end offset")
    target.add_argument("--to-offset", type=int, metavar="N", help="to offset N")
    if shift_by:
        target.add_argument("--shift-by", type=int, metavar="N", help="by N (negative: back) from the committed offset")
    target.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                        help="to the first offset at or after this time (ISO 8601; local time without a zone)")  # fmt: skip
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--execute", action="store_true", help=execute_help)
    add_client_options(reset)


def topic_scope(items: Sequence[str]) -> dict[str, list[int] | None]:
    """reset-offsets' --topic TOPIC[:P,P...] items: topic -> its partitions (None: all of them)."""
    topics: dict[str, list[int] | None] = {}
    for item in items:
        name, sep, partitions = item.partition(":")
        try:
            topics[name] = sorted(int(p) for p in partitions.split(",")) if sep else None
        except ValueError:
            raise UsageError(f"--topic {item!r}: expected TOPIC or TOPIC:P,P...") from None
    return topics


def group_parser(commands: Any, name: str, help_text: str) -> tuple[argparse.ArgumentParser, Any]:
    """A command with subcommands (`kbroker topic create`); without one it prints its help."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(subparser=parser, handler=None)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    return parser, sub


def fail(message: str, code: int = EXIT_FAILED) -> int:
    print(f"kbroker: error: {message}", file=sys.stderr)
    return code


def with_cluster(args: argparse.Namespace, action: Callable[[Cluster], int]) -> int:
    """Run `action` against the cluster of --bootstrap; Kafka errors and unreachable brokers become exit codes."""
    from kbroker.client.cluster import Cluster
    from kbroker.client.connection import KafkaError

    try:
        cluster = Cluster(args.bootstrap)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        with cluster:
            return action(cluster)
    except KafkaError as exc:
        return fail(str(exc))
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (ConnectionError, OSError) as exc:
        return fail(f"{exc} (bootstrap {args.bootstrap})", EXIT_UNREACHABLE)


class UsageError(Exception):
    """Arguments that parse but do not make sense together (exit status 2)."""


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False, default=str), flush=True)


def report_deleted(kind: str, names: Sequence[str], output: str) -> None:
    """What `topic delete` and `group delete` print once every name is deleted."""
    if output == "json":
        print_json([{kind: name, "deleted": True} for name in names])
    else:
        for name in names:
            print(f"deleted {kind} {name}")


def print_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> None:
    """Left-aligned columns, two spaces apart; None prints as '-'."""
    cells = [list(header)] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip())
    sys.stdout.flush()


def parse_pairs(items: Sequence[str], what: str) -> dict[str, str]:
    """KEY=VALUE items (the value may hold '=')."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} expects KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs
