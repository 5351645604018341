"""Body walkers: check that a body is well formed for its schema without building it.

The conformance job (:mod:`kafka_net.capture.pairing`) must prove, for every
captured frame, that each length, count, varint and tagged field of its body
lands exactly at the body's end, but it needs only a few of the values: the
error codes of a response, the record batches of a Produce request or Fetch
response, a handful of request fields (acks, the long-poll timeouts).
Decoding the whole body into dicts, lists, strings and UUIDs costs most of
the job's Python time; a walker reads the same bytes with the same checks and
keeps only those values.

A walker is generated, like the decoders of :mod:`kafka_net.protocol.codegen`,
for one schema at one version, by the same walk over the schema
(``codegen_emit.BodyWalk``, where every rule of reading a body is written
once); :class:`Walker` is that walk's second back-end, beside the decoder's,
so a new API version or a new wire rule needs nothing here.  Print one::

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
and stops at the same offset (``tests/protocol/test_codegen.py`` checks this on
every message and version, valid bodies, cut, mutated and noise, and
``test_walker.py`` on bodies picked by hand).  It does
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
from kafka_net.protocol.codegen_emit import _FIXED, BodyWalk, Source
from kafka_net.protocol.fields import Array, Field, Struct
from kafka_net.protocol.wire_types import UUID


def _size(fmt: str) -> int:
    return struct.calcsize(">" + fmt)


class Walker(BodyWalk):
    """Writes ``walk_<Schema>_v<N>(buf, p) -> (end, top, codes, records)``: the
    decoder's walk (:class:`~kafka_net.protocol.codegen_emit.BodyWalk`), stepping
    over what it does not keep."""

    def __init__(self, src: Source, schema, version: int, top: tuple[str, ...],
                 codes: bool, records: bool) -> None:
        super().__init__(src, schema, version)
        self.top, self.codes, self.records = top, codes, records

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

    # -- the back-end: step over each value, keeping what was asked for ------------------

    def run(self, group: list, values: dict, ind: int, tag_byte: bool, outer: bool) -> None:
        """Adjacent fixed-width fields: skipped, reading only those kept."""
        offset = 0
        names = ", ".join(f.name for f, _, _ in group)
        self.emit(ind, f"# {names}" + (", then the tagged-field count" if tag_byte else ""))
        for f, _, _ in group:
            code = _FIXED[f.type]
            at = f"p + {offset}" if offset else "p"
            if outer and f.name in self.top:
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

    def fixed(self, t, v: str, ind: int) -> None:
        self.emit(ind, f"p += {_size(_FIXED[t])}")

    def nested(self, st: Struct, flexible: bool, v: str, ind: int) -> None:
        self.struct(st, flexible, ind)

    def string(self, n: str, v: str, ind: int) -> None:
        self.emit(ind, f"str(buf[p:p + {n}], 'utf-8')  # refused if not UTF-8")
        self.emit(ind, f"p += {n}")

    def blob(self, f: Field | None, kind: str, n: str, v: str, ind: int) -> None:
        # Not checked against the end here: p only grows, so the end check refuses it.
        if kind == "records" and self.records and f is not None and f.name == "records":
            self.emit(ind, f"if {n}:")
            self.emit(ind + 1, f"recs.append(bytes(buf[p:p + {n}]))")
        self.emit(ind, f"p += {n}")

    def elements(self, item, n: str, v: str, flexible: bool, ind: int) -> None:
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
            self.block(ind + 1, lambda: self.value(None, item, flexible, False, ind + 1))


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
    src = Source(_RUNTIME)
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

