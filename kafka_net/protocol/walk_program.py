"""Body walkers as programs: the same walk as :mod:`.walker`, written as ints.

The conformance job walks every body with a generated walker
(:mod:`kafka_net.protocol.walker`).  Those are Python, and a body of a few
hundred bytes still costs a couple of microseconds of bytecode.  This module
writes the same walk, over the same message definitions, as a *program*: a
flat list of ints, opcodes followed by their operands, that the compiled
interpreter ``kafka_net.protocol._walk`` runs over the body's bytes.  A new
API version needs nothing here, as for the Python walkers: programs are made
from the schemas at run time.

:class:`ProgramWalk` is a back-end of ``codegen_emit.BodyWalk`` (through
:class:`~kafka_net.protocol.walker.Walker`, whose choices of what to skip and
keep it shares), so the fields, their order at a version, and which struct
ends in a tagged section come from the one walk the decoder uses.  What it
writes instead of lines:

=============================  ===============================================
``END``                        the end of a program or of a nested body
``SKIP k``                     ``p += k`` (a run of fixed-width fields)
``TOP slot type at code``      read a kept top-level value at ``p + at``
                               (``code``: it is an error_code, kept too)
``CODE at``                    a non-zero int16 error_code at ``p + at`` is kept
``TAG_BYTE``                   the tagged-field count that ends a run: 0, or a
                               section of tags unknown at this version
``SKIP_TAGS``                  a tagged-field section with no known tags
``TAGS size count`` + entries  a section with ``count`` known tags; each entry
                               is ``tag size body... END``, walked within the
                               value's own size; ``size`` skips them all
``STRING flexible nullable``   a string: length, null, UTF-8
``BYTES flexible nullable k``  bytes or records (``k``: kept as ``records``)
``ARRAY flexible nullable w``  an array: ``w > 0`` items of ``w`` bytes each;
``size`` + body... ``END``     ``w < 0``: structs of ``-w`` bytes ending in a
                               tagged-field count, skipped whole when every
                               count is 0; else the body walks each item
``NULLABLE_STRUCT size`` body  the int8 presence marker, then the body
                               (``size`` ops, skipped when null)
=============================  ===============================================

The interpreter keeps the Python walker's answer exactly (end offset, top
values, error codes in body order, records) or says it is not sure (None),
and the Python walker answers instead; it never accepts a body the walker
refuses (``tests/protocol/test_walk_program.py`` holds it to the walker on
every message and version).
"""

from __future__ import annotations

from kafka_net.protocol.codegen_emit import _FIXED, Source, _kind
from kafka_net.protocol.fields import Struct
from kafka_net.protocol.walker import Walker, _size

END, SKIP, TOP, CODE, TAG_BYTE, SKIP_TAGS, TAGS, STRING, BYTES, ARRAY, NULLABLE_STRUCT = \
    range(11)
# The top-level value types the interpreter reads (struct codes of codegen_emit._FIXED).
TOP_TYPES = {"b": 0, "h": 1, "H": 2, "i": 3, "I": 4, "q": 5, "d": 6, "?": 7, "16s": 8}


class NotProgrammable(Exception):
    """A walk this program form does not express: the Python walker does it alone."""


