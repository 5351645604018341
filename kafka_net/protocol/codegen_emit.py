"""How each schema element becomes lines of Python: the writers behind :mod:`.codegen`.

:class:`Decoder` and :class:`Encoder` walk one schema at one version (using
the same per-version field plan as the interpreter, ``Struct._plan``) and
append source lines to a :class:`Source`; nothing here runs per message.
Reading is written once, in :class:`BodyWalk`, with two back-ends: the
:class:`Decoder` here and the body walker of :mod:`kafka_net.protocol.walker`.
The names the generated code calls (``_read_uvarint``, ``_skip_tags``, ...)
are defined in :mod:`kafka_net.protocol.codegen`, which compiles the text.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Callable

from kafka_net.protocol.fields import MAX_ARRAY_ELEMENTS, Array, Field, Struct
from kafka_net.protocol.primitives import encode_uvarint
from kafka_net.protocol.wire_types import (
    BOOL, FLOAT64, INT8, INT16, INT32, INT64, UINT16, UINT32, UUID)

_FIXED = {INT8: "b", INT16: "h", UINT16: "H", INT32: "i", UINT32: "I",
          INT64: "q", FLOAT64: "d", BOOL: "?", UUID: "16s"}
# Classic (non-flexible) length prefixes: int16 for strings, int32 for the rest.
_CLASSIC_LENGTH = {"string": "h", "bytes": "i", "records": "i", "array": "i"}
_IMMUTABLE = (int, float, str, bytes, bool, type(None), _uuid.UUID)


class Source:
    """Lines of generated code, and the constants they refer to by name."""

    def __init__(self, runtime: dict) -> None:
        self.names: dict = dict(runtime)
        self.functions: list[list[str]] = []
        self._count = 0

    def var(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def packer(self, fmt: str) -> str:
        name = "S_" + fmt.replace("?", "Z")  # "?" (bool) cannot be in a name; Z is no code
        self.names.setdefault(name, struct.Struct(">" + fmt))
        return name

    def const(self, value) -> str:
        if isinstance(value, (int, str, bytes, type(None))) or (
                isinstance(value, float) and value == value and abs(value) != float("inf")):
            return repr(value)
        name = self.var("_c")
        self.names[name] = value
        return name

    def fresh(self, f: Field) -> str:
        """An expression giving a new copy of ``f``'s default (decoded dicts are the caller's)."""
        value = f.default_value()
        if callable(f.default):
            return f"{self.const(f.default)}()"
        if isinstance(value, _IMMUTABLE):
            return self.const(value)
        if isinstance(f.type, Struct) and value == f.type.defaults():
            return "{" + ", ".join(f"{g.name!r}: {self.fresh(g)}" for g in f.type.fields) + "}"
        if value == [] and type(value) is list:
            return "[]"
        return f"_deepcopy({self.const(value)})"

    def text(self) -> str:
        return "\n\n\n".join("\n".join(lines) for lines in self.functions) + "\n"


def _kind(t) -> str:
    if isinstance(t, Struct):
        return "struct"
    if isinstance(t, Array):
        return "array"
    return "fixed" if t in _FIXED else t.name  # string, bytes, records


def _describe(f: Field, flexible: bool, nullable: bool) -> str:
    words = [getattr(f.type, "name", "struct")]
    if _kind(f.type) != "fixed" and _kind(f.type) != "struct":
        words.append("compact" if flexible else "classic")
    if nullable:
        words.append("nullable")
    return f"# {f.name}: {', '.join(words)}"


def _groups(regular: list) -> list[list]:
    """A struct's fields in wire order, adjacent fixed-width ones grouped into one run."""
    groups: list[list] = []
    for entry in regular:
        if entry[0].type in _FIXED and groups and groups[-1][0][0].type in _FIXED:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups


def _ends_in_run(groups: list, flexible: bool, tagged: dict) -> bool:
    """True when an empty tagged section can ride along with the last run (as a byte)."""
    return flexible and not tagged and bool(groups) and groups[-1][0][0].type in _FIXED


