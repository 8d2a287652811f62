"""`kbroker share-group`, run as a process against kbroker and against Apache Kafka 4.3.1, with share groups
made by real share consumers (confluent-kafka's ShareConsumer).

Each group is given `share.auto.offset.reset=earliest` (a group config, set with confluent-kafka's admin
client) before its first member joins, so its share partitions start at the log start on both brokers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.cli.brokers import Cli, each_broker, unique

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", params=["kbroker", "kafka"])
def cli(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    yield from each_broker(request.param, tmp_path_factory)


def _topic(cli: Cli, partitions: int) -> str:
    name = unique("shared")
    cli.ok("topic", "create", name, "-p", str(partitions))
    return name


def _share_group(cli: Cli) -> str:
    """A group id whose share partitions will start at the log start offset."""
    group = unique("sg")
    admin = AdminClient({"bootstrap.servers": cli.bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    return group


def _member(cli: Cli, group: str, *topics: str, client_id: str = "share-cli-test") -> Any:
    consumer = ShareConsumer({"bootstrap.servers": cli.bootstrap, "group.id": group, "client.id": client_id,
                              "share.acknowledgement.mode": "explicit"})  # fmt: skip
    consumer.subscribe(list(topics))
    return consumer


def _receive(consumer: Any, count: int, timeout_s: float = 60) -> list[bytes]:
    """Poll until `count` records came, accepting each (committed before the next poll)."""
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < count:
        assert time.monotonic() < deadline, f"received {len(values)} of {count} records"
        messages = [m for m in consumer.poll(0.5) if not m.error()]
        for message in messages:
            consumer.acknowledge(message)
            values.append(message.value())
        if messages:
            consumer.commit_sync(30)
    return values


def _wait_until_delivered(cli: Cli, group: str, ends: dict[tuple[str, int], int]) -> None:
    """Until the group has acknowledged every record of these partitions (log end offsets `ends`): lag 0. The
    start offset is then the log end on kbroker; Apache Kafka persists a share partition's start offset with
    the write after the acknowledgement's, so until another write its summary may still show an older one."""
    deadline = time.monotonic() + 60
    while True:
        seen = _offsets(cli, group)
        if seen.keys() == ends.keys() and all(lag == 0 for _, lag in seen.values()):
            break
        assert time.monotonic() < deadline, f"offsets of {group}: {seen}, log ends {ends}"
        time.sleep(0.5)
    for key, (start, _) in seen.items():
        assert start is not None and (start == ends[key] if cli.name == "kbroker" else 0 <= start <= ends[key])


def _describe(cli: Cli, group: str) -> dict[str, Any]:
    [described] = cli.json("share-group", "describe", group)
    assert described["group"] == group
    return dict(described)


