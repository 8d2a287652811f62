"""The `kbroker` command line: `serve` runs the broker; `topic`, `produce`, `consume`, `group`, `share-group`
and `cluster` are a client of any Kafka-protocol broker (kbroker or Apache Kafka) built on the project's own codec;
`queue` is a client of kbroker's virtual queues over its HTTP listener.

Each command's module declares its arguments (argparse only) and imports what it runs when it runs, so
`kbroker produce` loads neither the broker nor asyncio, and `kbroker serve` loads no client code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from kbroker import __version__
from kbroker.cli import serve
from kbroker.cli.serve import configs_command, load_config, serve_command

__all__ = ["build_parser", "configs_command", "load_config", "main", "serve_command"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line with exit status 2; an epilog may be a function, called only to print help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            epilog: Callable[[], str] = self.epilog
            self.epilog = epilog()
        return super().format_help()


SERVER_COMMANDS = ("serve", "configs")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; for `command` "serve" or "configs" only that part (the client commands' modules
    stay unloaded: start-up time)."""
    parser = _Parser(
        prog="kbroker",
        description="kbroker: a Kafka-protocol broker, and a command-line client of any Kafka broker.",
        epilog=lambda: f"{_overview()}\n\n{serve.top_level_epilog()}",  # type: ignore[arg-type]
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kbroker {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    serve.add_serve(commands)
    serve.add_configs(commands)
    if command not in SERVER_COMMANDS:
        from kbroker.cli import cluster, consume, group, produce, queue, share_group, topic

        for module in (topic, produce, consume, group, share_group, cluster, queue):
            module.add_parser(commands)
    return parser


def _overview() -> str:
    from kbroker.cli.common import OVERVIEW

    return OVERVIEW


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = getattr(args, "handler", None)
    if handler is None:  # a command group without its subcommand, e.g. `kbroker topic`
        args.subparser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(handler(args))
    except KeyboardInterrupt:  # Ctrl-C outside a command's own handling: no traceback
        return EXIT_INTERRUPTED
