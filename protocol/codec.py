"""One generic encoder/decoder for every message schema and version.

For each (message, version) the schema is turned once into a plan: a list of
small per-field functions, chosen for that version (flexible or not, nullable
or not). Decoding returns plain dicts keyed by snake_case field names, with
every field of the schema present: fields absent from the version hold their
default, so handlers never branch on the version to read a field. Encoding
takes such dicts; missing keys mean the default.

Records fields decode to a zero-copy memoryview and encode from a buffer, a
list of buffers, or a file region, without copying large blobs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from protocol.codegen import FIXED_CHARS, PresentField, compile_plan
from protocol.primitives import (
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UINT32,
    Buffer,
    DecodeError,
    Writer,
    blob_length,
    encode_uvarint,
    read_uvarint,
)
from protocol.schema.types import Field, Message, Struct

Decoder = Callable[[Buffer, int], tuple[Any, int]]
Encoder = Callable[[Writer, Any], None]

_FIXED = {
    "int8": INT8,
    "int16": INT16,
    "uint16": UINT16,
    "int32": INT32,
    "uint32": UINT32,
    "int64": INT64,
    "float64": FLOAT64,
}


class EncodeError(ValueError):
    """A value does not fit the schema (wrong type, null where not nullable, out of range)."""


# -- public API ------------------------------------------------------------


def decode(message: Message, version: int, buf: Buffer, pos: int = 0, *, exact: bool = False) -> dict[str, Any]:
    """Decode one message body. With exact=True, trailing bytes are an error."""
    value, end = decode_from(message, version, buf, pos)
    if exact and end != len(buf):
        raise DecodeError(f"{message.name} v{version}: {len(buf) - end} trailing bytes")
    return value


def decode_from(message: Message, version: int, buf: Buffer, pos: int = 0) -> tuple[dict[str, Any], int]:
    plan = struct_plan(message, version)
    try:
        return plan.fast_decode(buf, pos)
    except DecodeError as exc:
        raise DecodeError(f"{message.name} v{version}: {exc}") from None
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise DecodeError(f"{message.name} v{version}: {exc}") from None


def encode(message: Message, version: int, value: dict[str, Any]) -> bytes:
    writer = Writer()
    encode_into(writer, message, version, value)
    return writer.getvalue()


def encode_into(writer: Writer, message: Message, version: int, value: dict[str, Any]) -> None:
    plan = struct_plan(message, version)
    try:
        plan.fast_encode(writer, value)
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as exc:
        raise EncodeError(f"{message.name} v{version}: {exc}") from exc


def default_value(message: Message, version: int) -> dict[str, Any]:
    """A message with every field at its default (a starting point for responses)."""
    return struct_plan(message, version).defaults()


def check_version(message: Message, version: int) -> None:
    if version not in message.valid:
        raise DecodeError(f"{message.name} version {version} is outside {message.valid}")


@cache
def struct_plan(message: Message, version: int) -> StructPlan:
    check_version(message, version)
    return StructPlan(message.fields, version, message.is_flexible(version))


# -- plans -----------------------------------------------------------------


def _copy_default(default: Any) -> Any:
    if isinstance(default, list):
        return []
    if isinstance(default, dict):
        return {k: _copy_default(v) for k, v in default.items()}
    return default


class StructPlan:
    """Encoder and decoder of one struct's fields at one version.

    `decode` and `encode` walk the per-field codecs; `fast_decode` and `fast_encode` do the same
    work as generated straight-line code (protocol/codegen.py) and are what the codec uses.
    """

    __slots__ = ("version", "flexible", "present", "absent", "tagged", "tagged_by_tag", "fast_decode", "fast_encode")

    def __init__(self, fields: tuple[Field, ...], version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.present: list[tuple[str, Decoder, Encoder, Any, bool]] = []
        self.absent: list[tuple[str, Any]] = []
        self.tagged: list[tuple[int, str, Decoder, Encoder, Any]] = []
        kinds: list[FieldKind] = []
        for field in fields:
            if version not in field.versions:
                self.absent.append((field.name, field.default))
                continue
            decoder, encoder, kind = _field_codecs(field, version, flexible)
            if field.tagged:
                if not flexible:
                    self.absent.append((field.name, field.default))
                    continue
                assert field.tag is not None
                self.tagged.append((field.tag, field.name, decoder, encoder, field.default))
            else:
                nullable = version in field.nullable
                self.present.append((field.name, decoder, encoder, field.default, nullable))
                kinds.append(kind)
        self.tagged.sort(key=lambda t: t[0])
        self.tagged_by_tag = {t[0]: t for t in self.tagged}
        self.fast_decode, self.fast_encode = compile_plan(
            [
                PresentField(name, decoder, encoder, default, nullable, fixed, kind, element)
                for (name, decoder, encoder, default, nullable), (fixed, kind, element) in zip(
                    self.present, kinds, strict=True
                )
            ],
            self.absent,
            [(name, default) for _tag, name, _d, _e, default in self.tagged],
            flexible,
            self._decode_tagged,
            self._encode_tagged,
            _copy_default,
            EncodeError,
            version,
        )

    def defaults(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, _d, _e, default, _n in self.present:
            out[name] = _copy_default(default)
        for name, default in self.absent:
            out[name] = _copy_default(default)
        for _tag, name, _d, _e, default in self.tagged:
            out[name] = _copy_default(default)
        return out

    def decode(self, buf: Buffer, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        for name, decoder, _e, _d, _n in self.present:
            try:
                out[name], pos = decoder(buf, pos)
            except DecodeError as exc:
                raise DecodeError(f"{name}: {exc}") from None
        for name, default in self.absent:
            out[name] = _copy_default(default) if isinstance(default, list | dict) else default
        if self.flexible:
            for _tag, name, _d, _e, default in self.tagged:
                out[name] = _copy_default(default) if isinstance(default, list | dict) else default
            pos = self._decode_tagged(buf, pos, out)
        return out, pos

    def _decode_tagged(self, buf: Buffer, pos: int, out: dict[str, Any]) -> int:
        count, pos = read_uvarint(buf, pos)
        if count > len(buf) - pos:
            raise DecodeError(f"{count} tagged fields cannot fit in {len(buf) - pos} bytes")
        last_tag = -1
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise DecodeError(f"tagged field {tag} of {size} bytes exceeds the buffer")
            if tag <= last_tag:
                raise DecodeError(f"tagged fields out of order ({tag} after {last_tag})")
            last_tag = tag
            known = self.tagged_by_tag.get(tag)
            if known is not None:
                _t, name, decoder, _e, _d = known
                value, used = decoder(memoryview(buf)[:end], pos)
                if used != end:
                    raise DecodeError(f"tagged field {name} used {used - pos} of its {size} bytes")
                out[name] = value
            pos = end
        return pos

    def encode(self, w: Writer, value: dict[str, Any]) -> None:
        get = value.get
        for name, _d, encoder, default, nullable in self.present:
            item = get(name, default)
            if item is None and not nullable and default is not None:
                raise EncodeError(f"field {name} is not nullable in version {self.version}")
            encoder(w, item)
        if self.flexible:
            self._encode_tagged(w, value)

    def _encode_tagged(self, w: Writer, value: dict[str, Any]) -> None:
        to_write = []
        for tag, name, _d, encoder, default in self.tagged:
            item = value.get(name, default)
            if item == default or (isinstance(default, list) and not item):
                continue
            sub = Writer()
            encoder(sub, item)
            to_write.append((tag, sub.getvalue()))
        w.write(encode_uvarint(len(to_write)))
        for tag, data in to_write:
            w.write(encode_uvarint(tag))
            w.write(encode_uvarint(len(data)))
            w.write(data)


FieldKind = tuple[str | None, str, tuple[Decoder, Encoder] | None]


def _field_codecs(field: Field, version: int, flexible: bool) -> tuple[Decoder, Encoder, FieldKind]:
    """The field's decoder and encoder, and what the generated fast path needs to inline it:
    (fixed format char, kind, element codecs). An array's element plan is built once, for both."""
    nullable = version in field.nullable
    if field.type == "struct":
        assert field.struct is not None
        return (*_struct_codec(field.struct, version, flexible, nullable), (None, "other", None))
    if field.is_array:
        element = _element_codec(field, version, flexible)
        return (*_array_codec(element, flexible, nullable, field.name), (None, "array", element))
    kind: FieldKind = (None, "string", None) if field.type == "string" else (FIXED_CHARS.get(field.type), "other", None)
    return (*primitive_codec(field.type, flexible, nullable), kind)


