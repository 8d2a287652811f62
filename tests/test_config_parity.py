"""kbroker's config tables against Apache Kafka's (kbroker/kafka_configs.py, captured from Kafka 4.3.1 by
scripts/kafka_config_table.py): the same names, types, defaults, sensitivity and dynamic flags, every
difference named here with its reason. tests/tools/test_kafka_tools.py checks the same against a running
Kafka with its own kafka-configs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kbroker.config import BrokerConfig
from kbroker.config_defs import BROKER_PROPERTIES, DYNAMIC_BROKER_CONFIGS, TOPIC_PROPERTIES, ConfigType, render_value
from kbroker.config_ignored import reason_ignored
from kbroker.kafka_configs import BROKER, TOPIC

ROOT = Path(__file__).resolve().parent.parent
KAFKA = {name: (ConfigType(t), default, dynamic, sensitive) for name, t, default, dynamic, sensitive in BROKER}

# kbroker's own properties, which Kafka 4.3 does not have.
KBROKER_ONLY = {
    # ZooKeeper-mode clustering (Kafka 4 dropped ZooKeeper; kbroker clusters through it)
    "zookeeper.connect",
    "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms",
    "leader.imbalance.per.broker.percentage",  # Kafka 4 (KRaft) dropped it; its ZooKeeper mode read it
    # the REST Proxy's consumer instances (Confluent REST Proxy's name)
    "consumer.instance.timeout.ms",
    # Kafka reads these too but does not list them: the authorizer's own settings (from the broker's
    # properties, outside its config definitions) and an internal timer
    "super.users",
    "allow.everyone.if.no.acl.found",
    "producer.id.expiration.check.interval.ms",
}

# Kafka changes these at run time; kbroker reads them at start only (docs/compatibility.md, "Dynamic broker
# configs"): its listeners, TLS and SASL settings, connection limits, cleaner and producer-id expiry.
STATIC_IN_KBROKER = {
    "listener.security.protocol.map",
    "listeners",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.threads",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "producer.id.expiration.ms",
    "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
}


def test_every_kafka_broker_config_is_known_and_every_extra_one_is_kbrokers() -> None:
    assert set(KAFKA) <= set(BROKER_PROPERTIES)
    extra = set(BROKER_PROPERTIES) - set(KAFKA)
    assert {n for n in extra if not n.startswith("kbroker.")} == KBROKER_ONLY


def test_types_and_sensitivity_are_kafkas() -> None:
    for name, (type_, _default, _dynamic, sensitive) in KAFKA.items():
        prop = BROKER_PROPERTIES[name]
        assert prop.describe_type is type_, name
        assert prop.sensitive is sensitive, name


def test_defaults_are_kafkas_or_the_difference_is_noted() -> None:
    differ = []
    for name, (_type, default, _dynamic, sensitive) in KAFKA.items():
        prop = BROKER_PROPERTIES[name]
        if sensitive or render_value(prop.default) == default:
            continue
        assert prop.note, f"{name}: kbroker's default {render_value(prop.default)!r}, Kafka's {default!r}, no note"
        differ.append(name)
    # the differences are few and each is stated in the property's note (kbroker configs, docs)
    assert len(differ) < 20, differ


def test_every_ignored_config_says_why() -> None:
    for name, prop in BROKER_PROPERTIES.items():
        if prop.ignored:
            assert prop.note, name
            if name in KAFKA and prop.doc.startswith("Apache Kafka's"):
                assert reason_ignored(name) is not None, f"{name}: no rule in kbroker/config_ignored.py"


def test_dynamic_configs_are_kafkas_dynamic_ones() -> None:
    kafka_dynamic = {name for name, (_t, _d, dynamic, _s) in KAFKA.items() if dynamic}
    assert DYNAMIC_BROKER_CONFIGS <= kafka_dynamic
    assert kafka_dynamic - DYNAMIC_BROKER_CONFIGS == STATIC_IN_KBROKER


def test_topic_configs_are_kafkas() -> None:
    kafka = {name: (ConfigType(t), value) for name, t, value, _sensitive in TOPIC}
    own = {n for n in TOPIC_PROPERTIES if n.startswith("kbroker.")}
    assert set(TOPIC_PROPERTIES) - own == set(kafka)
    defaults = BrokerConfig.build().topic_defaults()
    # kbroker keeps data two weeks by default (log.retention.hours=336), and rolls no differently
    expected_differences = {"retention.ms"}
    for name, (type_, value) in kafka.items():
        assert TOPIC_PROPERTIES[name].type is type_, name
        if name not in expected_differences:
            assert defaults[name] == value, name
    assert defaults["retention.ms"] == str(336 * 3_600_000)


def test_the_ignored_configs_table_in_the_docs_is_current() -> None:
    spec = importlib.util.spec_from_file_location("kafka_config_table", ROOT / "scripts" / "kafka_config_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (ROOT / "docs" / "compatibility.md").read_text()
    assert module.rewrite(text) == text, "docs/compatibility.md is stale: run scripts/kafka_config_table.py --write"
