"""`kbroker share-group list|describe|reset-offsets|delete-offsets|delete`: share groups (KIP-932), as
kafka-share-groups.sh manages them."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kbroker.cli.common import (
    EXIT_OK,
    UsageError,
    add_client_options,
    add_reset_arguments,
    group_parser,
    print_json,
    print_table,
    report_deleted,
    topic_scope,
    with_cluster,
)

if TYPE_CHECKING:
    from kbroker.client.cluster import Cluster

STATES = ("Empty", "Stable", "Dead")
RESET_EPILOG = """\
Like kafka-share-groups.sh --reset-offsets: sets where the group's share partitions start delivering. A dry
run (the plan is printed) unless --execute, and only while the group has no active members. Targets are kept
within each partition's log start and end offsets.

examples:
  kbroker share-group reset-offsets workers --topic jobs --to-earliest --execute
  kbroker share-group reset-offsets workers --topic jobs:0,1 --to-offset 100
  kbroker share-group reset-offsets workers --all-topics --to-datetime 2026-11-23T12:00:00.000 --execute"""


def add_parser(commands: Any) -> None:
    _, actions = group_parser(commands, "share-group", "list, describe, reset and delete share groups (KIP-932)")

    listing = actions.add_parser("list", help="list share groups and their states")
    listing.add_argument("--state", action="append", choices=STATES, metavar="STATE",
                         help=f"only groups in this state ({', '.join(STATES)}); repeatable")  # fmt: skip
    add_client_options(listing)
    listing.set_defaults(handler=lambda args: with_cluster(args, lambda c: _list(c, args)))

    describe = actions.add_parser("describe", help="state, members, assignments, start offsets and lag")
    _groups_argument(describe)
    add_client_options(describe)
    describe.set_defaults(handler=lambda args: with_cluster(args, lambda c: _describe(c, args)))

    reset = actions.add_parser("reset-offsets", help="move a group's start offsets (dry run unless --execute)",
                               epilog=RESET_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_reset_arguments(reset, "start offsets", shift_by=False, execute_help="set the new start offsets")
    reset.set_defaults(handler=lambda args: with_cluster(args, lambda c: _reset(c, args)))

    forget = actions.add_parser("delete-offsets", help="an empty group forgets its state for whole topics")
    forget.add_argument("group", metavar="GROUP")
    forget.add_argument("--topic", action="append", required=True, metavar="TOPIC", help="a topic; repeatable")
    add_client_options(forget)
    forget.set_defaults(handler=lambda args: with_cluster(args, lambda c: _delete_offsets(c, args)))

    delete = actions.add_parser("delete", help="delete share groups (they must have no active members)")
    _groups_argument(delete)
    add_client_options(delete)
    delete.set_defaults(handler=lambda args: with_cluster(args, lambda c: _delete(c, args)))


def _groups_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("groups", nargs="*", metavar="GROUP")
    parser.add_argument("--all-groups", action="store_true", help="every share group")


def _chosen_groups(cluster: Cluster, args: argparse.Namespace) -> list[str]:
    from kbroker.client.share_groups import list_share_groups

    if args.all_groups == bool(args.groups):
        raise UsageError("name one or more groups, or --all-groups")
    return [g["group"] for g in list_share_groups(cluster)] if args.all_groups else list(args.groups)


def _list(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.share_groups import list_share_groups

    groups = list_share_groups(cluster, args.state or ())
    if args.output == "json":
        print_json(groups)
    else:
        print_table([(g["group"], g["state"]) for g in groups], ("GROUP", "STATE"))
    return EXIT_OK


def _describe(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.share_groups import describe_share_group

    described = [describe_share_group(cluster, g) for g in _chosen_groups(cluster, args)]
    if args.output == "json":
        print_json(described)
        return EXIT_OK
    for n, d in enumerate(described):
        if n:
            print()
        c = d["coordinator"]
        total = sum(o["lag"] or 0 for o in d["offsets"])
        print(f"share group {d['group']}: state {d['state']}, coordinator {c['host']}:{c['port']} ({c['node_id']}), "
              f"group epoch {d['group_epoch']}, assignment epoch {d['assignment_epoch']}, "
              f"{len(d['members'])} members, total lag {total}")  # fmt: skip
        if d["members"]:
            rows = [
                (m["member_id"], m["client_id"], m["host"], sum(len(ps) for ps in m["assignment"].values()),
                 m["member_epoch"], ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in m["assignment"].items()) or "-")
                for m in d["members"]
            ]  # fmt: skip
            print_table(rows, ("CONSUMER-ID", "CLIENT-ID", "HOST", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"))
        if d["offsets"]:
            offset_rows = [(o["topic"], o["partition"], o["start_offset"], o["lag"]) for o in d["offsets"]]
            print_table(offset_rows, ("TOPIC", "PARTITION", "START-OFFSET", "LAG"))
        else:
            print(f"share group {d['group']} has no offset information")
    return EXIT_OK


def _scope(cluster: Cluster, args: argparse.Namespace) -> dict[str, list[int] | None]:
    from kbroker.client.share_groups import start_offsets

    if args.all_topics:
        return dict.fromkeys(sorted({o["topic"] for o in start_offsets(cluster, args.group)}))
    return topic_scope(args.topic)


def _reset(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.cli.common import fail
    from kbroker.cli.group import reset_spec
    from kbroker.client.groups import plan_reset
    from kbroker.client.share_groups import INACTIVE, alter_start_offsets, share_group_state, start_offsets

    spec = reset_spec(args)
    state = share_group_state(cluster, args.group)
    if state not in INACTIVE:
        return fail(f"share group {args.group} has active members (state {state}): "
                    "its offsets can only be reset while it is inactive")  # fmt: skip
    current = {}
    if state != "Dead":
        current = {(o["topic"], o["partition"]): o["start_offset"] for o in start_offsets(cluster, args.group)}
    plan = [
        {
            "topic": r["topic"],
            "partition": r["partition"],
            "start_offset": r["current_offset"],
            "new_offset": r["new_offset"],
        }
        for r in plan_reset(cluster, _scope(cluster, args), spec, current, require_partitions=True)
    ]
    if args.execute:
        alter_start_offsets(cluster, args.group, {(r["topic"], r["partition"]): r["new_offset"] for r in plan})
    if args.output == "json":
        print_json({"group": args.group, "executed": bool(args.execute), "offsets": plan})
    else:
        rows = [(args.group, r["topic"], r["partition"], r["start_offset"], r["new_offset"]) for r in plan]
        print_table(rows, ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "NEW-OFFSET"))
        if not args.execute:
            print("dry run: nothing changed (add --execute to set these start offsets)", file=sys.stderr)
    return EXIT_OK


def _delete_offsets(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.cli.common import EXIT_FAILED
    from kbroker.client.share_groups import delete_start_offsets

    results = delete_start_offsets(cluster, args.group, args.topic)
    if args.output == "json":
        print_json({"group": args.group, "topics": [
            {"topic": t, "deleted": e is None, "error": None if e is None else e.code.name} for t, e in results.items()
        ]})  # fmt: skip
    else:
        print_table([(t, "deleted" if e is None else f"error: {e}") for t, e in results.items()], ("TOPIC", "STATUS"))
    return EXIT_OK if all(e is None for e in results.values()) else EXIT_FAILED


def _delete(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.cli.common import fail
    from kbroker.client.connection import KafkaError
    from kbroker.client.share_groups import delete_share_group, list_share_groups

    listed = {g["group"]: g["state"] for g in list_share_groups(cluster)}
    groups = _chosen_groups(cluster, args)
    deleted, errors = [], []
    for group in dict.fromkeys(groups):
        try:
            delete_share_group(cluster, group, listed)
            deleted.append(group)
        except KafkaError as error:
            errors.append(str(error))
    report_deleted("group", deleted, args.output)
    return fail("; ".join(errors)) if errors else EXIT_OK
