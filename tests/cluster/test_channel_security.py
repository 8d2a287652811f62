"""How a broker connects to the others, from its config: the inter-broker listener (Kafka's two ways of naming
it), the TLS client context, and the SASL mechanism with the listener's JAAS username and password; and the
channel renewing its SASL session on a real broker."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from kbroker.cluster.channel import BrokerChannel
from kbroker.cluster.channel_security import ChannelSecurity
from kbroker.cluster.znodes import BrokerEndpoint
from kbroker.config import BrokerConfig, ConfigError
from protocol.api_keys import ApiKey
from tests.broker.tls_support import make_certificates
from tests.process import BrokerProcess, free_port

LISTENERS = "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094"
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";'


def security(**props: str) -> ChannelSecurity:
    return ChannelSecurity.from_config(BrokerConfig.build({"listeners": LISTENERS} | props))


def test_the_inter_broker_listener_is_named_or_taken_from_the_protocol_or_the_first() -> None:
    assert security().protocol == "PLAINTEXT" and security().mechanism is None
    scram = {
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    }
    named = security(**{"inter.broker.listener.name": "SASL_PLAINTEXT"} | scram)
    by_protocol = security(**{"security.inter.broker.protocol": "SASL_PLAINTEXT"} | scram)
    for found in (named, by_protocol):
        assert (found.protocol, found.tls, found.mechanism, found.username, found.password) == (
            "SASL_PLAINTEXT", None, "SCRAM-SHA-256", "broker", "b-secret"
        )  # fmt: skip
    with pytest.raises(ConfigError, match="only one of"):
        security(**{"inter.broker.listener.name": "SASL_PLAINTEXT", "security.inter.broker.protocol": "SASL_SSL"})


def test_sasl_needs_a_mechanism_kbroker_offers_and_the_brokers_credentials() -> None:
    with pytest.raises(ConfigError, match="GSSAPI"):  # Kafka's default
        security(**{"security.inter.broker.protocol": "SASL_PLAINTEXT"})
    with pytest.raises(ConfigError, match="scram-sha-512.sasl.jaas.config"):
        security(
            **{
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            }
        )
    plain = security(
        **{
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain."
            'PlainLoginModule required username="broker" password="p" user_broker="p";',
        }
    )
    assert list(plain.sasl_exchange()) == [b"\0broker\0p"]


def test_tls_trusts_the_brokers_truststore_and_checks_host_names_unless_told_not_to(tmp_path: Path) -> None:
    certs = make_certificates(tmp_path)
    props = {
        "security.inter.broker.protocol": "SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "ssl.keystore.location": str(certs.server),
        "ssl.truststore.location": str(certs.ca),
    }
    context = security(**props).tls
    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert len(context.get_ca_certs()) == 1
    unchecked = security(**props | {"listener.name.sasl_ssl.ssl.endpoint.identification.algorithm": ""}).tls
    assert unchecked is not None and not unchecked.check_hostname and unchecked.verify_mode is ssl.CERT_REQUIRED


def test_the_channel_connects_again_before_its_sasl_session_expires(tmp_path: Path) -> None:
    """With connections.max.reauth.ms on the other side, a request after the session's end would close the
    connection; the channel replaces the connection at 85% of the session's lifetime instead."""
    port = free_port()
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
    settings = [f"listeners=SASL_PLAINTEXT://127.0.0.1:{port}", "connections.max.reauth.ms=1000",
                f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}"]  # fmt: skip
    broker = BrokerProcess(
        tmp_path / "data", *(a for s in settings for a in ("--config", s)), port=port, listen_flag=False
    ).start()
    security = ChannelSecurity("SASL_PLAINTEXT", None, "PLAIN", "admin", "admin-secret")
    endpoint = BrokerEndpoint("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1", port)

    async def requests_for_three_sessions() -> set[int]:
        channel = BrokerChannel("test", lambda _: endpoint, security)
        loop = asyncio.get_running_loop()
        deadline, connections = loop.time() + 3.0, set()
        try:
            while loop.time() < deadline:
                body = {"topics": [], "allow_auto_topic_creation": False}
                answer = await channel.call(0, ApiKey.METADATA, 12, body, timeout_s=10)
                assert answer["brokers"], answer
                connections.add(id(channel._connections[0].writer))
                await asyncio.sleep(0.05)  # a request every 50 ms, none failing
        finally:
            channel.close()
        return connections

    try:
        assert len(asyncio.run(requests_for_three_sessions())) >= 3
    finally:
        broker.stop()
