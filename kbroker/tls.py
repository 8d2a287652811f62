"""TLS for SSL listeners: the server context from Kafka's ssl.* properties, the client's principal, and the
client context a broker connects to the others with (an SSL or SASL_SSL inter-broker listener).

Keystores and truststores are PEM (`ssl.keystore.type=PEM`), from a file (`ssl.keystore.location`:
the certificate chain and the private key, `ssl.key.password` when the key is encrypted) or inline
(`ssl.keystore.certificate.chain` and `ssl.keystore.key`); trusted certificates from
`ssl.truststore.location` or inline `ssl.truststore.certificates`. Every property may be set for one
listener as `listener.name.<name>.<property>`. `ssl.client.auth=required` asks for a client certificate
signed by a trusted authority; its subject becomes the principal, as Kafka's default mapping does:
`User:CN=alice,OU=eng,O=example` (RFC 2253, most specific first).
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Callable
from typing import Any, cast

from kbroker.config import BrokerConfig, ConfigError

READ_CHUNK = 64 * 1024

ANONYMOUS = "User:ANONYMOUS"

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_RDN_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The SSLContext of one SSL listener; ConfigError or OSError (ssl.SSLError) when its settings are unusable."""
    setting = _settings(config, listener)
    context = _context(ssl.PROTOCOL_TLS_SERVER, setting, listener)
    if not _load_keystore(context, setting):
        raise ConfigError(
            f"listener {listener} is SSL but has no keystore: set ssl.keystore.location, or "
            "ssl.keystore.certificate.chain and ssl.keystore.key"
        )
    trusted = _load_truststore(context, setting)
    client_auth = setting("ssl.client.auth").lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be one of {', '.join(_CLIENT_AUTH)}, not {client_auth!r}")
    if client_auth != "none" and not trusted:
        raise ConfigError(f"ssl.client.auth={client_auth} on listener {listener} needs a truststore")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    return context


def client_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The SSLContext a broker connects to another with over the SSL inter-broker listener `listener`: the same
    keystore (its certificate, for listeners with ssl.client.auth) and truststore (the system's when none is set),
    the host name checked unless ssl.endpoint.identification.algorithm is empty, as in Kafka."""
    setting = _settings(config, listener)
    context = _context(ssl.PROTOCOL_TLS_CLIENT, setting, listener)
    _load_keystore(context, setting)
    if not _load_truststore(context, setting):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    algorithm = setting("ssl.endpoint.identification.algorithm").lower()
    if algorithm not in ("https", ""):
        raise ConfigError(f"ssl.endpoint.identification.algorithm must be https or empty, not {algorithm!r}")
    context.check_hostname = algorithm == "https"
    return context


def _settings(config: BrokerConfig, listener: str) -> Callable[[str], str]:
    def setting(name: str) -> str:
        value = config.for_listener(listener, name)
        return value.strip() if isinstance(value, str) else ""

    return setting


def _context(purpose: ssl._SSLMethod, setting: Callable[[str], str], listener: str) -> ssl.SSLContext:
    for kind in ("ssl.keystore.type", "ssl.truststore.type"):
        if setting(kind).upper() != "PEM":
            raise ConfigError(f"{kind} is {setting(kind)!r} for listener {listener}: kbroker reads PEM stores only")
    context = ssl.SSLContext(purpose)
    versions = [v.strip() for v in setting("ssl.enabled.protocols").split(",") if v.strip()]
    unknown = [v for v in versions if v not in _VERSIONS]
    if unknown or not versions:
        raise ConfigError(f"ssl.enabled.protocols {versions!r}: kbroker speaks {', '.join(_VERSIONS)}")
    context.minimum_version = min(_VERSIONS[v] for v in versions)
    context.maximum_version = max(_VERSIONS[v] for v in versions)
    return context


def _load_keystore(context: ssl.SSLContext, setting: Callable[[str], str]) -> bool:
    """The keystore's certificate chain and key into `context`; False when none is configured."""
    password = setting("ssl.key.password") or None
    location, chain, key = (
        setting("ssl.keystore.location"),
        setting("ssl.keystore.certificate.chain"),
        setting("ssl.keystore.key"),
    )
    if location:
        context.load_cert_chain(location, password=password)
    elif chain and key:
        _load_inline_chain(context, chain, key, password)
    else:
        return False
    return True


def _load_truststore(context: ssl.SSLContext, setting: Callable[[str], str]) -> bool:
    """The trusted certificates into `context`; False when none are configured."""
    trusted_file, trusted_inline = setting("ssl.truststore.location"), setting("ssl.truststore.certificates")
    if trusted_file:
        context.load_verify_locations(cafile=trusted_file)
    elif trusted_inline:
        context.load_verify_locations(cadata=trusted_inline)
    else:
        return False
    return True


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """ssl loads a certificate chain only from a file: a private one, removed at once."""
    import tempfile  # late: only an inline PEM keystore needs it (start-up time)

    fd, path = tempfile.mkstemp(prefix="kbroker-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


class TlsSession:
    """One server-side TLS connection, sans-io (ssl.MemoryBIO): ciphertext in, plaintext out, and back.

    The owner hands it what the socket received (`receive`), sends what `outgoing()` returns, and
    reads plaintext straight into its own buffers with `read_into`. A failed handshake raises
    ssl.SSLError from `receive`, after which `outgoing()` holds the alert for the client, so the
    client hears why (unknown CA, certificate required) before the connection closes.
    """

    __slots__ = ("_in", "_out", "_ssl", "established", "principal", "closed_by_peer")

    def __init__(self, context: ssl.SSLContext) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out, server_side=True)
        self.established = False
        self.principal = ANONYMOUS
        self.closed_by_peer = False  # the client sent close_notify: answer with ours and close

    def receive(self, data: bytes | memoryview) -> bool:
        """Take ciphertext; True when this completed the handshake. Raises ssl.SSLError when it fails."""
        self._in.write(data)
        if self.established:
            return False
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            return False
        self.established = True
        self.principal = principal_of(self._ssl.getpeercert())
        return True

    def read_into(self, buffer: memoryview) -> int:
        """Decrypt into `buffer`; 0 when nothing more is available now. Raises ssl.SSLError on bad records."""
        if not self.established:
            return 0
        try:
            n = cast(int, self._ssl.read(len(buffer), buffer))  # type: ignore[arg-type]  # any writable buffer
        except ssl.SSLWantReadError:
            return 0
        except ssl.SSLZeroReturnError:  # the client's close_notify
            self.closed_by_peer = True
            return 0
        if n == 0 and len(buffer):  # an SSLObject reads 0 bytes at the client's close_notify
            self.closed_by_peer = True
        return n

    def encrypt(self, chunks: list[Any]) -> bytes:
        """One response's chunks as TLS records (joined first: a record per small chunk would waste both
        bytes on the wire and calls)."""
        data = b"".join(chunks)
        if data:
            self._ssl.write(data)
        return self._out.read()

    def outgoing(self) -> bytes:
        return self._out.read()

    def close_notify(self) -> bytes:
        """The close_notify alert to send before closing (best effort)."""
        try:
            self._ssl.unwrap()
        except (ssl.SSLError, ValueError):
            pass
        return self._out.read()


def principal_of(peercert: dict[str, Any] | None) -> str:
    """Kafka's default principal for a TLS client: its certificate's subject, or ANONYMOUS without one."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    parts = []
    for rdn in reversed(peercert["subject"]):
        parts.append("+".join(f"{_RDN_NAMES.get(name, name)}={_escape(value)}" for name, value in rdn))
    return "User:" + ",".join(parts)


def _escape(value: str) -> str:
    escaped = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
