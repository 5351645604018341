"""The parts a message schema is declared from, and the interpreter that reads them.

:class:`Field`, :class:`Struct` and :class:`Array` hold what Kafka's JSON
message specs hold (``ApiVersionsRequest.json`` and the rest), as Python data;
:class:`~kafka_net.protocol.schema.Schema` puts them together into one
request or response.  ``Struct.read_struct`` / ``write_struct`` interpret
them field by field: the readable reference the compiled codecs
(:mod:`kafka_net.protocol.codegen`, which reads these declarations and
nothing above them) are tested against.

Version rules (from Kafka's message generator):

* ``versions``: the versions a field exists in; absent elsewhere.
* ``nullable``: the versions in which a string, bytes or array may be null.
* ``flexible`` (on the Schema): from these versions on (KIP-482) strings,
  bytes and arrays carry an unsigned-varint length of N+1 (0 = null) instead
  of int16/int32 N (-1 = null), and every struct ends with a tagged-field
  section.  A field may opt out with ``flexible="none"`` (the request header's
  client_id does, so any broker can read any ApiVersions request).
* ``tag``: a tagged field, written in the tagged section only when it differs
  from its default; unknown tags are skipped, which is what makes tagged fields
  safe to add without a version bump.
* ``default``: the value a field holds where it is absent, and the value a
  tagged field is omitted at.  Left out, it is the type's zero (0, false, "",
  empty array, a struct of defaults); ``default=None`` is Kafka's
  ``"default": "null"`` (a nullable string, bytes or array whose default is null).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.primitives import Reader, Writer
from kafka_net.protocol.wire_types import Type, read_length, write_length


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``high is None`` means "and every later version"."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: "str | Versions") -> "Versions":
        if isinstance(text, Versions):
            return text
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-")
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self is NO_VERSIONS or self == NO_VERSIONS:
            return "none"
        return f"{self.low}+" if self.high is None else f"{self.low}-{self.high}"


NO_VERSIONS = Versions(0, -1)

# Kafka 4.4's decoders refuse, before allocating, an array of more elements and a
# tagged-field section of more fields than these: no real message comes near them,
# and a peer's count alone must not size a list (a 1 MB frame of one-byte elements
# would otherwise build a million-entry list per array, nested arrays multiplying it).
MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def too_many_elements(n: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"array of {n} elements is over the limit of {MAX_ARRAY_ELEMENTS}")


def too_many_tagged_fields(n: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"{n} tagged fields are over the limit of {MAX_TAGGED_FIELDS}")


class Array(Type):
    """An array of a type or of a :class:`Struct`; ``-1`` / compact ``0`` is null."""

    def __init__(self, item: "Type | Struct") -> None:
        self.item = item
        self.name = f"[{getattr(item, 'name', 'struct')}]"

    def read(self, r, flexible, nullable, version: int = 0):
        n = read_length(r, flexible, 4)
        if n < 0:
            if nullable and n == -1:
                return None
            raise InvalidRequestError(f"null or negative array length {n}")
        # Each element takes at least one byte, so a count above the bytes left is a
        # lie: refusing it early stops a 4-byte frame from allocating a huge list.
        if n > r.remaining():
            raise InvalidRequestError(f"array of {n} elements in {r.remaining()} bytes")
        if n > MAX_ARRAY_ELEMENTS:
            raise too_many_elements(n)
        item = self.item
        if isinstance(item, Struct):
            return [item.read_struct(r, version, flexible) for _ in range(n)]
        return [item.read(r, flexible, False) for _ in range(n)]

    def write(self, w, value, flexible, nullable, version: int = 0):
        if value is None:
            if not nullable:
                raise ValueError("null written to a non-nullable array")
            write_length(w, -1, flexible, 4)
            return
        write_length(w, len(value), flexible, 4)
        item = self.item
        if isinstance(item, Struct):
            for element in value:
                item.write_struct(w, element, version, flexible)
        else:
            for element in value:
                item.write(w, element, flexible, False)

    def default(self):
        return []


class _Unset:
    """Marks a Field with no explicit default (None means Kafka's "null" default)."""

    def __repr__(self) -> str:
        return "UNSET"


_UNSET = _Unset()


@dataclass
class Field:
    """One field of a struct; see the module docstring for the version rules."""

    name: str
    type: "Type | Struct"
    versions: Versions | str = "0+"
    nullable: Versions | str = "none"
    flexible: Versions | str | None = None  # None: follow the message
    tag: int | None = None
    default: Any = _UNSET  # None is a real default: Kafka's "null"
    doc: str = ""

    def __post_init__(self) -> None:
        self.versions = Versions.parse(self.versions)
        self.nullable = Versions.parse(self.nullable)
        if self.flexible is not None:
            self.flexible = Versions.parse(self.flexible)

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default() if callable(self.default) else self.default
        if isinstance(self.type, Struct):
            return self.type.defaults()
        return self.type.default()


class Struct:
    """An ordered list of fields.  Also usable as an array element type."""

    name = "struct"

    def __init__(self, *fields: Field) -> None:
        self.fields = list(fields)
        self._plans: dict[tuple[int, bool], tuple[list, dict]] = {}

    def defaults(self) -> dict:
        return {f.name: f.default_value() for f in self.fields}

    def _plan(self, version: int, flexible: bool):
        """Fields in wire order at one version, and the tagged ones by tag (cached)."""
        key = (version, flexible)
        plan = self._plans.get(key)
        if plan is None:
            regular, tagged = [], {}
            for f in self.fields:
                if version not in f.versions:
                    continue
                field_flexible = flexible if f.flexible is None else version in f.flexible
                entry = (f, version in f.nullable, field_flexible)
                if f.tag is not None:
                    if flexible:
                        tagged[f.tag] = entry
                else:
                    regular.append(entry)
            plan = self._plans[key] = (regular, tagged)
        return plan

    def read_struct(self, r: Reader, version: int, flexible: bool) -> dict:
        regular, tagged = self._plan(version, flexible)
        out = self.defaults() if len(regular) != len(self.fields) else {}
        for f, nullable, fflex in regular:
            out[f.name] = _read_value(f.type, r, version, fflex, nullable)
        if flexible:
            _read_tagged(r, tagged, version, out)
        return out

    def write_struct(self, w: Writer, value: dict, version: int, flexible: bool) -> None:
        regular, tagged = self._plan(version, flexible)
        for f, nullable, fflex in regular:
            v = value.get(f.name, _MISSING)
            if v is _MISSING:
                v = f.default_value()
            _write_value(f.type, w, v, version, fflex, nullable)
        if flexible:
            _write_tagged(w, tagged, value, version)


_MISSING = object()


def _read_value(t, r: Reader, version: int, flexible: bool, nullable: bool):
    if isinstance(t, Struct):
        if nullable:
            # Nullable structs are preceded by an int8 presence marker (-1 = null).
            if r.int8() < 0:
                return None
        return t.read_struct(r, version, flexible)
    if isinstance(t, Array):
        return t.read(r, flexible, nullable, version)
    return t.read(r, flexible, nullable)


def _write_value(t, w: Writer, v, version: int, flexible: bool, nullable: bool) -> None:
    if isinstance(t, Struct):
        if nullable:
            w.int8(-1 if v is None else 1)
            if v is None:
                return
        t.write_struct(w, v, version, flexible)
    elif isinstance(t, Array):
        t.write(w, v, flexible, nullable, version)
    else:
        t.write(w, v, flexible, nullable)


def _read_tagged(r: Reader, tagged: dict, version: int, out: dict) -> None:
    count = r.uvarint()
    if count > MAX_TAGGED_FIELDS:
        raise too_many_tagged_fields(count)
    last = -1
    for _ in range(count):
        tag = r.uvarint()
        size = r.uvarint()
        if tag <= last:
            raise InvalidRequestError(f"tagged fields out of order: {tag} after {last}")
        last = tag
        entry = tagged.get(tag)
        if entry is None:
            r.raw(size)  # unknown tag: skip, as the spec requires
            continue
        f, nullable, _ = entry
        sub = Reader(r.raw(size))
        out[f.name] = _read_value(f.type, sub, version, True, nullable)


def _write_tagged(w: Writer, tagged: dict, value: dict, version: int) -> None:
    present = []
    for tag in sorted(tagged):
        f, nullable, _ = tagged[tag]
        v = value.get(f.name, _MISSING)
        if v is _MISSING or v == f.default_value():
            continue
        sub = Writer()
        _write_value(f.type, sub, v, version, True, nullable)
        present.append((tag, sub.buf))
    w.uvarint(len(present))
    for tag, data in present:
        w.uvarint(tag)
        w.uvarint(len(data))
        w.raw(data)


def walk_fields(struct: Struct, visit: Callable[[Field, int], None], depth: int = 0) -> None:
    """Call ``visit(field, depth)`` for every field, depth first (docs and tests)."""
    for f in struct.fields:
        visit(f, depth)
        inner = f.type.item if isinstance(f.type, Array) else f.type
        if isinstance(inner, Struct):
            walk_fields(inner, visit, depth + 1)