def _offsets(cli: Cli, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    return {(o["topic"], o["partition"]): (o["start_offset"], o["lag"]) for o in _describe(cli, group)["offsets"]}


def _produce(cli: Cli, topic: str, partition: int, *values: str) -> None:
    cli.ok("produce", topic, "-p", str(partition), stdin="".join(f"{v}\n" for v in values).encode())


def test_list_and_describe_a_share_group_with_a_member_then_its_start_offsets_and_lag(cli: Cli) -> None:
    topic = _topic(cli, 2)
    group = _share_group(cli)
    _produce(cli, topic, 0, "a0", "a1", "a2")
    _produce(cli, topic, 1, "b0", "b1", "b2")
    consumer = _member(cli, group, topic)
    try:
        assert sorted(_receive(consumer, 6)) == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"]
        assert {"group": group, "state": "Stable"} in cli.json("share-group", "list")
        assert {"group": group, "state": "Stable"} in cli.json("share-group", "list", "--state", "Stable")
        assert group not in [g["group"] for g in cli.json("share-group", "list", "--state", "Empty")]
        assert group in cli.ok("share-group", "list").decode()

        described = _describe(cli, group)
        assert described["state"] == "Stable" and described["group_epoch"] >= 1
        assert described["coordinator"]["port"] == int(cli.bootstrap.rsplit(":", 1)[1])
        [member] = described["members"]
        assert member["client_id"] == "share-cli-test" and member["host"]
        assert member["assignment"] == {topic: [0, 1]} and member["subscribed_topics"] == [topic]
        text = cli.ok("share-group", "describe", group).decode()
        assert "share-cli-test" in text and f"{topic}:0,1" in text and "START-OFFSET" in text
    finally:
        consumer.close()  # accepts the last poll's records and leaves the group

    # Every record was accepted: each share partition starts after its last record, nothing lags.
    _wait_until_delivered(cli, group, {(topic, 0): 3, (topic, 1): 3})
    described = _describe(cli, group)
    assert described["state"] == "Empty" and described["members"] == []
    assert {"group": group, "state": "Empty"} in cli.json("share-group", "list", "--state", "Empty")
    _produce(cli, topic, 0, "a3", "a4")
    assert {key: lag for key, (_, lag) in _offsets(cli, group).items()} == {(topic, 0): 2, (topic, 1): 0}


def test_reset_offsets_dry_run_execute_and_refused_while_active(cli: Cli) -> None:
    topic = _topic(cli, 1)
    group = _share_group(cli)
    _produce(cli, topic, 0, *[f"r{i}" for i in range(5)])
    consumer = _member(cli, group, topic)
    try:
        assert _receive(consumer, 5) == [b"r0", b"r1", b"r2", b"r3", b"r4"]
        refused = cli.run("share-group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
        assert refused.returncode == 1 and b"active members" in refused.stderr and b"Stable" in refused.stderr
    finally:
        consumer.close()
    _wait_until_delivered(cli, group, {(topic, 0): 5})

    before = _offsets(cli, group)
    plan = cli.json("share-group", "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert plan == {
        "group": group,
        "executed": False,
        "offsets": [{"topic": topic, "partition": 0, "new_offset": 0, "start_offset": before[(topic, 0)][0]}],
    }
    dry = cli.run("share-group", "reset-offsets", group, "--all-topics", "--to-offset", "2")
    assert dry.returncode == 0 and b"NEW-OFFSET" in dry.stdout and b"dry run" in dry.stderr
    assert _offsets(cli, group) == before  # dry runs change nothing

    def execute(*target: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
        cli.ok("share-group", "reset-offsets", group, "--topic", f"{topic}:0", *target, "--execute")
        return _offsets(cli, group)

    assert execute("--to-offset", "3") == {(topic, 0): (3, 2)}
    assert execute("--to-offset", "99") == {(topic, 0): (5, 0)}  # kept within the log
    assert execute("--to-earliest") == {(topic, 0): (0, 5)}

    again = _member(cli, group, topic, client_id="share-cli-again")  # the records are delivered again
    try:
        assert _receive(again, 5) == [b"r0", b"r1", b"r2", b"r3", b"r4"]
    finally:
        again.close()
    _wait_until_delivered(cli, group, {(topic, 0): 5})
    assert execute("--to-datetime", "2000-01-01T00:00:00.000Z") == {(topic, 0): (0, 5)}
    assert execute("--to-latest") == {(topic, 0): (5, 0)}


def test_delete_offsets_and_delete_the_group(cli: Cli) -> None:
    first, second = _topic(cli, 1), _topic(cli, 1)
    group = _share_group(cli)
    _produce(cli, first, 0, "f")
    _produce(cli, second, 0, "s")
    consumer = _member(cli, group, first, second)
    try:
        assert sorted(_receive(consumer, 2)) == [b"f", b"s"]
        busy = cli.run("share-group", "delete", group)
        assert busy.returncode == 1 and b"NON_EMPTY_GROUP" in busy.stderr
        busy = cli.run("share-group", "delete-offsets", group, "--topic", first)
        assert busy.returncode == 1 and b"NON_EMPTY_GROUP" in busy.stderr
    finally:
        consumer.close()
    _wait_until_delivered(cli, group, {(first, 0): 1, (second, 0): 1})

    result = cli.json("share-group", "delete-offsets", group, "--topic", first)
    assert result == {"group": group, "topics": [{"topic": first, "deleted": True, "error": None}]}
    assert [(key, lag) for key, (_, lag) in _offsets(cli, group).items()] == [((second, 0), 0)]
    missing = cli.run("share-group", "delete-offsets", group, "--topic", first)  # no state left for it
    assert missing.returncode == 1 and b"UNKNOWN_TOPIC_OR_PARTITION" in missing.stdout

    assert cli.json("share-group", "delete", group) == [{"group": group, "deleted": True}]
    assert group not in [g["group"] for g in cli.json("share-group", "list")]
    gone = cli.run("share-group", "describe", group)
    assert gone.returncode == 1 and b"GROUP_ID_NOT_FOUND" in gone.stderr


def test_unknown_groups_exit_1_with_kafkas_error_and_bad_usage_exits_2(cli: Cli) -> None:
    group = unique("nobody")
    for args in (("describe", group), ("delete", group), ("delete-offsets", group, "--topic", "t")):
        result = cli.run("share-group", *args)
        assert result.returncode == 1 and b"GROUP_ID_NOT_FOUND" in result.stderr, (args, result.stderr)
    # As Kafka's tool: a group without offsets has nothing to reset (and the brokers answer no error).
    nothing = cli.json("share-group", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
    assert nothing == {"group": group, "executed": True, "offsets": []}
    assert group not in [g["group"] for g in cli.json("share-group", "list")]
    for scope, error in (
        ((f"{_topic(cli, 1)}:0,9"), b"UNKNOWN_TOPIC_OR_PARTITION"),
        (unique("none"), b"UNKNOWN_TOPIC"),
    ):
        result = cli.run("share-group", "reset-offsets", group, "--topic", scope, "--to-earliest")
        assert result.returncode == 1 and error in result.stderr, (scope, result.stderr)
    consumers = unique("classic")  # a consumer group is not a share group
    topic = _topic(cli, 1)
    _produce(cli, topic, 0, "x")
    cli.ok("consume", topic, "-g", consumers, "--from-beginning", "-n", "1")
    result = cli.run("share-group", "describe", consumers)
    assert result.returncode == 1 and b"GROUP_ID_NOT_FOUND" in result.stderr
    assert consumers not in [g["group"] for g in cli.json("share-group", "list")]
    for args in (("reset-offsets", group, "--topic", "t"), ("describe",), ("delete-offsets", group),
                 ("list", "--state", "Sleeping")):  # fmt: skip
        assert cli.run("share-group", *args).returncode == 2, args


def test_reset_offsets_of_a_group_that_does_not_exist_yet_creates_it(cli: Cli) -> None:
    topic = _topic(cli, 2)
    _produce(cli, topic, 1, "x", "y")
    group = unique("fresh")  # as Kafka's tool does: the group is made with these start offsets
    plan = cli.json("share-group", "reset-offsets", group, "--topic", f"{topic}:1", "--to-offset", "1", "--execute")
    assert plan["offsets"] == [{"topic": topic, "partition": 1, "new_offset": 1, "start_offset": None}]
    assert {"group": group, "state": "Empty"} in cli.json("share-group", "list")
    assert _offsets(cli, group) == {(topic, 1): (1, 1)}
    consumer = _member(cli, group, topic)
    try:
        assert _receive(consumer, 1) == [b"y"]
    finally:
        consumer.close()


SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def _tool_rows(jvm: Any, bootstrap: str, *args: str) -> list[list[str]]:
    """Kafka's kafka-share-groups on `bootstrap`: the rows of its table, header left out."""
    status, out, err = jvm.run(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, *args)
    assert status == 0, f"kafka-share-groups {' '.join(args)}: {out}{err}"
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("GROUP ")]


def test_kafkas_own_share_groups_tool_reads_what_kbroker_share_group_reads(cli: Cli) -> None:
    from tests.tools.test_kafka_tools import ToolJvm, tools_classpath

    jvm = ToolJvm(tools_classpath())  # skips without java or Kafka's tools
    try:
        topic = _topic(cli, 2)
        group = _share_group(cli)
        _produce(cli, topic, 0, "a", "b")
        _produce(cli, topic, 1, "c")
        consumer = _member(cli, group, topic, client_id="share-cli-compared")
        try:
            assert sorted(_receive(consumer, 3)) == [b"a", b"b", b"c"]
            [member] = _describe(cli, group)["members"]
            members = _tool_rows(jvm, cli.bootstrap, "--describe", "--group", group, "--members")
            assert members == [[group, member["member_id"], member["host"], "share-cli-compared", "2", f"{topic}:0,1"]]
        finally:
            consumer.close()
        _wait_until_delivered(cli, group, {(topic, 0): 2, (topic, 1): 1})
        _produce(cli, topic, 1, "late")

        offsets = _tool_rows(jvm, cli.bootstrap, "--describe", "--group", group)
        assert {(t, int(p)): (int(start), int(lag)) for _, t, p, start, lag in offsets} == _offsets(cli, group)
        listed = _tool_rows(jvm, cli.bootstrap, "--list", "--state")
        assert sorted(map(tuple, listed)) == [(g["group"], g["state"]) for g in cli.json("share-group", "list")]
        planned = _tool_rows(jvm, cli.bootstrap, "--reset-offsets", "--group", group, "--topic", topic,
                             "--to-earliest", "--dry-run")  # fmt: skip
        ours = cli.json("share-group", "reset-offsets", group, "--topic", topic, "--to-earliest")["offsets"]
        assert sorted(planned) == [[group, topic, str(o["partition"]), str(o["new_offset"])] for o in ours]
    finally:
        jvm.close()
