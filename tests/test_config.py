"""Broker configuration: parsing, validation, precedence, topic defaults, properties files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbroker.config import (
    BrokerConfig,
    ConfigError,
    ConfigSource,
    Endpoint,
    parse_endpoint,
    parse_properties,
    read_properties_file,
    validate_topic_configs,
)
from kbroker.config_defs import (
    BROKER_PROPERTIES,
    TOPIC_PROPERTIES,
    BrokerProperty,
    ConfigType,
    java_double,
    render_value,
)


def build(**props: str) -> BrokerConfig:
    return BrokerConfig.build({k.replace("_", "."): v for k, v in props.items()})


# --------------------------------------------------------------------------- defaults


def test_defaults_are_kafkas_except_documented_ones() -> None:
    config = BrokerConfig.build()
    assert config.node_id == 1
    assert config.get("num.partitions") == 1
    assert config.get("default.replication.factor") == 1
    assert config.get("auto.create.topics.enable") is True
    assert config.get("delete.topic.enable") is True
    assert config.get("socket.request.max.bytes") == 104857600
    assert config.get("connections.max.idle.ms") == 600000
    assert config.get("max.connections") == 1000
    assert "2147483647" in (BROKER_PROPERTIES["max.connections"].note or "")
    assert config.get("queued.max.request.bytes") == 256 * 2**20
    assert "-1" in (BROKER_PROPERTIES["queued.max.request.bytes"].note or "")
    assert config.get("group.min.session.timeout.ms") == 6000
    assert config.get("group.max.session.timeout.ms") == 1800000
    assert config.get("offsets.retention.minutes") == 10080
    assert config.get("transactional.id.expiration.ms") == 604800000
    assert config.get("transaction.max.timeout.ms") == 900000
    assert config.get("producer.id.expiration.ms") == 86400000
    assert config.get("message.max.bytes") == 1048588
    assert config.fsync_before_ack is False
    assert config.get("log.retention.ms") is None
    assert config.get("group.initial.rebalance.delay.ms") == 0
    assert "3000" in (BROKER_PROPERTIES["group.initial.rebalance.delay.ms"].note or "")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"queued.max.request.bytes": "1000"}, "at least socket.request.max.bytes"),
        ({"max.connections.per.ip.overrides": "127.0.0.1"}, "expected HOST:COUNT"),
        ({"max.connections.per.ip.overrides": "h:x"}, "expected HOST:COUNT"),
    ],
)
def test_request_and_connection_limits_are_checked(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.build(props)
    assert BrokerConfig.build({"queued.max.request.bytes": "-1", "max.connections.per.ip.overrides": "h:1,::1:5"})


def test_default_addresses_and_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = BrokerConfig.build()
    assert config.listen == Endpoint("127.0.0.1", 9092)
    assert config.advertised == Endpoint("127.0.0.1", 9092)
    assert config.data_dir == (tmp_path / "data").resolve()


@pytest.mark.parametrize("prop", list(BROKER_PROPERTIES.values()), ids=lambda p: p.name)
def test_every_broker_default_passes_its_own_validation(prop: BrokerProperty) -> None:
    rendered = render_value(prop.default)
    if rendered is not None:
        assert prop.parse(rendered) == prop.default


def test_every_topic_config_default_passes_its_own_validation() -> None:
    defaults = BrokerConfig.build().topic_default_values()
    assert set(defaults) == set(TOPIC_PROPERTIES)
    for name, value in defaults.items():
        assert TOPIC_PROPERTIES[name].parse(str(render_value(value))) == value


# --------------------------------------------------------------------------- types and validation


def test_values_parse_from_strings_by_type() -> None:
    config = build(
        num_partitions=" 12 ",
        log_retention_bytes="1099511627776",
        auto_create_topics_enable="FALSE",
        log_cleanup_policy="compact, delete",
        log_cleaner_min_cleanable_ratio="0.25",
        log_message_timestamp_type="LogAppendTime",
    )
    assert config.get_int("num.partitions") == 12
    assert config.get_int("log.retention.bytes") == 2**40
    assert config.get_bool("auto.create.topics.enable") is False
    assert config.get_list("log.cleanup.policy") == ("compact", "delete")
    assert config.get_float("log.cleaner.min.cleanable.ratio") == 0.25
    assert config.get_str("log.message.timestamp.type") == "LogAppendTime"


@pytest.mark.parametrize(
    ("name", "raw", "fragment"),
    [
        ("num.partitions", "three", "expected an integer"),
        ("num.partitions", "", "expected an integer"),
        ("num.partitions", "0", "[1,...]"),
        ("num.partitions", "2147483648", "out of range for int"),
        ("log.retention.ms", "9223372036854775808", "out of range for long"),
        ("auto.create.topics.enable", "yes", "true or false"),
        ("log.cleaner.min.cleanable.ratio", "1.5", "[0,1]"),
        ("log.message.timestamp.type", "createtime", "CreateTime, LogAppendTime"),
        ("log.cleanup.policy", "delete,archive", "'archive'"),
        ("compression.type", "brotli", "producer"),
        ("compression.gzip.level", "0", "or -1"),
        ("log.segment.bytes", "13", "[14,...]"),
        ("offsets.topic.replication.factor", "40000", "out of range for short"),
    ],
)
def test_bad_values_are_rejected_naming_the_property(name: str, raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.build({name: raw})
    message = str(info.value)
    assert name in message and fragment in message and "\n" not in message


def test_edge_values_inside_ranges_are_accepted() -> None:
    config = build(compression_gzip_level="-1", log_segment_bytes="14", log_cleaner_min_cleanable_ratio="1")
    assert config.get("compression.gzip.level") == -1
    assert config.get("log.segment.bytes") == 14
    assert config.get("log.cleaner.min.cleanable.ratio") == 1.0


def test_unknown_key_suggests_the_closest_known_one() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown broker config 'num\.partition' \(did you mean 'num\.partitions'\?\)"
    ):
        BrokerConfig.build({"num.partition": "3"})
    with pytest.raises(ConfigError, match="kbroker configs"):
        BrokerConfig.build({"zzz.qqq": "1"})
    with pytest.raises(ConfigError, match="log.retention.hours"):
        BrokerConfig.build({"log.retension.hours": "1"})


def test_get_of_unknown_name_and_wrong_type_are_errors() -> None:
    config = BrokerConfig.build()
    with pytest.raises(ConfigError, match="did you mean"):
        config.get("node.idd")
    with pytest.raises(ConfigError):
        config.get_int("auto.create.topics.enable")
    with pytest.raises(ConfigError):
        config.get_int("log.retention.ms")  # unset, no default


# --------------------------------------------------------------------------- explicit vs default


def test_sources_tell_explicit_from_default() -> None:
    config = build(num_partitions="1")
    assert config.is_set("num.partitions") and not config.is_set("log.segment.bytes")
    assert config.source("num.partitions") is ConfigSource.STATIC_BROKER_CONFIG
    assert config.source("log.segment.bytes") is ConfigSource.DEFAULT_CONFIG
    assert config.explicit == {"num.partitions": "1"}


def test_broker_entries_include_ignored_properties_and_only_dynamic_ones_are_writable() -> None:
    config = build(num_partitions="4", num_network_threads="3")
    entries = {e.name: e for e in config.broker_entries()}
    # accepted without effect, listed as Kafka lists it
    assert entries["num.network.threads"].value == "3"
    assert entries["num.network.threads"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["remote.log.storage.system.enable"].value == "false"
    assert entries["remote.log.storage.system.enable"].source is ConfigSource.DEFAULT_CONFIG
    assert entries["ssl.keymanager.algorithm"].value == "SunX509"
    assert entries["delegation.token.secret.key"].value is None and entries["delegation.token.secret.key"].sensitive
    assert entries["num.partitions"].value == "4"
    assert entries["num.partitions"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].type is ConfigType.INT
    assert entries["log.retention.ms"].value is None
    # Kafka 4.3 updates log.retention.ms dynamically, not log.retention.hours or num.partitions
    assert not entries["log.retention.ms"].read_only
    assert entries["log.retention.hours"].read_only and entries["num.partitions"].read_only
    assert config.ignored_settings() == ["num.network.threads"]


# --------------------------------------------------------------------------- topic defaults


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, 1209600000),  # kbroker: two weeks by default
        ({"log.retention.hours": "24"}, 86400000),
        ({"log.retention.minutes": "5", "log.retention.hours": "24"}, 300000),
        ({"log.retention.ms": "1000", "log.retention.minutes": "5", "log.retention.hours": "24"}, 1000),
        ({"log.retention.ms": "1000", "log.retention.hours": "24"}, 1000),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-5"}, -1),
    ],
)
def test_retention_ms_precedence_ms_over_minutes_over_hours(props: dict[str, str], expected: int) -> None:
    config = BrokerConfig.build(props)
    assert config.topic_default_values()["retention.ms"] == expected
    assert config.topic_defaults()["retention.ms"] == str(expected)


def test_topic_defaults_follow_kafkas_synonyms() -> None:
    config = build(
        log_segment_bytes="1048576",
        log_roll_hours="2",
        log_retention_bytes="5000",
        log_index_interval_bytes="100",
        log_index_size_max_bytes="4096",
        log_flush_interval_messages="1",
        log_flush_interval_ms="10",
        message_max_bytes="2000000",
        log_message_timestamp_type="LogAppendTime",
        log_cleanup_policy="compact",
        min_insync_replicas="1",
        compression_type="zstd",
    )
    defaults = config.topic_defaults()
    assert defaults["segment.bytes"] == "1048576"
    assert defaults["segment.ms"] == str(2 * 3600_000)
    assert defaults["retention.bytes"] == "5000"
    assert defaults["index.interval.bytes"] == "100"
    assert defaults["segment.index.bytes"] == "4096"
    assert defaults["flush.messages"] == "1"
    assert defaults["flush.ms"] == "10"
    assert defaults["max.message.bytes"] == "2000000"
    assert defaults["message.timestamp.type"] == "LogAppendTime"
    assert defaults["cleanup.policy"] == "compact"
    assert defaults["compression.type"] == "zstd"


def test_unset_synonyms_fall_back_in_order() -> None:
    defaults = BrokerConfig.build().topic_defaults()
    assert defaults["segment.ms"] == "604800000"  # log.roll.hours=168
    assert defaults["flush.ms"] == str(2**63 - 1)  # log.flush.scheduler.interval.ms
    assert defaults["segment.jitter.ms"] == "0"
    assert defaults["min.cleanable.dirty.ratio"] == "0.5"
    assert defaults["cleanup.policy"] == "delete"
    assert build(log_roll_ms="1000", log_roll_hours="5").topic_defaults()["segment.ms"] == "1000"
    assert build(log_flush_scheduler_interval_ms="77").topic_defaults()["flush.ms"] == "77"


def test_topic_entries_report_sources_and_synonyms() -> None:
    config = build(log_retention_minutes="5", log_roll_ms="7200000")
    entries = {e.name: e for e in config.topic_entries({"segment.bytes": "2097152"})}
    retention = entries["retention.ms"]
    # Kafka's ConfigHelper drops the synonyms listed before the primary broker name (log.retention.ms, unset
    # here), so the derived value is reported with no synonym and as a default, as Kafka 4.3 answers.
    assert (retention.value, retention.source, retention.synonyms) == ("300000", ConfigSource.DEFAULT_CONFIG, ())
    roll = entries["segment.ms"]
    assert (roll.value, roll.source) == ("7200000", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in roll.synonyms] == [
        ("log.roll.ms", "7200000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.roll.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2097152", ConfigSource.TOPIC_CONFIG)
    assert segment.synonyms[0].name == "segment.bytes"
    assert entries["segment.jitter.ms"].source is ConfigSource.DEFAULT_CONFIG
    assert not any(e.read_only for e in entries.values())


def test_topic_configs_validate_names_and_values() -> None:
    assert validate_topic_configs({"retention.ms": "1000", "cleanup.policy": "compact,delete"}) == {
        "retention.ms": 1000,
        "cleanup.policy": ("compact", "delete"),
    }
    with pytest.raises(ConfigError, match=r"unknown topic config 'retention\.msec' \(did you mean 'retention\.ms'\?\)"):
        validate_topic_configs({"retention.msec": "1"})
    with pytest.raises(ConfigError, match="retention.ms"):
        validate_topic_configs({"retention.ms": "-2"})
    merged = BrokerConfig.build().topic_config({"segment.bytes": "1048576", "flush.ms": None})
    assert merged["segment.bytes"] == 1048576 and merged["flush.ms"] == 2**63 - 1


# --------------------------------------------------------------------------- node id, listeners, data dir


def test_broker_id_stands_in_for_node_id_and_must_agree() -> None:
    assert build(broker_id="7").node_id == 7
    assert build(broker_id="7").get("broker.id") == 7
    assert build(node_id="3").get("broker.id") == 3
    assert BrokerConfig.build({"node.id": "4", "broker.id": "4"}).node_id == 4
    with pytest.raises(ConfigError, match="must equal node.id"):
        BrokerConfig.build({"node.id": "4", "broker.id": "5"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9092", Endpoint("127.0.0.1", 9092)),
        ("localhost:0", Endpoint("localhost", 0)),
        (":9093", Endpoint("0.0.0.0", 9093)),
        ("[::1]:9092", Endpoint("::1", 9092)),
    ],
)
def test_parse_endpoint(text: str, expected: Endpoint) -> None:
    assert parse_endpoint(text) == expected


@pytest.mark.parametrize("text", ["localhost", "host:port", "host:70000", "::1:9092", ""])
def test_parse_endpoint_rejects_malformed(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_endpoint(text, "--listen")


def test_endpoint_str_brackets_ipv6() -> None:
    assert str(Endpoint("::1", 9092)) == "[::1]:9092"
    assert str(Endpoint("host", 1)) == "host:1"


def test_wildcard_listen_advertises_loopback_unless_given() -> None:
    config = BrokerConfig.build(listen="0.0.0.0:9192")
    assert config.listen == Endpoint("0.0.0.0", 9192) and config.advertised == Endpoint("127.0.0.1", 9192)
    assert BrokerConfig.build(listen="[::]:9192").advertised == Endpoint("::1", 9192)
    config = BrokerConfig.build(listen="0.0.0.0:9192", advertised_listener="broker.example:19092")
    assert config.advertised == Endpoint("broker.example", 19092)
    with pytest.raises(ConfigError, match="reachable"):
        BrokerConfig.build(advertised_listener="0.0.0.0:9092")


def test_listeners_properties_with_controller_listener_skipped() -> None:
    props = {
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    }
    config = BrokerConfig.build(props)
    assert config.listen == Endpoint("0.0.0.0", 9092)
    assert config.advertised == Endpoint("localhost", 9092)
    flagged = BrokerConfig.build(props, listen="127.0.0.1:1234", advertised_listener="h:5678")
    assert (flagged.listen, flagged.advertised) == (Endpoint("127.0.0.1", 1234), Endpoint("h", 5678))


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        ({"listeners": "X://:9093", "listener.security.protocol.map": "X:KERBEROS"}, "uses KERBEROS"),
        ({"listeners": "PLAINTEXT://:9092,OTHER://:9093"}, "unmapped protocol"),
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "twice"),
        (
            {"listeners": "A://:9092,B://:9092", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
            "port of its own",
        ),
        ({"advertised.listeners": "OTHER://h:1"}, "not in listeners"),
        ({"listener.name.plaintext.num.partitions": "3"}, "per-listener"),
        ({"listener.name.plaintext.max.connections": "x"}, "max.connections"),
        ({"listeners": "localhost:9092"}, "NAME://HOST:PORT"),
        ({"listeners": "INTERNAL://:9092"}, "unmapped"),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "NAME:PROTOCOL"),
    ],
)
def test_bad_listeners_are_errors(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        BrokerConfig.build(props)


def test_two_listeners_with_their_own_advertised_addresses_and_settings() -> None:
    config = BrokerConfig.build(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,EXTERNAL://0.0.0.0:19092",
            "advertised.listeners": "EXTERNAL://broker.example:19092",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "listener.name.external.max.connections": "7",
        }
    )
    assert [(x.name, x.protocol, x.bind, x.advertised) for x in config.listeners] == [
        ("PLAINTEXT", "PLAINTEXT", Endpoint("127.0.0.1", 9092), Endpoint("127.0.0.1", 9092)),
        ("EXTERNAL", "PLAINTEXT", Endpoint("0.0.0.0", 19092), Endpoint("broker.example", 19092)),
    ]
    assert config.listen == Endpoint("127.0.0.1", 9092)
    assert config.for_listener("EXTERNAL", "max.connections") == 7
    assert config.for_listener("PLAINTEXT", "max.connections") == 1000
    bound = BrokerConfig.build(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        }
    ).with_bound_ports({"PLAINTEXT": 4000, "EXTERNAL": 4001})
    assert [x.advertised for x in bound.listeners] == [Endpoint("127.0.0.1", 4000), Endpoint("127.0.0.1", 4001)]
    assert bound.get("listeners") == "PLAINTEXT://127.0.0.1:4000,EXTERNAL://127.0.0.1:4001"


def test_listen_flag_replaces_listeners_with_one_plaintext_listener() -> None:
    config = BrokerConfig.build(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,EXTERNAL://0.0.0.0:19092",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        },
        listen="127.0.0.1:7000",
        advertised_listener="h:7001",
    )
    assert [(x.name, x.bind, x.advertised) for x in config.listeners] == [
        ("PLAINTEXT", Endpoint("127.0.0.1", 7000), Endpoint("h", 7001))
    ]


def test_with_listen_port_fills_a_derived_port_zero() -> None:
    config = BrokerConfig.build(listen="127.0.0.1:0").with_listen_port(40123)
    assert config.listen == Endpoint("127.0.0.1", 40123) and config.advertised == Endpoint("127.0.0.1", 40123)
    fixed = BrokerConfig.build(listen="127.0.0.1:0", advertised_listener="h:9000").with_listen_port(40123)
    assert fixed.advertised == Endpoint("h", 9000)


def test_flags_are_reported_under_kafkas_names(tmp_path: Path) -> None:
    config = BrokerConfig.build(listen="127.0.0.1:0", advertised_listener="h:9000", data_dir=tmp_path)
    assert config.source("listeners") is ConfigSource.STATIC_BROKER_CONFIG
    assert config.get("advertised.listeners") == "PLAINTEXT://h:9000"
    assert config.get("log.dirs") == (str(tmp_path.resolve()),)
    bound = config.with_listen_port(40999)
    entries = {e.name: e.value for e in bound.broker_entries(["listeners", "advertised.listeners"])}
    assert entries == {"listeners": "PLAINTEXT://127.0.0.1:40999", "advertised.listeners": "PLAINTEXT://h:9000"}
    assert BrokerConfig.build().source("listeners") is ConfigSource.DEFAULT_CONFIG


def test_data_dir_precedence(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    props = {"log.dir": str(a), "log.dirs": str(b)}
    assert BrokerConfig.build(props, data_dir=c).data_dir == c
    assert BrokerConfig.build(props).data_dir == b
    assert BrokerConfig.build({"log.dir": str(a)}).data_dir == a
    # --data-dir (one directory) wins over log.dirs, which wins over log.dir
    assert BrokerConfig.build({"log.dirs": f"{a},{b}"}, data_dir=c).log_dirs == (c,)
    several = BrokerConfig.build({"log.dirs": f"{a}, {b}", "log.dir": str(c)})
    assert several.log_dirs == (a, b) and several.data_dir == a
    assert BrokerConfig.build({"log.dir": str(a)}).log_dirs == (a,)
    with pytest.raises(ConfigError, match="twice"):
        BrokerConfig.build({"log.dirs": f"{a},{b},{a}/"})


# --------------------------------------------------------------------------- properties files


def test_properties_format() -> None:
    text = "\n".join(
        [
            "# a comment",
            "! another comment",
            "   ",
            "num.partitions=3",
            "log.retention.hours : 24",
            "auto.create.topics.enable false",
            "  log.dirs = /var/lib/a \\",
            "             ,/var/lib/b",
            "empty.value=",
            "key\\ with\\ spaces=v",
            "escaped=tab\\there\\u0041",
            "backslash.end=c:\\\\",
            "num.partitions=5",
            "# comment ending in backslash \\",
            "after.comment=1",
            "colon:in:value=x:y",
        ]
    )
    assert parse_properties(text) == {
        "num.partitions": "5",
        "log.retention.hours": "24",
        "auto.create.topics.enable": "false",
        "log.dirs": "/var/lib/a ,/var/lib/b",
        "empty.value": "",
        "key with spaces": "v",
        "escaped": "tab\thereA",
        "backslash.end": "c:\\",
        "after.comment": "1",
        "colon": "in:value=x:y",
    }


def test_properties_line_endings_and_trailing_continuation() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\n") == {"a": "1", "b": "2", "c": "3"}
    assert parse_properties("a=1\\") == {"a": "1"}
    assert parse_properties("a=x\\\n\n") == {"a": "x"}


def test_stock_kraft_server_properties_loads(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        """
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
""",
        encoding="utf-8",
    )
    config = BrokerConfig.build(read_properties_file(path))
    assert config.listen == Endpoint("0.0.0.0", 9092)
    assert config.advertised == Endpoint("localhost", 9092)
    assert config.data_dir == Path("/tmp/kraft-combined-logs")
    assert "num.io.threads" in config.ignored_settings() and "num.partitions" not in config.ignored_settings()


def test_missing_properties_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_properties_file(tmp_path / "nope.properties")


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (1.0, "1.0"), (1e7, "1.0E7"), (1.7976931348623157e308, "1.7976931348623157E308"), (1e-4, "1.0E-4")],
)
def test_doubles_render_as_java_does(value: float, text: str) -> None:
    assert java_double(value) == text


def test_render_values() -> None:
    assert render_value(True) == "true"
    assert render_value(("compact", "delete")) == "compact,delete"
    assert render_value(None) is None
    assert render_value(()) == ""


def test_fsync_before_ack_is_also_a_topic_default() -> None:
    assert BrokerConfig.build().topic_defaults()["kbroker.fsync.before.ack"] == "false"
    config = build(kbroker_fsync_before_ack="true")
    assert config.fsync_before_ack is True
    assert config.topic_defaults()["kbroker.fsync.before.ack"] == "true"


def test_the_log_layer_accepts_every_topic_default() -> None:
    from kbroker.log.config import LogConfig

    config = build(log_retention_hours="1", log_segment_bytes="1048576", kbroker_fsync_before_ack="true")
    log_config = LogConfig.from_properties(config.topic_defaults())
    assert (log_config.retention_ms, log_config.segment_bytes, log_config.fsync_before_ack) == (3600000, 1048576, True)


# Apache Kafka 4.3.1 started with each of these (tests/kafka_ref.py, one node): the accepted ones start, the
# rejected ones stop in KafkaConfig.validateValues, which checks the values derived from the synonyms.
@pytest.mark.parametrize(
    ("props", "retention_ms"),
    [
        ({"log.retention.ms": "-5"}, -1),  # any negative time means unlimited
        ({"log.retention.minutes": "-3"}, -1),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.ms": "1"}, 1),
    ],
)
def test_negative_retention_means_unlimited_as_in_kafka(props: dict[str, str], retention_ms: int) -> None:
    assert BrokerConfig.build(props).topic_default_values()["retention.ms"] == retention_ms


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        ({"log.retention.ms": "0"}, "invalid value 0 for log.retention.ms: the retention time must be unlimited"),
        ({"log.retention.minutes": "0"}, "invalid value 0 for log.retention.minutes"),
        ({"log.retention.hours": "0"}, "invalid value 0 for log.retention.hours"),
        ({"log.roll.ms": "0"}, "invalid value 0 for log.roll.ms: the roll time must be at least 1 ms"),
        ({"log.roll.jitter.ms": "-1"}, "invalid value -1 for log.roll.jitter.ms"),
    ],
)
def test_derived_log_times_are_checked_as_kafka_does(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        BrokerConfig.build(props)