def _element_codec(field: Field, version: int, flexible: bool) -> tuple[Decoder, Encoder]:
    if field.element == "struct":
        assert field.struct is not None
        return _struct_codec(field.struct, version, flexible, False)
    return primitive_codec(field.element, flexible, False)


def _struct_codec(struct_: Struct, version: int, flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    plan = StructPlan(struct_.fields, version, flexible)

    if not nullable:
        fast_encode = plan.fast_encode

        def enc(w: Writer, value: Any) -> None:
            fast_encode(w, value if value is not None else {})

        return plan.fast_decode, enc

    def dec_nullable(buf: Buffer, pos: int) -> tuple[Any, int]:
        marker = INT8.unpack_from(buf, pos)[0]
        if marker < 0:
            return None, pos + 1
        return plan.fast_decode(buf, pos + 1)

    def enc_nullable(w: Writer, value: Any) -> None:
        if value is None:
            w.write(b"\xff")
        else:
            w.write(b"\x01")
            plan.fast_encode(w, value)

    return dec_nullable, enc_nullable


def _array_codec(
    element: tuple[Decoder, Encoder], flexible: bool, nullable: bool, name: str
) -> tuple[Decoder, Encoder]:
    dec_el, enc_el = element

    def dec(buf: Buffer, pos: int) -> tuple[Any, int]:
        if flexible:
            n, pos = read_uvarint(buf, pos)
            count = n - 1
        else:
            count = INT32.unpack_from(buf, pos)[0]
            pos += 4
        if count < 0:
            if count == -1 and nullable:
                return None, pos
            raise DecodeError(f"invalid array length {count}")
        if count > len(buf) - pos:
            raise DecodeError(f"array of {count} elements cannot fit in {len(buf) - pos} bytes")
        items: list[Any] = []
        append = items.append
        for _ in range(count):
            item, pos = dec_el(buf, pos)
            append(item)
        return items, pos

    def enc(w: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise EncodeError(f"array {name} is not nullable")
            w.write(b"\x00" if flexible else b"\xff\xff\xff\xff")
            return
        w.write(encode_uvarint(len(value) + 1) if flexible else INT32.pack(len(value)))
        for item in value:
            enc_el(w, item)

    return dec, enc


def primitive_codec(type_name: str, flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    fixed = _FIXED.get(type_name)
    if fixed is not None:
        return _fixed_codec(fixed)
    if type_name == "bool":
        return _dec_bool, _enc_bool
    if type_name == "uuid":
        return _dec_uuid, _enc_uuid
    if type_name == "string":
        return _string_codec(flexible, nullable)
    if type_name in ("bytes", "records"):
        return _bytes_codec(flexible, nullable, as_view=type_name == "records")
    raise ValueError(f"no codec for type {type_name}")


def _fixed_codec(fmt: struct.Struct) -> tuple[Decoder, Encoder]:
    size = fmt.size
    unpack_from = fmt.unpack_from
    pack = fmt.pack

    def dec(buf: Buffer, pos: int) -> tuple[Any, int]:
        return unpack_from(buf, pos)[0], pos + size

    def enc(w: Writer, value: Any) -> None:
        w.write(pack(value))

    return dec, enc


def _dec_bool(buf: Buffer, pos: int) -> tuple[Any, int]:
    return INT8.unpack_from(buf, pos)[0] != 0, pos + 1


def _enc_bool(w: Writer, value: Any) -> None:
    w.write(b"\x01" if value else b"\x00")


def _dec_uuid(buf: Buffer, pos: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeError("truncated uuid")
    return bytes(buf[pos:end]), end


def _enc_uuid(w: Writer, value: Any) -> None:
    if len(value) != 16:
        raise EncodeError("a uuid is 16 bytes")
    w.write(value)


def _read_length(buf: Buffer, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    if wide:
        return INT32.unpack_from(buf, pos)[0], pos + 4
    return INT16.unpack_from(buf, pos)[0], pos + 2


def _string_codec(flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    def dec(buf: Buffer, pos: int) -> tuple[Any, int]:
        length, pos = _read_length(buf, pos, flexible, False)
        if length < 0:
            if length == -1 and nullable:
                return None, pos
            raise DecodeError(f"invalid string length {length}")
        end = pos + length
        if end > len(buf):
            raise DecodeError(f"string of {length} bytes exceeds the {len(buf) - pos} that remain")
        return str(buf[pos:end], "utf-8"), end

    def enc(w: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("string is not nullable")
            w.write(b"\x00" if flexible else b"\xff\xff")
            return
        data = value.encode("utf-8")
        if flexible:
            w.write(encode_uvarint(len(data) + 1))
        else:
            if len(data) > 0x7FFF:
                raise EncodeError("string longer than 32767 bytes")
            w.write(INT16.pack(len(data)))
        w.write(data)

    return dec, enc


def _bytes_codec(flexible: bool, nullable: bool, as_view: bool) -> tuple[Decoder, Encoder]:
    def dec(buf: Buffer, pos: int) -> tuple[Any, int]:
        length, pos = _read_length(buf, pos, flexible, True)
        if length < 0:
            if length == -1 and nullable:
                return None, pos
            raise DecodeError(f"invalid bytes length {length}")
        end = pos + length
        if end > len(buf):
            raise DecodeError(f"{length} bytes exceed the {len(buf) - pos} that remain")
        view = memoryview(buf)[pos:end]
        return (view if as_view else bytes(view)), end

    def enc(w: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("bytes field is not nullable")
            w.write(b"\x00" if flexible else b"\xff\xff\xff\xff")
            return
        length = blob_length(value)
        w.write(encode_uvarint(length + 1) if flexible else INT32.pack(length))
        w.write_blob(value)

    return dec, enc
