"""ApiVersions (18): the APIs and version ranges this broker implements, derived from the handler registry
(the ranges the handler modules declare, including those of modules not loaded yet)."""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.features import FINALIZED_FEATURES_EPOCH, finalized_features, supported_features
from kbroker.handlers.registry import advertised, handles
from protocol.api_keys import ApiKey

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
_ADVERTISED = {cluster: advertised(cluster) for cluster in (False, True)}  # elections and reassignments: cluster mode


@handles(ApiKey.API_VERSIONS, "0-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    keys = [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, low, high in _ADVERTISED[ctx.broker.cluster is not None]
        if ctx.sasl is not None or key not in SASL_APIS  # SASL is offered on SASL listeners only
    ]
    # transaction.version stays below 2, so clients keep the classic transaction protocol
    # (kbroker/features.py).
    return {
        "error_code": 0,
        "api_keys": keys,
        "throttle_time_ms": 0,
        "supported_features": supported_features(ctx.api_version),
        "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
        "finalized_features": finalized_features(),
    }
