"""The cluster settings under Kafka's names: parsed, checked, and absent by default (a broker alone)."""

from __future__ import annotations

import pytest

from kbroker.config import BrokerConfig, ConfigError
from kbroker.config_defs import BROKER_PROPERTIES


def test_a_broker_alone_by_default() -> None:
    config = BrokerConfig.build()
    assert config.zookeeper_connect is None
    assert config.inter_broker_listener.name == "PLAINTEXT"
    assert config.get_int("default.replication.factor") == 1
    assert config.get_bool("unclean.leader.election.enable") is False
    assert config.get_int("zookeeper.session.timeout.ms") == 18000


def test_cluster_settings_with_kafka_names() -> None:
    config = BrokerConfig.build(
        {
            "broker.id": "2",
            "zookeeper.connect": "127.0.0.1:2181,127.0.0.1:2182/kafka/one",
            "listeners": "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
            "replica.lag.time.max.ms": "10000",
            "replica.fetch.max.bytes": "2097152",
            "broker.rack": "r1",
        }
    )
    assert config.node_id == 2
    assert config.zookeeper_connect == "127.0.0.1:2181,127.0.0.1:2182/kafka/one"
    assert config.inter_broker_listener.name == "INTERNAL"
    assert config.get_int("default.replication.factor") == 3
    assert config.get_bool("unclean.leader.election.enable") is True
    assert config.get_int("replica.lag.time.max.ms") == 10000
    assert config.get_str("broker.rack") == "r1"
    # the replication settings are effective (the follower fetcher and the leader's ISR use them)
    assert config.get_int("replica.fetch.max.bytes") == 2097152
    assert config.get_int("min.insync.replicas") == 2
    assert not {"replica.fetch.max.bytes", "replica.lag.time.max.ms"} & set(config.ignored_settings())
    assert BROKER_PROPERTIES["replica.lag.time.max.ms"].note is None


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        ({"zookeeper.connect": "localhost"}, "HOST:PORT"),
        ({"zookeeper.connect": "a:1,b/kafka"}, "HOST:PORT"),
        ({"zookeeper.connect": "a:1/kafka/"}, "chroot"),
        ({"inter.broker.listener.name": "REPLICATION"}, "must be one of the listeners"),
        ({"default.replication.factor": "0"}, "[1,...]"),
        ({"zookeeper.session.timeout.ms": "0"}, "[1,...]"),
    ],
)
def test_bad_cluster_settings_are_refused(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace(".", r"\.")):
        BrokerConfig.build(props)
