"""The SASL exchange as a pure state machine, JAAS parsing, and the pipeline's pre-authentication rules."""

from __future__ import annotations

import pytest

from kbroker.config import BrokerConfig, ConfigError
from kbroker.memory import MemoryPool
from kbroker.pipeline import RequestPipeline
from kbroker.sasl import SaslSession, SaslSettings, parse_jaas
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.framing import frame_prefix
from tests.broker.test_pipeline import VERSIONS_ANSWER, Owner, context, handler, request

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_alice="alice \\"quoted\\" secret";'
)


def settings() -> SaslSettings:
    return SaslSettings(("PLAIN",), {"alice": "alice-secret"})


def test_parse_jaas() -> None:
    module, options = parse_jaas(JAAS)
    assert module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert options["user_alice"] == 'alice "quoted" secret' and options["username"] == "admin"
    for bad in ("Module required a=b", "Module a=b;", 'Module required a="b" c;'):
        with pytest.raises(ConfigError):
            parse_jaas(bad)


def test_settings_from_listener_config() -> None:
    config = BrokerConfig.build(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9094",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }
    )
    found = SaslSettings.from_config(config, "SASL_PLAINTEXT")
    assert found.mechanisms == ("PLAIN",) and found.plain_users["admin"] == "admin-secret"
    assert found.max_receive_size == 524288
    with pytest.raises(ConfigError, match="has no users"):
        SaslSettings.from_config(BrokerConfig.build({"listeners": "SASL_PLAINTEXT://:9094"}), "SASL_PLAINTEXT")


def test_plain_success_and_principal() -> None:
    session = SaslSession(settings())
    assert not session.allows(ApiKey.METADATA) and session.allows(ApiKey.API_VERSIONS)
    assert session.handshake("PLAIN").error is ErrorCode.NONE
    assert session.authenticate(b"\x00alice\x00alice-secret").error is ErrorCode.NONE
    assert session.authenticated and session.principal == "User:alice" and session.allows(ApiKey.METADATA)


@pytest.mark.parametrize(
    "token", [b"\x00alice\x00wrong", b"\x00bob\x00alice-secret", b"mallory\x00alice\x00alice-secret", b"alice"]
)
def test_plain_failures(token: bytes) -> None:
    session = SaslSession(settings())
    session.handshake("PLAIN")
    outcome = session.authenticate(token)
    assert outcome.error is ErrorCode.SASL_AUTHENTICATION_FAILED and session.failed
    assert not session.allows(ApiKey.METADATA)


def test_unknown_mechanism_and_out_of_order_steps() -> None:
    session = SaslSession(settings())
    assert session.handshake("GSSAPI").error is ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert session.authenticate(b"\x00alice\x00alice-secret").error is ErrorCode.ILLEGAL_SASL_STATE
    assert session.failed


class AuthOwner(Owner):
    def __init__(self) -> None:
        super().__init__()
        self.auth_failed: str | None = None

    def close_after_failed_authentication(self, reason: str) -> None:
        self.auth_failed = reason


def sasl_pipeline() -> tuple[RequestPipeline, AuthOwner, SaslSession]:
    from kbroker.handlers import sasl_authenticate, sasl_handshake
    from kbroker.handlers.registry import HANDLERS

    owner = AuthOwner()
    session = SaslSession(SaslSettings(("PLAIN",), {"alice": "alice-secret"}, max_receive_size=1000))

    def ctx_with_session(header):  # type: ignore[no-untyped-def]
        ctx = context(header)
        ctx.sasl = session
        return ctx

    assert sasl_handshake.handle and sasl_authenticate.handle
    handlers = {
        ApiKey.API_VERSIONS: handler(ApiKey.API_VERSIONS, lambda ctx, body: VERSIONS_ANSWER),
        ApiKey.METADATA: handler(ApiKey.METADATA, lambda ctx, body: {"brokers": [], "topics": []}, high=1),
        ApiKey.SASL_HANDSHAKE: HANDLERS[ApiKey.SASL_HANDSHAKE],
        ApiKey.SASL_AUTHENTICATE: HANDLERS[ApiKey.SASL_AUTHENTICATE],
    }
    pipe = RequestPipeline(handlers, ctx_with_session, owner, max_frame_size=10**6, memory=MemoryPool(-1), sasl=session)
    return pipe, owner, session


def test_requests_before_authentication_close_the_connection() -> None:
    pipe, owner, _ = sasl_pipeline()
    pipe.feed(request(ApiKey.API_VERSIONS, 1))
    assert owner.closed is None and len(owner.written) == 1
    pipe.feed(request(ApiKey.METADATA, 2, version=1, body={"topics": []}))
    assert owner.closed is not None and owner.closed[0] == "request before SASL authentication"


