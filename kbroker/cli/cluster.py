"""`kbroker cluster info`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import EXIT_OK, add_client_options, group_parser, print_json, print_table, with_cluster

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster


def add_parser(commands: Any) -> None:
    _, actions = group_parser(commands, "cluster", "facts about the cluster")
    info = actions.add_parser("info", help="cluster id, controller, brokers and the APIs the broker offers")
    add_client_options(info)
    info.set_defaults(handler=lambda args: with_cluster(args, lambda c: _info(c, args)))


def _info(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.admin import cluster_info

    info = cluster_info(cluster)
    if args.output == "json":
        print_json(info)
        return EXIT_OK
    print(f"cluster id: {info['cluster_id']}")
    print(f"controller: {info['controller_id']}")
    print_table([(b["node_id"], b["host"], b["port"]) for b in info["brokers"]], ("BROKER", "HOST", "PORT"))
    return EXIT_OK
