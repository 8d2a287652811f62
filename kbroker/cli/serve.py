"""`kbroker serve` runs the broker, `kbroker configs` prints the property table."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the parser is built for every command: the broker's modules load only when serving
    from kbroker.config import BrokerConfig
    from kbroker.config_defs import BrokerProperty

EXIT_CONFIG = 2
ENVIRONMENT = {
    "listen": "KBROKER_LISTEN",
    "advertised_listener": "KBROKER_ADVERTISED_LISTENER",
    "data_dir": "KBROKER_DATA_DIR",
    "http_listen": "KBROKER_HTTP_LISTEN",
    "log_level": "KBROKER_LOG_LEVEL",
    "log_format": "KBROKER_LOG_FORMAT",
}

_SERVE_OPTIONS = """\
serve options ('kbroker serve --help' has the details):
  --listen HOST:PORT               address to accept clients on (default 127.0.0.1:9092)
  --advertised-listener HOST:PORT  address given to clients (default: the listen address)
  --data-dir DIR                   where the logs live (default ./data)
  --http-listen HOST:PORT          HTTP listener (REST Proxy v2, health, metrics); default none
  --config KEY=VALUE               a broker property, repeatable; wins over --config-file
  --config-file FILE               a Kafka server.properties file
  --log-level LEVEL                debug, info, warning, error or critical (default info)
  --log-format FORMAT              console (key=value) or json (default console)"""

_PRECEDENCE = """\
precedence: --listen, --advertised-listener and --data-dir (or the environment variables
KBROKER_LISTEN, KBROKER_ADVERTISED_LISTENER, KBROKER_DATA_DIR) win over the properties listeners,
advertised.listeners and log.dirs/log.dir; --config KEY=VALUE (the last one given wins) wins over
the apache/kafka image's KAFKA_* environment variables (KAFKA_LISTENERS is listeners,
KAFKA_NUM_PARTITIONS is num.partitions: '_' is '.', '__' is '_', '___' is '-'), which win over
--config-file; all win over Kafka's defaults. A KAFKA_* variable naming no property kbroker knows is
skipped with a warning. KBROKER_LOG_LEVEL and KBROKER_LOG_FORMAT set the
logging defaults. Listening on all interfaces advertises 127.0.0.1 unless told otherwise.
An unknown property or a bad value stops kbroker with exit status 2 and a one-line message."""


def _property_names() -> str:
    from kbroker.config_defs import BROKER_PROPERTIES

    names = ", ".join(name for name, prop in BROKER_PROPERTIES.items() if not prop.ignored)
    return textwrap.fill(names, width=100, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)


def _env(name: str) -> str | None:
    return os.environ.get(ENVIRONMENT[name]) or None


def properties_help() -> str:
    from kbroker.config_defs import BROKER_PROPERTIES

    ignored = sum(1 for prop in BROKER_PROPERTIES.values() if prop.ignored)
    return (
        "broker properties (Kafka's names; 'kbroker configs' lists types, defaults, ranges and docs):\n"
        + _property_names()
        + f"\n\nand {ignored} more of Kafka's, accepted so Kafka's own server.properties loads but without effect "
        "(a warning is logged when one is set; 'kbroker configs' lists them with the reason)."
    )


def top_level_epilog() -> str:
    return f"{_SERVE_OPTIONS}\n\n{_PRECEDENCE}\n\n{properties_help()}"


def add_serve(commands: argparse._SubParsersAction[Any]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the broker",
        description="Run the broker until SIGTERM or SIGINT.",
        epilog=lambda: (  # type: ignore[arg-type]  # _Parser renders a callable epilog when printing help
            f"{_PRECEDENCE}\n\nexamples:\n"
            "  kbroker serve --config num.partitions=3 --config log.retention.hours=24\n"
            "  kbroker serve --listen 0.0.0.0:9092 --advertised-listener broker.example:9092\n"
            f"  kbroker serve --config-file config/server.properties\n\n{properties_help()}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--listen", metavar="HOST:PORT", default=_env("listen"),
                       help="address to accept clients on; :PORT or 0.0.0.0 for all interfaces, port 0 for any "
                       "free port (default 127.0.0.1:9092, or the listeners property)")  # fmt: skip
    serve.add_argument("--advertised-listener", metavar="HOST:PORT", default=_env("advertised_listener"),
                       help="address clients are told to connect to (default: the listen address, 127.0.0.1 "
                       "when listening on all interfaces, or the advertised.listeners property)")  # fmt: skip
    serve.add_argument("--data-dir", metavar="DIR", default=_env("data_dir"),
                       help="directory of the logs and broker state (default ./data, or log.dirs/log.dir)")  # fmt: skip
    serve.add_argument("--http-listen", metavar="HOST:PORT", default=_env("http_listen"),
                       help="serve HTTP (REST Proxy v2, /health, /ready, /metrics) here: a shortcut for "
                       "--config kbroker.http.listeners=http://HOST:PORT (env KBROKER_HTTP_LISTEN)")  # fmt: skip
    serve.add_argument("--config", metavar="KEY=VALUE", action="append", default=[],
                       help="set a broker property (Kafka's name); repeatable; wins over --config-file")  # fmt: skip
    serve.add_argument("--config-file", metavar="FILE",
                       help="read broker properties from a Java properties file (Kafka's server.properties)")  # fmt: skip
    serve.add_argument("--log-level", metavar="LEVEL", default=_env("log_level") or "info",
                       help="one of debug, info, warning, error, critical (default info)")  # fmt: skip
    serve.add_argument("--log-format", metavar="FORMAT", default=_env("log_format") or "console",
                       help="console (one key=value line per event) or json (one object per line); default console")  # fmt: skip
    serve.set_defaults(handler=serve_command)


def add_configs(commands: argparse._SubParsersAction[Any]) -> None:
    configs = commands.add_parser(
        "configs",
        help="print the supported configuration properties",
        description="Print every broker property (or, with --topic, every topic-level config) kbroker accepts.",
    )
    configs.add_argument("--topic", action="store_true", help="list topic-level configs instead")
    configs.set_defaults(handler=configs_command)


# --------------------------------------------------------------------------- serve


def environment_properties(environ: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The apache/kafka image's KAFKA_* variables: ({property: value} of those kbroker knows,
    {variable: property} of those naming a property it does not know)."""
    from kbroker.config import LISTENER_PREFIX
    from kbroker.config_defs import BROKER_PROPERTIES
    from kbroker.config_env import property_name

    known: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for variable in sorted(environ):
        name = property_name(variable)
        if name is None:
            continue
        if name in BROKER_PROPERTIES or name.startswith(LISTENER_PREFIX):
            known[name] = environ[variable]
        else:
            unknown[variable] = name
    return known, unknown


