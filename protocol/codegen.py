"""Compiled fast path of the codec: one generated decode and encode function per struct plan.

The generic StructPlan walks a list of per-field closures for every message. Here the same plan is
turned, once, into Python source with the fields in straight lines: runs of consecutive fixed-width
fields (integers, float64, bool) are read and written with a single struct call, other fields call
the plan's own per-field codecs, absent fields become constants. The behaviour is the generic
plan's (tests/protocol/test_codegen.py checks both give the same bytes and values); only the text
of some error messages is shorter.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from protocol.primitives import INT16, INT32, DecodeError, encode_uvarint, read_uvarint

# struct format character of each fixed-width primitive (bool: '?' reads any non-zero byte as True)
FIXED_CHARS = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
}


class PresentField:
    """What the generator needs of one field present in the version."""

    __slots__ = ("name", "decoder", "encoder", "default", "nullable", "fixed", "kind", "element")

    def __init__(
        self,
        name: str,
        decoder: Any,
        encoder: Any,
        default: Any,
        nullable: bool,
        fixed: str | None,
        kind: str = "other",
        element: tuple[Any, Any] | None = None,
    ) -> None:
        self.name = name
        self.decoder = decoder
        self.encoder = encoder
        self.default = default
        self.nullable = nullable
        self.fixed = fixed  # struct format character, or None
        self.kind = kind  # "string", "array" (element: its (decoder, encoder)) or "other"
        self.element = element


_compiled: dict[str, Any] = {}  # generated source -> code object


def _groups(fields: list[PresentField]) -> list[list[PresentField]]:
    """Consecutive fixed-width fields together; every other field alone."""
    groups: list[list[PresentField]] = []
    for f in fields:
        if f.fixed is not None and groups and groups[-1][0].fixed is not None:
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


def compile_plan(
    present: list[PresentField],
    absent: list[tuple[str, Any]],
    tagged_defaults: list[tuple[str, Any]],
    flexible: bool,
    decode_tagged: Callable[..., int],
    encode_tagged: Callable[..., None],
    copy_default: Callable[[Any], Any],
    encode_error: type[Exception],
    version: int,
) -> tuple[Callable[..., Any], Callable[..., None]]:
    """The generated (decode, encode) pair of one plan."""
    env: dict[str, Any] = {
        "DecodeError": DecodeError,
        "_read_uvarint": read_uvarint,
        "_uvarint": encode_uvarint,
        "_i16": INT16.unpack_from,
        "_i32": INT32.unpack_from,
        "_i16pack": INT16.pack,
        "_i32pack": INT32.pack,
        "_decode_tagged": decode_tagged,
        "_encode_tagged": encode_tagged,
        "_copy": copy_default,
        "EncodeError": encode_error,
    }
    dec = ["def decode(buf, pos):", "    out = {}"]
    enc = ["def encode(w, value):", "    get = value.get", "    write = w.write"]
    for g, group in enumerate(_groups(present)):
        first = group[0]
        if first.fixed is not None:
            fmt = struct.Struct(">" + "".join(f.fixed for f in group if f.fixed))
            env[f"_unpack{g}"] = fmt.unpack_from
            env[f"_pack{g}"] = fmt.pack
            names = [f"v{g}_{i}" for i in range(len(group))]
            dec.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = _unpack{g}(buf, pos)")
            dec.append(f"    pos += {fmt.size}")
            for f, var in zip(group, names, strict=True):
                dec.append(f"    out[{f.name!r}] = {var}")
            for i, (f, var) in enumerate(zip(group, names, strict=True)):
                env[f"_default{g}_{i}"] = f.default
                enc.append(f"    {var} = get({f.name!r}, _default{g}_{i})")
                enc.extend(_null_check(f, var))
            enc.append(f"    write(_pack{g}({', '.join(names)}))")
            continue
        env[f"_dec{g}"] = first.decoder
        env[f"_enc{g}"] = first.encoder
        env[f"_default{g}_0"] = first.default
        var = f"v{g}_0"
        enc.append(f"    {var} = get({first.name!r}, _default{g}_0)")
        enc.extend(_null_check(first, var))
        if first.kind == "string":
            dec.extend(_decode_string(first, flexible))
            enc.extend(_encode_string(first, var, flexible))
        elif first.kind == "array" and first.element is not None:
            env[f"_dec_el{g}"], env[f"_enc_el{g}"] = first.element
            dec.extend(_decode_array(first, g, flexible))
            enc.extend(_encode_array(first, g, var, flexible))
        else:
            dec.append(f"    out[{first.name!r}], pos = _dec{g}(buf, pos)")
            enc.append(f"    _enc{g}(w, {var})")
    for i, (name, default) in enumerate([*absent, *(tagged_defaults if flexible else [])]):
        env[f"_absent{i}"] = default
        if isinstance(default, list | dict):
            dec.append(f"    out[{name!r}] = _copy(_absent{i})")
        else:
            dec.append(f"    out[{name!r}] = _absent{i}")
    if flexible:
        # an empty tagged-field section (a single 0 byte) is the common case
        dec += ["    if buf[pos] == 0:", "        pos += 1", "    else:", "        pos = _decode_tagged(buf, pos, out)"]
        enc.append("    _encode_tagged(w, value)" if tagged_defaults else "    write(b'\\x00')")
    dec.append("    return out, pos")
    env["_version"] = version
    source = "\n".join(dec) + "\n\n" + "\n".join(enc) + "\n"
    code = _compiled.get(source)
    if code is None:  # many structs and versions generate the same text (their constants differ, in env)
        code = _compiled[source] = compile(source, "<protocol.codegen>", "exec")
    exec(code, env)  # noqa: S102
    return env["decode"], env["encode"]


def _null_check(f: PresentField, var: str) -> list[str]:
    """The generic plan's rule: None in a field that is not nullable and has a non-None default."""
    if f.nullable or f.default is None:
        return []
    return [
        f"    if {var} is None:",
        f"        raise EncodeError('field {f.name} is not nullable in version ' + str(_version))",
    ]