class _Emitter:
    """Shared by every back-end: where lines go, and the schema being compiled.

    ``schema`` is a :class:`~kafka_net.protocol.schema.Schema`, read for its
    ``name``, ``struct`` and ``is_flexible``; that module is not imported here,
    since it imports the generator (to compile its codecs) and not the reverse.
    """

    def __init__(self, src: Source, schema, version: int) -> None:
        self.src, self.schema, self.version = src, schema, version
        self.lines: list[str] = []

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    def block(self, ind: int, body: Callable[[], object]) -> None:
        """Emit an indented block's ``body``; ``pass`` if it wrote nothing."""
        before = len(self.lines)
        body()
        if len(self.lines) == before:
            self.emit(ind, "pass")

    def start_function(self, signature: str, doc: str) -> list[str]:
        outer, self.lines = self.lines, [f"def {signature}:", f'    """{doc}"""']
        self.src.functions.append(self.lines)
        return outer


class BodyWalk(_Emitter):
    """The walk over a body's bytes that the decoder and the walker share.

    Every wire rule of reading is here, once: which fields a struct has at the
    version and in what order (``Struct._plan``), fixed-width runs, the
    length prefixes (classic or compact, null), the array count checks, the
    nullable struct marker, UTF-8 strings, and the tagged-field section (its
    count limit, tags in order, each value read within its own size, unknown
    tags skipped).  A back-end says what becomes of each value: the
    :class:`Decoder` keeps it in a local and builds the dicts, the body walker
    (:class:`kafka_net.protocol.walker.Walker`) steps over it and keeps only
    what it was asked for.  The generated code reads at ``p`` in ``buf``;
    ``self.end`` names the current limit: ``end`` (the buffer's), or inside a
    tagged value the end of that value.
    """

    end = "end"

    # -- hooks: what a back-end does with each value -----------------------------------

    def run(self, group: list, values: dict, ind: int, tag_byte: bool, outer: bool) -> None:
        """Adjacent fixed-width fields (and, with ``tag_byte``, the tagged-field count
        byte that ends the struct); their locals go in ``values``."""
        raise NotImplementedError

    def fixed(self, t, v: str, ind: int) -> None:
        """One fixed-width value (an array item or a tagged value) into ``v``."""
        raise NotImplementedError

    def nested(self, st: Struct, flexible: bool, v: str, ind: int) -> None:
        """A struct-typed value into ``v``."""
        raise NotImplementedError

    def null(self, v: str, ind: int) -> None:
        """``v`` is null (a nullable string, bytes, array or struct)."""

    def string(self, n: str, v: str, ind: int) -> None:
        """The ``n`` bytes at ``p``, known to be there, as a str into ``v`` (refusing
        bytes that are not UTF-8, as the decoder must); ``p`` is moved after."""
        raise NotImplementedError

    def blob(self, f: Field | None, kind: str, n: str, v: str, ind: int) -> None:
        """``n`` bytes at ``p`` (bytes or records) into ``v``, moving ``p`` past them."""
        raise NotImplementedError

    def elements(self, item, n: str, v: str, flexible: bool, ind: int) -> None:
        """The ``n`` items of an array (count already checked) into ``v``."""
        raise NotImplementedError

    def tag_default(self, f: Field, v: str, tag: int, ind: int) -> None:
        """Before the tagged section: ``v`` holds the field's default unless it comes."""

    def tagged(self, v: str, value: str, ind: int) -> None:
        """A tagged value read into ``value``: it is the field's (``v``)."""

    # -- the walk ---------------------------------------------------------------------

    def struct(self, st: Struct, flexible: bool, ind: int, outer: bool = False) -> dict:
        """Walk ``st``'s fields at ``p``; return {field name: local} of those read
        (``outer``: the message's own fields, not a nested struct's)."""
        regular, tagged = st._plan(self.version, flexible)
        values: dict[str, str] = {}
        groups = _groups(regular)
        tag_byte = _ends_in_run(groups, flexible, tagged)
        for i, group in enumerate(groups):
            f, nullable, fflex = group[0]
            if f.type in _FIXED:
                self.run(group, values, ind, tag_byte and i == len(groups) - 1, outer)
            else:
                self.emit(ind, _describe(f, fflex, nullable))
                values[f.name] = self.value(f, f.type, fflex, nullable, ind)
        if flexible and not tag_byte:
            self.tags(tagged, values, ind)
        return values

    def value(self, f: Field | None, t, flexible: bool, nullable: bool, ind: int) -> str:
        """Walk one value at ``p`` (``f``: its field, None for an array item); return
        the local the back-end keeps it in."""
        kind, v = _kind(t), self.src.var("v")
        if kind == "fixed":
            self.fixed(t, v, ind)
            return v
        if kind == "struct":
            if not nullable:
                self.nested(t, flexible, v, ind)
                return v
            self.emit(ind, "p += 1")
            self.emit(ind, "if buf[p - 1] > 127:  # int8 presence marker: -1 is null")
            self.block(ind + 1, lambda: self.null(v, ind + 1))
            self.emit(ind, "else:")
            self.block(ind + 1, lambda: self.nested(t, flexible, v, ind + 1))
            return v
        n = self.src.var("n")
        ind = self.length(n, kind, flexible, nullable, v, ind)
        if kind == "array":
            self.count(n, flexible, ind)
            self.elements(t.item, n, v, flexible, ind)
        elif kind == "string":
            self.emit(ind, f"if p + {n} > {self.end}:")
            self.emit(ind + 1, f"raise _short({n}, p, {self.end})")
            self.string(n, v, ind)
        else:
            self.blob(f, kind, n, v, ind)
        return v

    def length(self, n: str, kind: str, flexible: bool, nullable: bool, v: str,
               ind: int) -> int:
        """Read a length prefix into ``n`` and handle null; return the indent for the rest."""
        if flexible:
            self.emit(ind, f"{n} = buf[p]  # compact length: uvarint N+1, 0 = null")
            self.emit(ind, "p += 1")
            self.emit(ind, f"if {n} > 127:")
            self.emit(ind + 1, f"{n}, p = _read_uvarint(buf, p - 1)")
            if kind == "array":
                # Kafka 4.4's cap on elements, checked only here: a one-byte count is
                # under it, so the common small array pays nothing for the check.
                self.emit(ind + 1, f"if {n} > {MAX_ARRAY_ELEMENTS + 1}:  # N+1: over the cap")
                self.emit(ind + 2, f"raise _too_many({n} - 1)")
            self.emit(ind, f"{n} -= 1")
        else:
            fmt = _CLASSIC_LENGTH[kind]
            self.emit(ind, f"{n} = {self.src.packer(fmt)}.unpack_from(buf, p)[0]  # -1 = null")
            self.emit(ind, f"p += {struct.calcsize('>' + fmt)}")
        what = "bytes" if kind == "records" else kind
        self.emit(ind, f"if {n} < 0:  # {'nullable' if nullable else 'non-nullable'}")
        if not nullable:
            self.emit(ind + 1, f"raise _bad_length({n}, {what!r})")
            return ind
        self.emit(ind + 1, f"if {n} != -1:")
        self.emit(ind + 2, f"raise _bad_length({n}, {what!r})")
        self.null(v, ind + 1)
        self.emit(ind, "else:")
        return ind + 1

    def count(self, n: str, flexible: bool, ind: int) -> None:
        # Each element takes at least one byte: a count above the bytes left is refused
        # before anything is allocated for it, and so is one above Kafka 4.4's cap
        # (a compact count was held to the cap as it was read: see length).
        self.emit(ind, f"if {n} > {self.end} - p:")
        self.emit(ind + 1, f'raise InvalidRequestError(f"array of {{{n}}} elements '
                           f'in {{{self.end} - p}} bytes")')
        if not flexible:
            self.emit(ind, f"if {n} > {MAX_ARRAY_ELEMENTS}:  # Kafka 4.4's cap")
            self.emit(ind + 1, f"raise _too_many({n})")

    def tags(self, tagged: dict, values: dict, ind: int) -> None:
        """The tagged-field section: known tags read in place, each within its size."""
        self.emit(ind, "# tagged fields" + (": none known at this version" if not tagged else ""))
        for tag in sorted(tagged):
            f = tagged[tag][0]
            values[f.name] = self.src.var("v")
            self.tag_default(f, values[f.name], tag, ind)
        self.emit(ind, "if buf[p] == 0:")
        self.emit(ind + 1, "p += 1")
        self.emit(ind, "else:")
        if not tagged:
            self.emit(ind + 1, "p = _skip_tags(buf, p)")
            return
        count, last, size = self.src.var("n"), self.src.var("tag"), self.src.var("size")
        stop = self.src.var("e")
        self.emit(ind + 1, f"{count}, p = _tag_count(buf, p)")
        self.emit(ind + 1, f"{last} = -1")
        self.emit(ind + 1, f"for _ in range({count}):")
        self.emit(ind + 2, f"{last}, {size}, p = _tag_header(buf, p, {last})")
        self.emit(ind + 2, f"{stop} = p + {size}")
        outer_end, self.end = self.end, stop
        for i, tag in enumerate(sorted(tagged)):
            f, nullable, _ = tagged[tag]
            self.emit(ind + 2, f"{'el' if i else ''}if {last} == {tag}:  # {f.name}")
            self.block(ind + 3, lambda: self.tagged(
                values[f.name], self.value(f, f.type, True, nullable, ind + 3), ind + 3))
            self.emit(ind + 3, f"if p > {stop}:  # read past its own size")
            self.emit(ind + 4, f"raise _past_end(p, {stop})")
        self.end = outer_end
        self.emit(ind + 2, f"p = {stop}")  # what a known value left unread is ignored


