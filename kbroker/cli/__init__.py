"""The `kbroker` command line: `serve` runs the broker; `topic`, `produce`, `consume`, `group` and `cluster`
are a client of any Kafka-protocol broker (kbroker or Apache Kafka) built on the project's own codec.

Each command's module declares its arguments (argparse only) and imports what it runs when it runs, so
`kbroker produce` loads neither the broker nor asyncio, and `kbroker serve` loads no client code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from kbroker import __version__
from kbroker.cli import cluster, common, consume, group, produce, serve, topic
from kbroker.cli.serve import configs_command, load_config, serve_command

__all__ = ["build_parser", "configs_command", "load_config", "main", "serve_command"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line with exit status 2; an epilog may be a function, called only to print help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            epilog: Callable[[], str] = self.epilog
            self.epilog = epilog()
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kbroker",
        description="kbroker: a Kafka-protocol broker, and a command-line client of any Kafka broker.",
        epilog=lambda: f"{common.OVERVIEW}\n\n{serve.top_level_epilog()}",  # type: ignore[arg-type]
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kbroker {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    serve.add_serve(commands)
    serve.add_configs(commands)
    for module in (topic, produce, consume, group, cluster):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = getattr(args, "handler", None)
    if handler is None:  # a command group without its subcommand, e.g. `kbroker topic`
        args.subparser.print_help(sys.stderr)
        return EXIT_USAGE
    return int(handler(args))
