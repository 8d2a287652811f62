"""The generated fast path (protocol/codegen.py) against the generic per-field plan: same bytes, same values,
same failures, for every declared (API, version)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codec import EncodeError, struct_plan
from protocol.primitives import DecodeError, Writer
from protocol.schema import REQUESTS, RESPONSES
from protocol.schema.types import Message
from tests.protocol.strategies import struct_value

CASES = [
    pytest.param(message, version, id=f"{message.name}-v{version}")
    for table in (REQUESTS, RESPONSES)
    for message in sorted(table.values(), key=lambda m: m.api_key)
    for version in range(message.valid.low, message.valid.high + 1)
]

FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
DECODE_FAILURES = (DecodeError, struct.error, IndexError, UnicodeDecodeError)
ENCODE_FAILURES = (EncodeError, struct.error, TypeError, AttributeError, UnicodeEncodeError)


def _encode(encoder: Any, value: dict[str, Any]) -> bytes:
    writer = Writer()
    encoder(writer, value)
    return writer.getvalue()


def _decode(decoder: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", decoder(data, 0)
    except DECODE_FAILURES:
        return "failed", None


@pytest.mark.parametrize(("message", "version"), CASES)
def test_fast_path_matches_generic(message: Message, version: int) -> None:
    plan = struct_plan(message, version)

    @FAST
    @given(struct_value(message, version), st.data())
    def check(value: dict[str, Any], data: st.DataObject) -> None:
        encoded = _encode(plan.encode, value)
        assert _encode(plan.fast_encode, value) == encoded
        assert plan.fast_decode(encoded, 0) == plan.decode(encoded, 0)
        if encoded:  # damaged input: both fail, or both read the same value
            damaged = bytearray(encoded[: data.draw(st.integers(0, len(encoded)))])
            if damaged:
                damaged[data.draw(st.integers(0, len(damaged) - 1))] ^= data.draw(st.integers(1, 255))
            assert _decode(plan.fast_decode, bytes(damaged)) == _decode(plan.decode, bytes(damaged))

    check()


@pytest.mark.parametrize(("message", "version"), CASES)
def test_fast_path_rejects_what_generic_rejects(message: Message, version: int) -> None:
    """A null in each non-nullable field fails both ways; defaults encode the same."""
    plan = struct_plan(message, version)
    assert _encode(plan.fast_encode, {}) == _encode(plan.encode, {})
    for name, _d, _e, default, nullable in plan.present:
        if nullable or default is None:
            continue
        with pytest.raises(ENCODE_FAILURES):
            _encode(plan.fast_encode, {name: None})
        with pytest.raises(ENCODE_FAILURES):
            _encode(plan.encode, {name: None})
