"""Apache Kafka 4.3's own command-line tools, run from its jars against kbroker and against Apache Kafka
(tests/kafka_ref.py), with the outputs compared.

A JVM costs seconds to start on a busy machine, so the tools run inside one long-lived JVM per broker
(ToolRunner.java: each tool's main in turn, Kafka's Exit turned into a status), both brokers at once.
The differences that remain are asserted here as what they are and listed with their reasons in
docs/compatibility.md ("Kafka's command-line tools").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.process import REPO, BrokerProcess, RawClient
from tests.test_config_parity import KBROKER_ONLY, STATIC_IN_KBROKER

if not shutil.which("java"):
    pytest.skip("Kafka's tools need java", allow_module_level=True)

from tests.kafka_ref import KafkaRef, ensure_tools

BROKERS = ("kbroker", "kafka")
JVM = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
BOOTSTRAP = "<bootstrap>"  # in a tool's arguments: where its --bootstrap-server value goes
RUNNER = Path(__file__).with_name("ToolRunner.java")


def tools_classpath() -> str:
    """kafka-tools' jars, then what ConfigCommand needs from the server's (it lives in kafka_2.13)."""
    try:
        tools, server = ensure_tools()
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"Kafka's tools could not be resolved: {error}")
    extra = sorted(str(p) for p in server.glob("*.jar") if p.name.startswith(("kafka_", "scala-")))
    return ":".join([f"{tools}/*", *extra])


@pytest.fixture(scope="module")
def classpath() -> str:
    return tools_classpath()


class ToolJvm:
    """One JVM running Kafka tools on request (tests/tools/ToolRunner.java)."""

    def __init__(self, classpath: str) -> None:
        self.process = subprocess.Popen(
            [*JVM, "-cp", classpath, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO
        )

    def run(self, main_class: str, *args: str) -> tuple[int, str, str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\x01".join([main_class, *args]).encode() + b"\n")
        self.process.stdin.flush()
        header = self.process.stdout.readline().decode()
        assert header.startswith("EXIT "), f"tool runner stopped: {header!r} (status {self.process.wait()})"
        status, out_size, err_size = (int(x) for x in header.split()[1:])
        out = self.process.stdout.read(out_size).decode()
        err = self.process.stdout.read(err_size).decode()
        return status, out, err

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """kbroker and Apache Kafka, each one node, started side by side."""
    kafka = KafkaRef()
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(kafka.start)
        kbroker = BrokerProcess(tmp_path_factory.mktemp("tools") / "data").start()
        started.result()
    try:
        yield {"kbroker": kbroker.bootstrap, "kafka": kafka.bootstrap}
    finally:
        kbroker.stop()
        kafka.stop()


class Tools:
    def __init__(self, brokers: dict[str, str], jvms: dict[str, ToolJvm]) -> None:
        self.brokers = brokers
        self.jvms = jvms

    def run(self, broker: str, main_class: str, *args: str, check: bool = True) -> str:
        """Run a tool with the broker's --bootstrap-server first, or where BOOTSTRAP stands (after a subcommand)."""
        if BOOTSTRAP in args:
            args = tuple(self.brokers[broker] if a == BOOTSTRAP else a for a in args)
        else:
            args = ("--bootstrap-server", self.brokers[broker], *args)
        status, out, err = self.jvms[broker].run(main_class, *args)
        if check:
            assert status == 0, f"{main_class} {' '.join(args)} on {broker}: status {status}\n{out}{err}"
            return out
        return out + err

    def both(self, main_class: str, *args: str, check: bool = True) -> dict[str, str]:
        with ThreadPoolExecutor(2) as pool:
            futures = {b: pool.submit(self.run, b, main_class, *args, check=check) for b in BROKERS}
            return {b: f.result() for b, f in futures.items()}

    def each(self, call: Callable[[str], Any]) -> dict[str, Any]:
        with ThreadPoolExecutor(2) as pool:
            futures = {b: pool.submit(call, b) for b in BROKERS}
            return {b: f.result() for b, f in futures.items()}


@pytest.fixture(scope="module")
def tools(brokers: dict[str, str], classpath: str) -> Iterator[Tools]:
    jvms = {b: ToolJvm(classpath) for b in BROKERS}
    try:
        yield Tools(brokers, jvms)
    finally:
        for jvm in jvms.values():
            jvm.close()


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    with RawClient(bootstrap) as raw:
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        assert raw.call(19, 5, body)["topics"][0]["error_code"] == 0
        deadline = time.monotonic() + 10
        while raw.call(3, 9, {"topics": [{"name": name}], "allow_auto_topic_creation": False})["topics"][0][
            "error_code"
        ]:
            assert time.monotonic() < deadline, f"{name} has no leader"
            time.sleep(0.05)