class Decoder(BodyWalk):
    """Writes ``decode_<Schema>_v<N>(buf, p) -> (dict, offset after the message)``."""

    def build(self) -> str:
        schema, version = self.schema, self.version
        name = f"decode_{schema.name}_v{version}"
        self.start_function(f"{name}(buf, p)", f"{schema.name} v{version}: (body, next offset).")
        self.emit(1, "end = len(buf)")
        self.emit(1, "try:")
        values = self.struct(schema.struct, schema.is_flexible(version), 2, outer=True)
        self.emit(2, f"return {self.dict_of(schema.struct, values)}, p")
        self.emit(1, "except (struct.error, IndexError) as exc:  # read past the end")
        self.emit(2, "raise _truncated(exc) from None")
        self.emit(1, "except UnicodeDecodeError as exc:")
        self.emit(2, 'raise InvalidRequestError(f"string is not UTF-8: {exc}") from None')
        return name

    def dict_of(self, st: Struct, values: dict) -> str:
        """The dict expression of a decoded struct: each field's local, or its default."""
        return "{" + ", ".join(f"{f.name!r}: {values.get(f.name) or self.src.fresh(f)}"
                               for f in st.fields) + "}"

    def run(self, group: list, values: dict, ind: int, tag_byte: bool, outer: bool) -> None:
        fmt = "".join(_FIXED[f.type] for f, _, _ in group) + ("B" if tag_byte else "")
        names = [self.src.var("v") for _ in group] + ([self.src.var("t")] if tag_byte else [])
        self.emit(ind, "# " + ", ".join(f"{f.name} {f.type.name}" for f, _, _ in group)
                  + (", then the tagged-field count" if tag_byte else ""))
        unpack = f"{self.src.packer(fmt)}.unpack_from(buf, p)"
        self.emit(ind, f"{', '.join(names)} = {unpack}" if len(names) > 1
                  else f"{names[0]} = {unpack}[0]")
        self.emit(ind, f"p += {struct.calcsize('>' + fmt)}")
        for (f, _, _), name in zip(group, names):
            if f.type is UUID:
                self.emit(ind, f"{name} = _UUID(bytes={name})")
            values[f.name] = name
        if tag_byte:
            self.emit(ind, f"if {names[-1]}:  # tags we do not know at this version: skip")
            self.emit(ind + 1, "p = _skip_tags(buf, p - 1)")

    def fixed(self, t, v: str, ind: int) -> None:
        self.emit(ind, f"{v} = {self.src.packer(_FIXED[t])}.unpack_from(buf, p)[0]")
        self.emit(ind, f"p += {struct.calcsize('>' + _FIXED[t])}")
        if t is UUID:
            self.emit(ind, f"{v} = _UUID(bytes={v})")

    def nested(self, st: Struct, flexible: bool, v: str, ind: int) -> None:
        self.emit(ind, f"{v} = {self.dict_of(st, self.struct(st, flexible, ind))}")

    def null(self, v: str, ind: int) -> None:
        self.emit(ind, f"{v} = None")

    def string(self, n: str, v: str, ind: int) -> None:
        self.emit(ind, f"{v} = str(buf[p:p + {n}], 'utf-8')")
        self.emit(ind, f"p += {n}")

    def blob(self, f: Field | None, kind: str, n: str, v: str, ind: int) -> None:
        self.emit(ind, f"if p + {n} > {self.end}:")
        self.emit(ind + 1, f"raise _short({n}, p, {self.end})")
        self.emit(ind, f"{v} = bytes(buf[p:p + {n}])")
        self.emit(ind, f"p += {n}")

    def elements(self, item, n: str, v: str, flexible: bool, ind: int) -> None:
        if item in _FIXED and item is not UUID:
            code = _FIXED[item]
            self.emit(ind, f"{v} = list(_unpack_from('>%d{code}' % {n}, buf, p))")
            self.emit(ind, f"p += {n} * {struct.calcsize('>' + code)}")
            return
        self.emit(ind, f"{v} = []")
        self.emit(ind, f"for _ in range({n}):")
        if isinstance(item, Struct):
            values = self.struct(item, flexible, ind + 1)
            self.emit(ind + 1, f"{v}.append({self.dict_of(item, values)})")
        else:
            self.emit(ind + 1, f"{v}.append({self.value(None, item, flexible, False, ind + 1)})")

    def tag_default(self, f: Field, v: str, tag: int, ind: int) -> None:
        self.emit(ind, f"{v} = {self.src.fresh(f)}  # unless tag {tag} comes")

    def tagged(self, v: str, value: str, ind: int) -> None:
        self.emit(ind, f"{v} = {value}")


