"""SaslHandshake (17): the client names its SASL mechanism; the answer lists the listener's mechanisms.

After version 1 the mechanism's tokens travel in SaslAuthenticate requests; after version 0 they come
as bare size-prefixed frames, answered the same way (kbroker.pipeline), as Kafka still serves them:
librdkafka before 2.x only authenticates when ApiVersions lists SaslHandshake v0. Advertised only on
SASL listeners.
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SASL_HANDSHAKE, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    sasl = ctx.sasl
    if sasl is None:
        return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}
    outcome = sasl.handshake(request["mechanism"], ctx.api_version)
    if outcome.error is not ErrorCode.NONE:
        ctx.log.info("sasl_handshake_refused", mechanism=request["mechanism"], error=outcome.error.name)
    return {"error_code": int(outcome.error), "mechanisms": list(sasl.settings.mechanisms)}
