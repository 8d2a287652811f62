"""`kbroker topic create|list|describe|alter-config|delete`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import (
    EXIT_OK,
    add_client_options,
    group_parser,
    parse_pairs,
    print_json,
    print_table,
    report_deleted,
    with_cluster,
)

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster


def add_parser(commands: Any) -> None:
    _, actions = group_parser(commands, "topic", "create, list, describe, reconfigure and delete topics")

    create = actions.add_parser("create", help="create topics")
    create.add_argument("topics", nargs="+", metavar="TOPIC")
    create.add_argument(
        "-p", "--partitions", type=int, default=-1, help="partition count (default: the broker's num.partitions)"
    )
    create.add_argument("-r", "--replication-factor", type=int, default=-1,
                        help="replicas per partition (default: the broker's default.replication.factor)")  # fmt: skip
    create.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config (Kafka's name, e.g. retention.ms=60000); repeatable")  # fmt: skip
    add_client_options(create)
    create.set_defaults(handler=lambda args: with_cluster(args, lambda c: _create(c, args)))

    listing = actions.add_parser("list", help="list topics")
    listing.add_argument("-i", "--internal", action="store_true", help="include internal topics")
    add_client_options(listing)
    listing.set_defaults(handler=lambda args: with_cluster(args, lambda c: _list(c, args)))

    describe = actions.add_parser("describe", help="partitions, leaders, offsets and configs of topics")
    describe.add_argument("topics", nargs="+", metavar="TOPIC")
    add_client_options(describe)
    describe.set_defaults(handler=lambda args: with_cluster(args, lambda c: _describe(c, args)))

    alter = actions.add_parser("alter-config", help="set or remove topic configs (IncrementalAlterConfigs)")
    alter.add_argument("topics", nargs="+", metavar="TOPIC")
    alter.add_argument("-s", "--set", action="append", default=[], metavar="KEY=VALUE", help="set a config; repeatable")
    alter.add_argument("-d", "--delete", action="append", default=[], metavar="KEY",
                       help="remove an override (back to the broker's default); repeatable")  # fmt: skip
    add_client_options(alter)
    alter.set_defaults(handler=lambda args: with_cluster(args, lambda c: _alter(c, args)))

    delete = actions.add_parser("delete", help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    add_client_options(delete)
    delete.set_defaults(handler=lambda args: with_cluster(args, lambda c: _delete(c, args)))


def _create(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.admin import create_topic

    configs = parse_pairs(args.config, "--config")
    created = [create_topic(cluster, t, args.partitions, args.replication_factor, configs) for t in args.topics]
    if args.output == "json":
        print_json(created)
    else:
        for c in created:
            print(
                f"created topic {c['topic']} ({c['partitions']} partitions, replication factor {c['replication_factor']})"
            )
    return EXIT_OK


def _list(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.admin import list_topics

    topics = list_topics(cluster, include_internal=args.internal)
    if args.output == "json":
        print_json(topics)
    else:
        print_table(
            [(t["topic"], t["partitions"], "yes" if t["internal"] else "") for t in topics],
            ("TOPIC", "PARTITIONS", "INTERNAL"),
        )
    return EXIT_OK


def _describe(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.admin import describe_topic

    described = [describe_topic(cluster, t) for t in args.topics]
    if args.output == "json":
        print_json(described)
        return EXIT_OK
    for n, d in enumerate(described):
        if n:
            print()
        print(f"topic {d['topic']}: {len(d['partitions'])} partitions{' (internal)' if d['internal'] else ''}")
        rows = [
            (p["partition"], p["leader"], ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])),
             p["log_start_offset"], p["log_end_offset"])
            for p in d["partitions"]
        ]  # fmt: skip
        print_table(rows, ("PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START-OFFSET", "LOG-END-OFFSET"))
        print()
        print_table([(c["name"], c["value"], c["source"]) for c in d["configs"]], ("CONFIG", "VALUE", "SOURCE"))
    return EXIT_OK


def _alter(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.cli.common import UsageError
    from kbroker.client.admin import alter_topic_configs

    settings = parse_pairs(args.set, "--set")
    if not settings and not args.delete:
        raise UsageError("alter-config needs --set KEY=VALUE or --delete KEY")
    for topic in args.topics:
        alter_topic_configs(cluster, topic, settings, args.delete)
    if args.output == "json":
        print_json([{"topic": t, "set": settings, "deleted": args.delete} for t in args.topics])
    else:
        for topic in args.topics:
            print(f"altered configs of {topic}")
    return EXIT_OK


def _delete(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.admin import delete_topic

    for topic in args.topics:
        delete_topic(cluster, topic)
    report_deleted("topic", args.topics, args.output)
    return EXIT_OK