def test_frames_are_small_until_authenticated() -> None:
    pipe, owner, session = sasl_pipeline()
    pipe.feed(frame_prefix(5000))
    assert owner.closed is not None and "outside 0..1000" in owner.closed[0]
    pipe, owner, session = sasl_pipeline()
    pipe.feed(request(ApiKey.SASL_HANDSHAKE, 1, version=1, body={"mechanism": "PLAIN"}))
    pipe.feed(request(ApiKey.SASL_AUTHENTICATE, 2, version=1, body={"auth_bytes": b"\x00alice\x00alice-secret"}))
    assert session.authenticated and pipe.reader.max_frame_size == 10**6
    pipe.feed(frame_prefix(5000) + b"x" * 10)
    assert owner.closed is None


def test_failed_authentication_answers_then_closes_after_the_delay() -> None:
    pipe, owner, session = sasl_pipeline()
    pipe.feed(request(ApiKey.SASL_HANDSHAKE, 1, version=1, body={"mechanism": "PLAIN"}))
    pipe.feed(request(ApiKey.SASL_AUTHENTICATE, 2, version=1, body={"auth_bytes": b"\x00alice\x00nope"}))
    assert len(owner.written) == 2  # the SaslAuthenticate answer went out first
    assert owner.auth_failed == "SASL PLAIN failed" and pipe.closing


def test_handshake_v0_then_a_bare_plain_token_answered_with_an_empty_bare_frame() -> None:
    """Kafka's SaslHandshake v0 (librdkafka before 2.x, old Java clients): the token comes without a
    request header and is answered with a bare size-prefixed frame; then requests flow."""
    pipe, owner, session = sasl_pipeline()
    pipe.feed(request(ApiKey.SASL_HANDSHAKE, 1, version=0, body={"mechanism": "PLAIN"}))
    assert len(owner.written) == 1 and session.awaiting_raw_token
    token = b"\x00alice\x00alice-secret"
    pipe.feed(frame_prefix(len(token)) + token)
    assert owner.written[1] == frame_prefix(0) and session.authenticated and not session.awaiting_raw_token
    pipe.feed(request(ApiKey.METADATA, 3, version=1, body={"topics": []}))
    assert owner.closed is None and len(owner.written) == 3


def test_a_wrong_bare_token_closes_without_an_answer() -> None:
    pipe, owner, session = sasl_pipeline()
    pipe.feed(request(ApiKey.SASL_HANDSHAKE, 1, version=0, body={"mechanism": "PLAIN"}))
    token = b"\x00alice\x00nope"
    pipe.feed(frame_prefix(len(token)) + token)
    assert len(owner.written) == 1 and owner.auth_failed == "SASL PLAIN failed" and pipe.closing


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_reauthentication_extends_the_session_for_the_same_principal_only() -> None:
    clock = FakeClock()
    users = {"alice": "alice-secret", "bob": "bob-secret"}
    session = SaslSession(SaslSettings(("PLAIN",), users, reauth_ms=10_000), clock)
    session.handshake("PLAIN")
    assert session.authenticate(b"\x00alice\x00alice-secret").error is ErrorCode.NONE
    assert session.session_lifetime_ms() == 10_000 and not session.expired(109.9) and session.expired(110.0)
    clock.now = 108.0
    assert session.handshake("PLAIN").error is ErrorCode.NONE and session.reauthenticating
    assert session.authenticate(b"\x00alice\x00alice-secret").error is ErrorCode.NONE
    assert session.expires_at == 118.0 and not session.expired(115.0)
    session.handshake("PLAIN")
    outcome = session.authenticate(b"\x00bob\x00bob-secret")
    assert outcome.error is ErrorCode.SASL_AUTHENTICATION_FAILED and "Cannot change principals" in str(outcome.message)


def test_without_reauth_ms_a_second_handshake_is_illegal() -> None:
    session = SaslSession(settings())
    session.handshake("PLAIN")
    session.authenticate(b"\x00alice\x00alice-secret")
    assert session.session_lifetime_ms() == 0 and not session.expired(10**9)
    assert session.handshake("PLAIN").error is ErrorCode.ILLEGAL_SASL_STATE


def test_expired_session_closes_on_the_next_request() -> None:
    pipe, owner, session = sasl_pipeline()
    session.settings = SaslSettings(("PLAIN",), {"alice": "alice-secret"}, max_receive_size=1000, reauth_ms=5000)
    clock = FakeClock()
    session.clock = clock
    pipe.feed(request(ApiKey.SASL_HANDSHAKE, 1, version=1, body={"mechanism": "PLAIN"}), now=100.0)
    pipe.feed(
        request(ApiKey.SASL_AUTHENTICATE, 2, version=1, body={"auth_bytes": b"\x00alice\x00alice-secret"}), now=100.0
    )
    pipe.feed(request(ApiKey.METADATA, 3, version=1, body={"topics": []}), now=104.0)
    assert owner.closed is None
    pipe.feed(request(ApiKey.METADATA, 4, version=1, body={"topics": []}), now=105.0)
    assert owner.closed is not None and "expired" in owner.closed[0]
