"""How this broker connects to the others: the inter-broker listener's security protocol (Kafka's
inter.broker.listener.name or security.inter.broker.protocol), TLS with the broker's own keystore and
truststore on SSL and SASL_SSL, and on SASL_* the mechanism sasl.mechanism.inter.broker.protocol with the
username and password of the listener's JAAS configuration, as Kafka's PlainLoginModule and
ScramLoginModule take them:

    sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
    listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=\\
        org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";
"""

from __future__ import annotations

import ssl
from collections.abc import Generator
from dataclasses import dataclass

from kbroker.config import BrokerConfig, ConfigError
from kbroker.sasl import MECHANISMS, parse_jaas
from kbroker.scram import HASHES, ScramClient
from kbroker.tls import client_context

# a token to send, the server's answer back; returns when the mechanism is done (ScramFailure if it fails)
SaslExchange = Generator[bytes, bytes, None]


@dataclass(frozen=True)
class ChannelSecurity:
    protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    tls: ssl.SSLContext | None = None
    mechanism: str | None = None  # set on SASL_*
    username: str = ""
    password: str = ""

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ChannelSecurity:
        """ConfigError when the inter-broker listener's settings cannot make a connection."""
        listener = config.inter_broker_listener
        protocol = listener.protocol
        tls = client_context(config, listener.name) if protocol in ("SSL", "SASL_SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, tls)
        mechanism = str(config.get("sasl.mechanism.inter.broker.protocol") or "").upper()
        if mechanism not in MECHANISMS:
            raise ConfigError(
                f"sasl.mechanism.inter.broker.protocol is {mechanism or 'unset'}: kbroker's brokers authenticate "
                f"to each other with {', '.join(MECHANISMS)}"
            )
        prop = f"{mechanism.lower()}.sasl.jaas.config"
        jaas = config.for_listener(listener.name, prop)
        if not isinstance(jaas, str) or not jaas.strip():
            raise ConfigError(
                f"the inter-broker listener {listener.name} uses SASL {mechanism}: set "
                f"listener.name.{listener.name.lower()}.{prop} with this broker's username and password"
            )
        _, options = parse_jaas(jaas)
        username, password = options.get("username"), options.get("password")
        if not username or password is None:
            raise ConfigError(f"listener.name.{listener.name.lower()}.{prop} needs username and password")
        return cls(protocol, tls, mechanism, username, password)

    def sasl_exchange(self) -> SaslExchange:
        """The client's tokens for one authentication."""
        if self.mechanism == "PLAIN":
            yield b"\0" + self.username.encode() + b"\0" + self.password.encode()
            return
        assert self.mechanism in HASHES
        client = ScramClient(self.mechanism, self.username, self.password)
        server_first = yield client.first()
        server_final = yield client.final(server_first)
        client.verify(server_final)