def _read_length(flexible: bool, wide: bool) -> list[str]:
    """Lines that leave a compact or classic length (-1 for null) in n."""
    if flexible:
        return [
            "    n = buf[pos]",
            "    if n < 0x80:",
            "        pos += 1",
            "    else:",
            "        n, pos = _read_uvarint(buf, pos)",
            "    n -= 1",
        ]
    if wide:
        return ["    n, = _i32(buf, pos)", "    pos += 4"]
    return ["    n, = _i16(buf, pos)", "    pos += 2"]


def _on_null(f: PresentField, what: str) -> list[str]:
    if f.nullable:
        return [
            "    if n < 0:",
            "        if n != -1:",
            f"            raise DecodeError('invalid {what} length ' + str(n))",
            f"        out[{f.name!r}] = None",
            "    else:",
        ]
    return ["    if n < 0:", f"        raise DecodeError('invalid {what} length ' + str(n))", "    else:"]


def _decode_string(f: PresentField, flexible: bool) -> list[str]:
    return [
        *_read_length(flexible, False),
        *_on_null(f, "string"),
        "        end = pos + n",
        "        if end > len(buf):",
        "            raise DecodeError('string of ' + str(n) + ' bytes exceeds the buffer')",
        f"        out[{f.name!r}] = str(buf[pos:end], 'utf-8')",
        "        pos = end",
    ]


def _encode_null(f: PresentField, var: str, what: str, flexible: bool, null_bytes: bytes) -> list[str]:
    if f.nullable:
        null = b"\x00" if flexible else null_bytes
        return [f"    if {var} is None:", f"        write({null!r})", "    else:"]
    return [f"    if {var} is None:", f"        raise EncodeError('{what} is not nullable')", "    else:"]


def _encode_string(f: PresentField, var: str, flexible: bool) -> list[str]:
    lines = [*_encode_null(f, var, "string", flexible, b"\xff\xff"), f"        data = {var}.encode('utf-8')"]
    if flexible:
        lines.append("        write(_uvarint(len(data) + 1))")
    else:
        lines += [
            "        if len(data) > 0x7FFF:",
            "            raise EncodeError('string longer than 32767 bytes')",
            "        write(_i16pack(len(data)))",
        ]
    return [*lines, "        write(data)"]


def _decode_array(f: PresentField, g: int, flexible: bool) -> list[str]:
    return [
        *_read_length(flexible, True),
        *_on_null(f, "array"),
        "        if n > len(buf) - pos:",
        "            raise DecodeError('array of ' + str(n) + ' elements cannot fit in the buffer')",
        "        items = []",
        "        for _ in range(n):",
        f"            item, pos = _dec_el{g}(buf, pos)",
        "            items.append(item)",
        f"        out[{f.name!r}] = items",
    ]


def _encode_array(f: PresentField, g: int, var: str, flexible: bool) -> list[str]:
    count = f"_uvarint(len({var}) + 1)" if flexible else f"_i32pack(len({var}))"
    return [
        *_encode_null(f, var, f"array {f.name}", flexible, b"\xff\xff\xff\xff"),
        f"        write({count})",
        f"        for item in {var}:",
        f"            _enc_el{g}(w, item)",
    ]