class ProgramWalk(Walker):
    """The walker's walk, appending opcodes to ``ops`` instead of lines of Python."""

    def __init__(self, schema, version: int, top: tuple[str, ...], codes: bool,
                 records: bool) -> None:
        super().__init__(Source({}), schema, version, top, codes, records)
        self.ops: list[int] = []
        self.slots = {name: i for i, name in enumerate(top)}

    def emit(self, ind: int, text: str) -> None:
        """The walk's comments (field names): a program has no text."""

    def build(self) -> list[int]:
        schema = self.schema
        self.struct(schema.struct, schema.is_flexible(self.version), 0, outer=True)
        self.ops.append(END)
        return self.ops

    def sized(self, head: list[int], body) -> None:
        """``head`` then ``body()``'s ops, the head's last int set to the body's length."""
        self.ops += head
        at = len(self.ops)
        body()
        self.ops[at - 1] = len(self.ops) - at

    # -- the back-end -----------------------------------------------------------------

    def run(self, group: list, values: dict, ind: int, tag_byte: bool, outer: bool) -> None:
        offset = 0
        for f, _, _ in group:
            code = _FIXED[f.type]
            is_code = f.name == "error_code" and self.codes
            if outer and f.name in self.top:
                if code not in TOP_TYPES:
                    raise NotProgrammable(f"{f.name}: a {f.type.name} kept at the top")
                self.ops += [TOP, self.slots[f.name], TOP_TYPES[code], offset, int(is_code)]
            elif is_code:
                if code != "h":
                    raise NotProgrammable(f"error_code of type {f.type.name}")
                self.ops += [CODE, offset]
            offset += _size(code)
        self.ops += [SKIP, offset]
        if tag_byte:
            self.ops.append(TAG_BYTE)

    def value(self, f, t, flexible: bool, nullable: bool, ind: int) -> str:
        kind = _kind(t)
        if kind == "fixed":
            self.ops += [SKIP, _size(_FIXED[t])]
        elif kind == "struct" and nullable:
            self.sized([NULLABLE_STRUCT, 0], lambda: self.struct(t, flexible, ind))
        elif kind == "struct":
            self.struct(t, flexible, ind)
        elif kind == "string":
            self.ops += [STRING, int(flexible), int(nullable)]
        elif kind in ("bytes", "records"):
            keep = kind == "records" and self.records and f is not None and f.name == "records"
            self.ops += [BYTES, int(flexible), int(nullable), int(keep)]
        elif kind == "array":
            self.array(t.item, flexible, nullable, ind)
        else:
            raise NotProgrammable(f"a value of kind {kind}")
        return "v"

    def array(self, item, flexible: bool, nullable: bool, ind: int) -> None:
        """The walker's ``elements``: fixed-width items (and structs of them) in one step."""
        width = 0
        if item in _FIXED:
            width = _size(_FIXED[item])
        elif isinstance(item, Struct):
            size = self.fixed_size(item, flexible)
            if size is not None:
                width = -size if flexible else size

        def body() -> None:
            if item in _FIXED:
                return
            if isinstance(item, Struct):
                self.struct(item, flexible, ind)
            else:
                self.value(None, item, flexible, False, ind)
            self.ops.append(END)
        self.sized([ARRAY, int(flexible), int(nullable), width, 0], body)

    def tags(self, tagged: dict, values: dict, ind: int) -> None:
        if not tagged:
            self.ops.append(SKIP_TAGS)
            return

        def entries() -> None:
            for tag in sorted(tagged):
                f, nullable, _ = tagged[tag]
                self.sized([tag, 0], lambda: (self.value(f, f.type, True, nullable, ind),
                                              self.ops.append(END)))
        self.sized([TAGS, len(tagged), 0], entries)


def program(schema, version: int, top: tuple[str, ...] = (), codes: bool = False,
            records: bool = False) -> tuple[list[int], tuple, tuple] | None:
    """(ops, top names, their defaults) of the walk :func:`walker.walker` makes for
    the same arguments, or None where a program cannot express it."""
    if version not in schema.valid:
        raise ValueError(f"{schema.name} has no version {version} (valid {schema.valid})")
    fields = [f for f in schema.struct.fields if f.name in top]
    for f in fields:
        if f.type not in _FIXED or f.tag is not None:
            raise ValueError(f"{schema.name}.{f.name}: only untagged fixed-width fields "
                             f"can be kept at the top")
    names = tuple(f.name for f in fields)
    try:
        ops = ProgramWalk(schema, version, names, codes, records).build()
    except NotProgrammable:
        return None
    return ops, names, tuple(f.default_value() for f in fields)


# --- reading a program ------------------------------------------------------------------

_OPERANDS = {END: (), SKIP: ("bytes",), TOP: ("slot", "type", "at", "code"), CODE: ("at",),
             TAG_BYTE: (), SKIP_TAGS: (), TAGS: ("known", "size"),
             STRING: ("flexible", "nullable"), BYTES: ("flexible", "nullable", "keep"),
             ARRAY: ("flexible", "nullable", "width", "size"), NULLABLE_STRUCT: ("size",)}
_NAMES = ("END", "SKIP", "TOP", "CODE", "TAG_BYTE", "SKIP_TAGS", "TAGS", "STRING", "BYTES",
          "ARRAY", "NULLABLE_STRUCT")


def listing(ops: list[int]) -> str:
    """A program as text: one op a line with its operands named, nested bodies indented."""
    lines: list[str] = []
    _list(ops, 0, len(ops), 0, lines)
    return "\n".join(lines) + "\n"


def _list(ops: list[int], i: int, stop: int, depth: int, lines: list[str]) -> None:
    while i < stop:
        op, names = ops[i], _OPERANDS[ops[i]]
        args = dict(zip(names, ops[i + 1:i + 1 + len(names)]))
        lines.append("    " * depth + " ".join([f"{i:4}  {_NAMES[op]}"]
                                                + [f"{k}={v}" for k, v in args.items()]))
        i += 1 + len(names)
        if op in (ARRAY, NULLABLE_STRUCT):
            _list(ops, i, i + args["size"], depth + 1, lines)
        elif op == TAGS:
            j = i
            for _ in range(args["known"]):
                lines.append("    " * (depth + 1) + f"tag {ops[j]} (size {ops[j + 1]}):")
                _list(ops, j + 2, j + 2 + ops[j + 1], depth + 2, lines)
                j += 2 + ops[j + 1]
        if op in (ARRAY, NULLABLE_STRUCT, TAGS):
            i += args["size"]
