"""Write tests/protocol/kafka42_messages.json: Kafka 4.2's messages, key by key.

The facts come from franz-go's ``generate/definitions`` (its own DSL, which
follows apache/kafka's ``clients/src/main/resources/common/message/*.json``
through Kafka 4.2).  Each top-level request there is declared as::

    FetchRequest => key 1, max version 18, flexible v12+

and its response shares the request's versions, as Kafka's generator
requires.  franz-go keeps every version down to 0 (Kafka 4.0's KIP-896 raised
some floors on the broker, not in the wire format), so the range recorded
here is ``0..max``, the range kafka-net's codec reads.

Beside the ranges, each version of each request and response gets a digest of
its wire layout (see :func:`layout`): field types in order, tagged fields by
tag, nullability.  tests/protocol/test_kafka42_messages.py computes the same
from kafka-net's schemas, so the check needs neither franz-go nor this script.

Not needed at test time: the JSON is checked in.  Run from the repository root::

    python tools/kafka42_messages.py [--repo /work/.mirror/twmb+franz-go/repo]
        [--commit adb3a18abe14bdb230f1cd738d03623301013d42] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_REPO = "/work/.mirror/twmb+franz-go/repo"
DEFAULT_COMMIT = "adb3a18abe14bdb230f1cd738d03623301013d42"
OUTPUT = Path(__file__).resolve().parent.parent / "tests/protocol/kafka42_messages.json"

# "NameRequest => key N, max version M[, flexible vF+][, other attributes]"
_HEADER = re.compile(
    r"^(?P<name>\w+)Request => key (?P<key>\d+), max version (?P<max>\d+)"
    r"(?:, flexible v(?P<flex>\d+)\+)?")
# A field's trailing " // v1+", " // v0-v4", " // v2+, tag 0" or " // tag 1".
_FIELD_NOTE = re.compile(r" // (?:v(\d+)(?:\+|-v(\d+))(?:, tag (\d+))?|tag (\d+))$")
_SPECIAL = re.compile(r"^(ThrottleMillis|TimeoutMillis)(?:\(\d+\))?(?: // v(\d+)\+)?$")
_ENUM = re.compile(r"^(\w+) (\w+) (?:camelcase )?\($")

# The DSL's scalar types, by the token the wire layout uses (string and
# nullable-string, bytes and nullable-bytes are the same bytes on the wire).
_SCALARS = {
    "bool": "bool", "int8": "int8", "int16": "int16", "uint16": "uint16",
    "int32": "int32", "int64": "int64", "uint32": "uint32", "float64": "float64",
    "uuid": "uuid", "string": "string", "nullable-string": "string",
    "bytes": "bytes", "nullable-bytes": "bytes",
}


@dataclass
class DslField:
    """One field of a franz-go definition: its type is a scalar token, the name of a
    shared struct, ("array", inner) or ("struct", fields, nullable)."""

    name: str
    type: object
    low: int = 0            # -1: a tagged field present in every flexible version
    high: int | None = None
    tag: int | None = None
    nullable_from: int | None = None   # for nullable-string-vN+ / nullable-vN+[...]
    default: str | None = None


def parse_enums(text: str) -> dict[str, str]:
    """Enum name -> its wire type (``ACLOperation int8 (`` -> int8)."""
    return {m[1]: m[2] for m in map(_ENUM.match, text.splitlines()) if m}


def parse_definitions(text: str, enums: dict[str, str]) -> tuple[list, dict]:
    """Top-level messages ``[(header match, request fields, response fields)]`` and
    the shared (``not top level``) structs by name, of one definitions file."""
    lines = text.splitlines()
    messages, shared = [], {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line.startswith("//"):
            i += 1
            continue
        fields, i = _parse_struct(lines, i + 1, 0, enums)
        if " => not top level" in line:
            shared[line.split(" => ", 1)[0]] = fields
        elif line.endswith("Response =>"):
            messages[-1][2] = fields
        else:
            header = _HEADER.match(line)
            if header is None:
                raise SystemExit(f"unrecognised definition line {line!r}")
            messages.append([header, fields, None])
    return messages, shared


def _parse_struct(lines: list[str], i: int, level: int, enums: dict) -> tuple[list, int]:
    indent = "  " * (level + 1)
    fields = []
    while i < len(lines):
        line = lines[i]
        if not line.startswith(indent):
            break  # a blank line or a shallower one ends this struct
        body = line[len(indent):]
        i += 1
        if body.startswith("//"):
            continue
        special = _SPECIAL.match(body)
        if special and ":" not in body:
            fields.append(DslField(special[1], "int32", low=int(special[2] or 0)))
            continue
        name, typ = body.split(": ", 1)
        field = DslField(name, None)
        note = _FIELD_NOTE.search(typ)
        if note:
            typ = typ[:note.start()]
            if note[4] is not None:
                field.low, field.tag = -1, int(note[4])
            else:
                field.low = int(note[1])
                field.high = None if note[2] is None else int(note[2])
                field.tag = None if note[3] is None else int(note[3])
        elif " // " in typ:
            raise SystemExit(f"unrecognised field note in {line!r}")
        depth = typ.count("[")
        if depth:
            if typ.startswith("nullable"):
                typ = typ[len("nullable"):]
                field.nullable_from = 0
                if typ.startswith("-v"):
                    field.nullable_from = int(typ[2:typ.index("+")])
                    typ = typ[typ.index("["):]
            typ = typ[depth:len(typ) - depth]
        if "(" in typ:
            typ, field.default = typ[:typ.index("(")], typ[typ.index("(") + 1:-1]
        if typ.startswith("=>") or typ.startswith("nullable=>"):
            inner, i = _parse_struct(lines, i, level + 1, enums)
            field.type = ("struct", inner, typ.startswith("nullable"))
        elif typ.startswith("nullable-string-v"):
            field.type, field.nullable_from = "string", int(typ[len("nullable-string-v"):-1])
        elif typ.startswith("enum-"):
            field.type = _SCALARS[enums[typ[len("enum-"):]]]
        else:
            if typ in ("nullable-string", "nullable-bytes") and not depth:
                field.nullable_from = 0
            field.type = _SCALARS.get(typ, typ)  # else the name of a shared struct
        for _ in range(depth):
            field.type = ("array", field.type)
        fields.append(field)
    return fields, i


# --- wire layout: the shape of a message at one version, names aside --------------------
#
# Scalars by token, arrays as [inner], structs as {regular,...|tag=inner,...} (the
# part after | only in flexible versions), a field nullable at that version
# prefixed with ? (a nullable struct also changes the bytes: a presence byte).  The
# test computes the same string from kafka-net's Schema objects.


def layout(fields: list, version: int, flexible: bool, shared: dict) -> str:
    regular, tagged = [], []
    for f in fields:
        if f.tag is not None:
            present = flexible and version >= max(f.low, 0) and (
                f.high is None or version <= f.high)
            if present:
                tagged.append((f.tag, _field_layout(f, version, flexible, shared)))
            continue
        if version < f.low or (f.high is not None and version > f.high):
            continue
        regular.append(_field_layout(f, version, flexible, shared))
    text = ",".join(regular)
    if flexible:
        text += "|" + ",".join(f"{tag}={t}" for tag, t in sorted(tagged))
    return text


def _field_layout(f: DslField, version: int, flexible: bool, shared: dict) -> str:
    nullable = (f.type[2] if isinstance(f.type, tuple) and f.type[0] == "struct"
                else f.nullable_from is not None and version >= f.nullable_from)
    return ("?" if nullable else "") + _type_layout(f.type, version, flexible, shared)


def _type_layout(t, version: int, flexible: bool, shared: dict) -> str:
    if isinstance(t, tuple) and t[0] == "array":
        return "[" + _type_layout(t[1], version, flexible, shared) + "]"
    if isinstance(t, tuple):
        return "{" + layout(t[1], version, flexible, shared) + "}"
    if t in shared:
        return "{" + layout(shared[t], version, flexible, shared) + "}"
    return t


def digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def load(repo: str, commit: str) -> tuple[list, dict]:
    """Every message ``(path, header, request fields, response fields)`` in key order,
    and every shared struct by name."""
    root = "generate/definitions/"
    enums = parse_enums(git(repo, "show", f"{commit}:{root}enums"))
    paths = [p for p in git(repo, "ls-tree", "--name-only", commit, root).split()
             if re.match(root + r"\d+_", p)]
    messages, shared = [], {}
    for path in paths + [root + "misc"]:
        found, structs = parse_definitions(git(repo, "show", f"{commit}:{path}"), enums)
        shared.update(structs)
        if path.endswith("misc"):
            continue
        if len(found) != 1:
            raise SystemExit(f"{path}: expected one request, found {len(found)}")
        messages.append((path, *found[0]))
    messages.sort(key=lambda m: int(m[1]["key"]))
    return messages, shared


def collect(repo: str, commit: str) -> dict:
    messages, shared = load(repo, commit)
    apis = []
    for path, header, request, response in messages:
        high = int(header["max"])
        flex = None if header["flex"] is None else int(header["flex"])
        entry = {"key": int(header["key"]), "name": header["name"]}
        for kind, fields in (("request", request), ("response", response)):
            entry[kind] = {
                "valid": [0, high], "flexible_from": flex,
                # Per version, a digest of the wire layout (see layout()).
                "layouts": [digest(layout(fields, v, flex is not None and v >= flex, shared))
                            for v in range(high + 1)]}
        entry["source"] = path
        apis.append(entry)
    keys = [a["key"] for a in apis]
    if len(set(keys)) != len(keys):
        raise SystemExit(f"duplicate API keys in {commit}: {keys}")
    return {
        "about": "Kafka 4.2's API keys with request/response version ranges, the first "
                 "flexible version (null: never flexible) and a digest of each version's "
                 "wire layout, read from franz-go's generate/definitions by "
                 "tools/kafka42_messages.py; ranges start at 0 because the wire format "
                 "keeps every version Kafka ever defined.",
        "source": {"repository": "twmb/franz-go", "commit": git(repo, "rev-parse", commit).strip(),
                   "path": "generate/definitions"},
        "apis": apis,
    }


def render(table: dict) -> str:
    """Indented JSON with one line per API, so a diff shows which key changed."""
    head = {k: v for k, v in table.items() if k != "apis"}
    lines = json.dumps(head, indent=1)[:-2] + ',\n "apis": [\n'
    lines += ",\n".join("  " + json.dumps(api) for api in table["apis"])
    return lines + "\n ]\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=DEFAULT_COMMIT)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the checked-in JSON differs instead of writing it")
    args = parser.parse_args(argv)
    return write_or_check(OUTPUT, render(collect(args.repo, args.commit)), args.check)


def write_or_check(output: Path, text: str, check: bool) -> int:
    """Write ``text`` to ``output``; with ``check``, exit status 1 if it differs."""
    if check:
        if output.read_text() != text:
            print(f"{output} is stale; run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
