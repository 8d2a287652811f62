"""`kbroker group list|describe|reset-offsets|delete`."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
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
    from kbroker.client.groups import ResetSpec

RESET_EPILOG = """\
Like kafka-consumer-groups.sh --reset-offsets: a dry run (the plan is printed) unless --execute, and only
while the group has no active members. Targets are clamped to each partition's log start and end offsets.

examples:
  kbroker group reset-offsets billing --topic orders --to-earliest --execute
  kbroker group reset-offsets billing --topic orders:0,1 --shift-by -10
  kbroker group reset-offsets billing --all-topics --to-datetime 2026-11-23T12:00:00.000 --execute"""
INACTIVE = ("Empty", "Dead", "")


def add_parser(commands: Any) -> None:
    _, actions = group_parser(commands, "group", "list, describe, reset and delete consumer groups")

    listing = actions.add_parser("list", help="list consumer groups")
    add_client_options(listing)
    listing.set_defaults(handler=lambda args: with_cluster(args, lambda c: _list(c, args)))

    describe = actions.add_parser("describe", help="a group's state, members and per-partition lag")
    describe.add_argument("groups", nargs="+", metavar="GROUP")
    add_client_options(describe)
    describe.set_defaults(handler=lambda args: with_cluster(args, lambda c: _describe(c, args)))

    reset = actions.add_parser("reset-offsets", help="move a group's committed offsets (dry run unless --execute)",
                               epilog=RESET_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_reset_arguments(reset, "offsets", shift_by=True, execute_help="commit the new offsets")
    reset.set_defaults(handler=lambda args: with_cluster(args, lambda c: _reset(c, args)))

    delete = actions.add_parser("delete", help="delete groups (they must have no active members)")
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    add_client_options(delete)
    delete.set_defaults(handler=lambda args: with_cluster(args, lambda c: _delete(c, args)))


def _list(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.groups import list_groups

    groups = list_groups(cluster)
    if args.output == "json":
        print_json(groups)
    else:
        print_table(
            [(g["group"], g["protocol_type"] or "", g["state"]) for g in groups], ("GROUP", "PROTOCOL-TYPE", "STATE")
        )
    return EXIT_OK


def _describe(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.groups import describe_group

    described = [describe_group(cluster, g) for g in args.groups]
    if args.output == "json":
        print_json(described)
        return EXIT_OK
    for n, d in enumerate(described):
        if n:
            print()
        total = sum(o["lag"] or 0 for o in d["offsets"])
        print(
            f"group {d['group']}: state {d['state']}, {len(d['members'])} members, protocol {d['protocol'] or '-'}, total lag {total}"
        )
        if d["members"]:
            rows = [
                (m["member_id"], m["client_id"], m["host"],
                 " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(m["assignment"].items())) or "-")
                for m in d["members"]
            ]  # fmt: skip
            print_table(rows, ("MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"))
        if d["offsets"]:
            offset_rows = [(o["topic"], o["partition"], o["current_offset"], o["log_end_offset"], o["lag"],
                            o["member_id"]) for o in d["offsets"]]  # fmt: skip
            print_table(offset_rows, ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"))
    return EXIT_OK


def parse_datetime_ms(text: str) -> int:
    """Kafka's reset format (yyyy-MM-ddTHH:mm:SS.sss, optionally with a zone) as ms since the epoch."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss[+HH:MM|Z]") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as Kafka's tool reads a zoneless time
    return int(moment.timestamp() * 1000)


def reset_spec(args: argparse.Namespace) -> ResetSpec:
    from kbroker.client.groups import ResetSpec

    return ResetSpec(
        to_earliest=args.to_earliest,
        to_latest=args.to_latest,
        to_offset=args.to_offset,
        shift_by=getattr(args, "shift_by", None),  # share-group reset-offsets has no --shift-by
        to_datetime_ms=parse_datetime_ms(args.to_datetime) if args.to_datetime else None,
    )


def _scope(args: argparse.Namespace, cluster: Cluster) -> dict[str, list[int] | None]:
    from kbroker.client.consume import committed_offsets

    if args.all_topics:
        return dict.fromkeys(sorted({t for t, _ in committed_offsets(cluster, args.group, None)}))
    return topic_scope(args.topic)


def _reset(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.cli.common import fail
    from kbroker.client.consume import commit_offsets, committed_offsets
    from kbroker.client.groups import group_state, plan_reset

    spec = reset_spec(args)
    state = group_state(cluster, args.group)
    if state not in INACTIVE:
        return fail(f"offsets of group {args.group} can only be reset while it is inactive; its state is {state}")
    plan = plan_reset(cluster, _scope(args, cluster), spec, committed_offsets(cluster, args.group, None))
    if args.execute:
        commit_offsets(cluster, args.group, {(r["topic"], r["partition"]): r["new_offset"] for r in plan})
    if args.output == "json":
        print_json({"group": args.group, "executed": bool(args.execute), "offsets": plan})
    else:
        rows = [(args.group, r["topic"], r["partition"], r["current_offset"], r["new_offset"]) for r in plan]
        print_table(rows, ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"))
        if not args.execute:
            print("dry run: nothing committed (add --execute to commit these offsets)", file=sys.stderr)
    return EXIT_OK


def _delete(cluster: Cluster, args: argparse.Namespace) -> int:
    from kbroker.client.groups import delete_group

    for group in args.groups:
        delete_group(cluster, group)
    report_deleted("group", args.groups, args.output)
    return EXIT_OK
