"""The documents that describe code must stay true to it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _protocol_table_module():
    spec = importlib.util.spec_from_file_location("protocol_table", ROOT / "scripts" / "protocol_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_protocol_doc_lists_exactly_the_registered_handlers() -> None:
    module = _protocol_table_module()
    text = (ROOT / "docs" / "protocol.md").read_text()
    assert module.rewrite(text) == text, "docs/protocol.md is stale: run scripts/protocol_table.py --write"


def test_compatibility_doc_lists_every_api_with_both_brokers_versions() -> None:
    spec = importlib.util.spec_from_file_location("api_compat_table", ROOT / "scripts" / "api_compat_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (ROOT / "docs" / "compatibility.md").read_text()
    assert module.rewrite(text) == text, "docs/compatibility.md is stale: run scripts/api_compat_table.py --write"
    assert set(module.KAFKA_4_3) <= set(module.API_NAMES)
