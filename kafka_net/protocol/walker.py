"""Body walkers: check that a body is well formed for its schema without building it.

The conformance job (:mod:`kafka_net.capture.pairing`) must prove, for every
captured frame, that each length, count, varint and tagged field of its body
lands exactly at the body's end, but it needs only a few of the values: the
error codes of a response, the record batches of a Produce request or Fetch
response, a handful of request fields (acks, the long-poll timeouts).
Decoding the whole body into dicts, lists, strings and UUIDs costs most of
the job's Python time; a walker reads the same bytes with the same checks and
keeps only those values.

A walker is generated, like the codecs of :mod:`kafka_net.protocol.codegen`,
for one schema at one version from the same declarations and the same
per-version field plan (``Struct._plan``), so a new API version needs nothing
here.  Print one to see it::

    python -m kafka_net.protocol.generated Fetch 13 --response --walk

What it does instead of decoding:

* a run of fixed-width fields is skipped (``p += 30``), unless it holds a
  value asked for; an array of fixed-width items, or of classic-version
  structs made only of fixed-width fields, is skipped in one step;
* strings are still decoded (and thrown away): a body whose string is not
  UTF-8 is refused by the decoder, so the walker must refuse it too;
* bytes are skipped, except ``records`` when asked for (kept, non-empty);
* a non-zero ``error_code`` anywhere is kept (asked for with ``codes``);
* tagged fields are walked in place, each within its own size, and unknown
  tags skipped, with the decoder's ordering checks.

Bounds: the decoder checks every read; the walker checks the same limits
(array counts against the bytes left, a tagged value against its size, the
end of the body), but lets a skipped run move past the end and refuses at the
next read or at the end.  Offsets only grow, so a walk that ran off the end
is always refused: a walker accepts exactly the bodies the decoder accepts,
and stops at the same offset (``tests/protocol/test_walker.py`` checks this on
every message and version, valid bodies, cut, mutated and noise).  It does
not say *why* a body is wrong: a caller that needs the words runs the decoder
on the rare body a walker refuses.

``walker(schema, version, top=..., codes=..., records=...)`` returns
``walk(buf, p) -> (end offset, {top-level field: value}, [error codes],
[records])``; :class:`InvalidRequestError` for a body the decoder refuses.
"""

from __future__ import annotations

import linecache
import struct
from typing import Callable

from kafka_net.protocol.codegen import _RUNTIME
from kafka_net.protocol.codegen_emit import (
    _FIXED, Source, _Emitter, _ends_in_run, _groups, _kind)
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.fields import Array, Field, Struct
from kafka_net.protocol.wire_types import UUID


def _past_end(p: int, end: int) -> InvalidRequestError:
    return InvalidRequestError(f"message ends early (offset {p} past {end})")


_WALK_RUNTIME = dict(_RUNTIME, _past_end=_past_end)


def _size(fmt: str) -> int:
    return struct.calcsize(">" + fmt)


