"""SaslHandshake (17): the client names its SASL mechanism; the answer lists the listener's mechanisms.

Only version 1 (the mechanism's bytes then travel in SaslAuthenticate requests); version 0 sent them as
raw frames, which no maintained client needs. Advertised only on SASL listeners.
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SASL_HANDSHAKE, "1-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    sasl = ctx.sasl
    if sasl is None:
        return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}
    outcome = sasl.handshake(request["mechanism"])
    if outcome.error is not ErrorCode.NONE:
        ctx.log.info("sasl_handshake_refused", mechanism=request["mechanism"], error=outcome.error.name)
    return {"error_code": int(outcome.error), "mechanisms": list(sasl.settings.mechanisms)}