def _produce(bootstrap: str, topic: str, records: list[tuple[int, bytes, int]]) -> None:
    """(partition, value, timestamp) records, each in a batch of its own (the same bytes on both brokers)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": False})
    for partition, value, timestamp in records:
        producer.produce(topic, value=value, key=b"k", partition=partition, timestamp=timestamp)
        assert producer.flush(10) == 0


# --------------------------------------------------------------------------- kafka-features


def test_features_describe(tools: Tools) -> None:
    out = tools.both("org.apache.kafka.tools.FeatureCommand", "describe")
    rows = {b: _feature_rows(text) for b, text in out.items()}
    assert set(rows["kbroker"]) == {"group.version", "transaction.version", "share.version"}
    for name, (low, high, _) in rows["kbroker"].items():
        kafka_low, kafka_high, _kafka_level = rows["kafka"][name]
        assert low == kafka_low and high <= kafka_high
    # KIP-848 groups, share groups and transactions v2 at Kafka 4.3's levels
    assert rows["kbroker"]["group.version"][2] == rows["kafka"]["group.version"][2] == "1"
    assert rows["kbroker"]["share.version"][2] == rows["kafka"]["share.version"][2] == "1"
    assert rows["kbroker"]["transaction.version"] == rows["kafka"]["transaction.version"] == ("0", "2", "2")


def _feature_rows(text: str) -> dict[str, tuple[str, str, str]]:
    rows = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        if "Feature" in fields:
            rows[fields["Feature"]] = (
                fields["SupportedMinVersion"],
                fields["SupportedMaxVersion"],
                fields["FinalizedVersionLevel"],
            )
    return rows


# --------------------------------------------------------------------------- kafka-cluster


def test_cluster_list_endpoints_with_fenced_brokers(tools: Tools) -> None:
    args = ("list-endpoints", "--bootstrap-server", BOOTSTRAP, "--include-fenced-brokers")
    out = tools.both("org.apache.kafka.tools.ClusterTool", *args)
    masked = {b: re.sub(r"\b" + tools.brokers[b].rsplit(":", 1)[1] + r"\b", "<port>", text) for b, text in out.items()}
    assert masked["kbroker"] == masked["kafka"]
    assert "unfenced" in masked["kbroker"]


# --------------------------------------------------------------------------- kafka-get-offsets


def test_get_offsets_every_time_spec(tools: Tools) -> None:
    topic = _topic("offsets")
    now = int(time.time() * 1000) - 60_000  # recent: Kafka's retention would delete records from 1970 at once
    records = [(0, b"a", now + 1000), (0, b"b", now + 3000), (0, b"c", now + 2000), (1, b"d", now + 5000)]
    tools.each(lambda b: (_create_topic(tools.brokers[b], topic, 2), _produce(tools.brokers[b], topic, records)))
    expected = {
        "-1": f"{topic}:0:3\n{topic}:1:1\n",
        "-2": f"{topic}:0:0\n{topic}:1:0\n",
        "-3": f"{topic}:0:1\n{topic}:1:0\n",  # the record with the largest timestamp
        "-4": f"{topic}:0:0\n{topic}:1:0\n",  # earliest local: the log start without tiered storage
        "-5": "",  # latest tiered: offset -1 without tiered storage, which the tool does not print
        str(now + 2500): f"{topic}:0:1\n{topic}:1:0\n",
    }
    for spec, lines in expected.items():
        out = tools.both("org.apache.kafka.tools.GetOffsetShell", "--topic", topic, "--time", spec)
        assert out == {"kbroker": lines, "kafka": lines}, spec


# --------------------------------------------------------------------------- kafka-topics --describe


def test_topics_describe(tools: Tools) -> None:
    topic = _topic("described")
    tools.each(lambda b: _create_topic(tools.brokers[b], topic, 3))
    out = tools.both("org.apache.kafka.tools.TopicCommand", "--describe", "--topic", topic)
    masked = {b: re.sub(r"TopicId: \S+", "TopicId: <id>", text) for b, text in out.items()}
    # Kafka 4.3 sets min.insync.replicas=1 as a cluster default when it enables ELR (KIP-966): kbroker has
    # no such dynamic default, so its Configs field is empty.
    assert masked["kafka"].replace("Configs: min.insync.replicas=1", "Configs: ") == masked["kbroker"]
    assert "Elr: \tLastKnownElr: " in masked["kbroker"]  # from DescribeTopicPartitions, not "Elr: N/A"


# --------------------------------------------------------------------------- kafka-log-dirs


def test_log_dirs_describe(tools: Tools) -> None:
    topic = _topic("sizes")
    now = int(time.time() * 1000)
    records = [(0, b"x" * 100, now), (0, b"y" * 10, now + 1), (1, b"z", now + 2)]
    tools.each(lambda b: (_create_topic(tools.brokers[b], topic, 2), _produce(tools.brokers[b], topic, records)))
    out = tools.both("org.apache.kafka.tools.LogDirsCommand", "--describe", "--topic-list", topic)
    reports = {b: json.loads(text.splitlines()[-1]) for b, text in out.items()}
    for report in reports.values():
        (broker,) = report["brokers"]
        (log_dir,) = broker["logDirs"]
        log_dir["logDir"] = "<dir>"
        log_dir["partitions"].sort(key=lambda p: p["partition"])
    assert reports["kbroker"] == reports["kafka"]
    partitions = reports["kbroker"]["brokers"][0]["logDirs"][0]["partitions"]
    assert [p["size"] > 0 for p in partitions] == [True, True]


def test_log_dirs_describe_two_directories(classpath: str, tmp_path: Path) -> None:
    """log.dirs with two directories on both brokers: each reports both, the topic's two partitions spread
    one per directory (which one gets which on a tie is Kafka's hash order, so that is not compared)."""
    dirs = {b: (tmp_path / b / "a", tmp_path / b / "b") for b in BROKERS}
    (tmp_path / "kbroker").mkdir()
    kafka = KafkaRef(properties={"log.dirs": ",".join(str(d) for d in dirs["kafka"])})
    kbroker = BrokerProcess(dirs["kbroker"][0], log_dirs=dirs["kbroker"][1:])
    jvms: dict[str, ToolJvm] = {}
    try:
        with ThreadPoolExecutor(1) as pool:
            started = pool.submit(kafka.start)
            kbroker.start()
            started.result()
        jvms = {b: ToolJvm(classpath) for b in BROKERS}
        tools = Tools({"kbroker": kbroker.bootstrap, "kafka": kafka.bootstrap}, jvms)
        topic = _topic("spread")
        now = int(time.time() * 1000)
        records = [(0, b"x" * 100, now), (1, b"z", now + 1)]
        tools.each(lambda b: (_create_topic(tools.brokers[b], topic, 2), _produce(tools.brokers[b], topic, records)))
        out = tools.both("org.apache.kafka.tools.LogDirsCommand", "--describe", "--topic-list", topic)
    finally:
        for jvm in jvms.values():
            jvm.close()
        if kbroker.alive():
            kbroker.stop()
        kafka.stop()
    for broker, text in out.items():
        (report,) = json.loads(text.splitlines()[-1])["brokers"]
        by_dir = {d["logDir"]: sorted(p["partition"] for p in d["partitions"]) for d in report["logDirs"]}
        assert set(by_dir) == {str(d.resolve()) for d in dirs[broker]}, broker
        assert sorted(by_dir.values()) == [[f"{topic}-0"], [f"{topic}-1"]], broker
        sizes = {p["partition"]: p["size"] for d in report["logDirs"] for p in d["partitions"]}
        if broker == "kbroker":
            kbroker_sizes = sizes
    assert kbroker_sizes == sizes  # the same bytes on both


# --------------------------------------------------------------------------- kafka-configs


def test_configs_broker_default_and_per_broker(tools: Tools) -> None:
    default = ("--entity-type", "brokers", "--entity-default")
    node = ("--entity-type", "brokers", "--entity-name", "1")
    out = tools.both(
        CONFIG_COMMAND, *default, "--alter", "--add-config", "log.retention.ms=7200000,message.max.bytes=2000000"
    )
    assert out["kbroker"] == out["kafka"] == "Completed updating default config for brokers in the cluster.\n"
    out = tools.both(CONFIG_COMMAND, *node, "--alter", "--add-config", "log.segment.bytes=2097152")
    assert out["kbroker"] == out["kafka"] == "Completed updating config for broker 1.\n"
    out = tools.both(CONFIG_COMMAND, *default, "--describe")
    # Kafka also lists its ELR cluster default min.insync.replicas=1 (KIP-966).
    assert _without(out["kafka"], "min.insync.replicas=") == out["kbroker"]
    assert (
        "log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}"
        in out["kbroker"]
    )
    out = tools.both(CONFIG_COMMAND, *node, "--describe")
    assert out["kbroker"] == out["kafka"]
    out = tools.both(CONFIG_COMMAND, *node, "--describe", "--all")
    lines = {b: _config_lines(text) for b, text in out.items()}
    # kbroker keeps data two weeks by default (log.retention.hours=336; Kafka: 168), a documented choice.
    lines["kbroker"]["log.retention.ms"] = lines["kbroker"]["log.retention.ms"].replace("hours=336", "hours=168")
    for name in ("log.retention.ms", "log.segment.bytes", "message.max.bytes", "log.cleanup.policy", "num.partitions"):
        assert lines["kbroker"][name] == lines["kafka"][name], name
    refused = tools.both(CONFIG_COMMAND, *default, "--alter", "--add-config", "log.retention.hours=1", check=False)
    for text in refused.values():
        assert "Cannot update these configs dynamically: [log.retention.hours]" in text
    out = tools.both(CONFIG_COMMAND, *default, "--alter", "--delete-config", "log.retention.ms,message.max.bytes")
    out = tools.both(CONFIG_COMMAND, *node, "--alter", "--delete-config", "log.segment.bytes")
    out = tools.both(CONFIG_COMMAND, *node, "--describe")
    assert out["kbroker"] == out["kafka"] == "Dynamic configs for broker 1 are:\n"


def _kafka_defaults() -> dict[str, str | None]:
    from kbroker.kafka_configs import BROKER

    return {name: default for name, _type, default, _dynamic, _sensitive in BROKER}


def _own_defaults() -> set[str]:
    """Broker configs whose kbroker default is its own (each property's note says so), and the topic-default
    groups that list them among their synonyms (log.retention.ms lists log.retention.hours)."""
    from kbroker.config_defs import BROKER_PROPERTIES, TOPIC_PROPERTIES, render_value

    kafka = _kafka_defaults()
    own = {n for n, p in BROKER_PROPERTIES.items() if n in kafka and render_value(p.default) != kafka[n]}
    for topic in TOPIC_PROPERTIES.values():
        names = {s.name for s in topic.synonyms}
        if names & own:
            own |= names
    return own


def test_configs_describe_all_broker(tools: Tools) -> None:
    """Every config Kafka's broker lists, kbroker lists, with the same line but where the brokers were started
    differently or kbroker's default is its own; kbroker adds its own configs."""
    out = tools.both(CONFIG_COMMAND, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
    lines = {b: _config_lines(text) for b, text in out.items()}
    assert len(lines["kafka"]) > 300
    own_names = KBROKER_ONLY | {n for n in lines["kbroker"] if n.startswith("kbroker.")}
    assert set(lines["kbroker"]) - own_names == set(lines["kafka"])
    started = {n for b in BROKERS for n, line in lines[b].items() if "STATIC_BROKER_CONFIG" in line}
    started.add("min.insync.replicas")  # Kafka's ELR cluster default (see test_configs_broker_default_and_per_broker)
    differ = {n for n in lines["kafka"] if lines["kbroker"][n] != lines["kafka"][n]}
    assert differ <= started | _own_defaults(), sorted(differ - started - _own_defaults())
    assert len(lines["kafka"]) - len(differ) > 280  # the rest is the same, line for line
    for name, line in lines["kafka"].items():
        assert ("sensitive=true" in line) == ("sensitive=true" in lines["kbroker"][name]), name
        if "sensitive=true" in line:
            assert line.startswith(f"{name}=null sensitive=true"), line
            assert lines["kbroker"][name].startswith(f"{name}=null sensitive=true"), lines["kbroker"][name]


def test_configs_describe_all_topic(tools: Tools) -> None:
    topic = _topic("all-configs")
    for bootstrap in tools.brokers.values():
        _create_topic(bootstrap, topic, 1)
    entity = ("--entity-type", "topics", "--entity-name", topic)
    out = tools.both(CONFIG_COMMAND, *entity, "--describe", "--all")
    lines = {b: _config_lines(text) for b, text in out.items()}
    assert {n for n in lines["kbroker"] if not n.startswith("kbroker.")} == set(lines["kafka"])
    differ = {n for n in lines["kafka"] if lines["kbroker"][n] != lines["kafka"][n]}
    # retention.ms: kbroker keeps two weeks (log.retention.hours=336); min.insync.replicas: Kafka's ELR default
    assert differ == {"retention.ms", "min.insync.replicas"}, differ
    assert lines["kbroker"]["retention.ms"].startswith("retention.ms=1209600000 ")
    assert lines["kafka"]["retention.ms"].startswith("retention.ms=604800000 ")
    refused = tools.both(CONFIG_COMMAND, *entity, "--alter", "--add-config", "remote.storage.enable=true", check=False)
    for text in refused.values():
        assert "Tiered Storage functionality is disabled in the broker" in text, text
    out = tools.both(CONFIG_COMMAND, *entity, "--alter", "--add-config", "leader.replication.throttled.replicas=0:1")
    assert out["kbroker"] == out["kafka"]
    out = tools.both(CONFIG_COMMAND, *entity, "--describe")
    assert out["kbroker"] == out["kafka"]
    assert "leader.replication.throttled.replicas=0:1" in out["kbroker"]


def test_describe_configs_with_confluent_admin(brokers: dict[str, str]) -> None:
    """confluent-kafka's AdminClient.describe_configs: the same names, sensitivity and read-only flags, and for
    configs neither broker was started with, the same source."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    described = {}
    for name, bootstrap in brokers.items():
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        described[name] = admin.describe_configs([resource], request_timeout=30)[resource].result(timeout=30)
    kafka, kbroker = described["kafka"], described["kbroker"]
    started = {n for d in (kafka, kbroker) for n, e in d.items() if _source(e) == STATIC_BROKER_CONFIG}
    started.add("min.insync.replicas")  # Kafka's ELR cluster default
    assert set(kafka) <= set(kbroker)
    assert set(kbroker) - set(kafka) == {n for n in kbroker if n.startswith("kbroker.")} | KBROKER_ONLY
    for name, entry in kafka.items():
        mine = kbroker[name]
        assert mine.is_sensitive == entry.is_sensitive, name
        if entry.is_sensitive:
            assert mine.value is None and entry.value is None, name
        if name not in started:
            assert _source(mine) == _source(entry), name
    read_only_differs = {n for n, e in kafka.items() if e.is_read_only != kbroker[n].is_read_only}
    assert read_only_differs == _static_in_kbroker(), read_only_differs


STATIC_BROKER_CONFIG = 4


def _source(entry: Any) -> int:
    """The DescribeConfigs source number (confluent-kafka gives an int or its ConfigSource enum)."""
    return int(getattr(entry.source, "value", entry.source))


def _static_in_kbroker() -> set[str]:
    return STATIC_IN_KBROKER


def test_configs_groups(tools: Tools) -> None:
    group = ("--entity-type", "groups", "--entity-name", _topic("group"))
    out = tools.both(CONFIG_COMMAND, *group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    assert out["kbroker"] == out["kafka"]
    out = tools.both(CONFIG_COMMAND, *group, "--describe")
    assert out["kbroker"] == out["kafka"]
    assert "consumer.session.timeout.ms=50000" in out["kbroker"]
    # every group with configs (ListConfigResources): only the groups these tests gave configs
    everyone = tools.both(CONFIG_COMMAND, "--entity-type", "groups", "--describe")
    assert everyone["kbroker"] == everyone["kafka"]
    assert "consumer.session.timeout.ms=50000" in everyone["kbroker"]
    out = tools.both(CONFIG_COMMAND, *group, "--describe", "--all")
    lines = {b: _config_lines(text) for b, text in out.items()}
    # Kafka 4.3 also has more share.* configs, the streams.* ones and consumer.assignment.interval.ms;
    # kbroker has two of its own (its share-group extensions, docs/queues.md).
    own = {"kbroker.share.tag.filter", "errors.deadletterqueue.topic.name"}
    assert {n: lines["kafka"][n] for n in lines["kbroker"] if n not in own} == {
        n: v for n, v in lines["kbroker"].items() if n not in own
    }
    assert set(lines["kbroker"]) - own == {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
    }
    refused = tools.both(
        CONFIG_COMMAND, *group, "--alter", "--add-config", "consumer.session.timeout.ms=1000", check=False
    )
    for text in refused.values():
        assert (
            "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms" in text
        )


def test_configs_broker_loggers(tools: Tools) -> None:
    loggers = ("--entity-type", "broker-loggers", "--entity-name", "1")
    out = tools.both(CONFIG_COMMAND, *loggers, "--alter", "--add-config", "root=ERROR")
    assert out["kbroker"] == out["kafka"] == "Completed updating config for broker-logger 1.\n"
    out = tools.both(CONFIG_COMMAND, *loggers, "--describe")
    lines = {b: _config_lines(text) for b, text in out.items()}
    assert lines["kbroker"]["root"] == lines["kafka"]["root"] == "root=ERROR sensitive=false synonyms={}"
    # Loggers are named after each broker's own code: Kafka's classes, kbroker's modules (those imported: a
    # handler's module loads at its API's first request, as the --alter above was IncrementalAlterConfigs')
    assert (
        "kbroker.handlers.incremental_alter_configs" in lines["kbroker"] and "kafka.server.KafkaApis" in lines["kafka"]
    )
    refused = tools.both(CONFIG_COMMAND, *loggers, "--alter", "--delete-config", "root", check=False)
    for text in refused.values():
        assert "Removing the log level of the root logger is not allowed" in text
    tools.both(CONFIG_COMMAND, *loggers, "--alter", "--add-config", "root=INFO")


def test_configs_client_quotas(tools: Tools) -> None:
    """kafka-configs manages user, client-id and default quotas (Alter/DescribeClientQuotas) the same on both."""
    user, client = _topic("quota-user"), _topic("quota-client")
    steps: list[tuple[str, ...]] = [
        (
            "--entity-type",
            "users",
            "--entity-name",
            user,
            "--alter",
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
        ),
        (
            "--entity-type",
            "clients",
            "--entity-name",
            client,
            "--alter",
            "--add-config",
            "request_percentage=50.5,controller_mutation_rate=10",
        ),
        (
            "--entity-type",
            "users",
            "--entity-name",
            user,
            "--entity-type",
            "clients",
            "--entity-name",
            client,
            "--alter",
            "--add-config",
            "producer_byte_rate=4096",
        ),
        ("--entity-type", "users", "--entity-default", "--alter", "--add-config", "consumer_byte_rate=65536"),
        ("--entity-type", "clients", "--entity-default", "--alter", "--add-config", "producer_byte_rate=1000000"),
        ("--entity-type", "ips", "--entity-name", "10.1.2.3", "--alter", "--add-config", "connection_creation_rate=5"),
    ]
    for step in steps:
        out = tools.both(CONFIG_COMMAND, *step)
        assert out["kbroker"] == out["kafka"], step
        assert out["kbroker"].startswith("Completed updating "), out["kbroker"]
    describes: list[tuple[str, ...]] = [
        ("--entity-type", "users", "--entity-name", user),
        ("--entity-type", "clients", "--entity-name", client),
        ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients", "--entity-name", client),
        ("--entity-type", "users", "--entity-default"),
        ("--entity-type", "clients", "--entity-default"),
        ("--entity-type", "ips", "--entity-name", "10.1.2.3"),
    ]
    for describe in describes:
        out = tools.both(CONFIG_COMMAND, *describe, "--describe")
        assert out["kbroker"] == out["kafka"], describe
    out = tools.both(CONFIG_COMMAND, "--entity-type", "users", "--entity-name", user, "--describe")
    assert "producer_byte_rate=1048576.0" in out["kbroker"] and "consumer_byte_rate=2097152.0" in out["kbroker"]
    refused = tools.both(
        CONFIG_COMMAND,
        "--entity-type",
        "clients",
        "--entity-name",
        client,
        "--alter",
        "--add-config",
        "producer_byte_rate=1.5",
        check=False,
    )
    for text in refused.values():
        assert "producer_byte_rate cannot be a fractional value." in text
    out = tools.both(
        CONFIG_COMMAND,
        "--entity-type",
        "users",
        "--entity-name",
        user,
        "--alter",
        "--delete-config",
        "consumer_byte_rate",
    )
    assert out["kbroker"] == out["kafka"]
    out = tools.both(CONFIG_COMMAND, "--entity-type", "users", "--entity-name", user, "--describe")
    assert out["kbroker"] == out["kafka"] and "consumer_byte_rate" not in out["kbroker"]
    for step in steps:  # the quotas set here would throttle other tests' clients
        keys = ",".join(item.split("=")[0] for item in step[-1].split(","))
        out = tools.both(CONFIG_COMMAND, *step[:-3], "--alter", "--delete-config", keys, check=False)
        assert out["kbroker"] == out["kafka"]  # the user's consumer_byte_rate is gone already: refused on both
    out = tools.both(CONFIG_COMMAND, "--entity-type", "users", "--describe")
    assert out["kbroker"] == out["kafka"]


def _config_lines(text: str) -> dict[str, str]:
    """'  name=value sensitive=... synonyms={...}' lines by name."""
    return {line.strip().split("=", 1)[0]: line.strip() for line in text.splitlines() if line.startswith("  ")}


def _without(text: str, fragment: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if fragment not in line)


# --------------------------------------------------------------------------- kafka-transactions


def test_transactions_abort_of_an_open_transaction(tools: Tools) -> None:
    topic = _topic("hanging")
    producers = tools.each(lambda b: _open_transaction(tools.brokers[b], topic))
    described = tools.both(
        "org.apache.kafka.tools.TransactionsCommand", "describe-producers", "--topic", topic, "--partition", "0"
    )
    rows = {b: _table(text) for b, text in described.items()}
    for table in rows.values():
        for row in table:
            row.update(ProducerId="<id>", LastTimestamp="<ts>")
    assert rows["kbroker"] == rows["kafka"]
    assert rows["kbroker"][0]["CurrentTransactionStartOffset"] == "0"
    listed = tools.both(
        "org.apache.kafka.tools.TransactionsCommand", "list", "--transactional-id-pattern", f"tx-{topic}"
    )
    listed_rows = {b: _table(text) for b, text in listed.items()}
    for table in listed_rows.values():
        for row in table:
            row["ProducerId"] = "<id>"
    assert listed_rows["kbroker"] == listed_rows["kafka"]
    assert [row["TransactionState"] for row in listed_rows["kbroker"]] == ["Ongoing"]
    hanging = tools.both("org.apache.kafka.tools.TransactionsCommand", "find-hanging", "--broker-id", "1")
    assert hanging["kbroker"] == hanging["kafka"]  # the coordinator still knows this one: not hanging
    aborted = tools.both(
        "org.apache.kafka.tools.TransactionsCommand",
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        "0",
    )
    assert aborted["kbroker"] == aborted["kafka"]
    stable = tools.each(lambda b: _last_stable_offset(tools.brokers[b], topic))
    assert stable == {"kbroker": 3, "kafka": 3}  # two records and the ABORT marker
    del producers


def _open_transaction(bootstrap: str, topic: str) -> Any:
    from confluent_kafka import Producer

    _create_topic(bootstrap, topic, 1)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}", "transaction.timeout.ms": 600000}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in (b"1", b"2"):
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(10) == 0
    return producer


def _last_stable_offset(bootstrap: str, topic: str) -> int:
    body = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    with RawClient(bootstrap) as raw:
        return int(raw.call(2, 7, body)["topics"][0]["partitions"][0]["offset"])


def _table(text: str) -> list[dict[str, str]]:
    lines = [line.split("\t") for line in text.splitlines() if line.strip()]
    header = [h.strip() for h in lines[0] if h.strip()]
    return [dict(zip(header, (c.strip() for c in row), strict=False)) for row in lines[1:]]


# --------------------------------------------------------------------------- kafka-acls without an authorizer


def test_acls_list_without_an_authorizer(tools: Tools) -> None:
    """No authorizer.class.name: DescribeAcls answers SECURITY_DISABLED on both brokers (tests/broker/test_acls_vs_kafka.py
    runs kafka-acls against brokers with one)."""
    outputs = tools.both("org.apache.kafka.tools.AclCommand", "--list", check=False)
    for out in outputs.values():
        assert "SecurityDisabledException: No Authorizer is configured" in out, out


# --------------------------------------------------------------------------- APIs kbroker does not offer


@pytest.mark.parametrize(
    ("main_class", "args", "api"),
    [
        (
            "org.apache.kafka.tools.LeaderElectionCommand",
            ["--election-type", "preferred", "--all-topic-partitions"],
            "ELECT_LEADERS",
        ),
        ("org.apache.kafka.tools.MetadataQuorumCommand", ["describe", "--status"], "DESCRIBE_QUORUM"),
        ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", ["--list"], "LIST_PARTITION_REASSIGNMENTS"),
        ("org.apache.kafka.tools.FeatureCommand", ["upgrade", "--feature", "transaction.version=2"], "UPDATE_FEATURES"),
    ],
)
def test_missing_apis_fail_fast_with_the_usual_error(tools: Tools, main_class: str, args: list[str], api: str) -> None:
    started = time.monotonic()
    out = tools.run("kbroker", main_class, *args, check=False)
    assert f"The node does not support {api}" in out
    assert time.monotonic() - started < 15, "the tool waited instead of failing at once"


# --------------------------------------------------------------------------- kafka-consumer-groups, KIP-848

GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def _consumer_protocol_member(bootstrap: str, group: str, topic: str, wanted: int) -> Any:
    """A confluent-kafka consumer with group.protocol=consumer that has read `wanted` records and committed."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": "kip848-tools",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got, errors = 0, set()
    # Apache Kafka's first KIP-848 assignment took over 60 s once with both cores busy: 120 s, and the
    # errors the consumer saw in the message if it ever fails
    deadline = time.monotonic() + 120
    while got < wanted:
        assert time.monotonic() < deadline, f"{got} of {wanted} records on {bootstrap}; errors {errors}"
        messages = consumer.consume(100, 0.5)
        errors |= {str(m.error()) for m in messages if m.error() is not None}
        got += len([m for m in messages if m.error() is None])
    consumer.commit(asynchronous=False)
    return consumer


def _rows(text: str, columns: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The named columns of a kafka-consumer-groups table (header line first)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line and line[0] == "GROUP")
    names = lines[header]
    return sorted(tuple(row[names.index(c)] for c in columns) for row in lines[header + 1 :] if len(row) == len(names))


def test_consumer_groups_on_a_consumer_protocol_group(tools: Tools) -> None:
    topic, group = _topic("cgroup"), _topic("kip848")
    records = [(p, f"v{p}-{i}".encode(), 1_700_000_000_000 + i) for p in range(3) for i in range(4)]

    def start(broker: str) -> Any:
        _create_topic(tools.brokers[broker], topic, 3)
        _produce(tools.brokers[broker], topic, records)
        return _consumer_protocol_member(tools.brokers[broker], group, topic, len(records))

    members = tools.each(start)
    try:
        offsets = tools.both(GROUP_COMMAND, "--describe", "--group", group)
        columns = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CLIENT-ID")
        assert _rows(offsets["kbroker"], columns) == _rows(offsets["kafka"], columns)
        assert _rows(offsets["kbroker"], ("PARTITION", "CURRENT-OFFSET", "LAG")) == [
            (str(p), "4", "0") for p in range(3)
        ]
        state = tools.both(GROUP_COMMAND, "--describe", "--group", group, "--state")
        columns = ("GROUP", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
        assert _rows(state["kbroker"], columns) == _rows(state["kafka"], columns) == [(group, "uniform", "Stable", "1")]
        verbose = tools.both(GROUP_COMMAND, "--describe", "--group", group, "--members", "--verbose")
        columns = ("GROUP", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT")
        assert _rows(verbose["kbroker"], columns) == _rows(verbose["kafka"], columns)
        # epochs may differ (Kafka bumps the group epoch again when its metadata image catches up with the
        # new topic); on both the member has reached the target epoch
        for text in verbose.values():
            ((current, target),) = _rows(text, ("CURRENT-EPOCH", "TARGET-EPOCH"))
            assert current == target
        listed = tools.both(GROUP_COMMAND, "--list", "--type")
        mine = {b: [line.split() for line in text.splitlines() if line.startswith(group)] for b, text in listed.items()}
        assert mine["kbroker"] == mine["kafka"] and "consumer" in str(mine["kafka"]).lower(), listed
    finally:
        tools.each(lambda broker: members[broker].close())
    # with the member gone, reset the offsets to the earliest, as an operator would
    reset = tools.both(
        GROUP_COMMAND, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"
    )
    columns = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
    assert _rows(reset["kbroker"], columns) == _rows(reset["kafka"], columns)
    offsets = tools.both(GROUP_COMMAND, "--describe", "--group", group)
    columns = ("PARTITION", "CURRENT-OFFSET", "LAG")
    assert (
        _rows(offsets["kbroker"], columns) == _rows(offsets["kafka"], columns) == [(str(p), "0", "4") for p in range(3)]
    )