class Walker(_Emitter):
    """Writes ``walk_<Schema>_v<N>(buf, p) -> (end, top, codes, records)``."""

    def __init__(self, src: Source, schema, version: int, top: tuple[str, ...],
                 codes: bool, records: bool) -> None:
        super().__init__(src, schema, version)
        self.top, self.codes, self.records = top, codes, records
        self.end = "end"     # the name of the current limit (a tagged value's own end)

    def build(self) -> str:
        schema, version = self.schema, self.version
        name = f"walk_{schema.name}_v{version}"
        self.start_function(f"{name}(buf, p)",
                            f"{schema.name} v{version}: (end, top, codes, records).")
        self.emit(1, "end = len(buf)")
        if self.codes:
            self.emit(1, "codes = []")
        if self.records:
            self.emit(1, "recs = []")
        self.emit(1, "try:")
        values = self.struct(schema.struct, schema.is_flexible(version), 2, outer=True)
        self.emit(2, "if p > end:")
        self.emit(3, "raise _past_end(p, end)")
        top = "{" + ", ".join(f"{f.name!r}: {values.get(f.name) or self.src.fresh(f)}"
                              for f in schema.struct.fields if f.name in self.top) + "}"
        self.emit(2, f"return p, {top}, {'codes' if self.codes else '()'}, "
                     f"{'recs' if self.records else '()'}")
        self.emit(1, "except (struct.error, IndexError) as exc:  # read past the end")
        self.emit(2, "raise _truncated(exc) from None")
        self.emit(1, "except UnicodeDecodeError as exc:")
        self.emit(2, 'raise InvalidRequestError(f"string is not UTF-8: {exc}") from None')
        return name

    # -- what a struct holds ----------------------------------------------------------

    def wanted(self, t, depth: int = 0) -> bool:
        """Does a value of type ``t`` hold anything this walker keeps (below the top)?"""
        if depth > 32:
            return True   # a recursive schema: assume so
        if isinstance(t, Array):
            return self.wanted(t.item, depth + 1)
        if not isinstance(t, Struct):
            return False
        return any((f.name == "error_code" and self.codes)
                   or (f.name == "records" and self.records)
                   or self.wanted(f.type, depth + 1) for f in t.fields)

    def fixed_size(self, st: Struct, flexible: bool) -> int | None:
        """Bytes a struct of fixed-width fields only, holding nothing kept, takes: at
        a classic version always, at a flexible one when its tagged-field section is
        empty (the byte 0, counted in); None for any other struct."""
        if self.wanted(st):
            return None
        regular, tagged = st._plan(self.version, flexible)
        if tagged or any(f.type not in _FIXED for f, _, _ in regular):
            return None
        return sum(_size(_FIXED[f.type]) for f, _, _ in regular) + (1 if flexible else 0)

    # -- emitting -----------------------------------------------------------------------

    def block(self, ind: int, body: Callable[[], object]) -> None:
        """Emit an indented block's ``body``; ``pass`` if it wrote nothing."""
        before = len(self.lines)
        body()
        if len(self.lines) == before:
            self.emit(ind, "pass")

    def struct(self, st: Struct, flexible: bool, ind: int, outer: bool = False) -> dict:
        """Walk ``st``; return {field name: local} of the top-level fields kept."""
        regular, tagged = st._plan(self.version, flexible)
        values: dict[str, str] = {}
        groups = _groups(regular)
        tag_byte = _ends_in_run(groups, flexible, tagged)
        for i, group in enumerate(groups):
            f, nullable, fflex = group[0]
            if f.type in _FIXED:
                self.run(group, values if outer else None, ind,
                         tag_byte and i == len(groups) - 1)
            else:
                self.emit(ind, f"# {f.name}")
                self.value(f, f.type, fflex, nullable, ind)
        if flexible and not tag_byte:
            self.tags(tagged, ind)
        return values

    def run(self, group: list, values: dict | None, ind: int, tag_byte: bool) -> None:
        """Adjacent fixed-width fields: skipped, reading only those kept."""
        offset = 0
        names = ", ".join(f.name for f, _, _ in group)
        self.emit(ind, f"# {names}" + (", then the tagged-field count" if tag_byte else ""))
        for f, _, _ in group:
            code = _FIXED[f.type]
            at = f"p + {offset}" if offset else "p"
            if values is not None and f.name in self.top:
                v = values[f.name] = self.src.var("v")
                self.emit(ind, f"{v} = {self.src.packer(code)}.unpack_from(buf, {at})[0]")
                if f.type is UUID:
                    self.emit(ind, f"{v} = _UUID(bytes={v})")
                if f.name == "error_code" and self.codes:
                    self.emit(ind, f"if {v}:")
                    self.emit(ind + 1, f"codes.append({v})")
            elif f.name == "error_code" and self.codes:
                self.emit(ind, f"if buf[{at}] or buf[p + {offset + 1}]:")
                unpack = f"{self.src.packer(code)}.unpack_from(buf, {at})[0]"
                self.emit(ind + 1, f"codes.append({unpack})")
            offset += _size(code)
        self.emit(ind, f"p += {offset + (1 if tag_byte else 0)}")
        if tag_byte:
            self.emit(ind, "if buf[p - 1]:  # tags we do not know at this version: skip")
            self.emit(ind + 1, "p = _skip_tags(buf, p - 1)")

    def tags(self, tagged: dict, ind: int) -> None:
        self.emit(ind, "# tagged fields" + (": none known at this version" if not tagged else ""))
        self.emit(ind, "if buf[p] == 0:")
        self.emit(ind + 1, "p += 1")
        self.emit(ind, "else:")
        if not tagged:
            self.emit(ind + 1, "p = _skip_tags(buf, p)")
            return
        count, last, size = self.src.var("n"), self.src.var("tag"), self.src.var("size")
        stop = self.src.var("e")
        self.emit(ind + 1, f"{count}, p = _read_uvarint(buf, p)")
        self.emit(ind + 1, f"{last} = -1")
        self.emit(ind + 1, f"for _ in range({count}):")
        self.emit(ind + 2, f"{last}, {size}, p = _tag_header(buf, p, {last})")
        self.emit(ind + 2, f"{stop} = p + {size}")
        outer_end, self.end = self.end, stop
        for i, tag in enumerate(sorted(tagged)):
            f, nullable, _ = tagged[tag]
            self.emit(ind + 2, f"{'el' if i else ''}if {last} == {tag}:  # {f.name}")
            self.block(ind + 3, lambda: self.value(f, f.type, True, nullable, ind + 3))
            self.emit(ind + 3, f"if p > {stop}:  # read past its own size")
            self.emit(ind + 4, f"raise _past_end(p, {stop})")
        self.end = outer_end
        self.emit(ind + 2, f"p = {stop}")

    def value(self, f: Field | None, t, flexible: bool, nullable: bool, ind: int) -> None:
        """Walk one value at ``p`` (``f``: its field, None for an array item)."""
        kind = _kind(t)
        if kind == "fixed":
            self.emit(ind, f"p += {_size(_FIXED[t])}")
            return
        if kind == "struct":
            if not nullable:
                self.struct(t, flexible, ind)
                return
            self.emit(ind, "p += 1")
            self.emit(ind, "if buf[p - 1] < 128:  # int8 presence marker: -1 is null")
            self.block(ind + 1, lambda: self.struct(t, flexible, ind + 1))
            return
        n = self.src.var("n")
        ind = self.length(n, kind, flexible, nullable, ind)
        if kind == "array":
            self.array(t.item, n, flexible, ind)
        elif kind == "string":
            self.emit(ind, f"if p + {n} > {self.end}:")
            self.emit(ind + 1, f"raise _short({n}, p, {self.end})")
            self.emit(ind, f"str(buf[p:p + {n}], 'utf-8')  # refused if not UTF-8")
            self.emit(ind, f"p += {n}")
        elif kind == "records" and self.records and f is not None and f.name == "records":
            self.emit(ind, f"if {n}:")
            self.emit(ind + 1, f"recs.append(bytes(buf[p:p + {n}]))")
            self.emit(ind, f"p += {n}")
        else:
            self.emit(ind, f"p += {n}")

    def length(self, n: str, kind: str, flexible: bool, nullable: bool, ind: int) -> int:
        """Read a length prefix into ``n``; return the indent for a non-null value."""
        if flexible:
            self.emit(ind, f"{n} = buf[p]  # compact length: uvarint N+1, 0 = null")
            self.emit(ind, "p += 1")
            self.emit(ind, f"if {n} > 127:")
            self.emit(ind + 1, f"{n}, p = _read_uvarint(buf, p - 1)")
            self.emit(ind, f"{n} -= 1")
        else:
            fmt = {"string": "h"}.get(kind, "i")
            self.emit(ind, f"{n} = {self.src.packer(fmt)}.unpack_from(buf, p)[0]  # -1 = null")
            self.emit(ind, f"p += {_size(fmt)}")
        what = "bytes" if kind == "records" else kind
        self.emit(ind, f"if {n} < 0:")
        if not nullable:
            self.emit(ind + 1, f"raise _bad_length({n}, {what!r})")
            return ind
        self.emit(ind + 1, f"if {n} != -1:")
        self.emit(ind + 2, f"raise _bad_length({n}, {what!r})")
        self.emit(ind, "else:")
        return ind + 1

    def array(self, item, n: str, flexible: bool, ind: int) -> None:
        self.emit(ind, f"if {n} > {self.end} - p:  # each element takes a byte at least")
        self.emit(ind + 1, f'raise InvalidRequestError(f"array of {{{n}}} elements '
                           f'in {{{self.end} - p}} bytes")')
        if item in _FIXED:
            self.emit(ind, f"p += {n} * {_size(_FIXED[item])}")
            return
        size = self.fixed_size(item, flexible) if isinstance(item, Struct) else None
        if size is not None and not flexible:
            self.emit(ind, f"p += {n} * {size}  # fixed-width structs")
            return
        if size is not None:
            # Each element ends in its tagged-field count: when every one is 0 (no
            # tags, as brokers write them) the elements are all {size} bytes long.
            self.emit(ind, f"if bytes(buf[p + {size - 1}:p + {n} * {size}:{size}]).count(0) "
                           f"== {n}:")
            self.emit(ind + 1, f"p += {n} * {size}  # fixed-width structs, no tags")
            self.emit(ind, "else:")
            ind += 1
        self.emit(ind, f"for _ in range({n}):")
        if isinstance(item, Struct):
            self.block(ind + 1, lambda: self.struct(item, flexible, ind + 1))
        else:
            self.value(None, item, flexible, False, ind + 1)


