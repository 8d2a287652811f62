"""Every client command of `kbroker`, run as a process against kbroker and against Apache Kafka 4.3.1.

One broker of each kind serves the module (pytest groups the tests by broker). What `kbroker produce` writes
is read back with confluent-kafka, and what confluent-kafka writes is read with `kbroker consume`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cli.brokers import Cli, each_broker, unique
from tests.process import REPO

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module", params=["kbroker", "kafka"])
def cli(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    yield from each_broker(request.param, tmp_path_factory)


def _topic(cli: Cli, partitions: int = 3, *configs: str) -> str:
    name = unique("cli")
    cli.ok("topic", "create", name, "-p", str(partitions), *[a for c in configs for a in ("-c", c)])
    return name


def _read_with_confluent(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes | None, bytes, list]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"), "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        out = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            out.append((message.partition(), message.key(), message.value(), message.headers() or []))
        return sorted(out, key=lambda m: (m[0], m[2]))
    finally:
        consumer.close()


# -- cluster and topics ----------------------------------------------------------------------------------------


def test_cluster_info(cli: Cli) -> None:
    info = cli.json("cluster", "info")
    assert info["cluster_id"] and [b["port"] for b in info["brokers"]] == [int(cli.bootstrap.rsplit(":", 1)[1])]
    assert info["controller_id"] in [b["node_id"] for b in info["brokers"]] or info["controller_id"] >= 0
    assert b"cluster id:" in cli.ok("cluster", "info")


def test_topic_create_list_describe_alter_delete(cli: Cli) -> None:
    name = unique("topic")
    created = cli.json("topic", "create", name, "-p", "3", "-c", "retention.ms=60000")
    assert created == [{"topic": name, "partitions": 3, "replication_factor": 1}]
    assert {"topic": name, "partitions": 3, "internal": False} in cli.json("topic", "list")

    [described] = cli.json("topic", "describe", name)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(p["log_start_offset"] == p["log_end_offset"] == 0 for p in described["partitions"])
    configs = {c["name"]: c for c in described["configs"]}
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["source"]) == ("60000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["cleanup.policy"]["source"] == "DEFAULT_CONFIG"
    assert b"LOG-END-OFFSET" in cli.ok("topic", "describe", name)

    cli.ok("topic", "alter-config", name, "--set", "retention.ms=120000", "--set", "segment.ms=3600000")
    configs = {c["name"]: c for c in cli.json("topic", "describe", name)[0]["configs"]}
    assert (configs["retention.ms"]["value"], configs["segment.ms"]["value"]) == ("120000", "3600000")
    cli.ok("topic", "alter-config", name, "--delete", "retention.ms")
    configs = {c["name"]: c for c in cli.json("topic", "describe", name)[0]["configs"]}
    assert configs["retention.ms"]["source"] == "DEFAULT_CONFIG"

    assert cli.json("topic", "delete", name) == [{"topic": name, "deleted": True}]
    gone = cli.run("topic", "describe", name)
    assert gone.returncode == 1 and b"UNKNOWN_TOPIC_OR_PARTITION" in gone.stderr


def test_topic_errors_exit_1_with_kafkas_error_name(cli: Cli) -> None:
    name = _topic(cli, 1)
    again = cli.run("topic", "create", name)
    assert again.returncode == 1 and b"TOPIC_ALREADY_EXISTS" in again.stderr
    bad = cli.run("topic", "create", unique("bad"), "-c", "retention.ms=-5")
    assert bad.returncode == 1 and b"INVALID_CONFIG" in bad.stderr
    unknown = cli.run("topic", "alter-config", name, "--set", "no.such.config=1")
    assert unknown.returncode == 1 and b"INVALID_CONFIG" in unknown.stderr


# -- produce and consume ---------------------------------------------------------------------------------------


def test_produce_lines_with_keys_headers_and_read_them_with_confluent(cli: Cli) -> None:
    topic = _topic(cli, 3)
    lines = b"".join(b"key-%d:value-%d\n" % (i, i) for i in range(20)) + b"no separator\n"
    produced = cli.lines("produce", topic, "--key-separator", ":", "-H", "src=cli", "-H", "n=1", "--format", "json",
                         stdin=lines)  # fmt: skip
    assert len(produced) == 21 and all(p["offset"] >= 0 for p in produced)

    # confluent-kafka with Kafka's (Java) partitioner places each key where `kbroker produce` did.
    producer = Producer({"bootstrap.servers": cli.bootstrap, "partitioner": "murmur2_random"})
    placed = {}
    for i in range(20):
        producer.produce(topic, key=b"key-%d" % i, value=b"probe",
                         on_delivery=lambda err, msg: placed.__setitem__(msg.key(), msg.partition()))  # fmt: skip
    producer.flush(30)
    assert {b"key-%d" % i: produced[i]["partition"] for i in range(20)} == placed

    read = [m for m in _read_with_confluent(cli.bootstrap, topic, 41) if m[2] != b"probe"]
    expected = sorted(
        [(produced[i]["partition"], b"key-%d" % i, b"value-%d" % i, [("src", b"cli"), ("n", b"1")]) for i in range(20)]
        + [(produced[20]["partition"], None, b"no separator", [("src", b"cli"), ("n", b"1")])],
        key=lambda m: (m[0], m[2]),
    )
    assert read == expected


def test_consume_what_confluent_produced_with_every_placeholder(cli: Cli) -> None:
    topic = _topic(cli, 2)
    producer = Producer({"bootstrap.servers": cli.bootstrap})
    for i in range(6):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2, timestamp=1_700_000_000_000 + i,
                         headers=[("h", b"%d" % i)])  # fmt: skip
    producer.flush(30)
    out = cli.ok("consume", topic, "--from-beginning", "-n", "6", "-f", "%t %p %o %k %v %T %h\\n")
    lines = sorted(out.decode().splitlines())
    assert lines == sorted(f"{topic} {i % 2} {i // 2} k{i} v{i} {1_700_000_000_000 + i} h={i}" for i in range(6))

    records = cli.lines("consume", topic, "--partition", "1", "--offset", "1", "-n", "2", "-f", "json")
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in records] == [
        (1, 1, "k3", "v3"),
        (1, 2, "k5", "v5"),
    ]
    assert records[0]["headers"] == [{"key": "h", "value": "3"}]
    last = cli.lines("consume", topic, "-p", "0", "--offset", "-1", "-n", "1", "-f", "json")
    assert [(r["offset"], r["value"]) for r in last] == [(2, "v4")]
    by_time = cli.ok("consume", topic, "-p", "0", "--offset", "@1700000000002", "-n", "2")
    assert by_time == b"v2\nv4\n"


def test_produce_to_a_partition_with_acks_and_compression(cli: Cli) -> None:
    topic = _topic(cli, 3)
    for acks, codec in (("1", "none"), ("all", "gzip"), ("0", "zstd")):
        cli.ok("produce", topic, "--partition", "2", "--acks", acks, "--compression", codec,
               stdin=b"%s-%s-1\n%s-%s-2\n" % (acks.encode(), codec.encode(), acks.encode(), codec.encode()))  # fmt: skip
    out = cli.ok("consume", topic, "--from-beginning", "-n", "6", "-f", "%p:%o:%v\\n")
    assert out.decode().splitlines() == [
        "2:0:1-none-1", "2:1:1-none-2", "2:2:all-gzip-1", "2:3:all-gzip-2", "2:4:0-zstd-1", "2:5:0-zstd-2"
    ]  # fmt: skip


def test_acks_all_produce_is_idempotent_as_kafkas_producers_are(cli: Cli) -> None:
    from tests.compat.clients.wire import batch_producers

    topic = _topic(cli, 1)
    cli.ok("produce", topic, stdin=b"".join(b"line-%d\n" % i for i in range(1500)))  # two batches of stdin lines
    cli.ok("produce", topic, "--acks", "1", stdin=b"plain\n")
    batches = batch_producers(cli.bootstrap, topic)
    assert [(base, count, sequence) for base, count, _, sequence in batches] == [
        (0, 1000, 0),
        (1000, 500, 1000),
        (1500, 1, -1),
    ]
    assert batches[0][2] == batches[1][2] >= 0 and batches[2][2] == -1  # one producer id; none with acks=1


def test_read_committed_skips_aborted_transactions(cli: Cli) -> None:
    topic = _topic(cli, 1)
    producer = Producer({"bootstrap.servers": cli.bootstrap, "transactional.id": unique("txn")})
    producer.init_transactions(30)
    for values, commit in (((b"c1", b"c2"), True), ((b"a1", b"a2"), False), ((b"c3",), True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    committed = cli.ok("consume", topic, "--from-beginning", "--isolation-level", "read_committed", "-n", "3")
    assert committed == b"c1\nc2\nc3\n"
    everything = cli.ok("consume", topic, "--from-beginning", "-n", "5")
    assert everything == b"c1\nc2\na1\na2\nc3\n"


def test_produce_to_a_new_topic_lets_the_broker_create_it_as_producers_do(cli: Cli) -> None:
    topic = unique("auto")  # auto.create.topics.enable is true on both brokers by default
    cli.ok("produce", topic, stdin=b"first\n")
    assert cli.ok("consume", topic, "--from-beginning", "-n", "1") == b"first\n"
    missing = cli.run("consume", unique("absent"), "-n", "1")  # consumers do not create topics
    assert missing.returncode == 1 and b"UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr


def test_consume_stops_at_timeout_and_waits_for_new_records_by_default(cli: Cli) -> None:
    topic = _topic(cli, 1)
    cli.ok("produce", topic, stdin=b"old\n")
    short = cli.run("consume", topic, "-n", "1", "--timeout-ms", "1500")  # from the end: "old" is not read
    assert short.returncode == 1 and short.stdout == b"" and b"timed out after 0 of 1" in short.stderr
    assert cli.run("consume", topic, "--from-beginning", "--timeout-ms", "1000").stdout == b"old\n"


def test_consume_until_ctrl_c_exits_0_and_commits_what_it_printed(cli: Cli) -> None:
    topic = _topic(cli, 1)
    group = unique("interrupted")
    cli.ok("produce", topic, stdin=b"one\ntwo\n")
    process = _start(cli, topic, "--from-beginning", "-g", group)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"one\n" and process.stdout.readline() == b"two\n"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0 and b"consumed 2 records" in err, err
    assert _committed(cli, group) == {0: 2}


# -- groups ----------------------------------------------------------------------------------------------------


def test_group_consume_commits_describe_shows_lag_and_delete(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = unique("group")
    cli.ok("produce", topic, "-p", "0", stdin=b"a\nb\nc\n")
    cli.ok("produce", topic, "-p", "1", stdin=b"d\n")
    assert cli.ok("consume", topic, "-g", group, "--from-beginning", "-p", "0", "-n", "2") == b"a\nb\n"
    assert {"group": group, "protocol_type": "", "state": "Empty"}.items() <= next(
        g for g in cli.json("group", "list") if g["group"] == group
    ).items()
    [described] = cli.json("group", "describe", group)
    assert described["state"] == "Empty" and described["members"] == []
    assert [(o["partition"], o["current_offset"], o["log_end_offset"], o["lag"]) for o in described["offsets"]] == [
        (0, 2, 3, 1)
    ]
    # The next run continues where the group stopped.
    assert cli.ok("consume", topic, "-g", group, "-p", "0", "-n", "1") == b"c\n"
    assert b"LAG" in cli.ok("group", "describe", group)
    assert cli.json("group", "delete", group) == [{"group": group, "deleted": True}]
    assert group not in [g["group"] for g in cli.json("group", "list")]
    missing = cli.run("group", "delete", group)
    assert missing.returncode == 1 and b"GROUP_ID_NOT_FOUND" in missing.stderr
    unknown = cli.run("group", "describe", group)
    assert unknown.returncode == 1 and b"GROUP_ID_NOT_FOUND" in unknown.stderr


def _start(cli: Cli, *args: str) -> subprocess.Popen[bytes]:
    """`kbroker consume ...` in the background, with SIGINT at its default as from a terminal."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), "KBROKER_BOOTSTRAP": cli.bootstrap}
    return subprocess.Popen([sys.executable, "-m", "kbroker", "consume", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=environ,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip


def _wait_for(predicate: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_consumers_of_one_group_share_its_partitions(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = unique("members")
    first = _start(cli, topic, "-g", group, "--from-beginning", "-f", "%p %v\\n")
    second = None
    try:
        assert first.stdout is not None
        cli.ok("produce", topic, "-p", "0", stdin=b"a0\n")
        cli.ok("produce", topic, "-p", "1", stdin=b"a1\n")
        assert sorted([first.stdout.readline(), first.stdout.readline()]) == [b"0 a0\n", b"1 a1\n"]
        [alone] = cli.json("group", "describe", group)[0]["members"]
        assert alone["assignment"] == {topic: [0, 1]} and alone["client_id"] == "kbroker-cli"

        second = _start(cli, topic, "-g", group, "-f", "%p %v\\n")

        def split() -> bool:
            members = cli.json("group", "describe", group)[0]["members"]
            return sorted(tuple(m["assignment"].get(topic, [])) for m in members) == [(0,), (1,)]

        _wait_for(split, "the second member to get a partition")
        owner = {o["partition"]: o["member_id"] for o in cli.json("group", "describe", group)[0]["offsets"]}
        assert owner[0] != owner[1]
        cli.ok("produce", topic, "-p", "0", stdin=b"b0\n")
        cli.ok("produce", topic, "-p", "1", stdin=b"b1\n")
        assert second.stdout is not None
        lines = sorted([first.stdout.readline(), second.stdout.readline()])
        assert lines == [b"0 b0\n", b"1 b1\n"]
        for process in (first, second):
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)
            assert process.returncode == 0
        [described] = cli.json("group", "describe", group)
        assert described["state"] == "Empty" and described["members"] == []  # both left the group at once
        assert {o["partition"]: o["lag"] for o in described["offsets"]} == {0: 0, 1: 0}
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()
                process.wait()


def test_a_cli_consumer_and_a_confluent_consumer_share_a_group(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = unique("mixed")
    other = Consumer({"bootstrap.servers": cli.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "client.id": "confluent-member"})  # fmt: skip
    ours = None
    try:
        other.subscribe([topic])
        _wait_for(lambda: bool(other.poll(0.2) or other.assignment()), "confluent-kafka's assignment")
        ours = _start(cli, topic, "-g", group, "--from-beginning", "-f", "%p %v\\n")

        def split() -> bool:
            other.poll(0.2)  # keeps the librdkafka member in the rebalance
            members = cli.json("group", "describe", group)[0]["members"]
            return sorted(tuple(m["assignment"].get(topic, [])) for m in members) == [(0,), (1,)]

        _wait_for(split, "both members to hold a partition")
        ours_partition = next(
            m["assignment"][topic][0]
            for m in cli.json("group", "describe", group)[0]["members"]
            if m["client_id"] == "kbroker-cli"
        )
        assert [tp.partition for tp in other.assignment()] == [1 - ours_partition]
        cli.ok("produce", topic, "-p", str(ours_partition), stdin=b"for-the-cli\n")
        assert ours.stdout is not None and ours.stdout.readline() == b"%d for-the-cli\n" % ours_partition
    finally:
        other.close()
        if ours is not None:
            ours.send_signal(signal.SIGINT)
            ours.communicate(timeout=30)


def _committed(cli: Cli, group: str) -> dict[int, int]:
    [described] = cli.json("group", "describe", group)
    return {o["partition"]: o["current_offset"] for o in described["offsets"]}


def test_reset_offsets_kafkas_scenarios_dry_run_by_default(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = unique("reset")
    before = int(time.time() * 1000)
    cli.ok("produce", topic, "-p", "0", stdin=b"".join(b"r%d\n" % i for i in range(10)))
    cli.ok("produce", topic, "-p", "1", stdin=b"s\n")
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    cli.ok("produce", topic, "-p", "0", stdin=b"late\n")
    cli.ok("consume", topic, "-g", group, "--from-beginning", "-n", "12")
    assert _committed(cli, group) == {0: 11, 1: 1}

    plan = cli.json("group", "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert plan["executed"] is False and [(o["partition"], o["new_offset"]) for o in plan["offsets"]] == [
        (0, 0),
        (1, 0),
    ]
    assert _committed(cli, group) == {0: 11, 1: 1}  # a dry run changes nothing

    def execute(*target: str, scope: tuple[str, ...] = ("--topic", topic)) -> dict[int, int]:
        cli.ok("group", "reset-offsets", group, *scope, *target, "--execute")
        return _committed(cli, group)

    assert execute("--to-earliest") == {0: 0, 1: 0}
    assert execute("--to-latest", scope=("--all-topics",)) == {0: 11, 1: 1}
    assert execute("--to-offset", "4", scope=("--topic", f"{topic}:0")) == {0: 4, 1: 1}
    assert execute("--shift-by", "-3") == {0: 1, 1: 0}
    assert execute("--shift-by", "100") == {0: 11, 1: 1}  # clamped to the log end
    assert execute("--to-offset", "99") == {0: 11, 1: 1}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(middle / 1000)) + f".{middle % 1000:03d}Z"
    assert execute("--to-datetime", stamp) == {0: 10, 1: 1}  # p0: only "late" is newer; p1: nothing, so the end
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before / 1000 - 1)) + "Z"
    assert execute("--to-datetime", stamp) == {0: 0, 1: 0}

    fresh = unique("fresh")  # Kafka's tool sets the offsets of a group that does not exist yet
    cli.ok("group", "reset-offsets", fresh, "--topic", f"{topic}:1", "--to-latest", "--execute")
    assert _committed(cli, fresh) == {1: 1}


def test_active_group_members_lag_and_no_reset_while_active(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = unique("active")
    cli.ok("produce", topic, "-p", "0", stdin=b"x\ny\n")
    consumer = Consumer({"bootstrap.servers": cli.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": "cli-test-member"})  # fmt: skip
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        [described] = cli.json("group", "describe", group)
        assert described["state"] == "Stable" and described["protocol"] == "range"
        [member] = described["members"]
        assert member["client_id"] == "cli-test-member" and member["assignment"] == {topic: [0, 1]}
        lag = {o["partition"]: (o["current_offset"], o["lag"], o["member_id"]) for o in described["offsets"]}
        assert lag == {0: (1, 1, member["member_id"]), 1: (None, None, member["member_id"])}
        refused = cli.run("group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
        assert refused.returncode == 1 and b"inactive" in refused.stderr and b"Stable" in refused.stderr
        busy = cli.run("group", "delete", group)
        assert busy.returncode == 1 and b"NON_EMPTY_GROUP" in busy.stderr
    finally:
        consumer.close()


# -- usage -----------------------------------------------------------------------------------------------------


def test_unreachable_broker_exits_3_and_bad_usage_exits_2(cli: Cli) -> None:
    unreachable = cli.run("topic", "list", "--bootstrap", "127.0.0.1:1")
    assert unreachable.returncode == 3 and b"no bootstrap broker reachable" in unreachable.stderr
    assert cli.run("consume", "t", "--from-beginning", "--offset", "3").returncode == 2
    assert cli.run("group", "reset-offsets", "g", "--topic", "t").returncode == 2  # no target
    assert cli.run("topic").returncode == 2
