"""A package's names that load at their first use (PEP 562): start-up imports only what it needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(namespace: dict[str, Any], modules: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` that imports each name of `modules` (name -> module) at its first use and
    keeps it in `namespace` (the package's globals()), a plain attribute from then on."""

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