# --- compiling and the cache -----------------------------------------------------------

# (id(schema), version, what is kept) -> (the schema, its walker); the schema is held
# so that its id cannot be reused by another while the entry lives.
_CACHE: dict[tuple, tuple[object, Callable]] = {}


def source(schema, version: int, top: tuple[str, ...] = (), codes: bool = False,
           records: bool = False) -> tuple[str, dict, str]:
    """Generated source of one walker: (text, namespace, function name)."""
    for name in top:
        f = next((f for f in schema.struct.fields if f.name == name), None)
        if f is not None and (f.type not in _FIXED or f.tag is not None):
            raise ValueError(f"{schema.name}.{name}: only untagged fixed-width fields "
                             f"can be kept at the top")
    src = Source(_WALK_RUNTIME)
    name = Walker(src, schema, version, tuple(top), codes, records).build()
    return src.text(), src.names, name


def walker(schema, version: int, top: tuple[str, ...] = (), codes: bool = False,
           records: bool = False) -> Callable:
    """The walker of ``schema`` at ``version`` (compiled at first use, then kept):
    ``walk(buf, p) -> (end, {name: value} of ``top`` fields, non-zero error codes if
    ``codes``, non-empty ``records`` fields if ``records``)``."""
    if version not in schema.valid:
        raise ValueError(f"{schema.name} has no version {version} (valid {schema.valid})")
    top = tuple(top)
    key = (id(schema), version, top, codes, records)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    text, namespace, name = source(schema, version, top, codes, records)
    filename = f"<walk {schema.name} v{version}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)  # our text, from our schema data
    _CACHE[key] = (schema, namespace[name])
    return namespace[name]

