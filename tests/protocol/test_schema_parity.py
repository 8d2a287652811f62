"""Our codec against kafka-python 3, byte for byte, for every (API, version) both implement."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from protocol.codec import decode, encode
from protocol.schema import REQUESTS, RESPONSES
from protocol.schema.types import ZERO_UUID, Field, Message
from tests.protocol.kp_compat import kafka_python_class, kafka_python_supports, normalise
from tests.protocol.strategies import struct_value

CASES = [
    pytest.param(message, version, id=f"{message.name}-v{version}")
    for table in (REQUESTS, RESPONSES)
    for message in sorted(table.values(), key=lambda m: m.api_key)
    for version in range(message.valid.low, message.valid.high + 1)
]

# kafka-python renames these int32 bitfields and decodes them as a set of bit positions.
BITFIELDS = {"cluster_authorized_operations", "topic_authorized_operations", "authorized_operations"}


def _bits_to_int32(bits: Any) -> int:
    if bits is None:
        return -(2**31)
    return ((sum(1 << b for b in bits) + 2**31) % 2**32) - 2**31


def assert_same_fields(fields: tuple[Field, ...], version: int, flexible: bool, ours: dict, theirs: dict) -> None:
    """Every field present in `version` has the same name and value in kafka-python's decoding."""
    for field in fields:
        if version not in field.versions or (field.tagged and not flexible):
            continue
        name = field.name
        key = name if name in theirs or name not in BITFIELDS else "authorized_operations"
        assert key in theirs, f"kafka-python has no field {name}"
        mine, other = ours[name], theirs[key]
        if name in BITFIELDS and not isinstance(other, int):
            other = _bits_to_int32(other)
        if field.type == "uuid" and other is None:
            other = ZERO_UUID  # kafka-python reads the all-zero uuid as None
        if field.struct is not None and mine is not None:
            if field.is_array:
                assert len(mine) == len(other), name
                for a, b in zip(mine, other, strict=True):
                    assert_same_fields(field.struct.fields, version, flexible, a, b)
            else:
                assert_same_fields(field.struct.fields, version, flexible, mine, other)
        else:
            assert normalise(mine) == normalise(other), name


def assert_round_trip(fields: tuple[Field, ...], version: int, flexible: bool, sent: dict, got: dict) -> None:
    for field in fields:
        if field.name not in sent:
            continue
        mine, back = sent[field.name], got[field.name]
        if field.struct is not None and mine is not None:
            if field.is_array:
                for a, b in zip(mine, back, strict=True):
                    assert_round_trip(field.struct.fields, version, flexible, a, b)
            else:
                assert_round_trip(field.struct.fields, version, flexible, mine, back)
        else:
            assert normalise(mine) == normalise(back), field.name


@pytest.mark.parametrize(("message", "version"), CASES)
def test_same_bytes_as_kafka_python(message: Message, version: int) -> None:
    if not kafka_python_supports(message, version):
        pytest.skip("kafka-python 3 does not implement this version")
    theirs_cls = kafka_python_class(message)
    flexible = message.is_flexible(version)

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(struct_value(message, version))
    def check(value: dict) -> None:
        if message.name == "ApiVersionsResponse":
            # Clients decode an ApiVersions error reply as v0 whatever the version (see headers).
            assume(value.get("error_code") == 0)
        ours = encode(message, version, value)
        theirs_obj = theirs_cls.decode(ours, version=version)
        if not hasattr(theirs_obj, "_header"):
            theirs_obj._header = None  # kafka-python's decode leaves it unset; some encode() overrides need it
        theirs = bytes(theirs_obj.encode())
        assert theirs == ours
        decoded = decode(message, version, theirs, exact=True)
        assert_round_trip(message.fields, version, flexible, value, decoded)
        assert_same_fields(message.fields, version, flexible, decoded, theirs_obj.to_dict(json=False))

    check()
