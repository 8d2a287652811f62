"""SaslAuthenticate (36): one round of the chosen SASL mechanism. Advertised only on SASL listeners.

A failure answers SASL_AUTHENTICATION_FAILED and the connection closes after
connection.failed.authentication.delay.ms (kbroker.pipeline). session_lifetime_ms is 0: no
re-authentication is asked for (connections.max.reauth.ms is not implemented).
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
    outcome = sasl.authenticate(bytes(request["auth_bytes"]))
    if outcome.error is ErrorCode.NONE and sasl.authenticated:
        ctx.log.info("sasl_authenticated", mechanism=sasl.mechanism, principal=sasl.principal)
    return _answer(outcome.error, outcome.message, outcome.auth_bytes)


def _answer(error: ErrorCode, message: str | None, auth_bytes: bytes) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message, "auth_bytes": auth_bytes, "session_lifetime_ms": 0}
