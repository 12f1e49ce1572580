"""Limits on what a request may make the decoder build, checked before it builds it.

kafka-python's generated decoders trust the counts a frame states: an array's element count
and a struct's tagged-field count become loops that run until the frame runs out. Inside a
100 MB frame (socket.request.max.bytes) that is up to 100 million Python objects, tens of
gigabytes, and minutes of the event loop. As Kafka does, an array of more than 1,000,000
elements or of more elements than bytes left in the frame (each takes at least one byte),
and a struct with more than 10,000 tagged fields, are refused before the first element is read.

They also take what Kafka's refuse: a null (-1) for a field the schema says is never null
(Kafka: "non-nullable field was serialized as null"), which the handlers would then trip
over, and a string or bytes longer than what is left of the frame, which they cut short
silently. Both are refused here, naming the field.

The same decoders copy the rest of the frame for every struct that carries tagged fields
(`BytesIO(bytes(data[pos:]))`), which makes a frame of many small tagged structs cost time
quadratic in its size; tagged fields are read in place here instead.

Installed once by `codec` (the only other module that touches kafka-python's protocol
internals), before any decoder is compiled. The decoders are generated code, so the checks are
spliced into the code they generate; a kafka-python whose generated code no longer has the
lines looked for stops the import with a message instead of running unguarded.
"""

from __future__ import annotations

import re
from typing import Any

from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


class DecodeLimitError(ValueError):
    """A count in the frame is over a limit; nothing was built for it."""


def _null_in(field: str) -> None:
    raise DecodeLimitError(f"{field} is null, which its schema does not allow")


def _runs_past(field: str, length: int, remaining: int) -> None:
    raise DecodeLimitError(f"{field} of {length} bytes runs past the {remaining} bytes left in the frame")


def _array_too_long(count: int, remaining: int) -> None:
    if count > MAX_ARRAY_ELEMENTS:
        raise DecodeLimitError(f"an array of {count} elements is over the limit of {MAX_ARRAY_ELEMENTS:,}")
    raise DecodeLimitError(
        f"an array of {count} elements cannot fit in the {remaining} bytes left in the frame"
    )


class _TagReader:
    """A struct's tagged fields read where they are, the file-like reader the tagged-field
    decoder expects, without the copy of the rest of the frame."""

    __slots__ = ("_data", "_start", "_pos")

    def __init__(self, data: Any, pos: int) -> None:
        self._data = data
        self._start = self._pos = pos
        count, shift = 0, 0
        for byte in data[pos : pos + 5]:  # the field count, an unsigned varint
            count |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        if count > MAX_TAGGED_FIELDS:
            raise DecodeLimitError(
                f"{count} tagged fields in one struct are over the limit of {MAX_TAGGED_FIELDS:,}"
            )

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else min(self._pos + size, len(self._data))
        chunk = bytes(self._data[self._pos : end])
        self._pos = max(end, self._pos)
        return chunk

    def tell(self) -> int:
        return self._pos - self._start


def _spliced(original: Any, rewrite: Any) -> Any:
    """An emit_decode_from that runs `original`, then `rewrite` on the lines it emitted."""

    def emit_decode_from(self: Any, ctx: Any, var_name: str, indent: str, *args: Any, **kwargs: Any) -> None:
        start = len(ctx.lines)
        original(self, ctx, var_name, indent, *args, **kwargs)
        rewrite(self, ctx, start, indent, kwargs.get("version", args[0] if args else None))

    return emit_decode_from


def _refuse_null(field: Any, ctx: Any, at: int, version: int | None) -> None:
    """`ctx.lines[at]` is `<var> = None`: a field that is never null refuses it instead."""
    if version is None or field.nullable_for_version_q(version):
        return
    line = ctx.lines[at]
    assert line.strip().endswith("= None"), line
    ctx.globs["_null_in"] = _null_in
    ctx.lines[at] = f"{line[: len(line) - len(line.lstrip())]}_null_in({field.name!r})"


def _first_line(ctx: Any, start: int, pattern: re.Pattern[str]) -> tuple[int, re.Match[str]] | None:
    """The first line emitted from `start` on that `pattern` matches whole, with its index."""
    for i in range(start, len(ctx.lines)):
        found = pattern.fullmatch(ctx.lines[i])
        if found:
            return i, found
    return None


def _guard_array(field: Any, ctx: Any, start: int, indent: str, version: int | None) -> None:
    """Before the array's loop (`if <n> == -1:` at the array's own indent), refuse its count,
    and a null where the schema allows none."""
    located = _first_line(ctx, start, re.compile(re.escape(indent) + r"if (_n\d+) == -1:"))
    if located is not None:
        i, n = located[0], located[1][1]
        ctx.globs["_array_too_long"] = _array_too_long
        ctx.globs["_MAX_ARRAY"] = MAX_ARRAY_ELEMENTS
        _refuse_null(field, ctx, i + 1, version)
        ctx.lines.insert(
            i,
            f"{indent}if {n} > _MAX_ARRAY or {n} > len(data) - pos: _array_too_long({n}, len(data) - pos)",  # noqa: E501
        )
        return
    raise ImportError(
        "kafka-python's array decoder changed: connect_rebalance.protocol.decoder_limits needs updating"
    )


def _guard_string_or_bytes(field: Any, ctx: Any, start: int, indent: str, version: int | None) -> None:
    """Strings and bytes (`if <ln> < 0:` after their length): a null where the schema allows
    none, and a length past the end of the frame, are refused. Other simple fields have no such
    line and are left as they are."""
    located = _first_line(ctx, start, re.compile(re.escape(indent) + r"if (_ln\d+) < 0:"))
    if located is not None:
        i, ln = located[0], located[1][1]
        ctx.globs["_runs_past"] = _runs_past
        _refuse_null(field, ctx, i + 1, version)
        ctx.lines.insert(
            i, f"{indent}if {ln} > len(data) - pos: _runs_past({field.name!r}, {ln}, len(data) - pos)"
        )


_COPY = re.compile(r"(\s*)(_bio\d+) = _BytesIO\(bytes\(data\[pos:\]\)\)")


def _read_tags_in_place(struct: Any, ctx: Any, start: int, indent: str, version: int | None) -> None:
    located = _first_line(ctx, start, _COPY)
    if located is not None:
        i, found = located
        ctx.globs["_TagReader"] = _TagReader
        ctx.lines[i] = f"{found[1]}{found[2]} = _TagReader(data, pos)"
        return
    raise ImportError("kafka-python's tagged-field decoder changed: decoder_limits needs updating")


def install() -> None:
    """Splice the limits into the generated decoders (once; compiled decoders are cached)."""
    if getattr(ArrayField, "_decode_limits", False):
        return
    for cls in (ArrayField, StructArrayField):
        cls.emit_decode_from = _spliced(cls.emit_decode_from, _guard_array)
        cls._decode_limits = True
    SimpleField.emit_decode_from = _spliced(SimpleField.emit_decode_from, _guard_string_or_bytes)
    StructField._emit_tagged_decode = _spliced(StructField._emit_tagged_decode, _read_tags_in_place)