class Encoder(_Emitter):
    """Writes ``encode_<Schema>_v<N>(value, buf)``, appending the message to ``buf``."""

    def build(self) -> str:
        schema, version = self.schema, self.version
        name = f"encode_{schema.name}_v{version}"
        self.start_function(f"{name}(value, buf)", f"{schema.name} v{version}, onto buf.")
        self.struct(schema.struct, "value", schema.is_flexible(version), 1, "buf")
        if len(self.lines) == 2:
            self.emit(1, "pass  # nothing on the wire at this version")
        return name

    def get(self, src: str, f: Field) -> str:
        return f"{src}.get({f.name!r}, {self.src.const(f.default_value())})"

    def struct(self, st: Struct, src: str, flexible: bool, ind: int, b: str) -> None:
        regular, tagged = st._plan(self.version, flexible)
        groups = _groups(regular)
        pad = _ends_in_run(groups, flexible, tagged)
        for i, group in enumerate(groups):
            f, nullable, fflex = group[0]
            if f.type in _FIXED:
                last = pad and i == len(groups) - 1
                fmt = "".join(_FIXED[g.type] for g, _, _ in group) + ("x" if last else "")
                args = ", ".join(self.get(src, g) + (".bytes" if g.type is UUID else "")
                                 for g, _, _ in group)
                self.emit(ind, "# " + ", ".join(f"{g.name} {g.type.name}" for g, _, _ in group)
                          + (", then no tagged fields" if last else ""))
                self.emit(ind, f"{b} += {self.src.packer(fmt)}.pack({args})")
            else:
                self.emit(ind, _describe(f, fflex, nullable))
                v = self.src.var("v")
                self.emit(ind, f"{v} = {self.get(src, f)}")
                self.value(f.type, v, fflex, nullable, ind, b)
        if flexible and not pad:
            self.tags(tagged, src, ind, b)

    def tags(self, tagged: dict, src: str, ind: int, b: str) -> None:
        if not tagged:
            self.emit(ind, f"{b}.append(0)  # no tagged fields at this version")
            return
        self.emit(ind, "# tagged fields, in tag order, each only when not at its default")
        out = self.src.var("tags")
        self.emit(ind, f"{out} = []")
        for tag in sorted(tagged):
            f, nullable, _ = tagged[tag]
            v, sub = self.src.var("v"), self.src.var("sub")
            self.emit(ind, f"{v} = {src}.get({f.name!r}, _MISSING)  # tag {tag}")
            self.emit(ind, f"if {v} is not _MISSING and not {v} == "
                           f"{self.src.const(f.default_value())}:")
            self.emit(ind + 1, f"{sub} = bytearray()")
            self.value(f.type, v, True, nullable, ind + 1, sub)
            self.emit(ind + 1, f"{out}.append({encode_uvarint(tag)!r} + _uvarint(len({sub})) "
                               f"+ {sub})")
        self.emit(ind, f"if {out}:")
        self.emit(ind + 1, f"{b} += _uvarint(len({out})) + b''.join({out})")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{b}.append(0)")

    def value(self, t, v: str, flexible: bool, nullable: bool, ind: int, b: str) -> None:
        kind = _kind(t)
        if kind == "fixed":
            self.emit(ind, f"{b} += {self.src.packer(_FIXED[t])}.pack("
                           f"{v}{'.bytes' if t is UUID else ''})")
            return
        if kind == "struct":
            if nullable:
                self.emit(ind, f"if {v} is None:")
                self.emit(ind + 1, f"{b}.append(255)  # int8 -1: null")
                self.emit(ind, "else:")
                ind += 1
                self.emit(ind, f"{b}.append(1)")
            self.struct(t, v, flexible, ind, b)
            return
        what = {"string": "a non-nullable string", "array": "a non-nullable array"}.get(
            kind, "non-nullable bytes")
        self.emit(ind, f"if {v} is None:")
        if nullable:
            null = b"\x00" if flexible else (b"\xff\xff" if kind == "string" else b"\xff" * 4)
            self.emit(ind + 1, f"{b} += {null!r}")
            self.emit(ind, "else:")
            ind += 1
        else:
            self.emit(ind + 1, f'raise ValueError("null written to {what}")')
        data = v
        if kind == "string":
            data = self.src.var("d")
            self.emit(ind, f"{data} = {v}.encode('utf-8')")
            if not flexible:
                self.emit(ind, f"if len({data}) > 0x7FFF:")
                self.emit(ind + 1, 'raise ValueError("string longer than 32767 bytes")')
        self.length(f"len({data})", kind, flexible, ind, b)
        if kind == "records":
            # A Region (a segment file slice, zero-copy Fetch) is noted in the buffer,
            # not copied; the class test keeps the usual bytes value one append.
            self.emit(ind, f"if {v}.__class__ is bytes:")
            self.emit(ind + 1, f"{b} += {v}")
            self.emit(ind, "else:")
            self.emit(ind + 1, f"_splice_records({b}, {v})")
        elif kind != "array":
            self.emit(ind, f"{b} += {data}")
        elif t.item in _FIXED and t.item is not UUID:
            self.emit(ind, f"{b} += _pack('>%d{_FIXED[t.item]}' % len({v}), *{v})")
        else:
            e = self.src.var("e")
            self.emit(ind, f"for {e} in {v}:")
            if isinstance(t.item, Struct):
                self.struct(t.item, e, flexible, ind + 1, b)
            else:
                self.value(t.item, e, flexible, False, ind + 1, b)

    def length(self, n_expr: str, kind: str, flexible: bool, ind: int, b: str) -> None:
        if not flexible:
            self.emit(ind, f"{b} += {self.src.packer(_CLASSIC_LENGTH[kind])}.pack({n_expr})")
            return
        n = self.src.var("n")
        self.emit(ind, f"{n} = {n_expr}")
        self.emit(ind, f"if {n} < 127:  # compact length N+1 fits one uvarint byte")
        self.emit(ind + 1, f"{b}.append({n} + 1)")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{b} += _uvarint({n} + 1)")
