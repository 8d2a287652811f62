"""Registry of every message schema we declare.

Each module in this package declares one API as two module-level names,
REQUEST and RESPONSE, and is named after its key (ApiKey.API_VERSIONS: api_versions.py).
An API's module is imported at the first lookup of its key (REQUESTS[key]), so a process
builds the tables of the APIs it uses only; iterating a table imports every module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import Any

from protocol.api_keys import ApiKey
from protocol.schema.types import Message


class _Schemas(dict[int, Message]):
    """One side of the registry (requests or responses). A hit is a plain dict lookup; a miss imports
    the key's module (and fills both sides); iterating, counting or testing membership imports them all."""

    def __missing__(self, key: int) -> Message:
        _load_api(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        _load_all()
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[int]:
        _load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        _load_all()
        return dict.__len__(self)

    def get(self, key: int, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> KeysView[int]:  # type: ignore[override]
        _load_all()
        return dict.keys(self)

    def values(self) -> ValuesView[Message]:  # type: ignore[override]
        _load_all()
        return dict.values(self)

    def items(self) -> ItemsView[int, Message]:  # type: ignore[override]
        _load_all()
        return dict.items(self)


REQUESTS: dict[int, Message] = _Schemas()
RESPONSES: dict[int, Message] = _Schemas()
_all_loaded = False


def _load_api(key: int) -> None:
    try:
        name = ApiKey(key).name.lower()
    except ValueError:
        raise KeyError(key) from None
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise KeyError(key) from None
    _register(name, module)


def _register(name: str, module: Any) -> None:
    req, resp = module.REQUEST, module.RESPONSE
    if req.api_key != ApiKey[name.upper()] or resp.api_key != req.api_key:
        raise RuntimeError(f"{name}: declares api key {req.api_key}, its name says {ApiKey[name.upper()].value}")
    dict.__setitem__(REQUESTS, req.api_key, req)
    dict.__setitem__(RESPONSES, resp.api_key, resp)


def _load_all() -> None:
    global _all_loaded
    if _all_loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name != "types" and not dict.__contains__(REQUESTS, ApiKey[info.name.upper()]):
            _register(info.name, importlib.import_module(f"{__name__}.{info.name}"))
    _all_loaded = True