def load_config(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None, skipped: dict[str, str] | None = None
) -> BrokerConfig:
    """Merge --config-file, the KAFKA_* variables of `environ` (default: none) and --config pairs (later
    wins) and build the BrokerConfig; KAFKA_* variables naming unknown properties go to `skipped`."""
    from kbroker.config import BrokerConfig, ConfigError, read_properties_file
    from kbroker.logging_setup import FORMATS, LEVELS

    if args.log_level.lower() not in LEVELS:
        raise ConfigError(f"unknown log level {args.log_level!r}: use one of {', '.join(LEVELS)}")
    if args.log_format not in FORMATS:
        raise ConfigError(f"unknown log format {args.log_format!r}: use one of {', '.join(FORMATS)}")
    properties = read_properties_file(args.config_file) if args.config_file else {}
    from_environment, unknown = environment_properties(environ or {})
    properties.update(from_environment)
    if skipped is not None:
        skipped.update(unknown)
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config expects KEY=VALUE, got {item!r}")
        properties[key.strip()] = value
    if getattr(args, "http_listen", None):
        properties["kbroker.http.listeners"] = f"http://{args.http_listen}"
    return BrokerConfig.build(
        properties, listen=args.listen, advertised_listener=args.advertised_listener, data_dir=args.data_dir
    )


