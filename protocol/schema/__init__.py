"""Registry of every message schema we declare.

Each module in this package declares one API as two module-level names,
REQUEST and RESPONSE. The registry is built by importing them all.
"""

from __future__ import annotations

import importlib
import pkgutil

from protocol.schema.types import Message

REQUESTS: dict[int, Message] = {}
RESPONSES: dict[int, Message] = {}


def _load() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name == "types":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        req = getattr(module, "REQUEST", None)
        resp = getattr(module, "RESPONSE", None)
        if req is None or resp is None:
            continue
        if req.api_key in REQUESTS:
            raise RuntimeError(f"api key {req.api_key} declared twice ({info.name})")
        REQUESTS[req.api_key] = req
        RESPONSES[resp.api_key] = resp


_load()
