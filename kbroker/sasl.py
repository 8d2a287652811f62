"""SASL on SASL_PLAINTEXT and SASL_SSL listeners: each connection's exchange as a pure state machine.

A connection on a SASL listener starts unauthenticated: it may send ApiVersions, SaslHandshake
(naming a mechanism from `sasl.enabled.mechanisms`) and SaslAuthenticate (the mechanism's bytes),
each frame at most `sasl.server.max.receive.size` bytes; anything else closes it, as Kafka does.
Mechanisms: SCRAM-SHA-256 and SCRAM-SHA-512 with the credentials AlterUserScramCredentials stores
(kbroker.scram), and PLAIN, with users from the listener's JAAS configuration, as Kafka configures them:

    listener.name.sasl_plaintext.plain.sasl.jaas.config=\\
        org.apache.kafka.common.security.plain.PlainLoginModule required \\
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

A client that authenticates becomes `User:<name>`; one that fails gets SASL_AUTHENTICATION_FAILED
and its connection closes after `connection.failed.authentication.delay.ms`.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from kbroker.config import BrokerConfig, ConfigError
from kbroker.scram import ScramFailure, ScramServer, ScramStore
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PRE_AUTHENTICATION_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"

_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """One JAAS login module entry: (class name, options). `Module required key="value" ...;`"""
    stripped = text.strip()
    if not stripped.endswith(";"):
        raise ConfigError("a sasl.jaas.config entry ends with ';'")
    words = stripped[:-1].split(None, 2)
    if len(words) < 2 or words[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError('sasl.jaas.config must read: <LoginModule class> required key="value" ...;')
    options: dict[str, str] = {}
    rest = words[2] if len(words) > 2 else ""
    position = 0
    while rest[position:].strip():
        match = _JAAS_OPTION.match(rest, position)
        if match is None:
            raise ConfigError(f"sasl.jaas.config: cannot read the options at {rest[position:][:30]!r}")
        value = match.group(2) if match.group(2) is not None else match.group(3)
        options[match.group(1)] = re.sub(r"\\(.)", r"\1", value)
        position = match.end()
    return words[0], options


@dataclass(frozen=True)
class SaslSettings:
    """What one SASL listener accepts."""

    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(default_factory=dict)  # user -> password
    max_receive_size: int = 524288
    reauth_ms: int = 0  # connections.max.reauth.ms: 0, sessions never expire
    scram: ScramStore | None = None  # the broker's SCRAM credentials (set when the broker starts)

    @classmethod
    def from_config(cls, config: BrokerConfig, listener: str) -> SaslSettings:
        enabled = config.for_listener(listener, "sasl.enabled.mechanisms")
        mechanisms = tuple(m.strip().upper() for m in str(enabled).split(",") if m.strip())
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ConfigError(
                f"sasl.enabled.mechanisms of listener {listener}: {', '.join(unknown) or 'none'}; "
                f"kbroker offers {', '.join(MECHANISMS)}"
            )
        users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            jaas = config.for_listener(listener, "plain.sasl.jaas.config")
            if not isinstance(jaas, str) or not jaas.strip():
                raise ConfigError(
                    f"listener {listener} enables PLAIN but has no users: set "
                    f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
                )
            module, options = parse_jaas(jaas)
            if module != PLAIN_LOGIN_MODULE:
                raise ConfigError(f"PLAIN needs {PLAIN_LOGIN_MODULE}, not {module}")
            users = {key[5:]: value for key, value in options.items() if key.startswith("user_")}
            if not users:
                raise ConfigError(f"the PLAIN JAAS configuration of listener {listener} lists no user_<name>=...")
        max_receive = config.for_listener(listener, "sasl.server.max.receive.size")
        reauth = config.for_listener(listener, "connections.max.reauth.ms")
        assert isinstance(max_receive, int) and isinstance(reauth, int)
        return cls(mechanisms, users, max_receive, reauth)


class SaslState(Enum):
    HANDSHAKE = "handshake"  # waiting for SaslHandshake
    AUTHENTICATE = "authenticate"  # mechanism chosen, waiting for SaslAuthenticate
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


@dataclass
class Outcome:
    error: ErrorCode
    message: str | None = None
    auth_bytes: bytes = b""


class SaslSession:
    """One connection's SASL exchange (pure: no I/O; time comes from `clock`, in seconds).

    Re-authentication (KIP-368): with `connections.max.reauth.ms` set, a session lasts that long
    (SaslAuthenticate v1+ tells the client); the client authenticates again on the same connection,
    with the same mechanism and as the same principal, before it expires. A request other than the
    SASL exchange arriving after expiry closes the connection (`expired`).
    """

    def __init__(self, settings: SaslSettings, clock: Callable[[], float] = lambda: 0.0) -> None:
        self.settings = settings
        self.clock = clock
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.expires_at: float | None = None
        self.reauthenticating = False
        self.raw_tokens = False  # after a SaslHandshake v0: the tokens come as bare frames, not SaslAuthenticate
        self._scram: ScramServer | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def session_lifetime_ms(self) -> int:
        """What SaslAuthenticate v1+ reports: 0 when the session never needs re-authentication."""
        if self.expires_at is None:
            return 0
        return max(1, int((self.expires_at - self.clock()) * 1000))

    @property
    def failed(self) -> bool:
        return self.state is SaslState.FAILED

    def allows(self, api_key: int) -> bool:
        return self.authenticated or api_key in PRE_AUTHENTICATION_APIS

    @property
    def awaiting_raw_token(self) -> bool:
        """A SaslHandshake v0 chose the mechanism: the next frames are bare SASL tokens (Kafka before 1.0)."""
        return self.raw_tokens and self.state is SaslState.AUTHENTICATE

    def handshake(self, mechanism: str, version: int = 1) -> Outcome:
        reauthenticating = self.state is SaslState.AUTHENTICATED and self.settings.reauth_ms > 0
        if self.state is not SaslState.HANDSHAKE and not reauthenticating:
            self.state = SaslState.FAILED
            return Outcome(ErrorCode.ILLEGAL_SASL_STATE, "SaslHandshake is not expected now")
        if mechanism not in self.settings.mechanisms:
            return Outcome(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unsupported SASL mechanism {mechanism}")
        if reauthenticating and mechanism != self.mechanism:
            self.state = SaslState.FAILED
            return Outcome(ErrorCode.ILLEGAL_SASL_STATE, "Re-authentication must use the same SASL mechanism")
        self.reauthenticating = reauthenticating
        self._scram = None
        self.mechanism = mechanism
        self.state = SaslState.AUTHENTICATE
        self.raw_tokens = version == 0
        return Outcome(ErrorCode.NONE)

    def authenticate(self, auth_bytes: bytes) -> Outcome:
        if self.state is not SaslState.AUTHENTICATE:
            self.state = SaslState.FAILED
            return Outcome(ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate is not expected now")
        if self.mechanism == "PLAIN":
            user = self._plain(auth_bytes)
            if user is None:
                return self._fail("Authentication failed: Invalid username or password")
            return self._succeed(user, b"")
        return self._scram_step(auth_bytes)

    def _scram_step(self, auth_bytes: bytes) -> Outcome:
        assert self.mechanism is not None
        if self._scram is None:
            store = self.settings.scram
            if store is None:
                return self._fail("SCRAM credentials are not available")
            self._scram = ScramServer(self.mechanism, store)
        try:
            answer = self._scram.step(auth_bytes)
        except ScramFailure as failure:
            return self._fail(str(failure))
        if self._scram.done:
            assert self._scram.user is not None
            return self._succeed(self._scram.user, answer)
        return Outcome(ErrorCode.NONE, None, answer)

    def _succeed(self, user: str, answer: bytes) -> Outcome:
        principal = f"User:{user}"
        if self.reauthenticating and principal != self.principal:
            return self._fail("Cannot change principals during re-authentication")
        self.principal = principal
        self.state = SaslState.AUTHENTICATED
        self.reauthenticating = False
        reauth = self.settings.reauth_ms
        self.expires_at = self.clock() + reauth / 1000 if reauth > 0 else None
        return Outcome(ErrorCode.NONE, None, answer)

    def _fail(self, message: str) -> Outcome:
        self.state = SaslState.FAILED
        return Outcome(ErrorCode.SASL_AUTHENTICATION_FAILED, message)

    def _plain(self, auth_bytes: bytes) -> str | None:
        """RFC 4616: [authzid] NUL authcid NUL passwd; authzid, when given, must equal authcid."""
        parts = bytes(auth_bytes).split(b"\x00")
        if len(parts) != 3:
            return None
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            return None
        expected = self.settings.plain_users.get(user)
        if not user or expected is None or (authzid and authzid != user):
            return None
        return user if hmac.compare_digest(expected.encode(), password.encode()) else None
