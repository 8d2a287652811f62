"""Hypothesis strategies that generate message values from our schema tables."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from protocol.schema.types import Field, Message, Struct

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def primitive(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in _INT_RANGES:
        low, high = _INT_RANGES[type_name]
        return st.integers(low, high)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "uuid":
        return st.binary(min_size=16, max_size=16)
    if type_name == "string":
        return st.text(max_size=12)
    if type_name in ("bytes", "records"):
        return st.binary(max_size=24)
    raise ValueError(type_name)


def field_value(field: Field, version: int) -> st.SearchStrategy[Any]:
    if field.type == "struct":
        assert field.struct is not None
        base = struct_value(field.struct, version)
    elif field.is_array:
        if field.element == "struct":
            assert field.struct is not None
            element = struct_value(field.struct, version)
        else:
            element = primitive(field.element)
        base = st.lists(element, max_size=3)
    else:
        base = primitive(field.type)
    if version in field.nullable:
        return st.one_of(st.none(), base)
    return base


def struct_value(struct: Struct | Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Values for the fields present in `version` (tagged ones included); absent fields are left out."""
    fields = {f.name: field_value(f, version) for f in struct.fields if version in f.versions}
    return st.fixed_dictionaries(fields)
