"""Turn a JUnit XML report of the compatibility suite into the client x scenario matrix of docs/compatibility.md.

.venv/bin/python -m tests.compat.matrix report.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree

from tests.compat.clients.registry import FACTORIES

SCENARIOS: list[tuple[str, str]] = [
    ("test_admin_topic_lifecycle", "1 admin: create, describe, configs, alter, add partitions, delete"),
    ("test_admin_errors", "1 admin errors: create an existing topic, delete an unknown one"),
    ("test_produce_consume_keyed_with_headers", "2 1,000 keyed records, headers, timestamps, acks=all"),
    ("test_produce_acks[1]", "2b acks=1"),
    ("test_produce_acks[0]", "2b acks=0"),
    ("test_compression_round_trip[gzip]", "3 gzip"),
    ("test_compression_round_trip[snappy]", "3 snappy"),
    ("test_compression_round_trip[lz4]", "3 lz4"),
    ("test_compression_round_trip[zstd]", "3 zstd"),
    ("test_large_record", "4 900 KiB record"),
    ("test_null_key_empty_and_null_values", "4 null key, empty and null value"),
    ("test_seek_to_offset", "5 seek to an offset"),
    ("test_out_of_range_resets_to_earliest", "5 out of range, reset earliest"),
    ("test_out_of_range_resets_to_latest", "5 out of range, reset latest"),
    ("test_out_of_range_without_reset_fails", "5 out of range, reset none"),
    ("test_list_offsets", "6 ListOffsets earliest, latest, by timestamp"),
    ("test_list_offsets_after_last_record", "6 ListOffsets after the last record (-1)"),
    ("test_auto_create_on_produce", "7 auto-create on produce"),
    ("test_auto_create_on_metadata", "7 auto-create on metadata"),
    ("test_long_poll_wakes_on_produce", "8 long poll"),
    ("test_delete_records", "9 DeleteRecords"),
    ("test_record_larger_than_max_message_bytes_is_rejected", "max.message.bytes rejects a larger record"),
    ("test_log_append_time_replaces_producer_timestamps", "LogAppendTime topic"),
    ("test_three_members_share_partitions", "G1 3 members, 6 partitions: one member per partition, each record once"),
    ("test_member_leaves", "G2 a member leaves: the others take over, read the new records"),
    ("test_member_killed", "G2 a member is killed (SIGKILL): taken over after its session timeout"),
    ("test_resume_after_commit_close_restart", "G3 commit, close, restart: resumes at the committed offsets"),
    ("test_group_resumes_after_kill9", "G3 the same across a kill -9 of the broker"),
    ("test_two_groups_each_read_everything", "G4 two groups each read everything"),
    ("test_describe_group_and_lag", "G5 describe group: members, assignment, committed offsets, lag"),
    ("test_cooperative_sticky", "G6 cooperative-sticky: a member leaves, the others keep their partitions"),
    ("test_static_membership", "G6 static membership: close and come back without a rebalance"),
    ("test_idempotent_produce", "E1 idempotent producer: producer id and sequences in the batches"),
    ("test_idempotent_run_survives_kill9", "E1 idempotent acks=all run across a kill -9 (fsync before ack)"),
    ("test_read_committed_sees_committed_only", "E2 read_committed: committed records only"),
    ("test_transactions_v2_bump_the_epoch_per_transaction", "E2b transactions v2: an epoch bump per transaction"),
    ("test_read_uncommitted_sees_both", "E2 read_uncommitted: committed and aborted records"),
    ("test_second_producer_fences_the_first", "E3 a second producer with the same transactional id fences the first"),
    ("test_open_transaction_aborted_after_its_timeout", "E4 an open transaction is aborted after its timeout"),
    ("test_open_transaction_after_kill9", "E5 an open transaction across a kill -9 ends aborted"),
    ("test_consume_transform_produce", "E6 consume-transform-produce, offsets in the transaction"),
]


def parse_case(name: str) -> tuple[str, str] | None:
    """(scenario key, client) of a test case name like ``test_compression_round_trip[kcat-gzip]``."""
    if "[" not in name:
        return None
    function, params = name[:-1].split("[", 1)
    for client in sorted(FACTORIES, key=len, reverse=True):
        if params == client:
            return function, client
        if params.startswith(client + "-"):
            return f"{function}[{params[len(client) + 1 :]}]", client
    return None


def outcome(case: ElementTree.Element) -> str:
    skipped = case.find("skipped")
    if skipped is not None:
        message = skipped.get("message", "")
        if "broker does not implement" in message:
            return "not yet"
        if "kbroker only" in message:
            return "kbroker only"
        if "not wired" in message:
            return "not wired"
        return "n/a"
    if case.find("failure") is not None or case.find("error") is not None:
        return "FAIL"
    return "pass"


def matrix(path: str) -> str:
    cells: dict[tuple[str, str], str] = {}
    reasons: dict[tuple[str, str], str] = {}
    for case in ElementTree.parse(path).iter("testcase"):
        parsed = parse_case(case.get("name", ""))
        if parsed is None:
            continue
        cells[parsed] = outcome(case)
        skipped = case.find("skipped")
        if skipped is not None:
            reasons[parsed] = skipped.get("message", "").removeprefix("Skipped: ")
    clients = [c for c in FACTORIES if any(client == c for _, client in cells)]
    lines = ["| scenario | " + " | ".join(clients) + " |", "|---|" + "---|" * len(clients)]
    for key, label in SCENARIOS:
        row = [cells.get((key, client), "-") for client in clients]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    notes = sorted(
        {
            f"- {client}: {reason}"
            for (_, client), reason in reasons.items()
            if cells[(_, client)] in ("n/a", "not wired")
        }
    )
    return "\n".join(lines + ([""] + ["n/a (the client cannot):"] + notes if notes else []))


if __name__ == "__main__":
    print(matrix(sys.argv[1]))
