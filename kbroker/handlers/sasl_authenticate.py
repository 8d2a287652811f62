"""SaslAuthenticate (36): one round of the chosen SASL mechanism. Advertised only on SASL listeners.

A failure answers SASL_AUTHENTICATION_FAILED and the connection closes after
connection.failed.authentication.delay.ms (kbroker.pipeline). session_lifetime_ms (v1+) is what is
left of the session under connections.max.reauth.ms (KIP-368), 0 when it never expires.
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SASL_AUTHENTICATE, "0-2")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    sasl = ctx.sasl
    if sasl is None:
        return _answer(ErrorCode.ILLEGAL_SASL_STATE, "SASL is not enabled on this listener", b"")
    reauthenticating = sasl.reauthenticating
    outcome = sasl.authenticate(bytes(request["auth_bytes"]))
    lifetime = 0
    if outcome.error is ErrorCode.NONE and sasl.authenticated:
        lifetime = sasl.session_lifetime_ms()
        event = "sasl_reauthenticated" if reauthenticating else "sasl_authenticated"
        ctx.log.info(event, mechanism=sasl.mechanism, principal=sasl.principal, session_lifetime_ms=lifetime)
    return _answer(outcome.error, outcome.message, outcome.auth_bytes, lifetime)


def _answer(error: ErrorCode, message: str | None, auth_bytes: bytes, lifetime_ms: int = 0) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "error_message": message,
        "auth_bytes": auth_bytes,
        "session_lifetime_ms": lifetime_ms,
    }