def serve_command(args: argparse.Namespace) -> int:
    # Loading the configuration, logging and the broker's modules allocates tens of thousands of objects that
    # live as long as the process and frees next to nothing: no cyclic-collector passes over them meanwhile
    # (~35 passes, 3-6 ms of a start), and once loaded they leave its reach (gc.freeze, as the server does
    # with what the start built once it serves), so that turning it on again does not scan them all at once.
    gc.disable()
    try:
        return _serve(args)
    finally:
        gc.enable()


def _serve(args: argparse.Namespace) -> int:
    from kbroker.config import ConfigError
    from kbroker.config_defs import BROKER_PROPERTIES

    skipped: dict[str, str] = {}
    try:
        config = load_config(args, os.environ, skipped)
        if config.get_list("kbroker.http.listeners"):
            from kbroker.http.listeners import parse_http_listener

            for item in config.get_list("kbroker.http.listeners"):
                parse_http_listener(item)
    except ConfigError as exc:
        print(f"kbroker: error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    import structlog

    from kbroker.logging_setup import configure_logging

    configure_logging(args.log_level, args.log_format)
    log = structlog.get_logger("kbroker")
    for name in config.ignored_settings():
        log.warning("config_ignored", name=name, reason=BROKER_PROPERTIES[name].note)
    if skipped:
        log.warning("environment_unknown_properties", variables=skipped)
    if os.environ.get("CLUSTER_ID"):
        log.info("environment_ignored", variable="CLUSTER_ID", reason="formats KRaft storage; kbroker has no KRaft")
    from kbroker.log.files import raise_open_file_limit

    soft, hard = raise_open_file_limit()  # thousands of partitions need descriptors (more: log/files.py)
    log.info("open_file_limit", soft=soft, hard=hard)
    try:
        server = importlib.import_module("kbroker.server")  # late: the CLI and --help need not load it
    except ModuleNotFoundError as exc:
        if exc.name != "kbroker.server":
            raise
        print("kbroker: error: this build has no kbroker.server module", file=sys.stderr)
        return 1
    gc.freeze()
    gc.enable()
    return int(server.run(config))


# --------------------------------------------------------------------------- configs


def configs_command(args: argparse.Namespace) -> int:
    try:
        print(render_topic_table() if args.topic else render_broker_table(), flush=True)
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def render_broker_table() -> str:
    from kbroker.config_defs import SECTIONS

    lines: list[str] = []
    for title, props in SECTIONS:
        lines.append(f"{title}:")
        for prop in props:
            lines.extend(_describe_property(prop))
        lines.append("")
    return "\n".join(lines).rstrip()


def _describe_property(prop: BrokerProperty) -> list[str]:
    from kbroker.config_defs import render_value

    default = render_value(prop.default)
    facts = [prop.type.label, "no default" if default is None else f"default {default or '(empty)'}"]
    if prop.validator is not None:
        facts.append(f"valid {prop.validator.describe()}")
    if prop.topic_name:
        facts.append(f"topic config {prop.topic_name}")
    lines = [f"  {prop.name}  ({', '.join(facts)})", f"      {prop.doc}"]
    if prop.note:
        lines.append(f"      kbroker: {prop.note}")
    return lines


def render_topic_table() -> str:
    from kbroker.config_defs import TOPIC_PROPERTIES, render_value

    lines = ["Topic-level configs (CreateTopics, DescribeConfigs); defaults come from the broker properties:"]
    for prop in TOPIC_PROPERTIES.values():
        if prop.synonyms:
            facts = [prop.type.label, "default from " + " > ".join(s.name for s in prop.synonyms)]
        else:
            facts = [prop.type.label, f"default {render_value(prop.default) or '(empty)'}"]
        if prop.validator is not None:
            facts.append(f"valid {prop.validator.describe()}")
        lines.extend([f"  {prop.name}  ({', '.join(facts)})", f"      {prop.doc}"])
    return "\n".join(lines)
