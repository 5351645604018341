"""tools/kafka42_messages.py's reading of franz-go's definitions DSL, on a made-up
definition that uses each construct the real files do (the mirror is not needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "tools" / "kafka42_messages.py"
_SPEC = importlib.util.spec_from_file_location("kafka42_messages", _PATH)
tool = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("kafka42_messages", tool)   # its dataclass looks itself up there
_SPEC.loader.exec_module(tool)

ENUMS = "ACLOperation int8 (\n  0: UNKNOWN\n)\n"

DEFINITION = """\
// A comment line.
Shared => not top level, no encoding, flexible v1+
  Index: int32
  Note: nullable-string // v2+

ExampleRequest => key 99, max version 3, flexible v1+
  ThrottleMillis(2) // v1+
  Op: enum-ACLOperation(3)
  Name: nullable-string-v2+
  Old: int16 // v0-v0
  Items: nullable-v3+[=>]
    Id: uuid
    Parts: [Shared]
  Maybe: nullable=> // v2+
    Flag: bool(true)
  Hidden: [int64] // tag 0
  Later: string // v3+, tag 1

ExampleResponse =>
  ErrorCode: int16
"""


def test_headers_fields_and_shared_structs():
    [(header, request, response)], shared = tool.parse_definitions(
        DEFINITION, tool.parse_enums(ENUMS))
    assert (header["name"], header["key"], header["max"], header["flex"]) == (
        "Example", "99", "3", "1")
    assert [f.name for f in request] == [
        "ThrottleMillis", "Op", "Name", "Old", "Items", "Maybe", "Hidden", "Later"]
    assert [f.name for f in response] == ["ErrorCode"]
    assert list(shared) == ["Shared"]
    by_name = {f.name: f for f in request}
    assert (by_name["ThrottleMillis"].low, by_name["Op"].type, by_name["Op"].default) == (
        1, "int8", "3")
    assert (by_name["Old"].low, by_name["Old"].high) == (0, 0)
    assert (by_name["Hidden"].low, by_name["Hidden"].tag) == (-1, 0)
    assert (by_name["Later"].low, by_name["Later"].tag) == (3, 1)


def test_layout_per_version():
    [(_, request, _)], shared = tool.parse_definitions(DEFINITION, tool.parse_enums(ENUMS))

    def at(v):
        return tool.layout(request, v, v >= 1, shared)
    # v0: not flexible, so no tagged section; Old present, Name not yet nullable.
    assert at(0) == "int8,string,int16,[{uuid,[{int32}]}]"
    # v1: throttle; flexible: every struct ends with its tags; the undated tag 0.
    assert at(1) == "int32,int8,string,[{uuid,[{int32|}]|}]|0=[int64]"
    # v2: Name nullable, Shared's Note, the nullable struct Maybe.
    assert at(2) == "int32,int8,?string,[{uuid,[{int32,?string|}]|}],?{bool|}|0=[int64]"
    # v3: Items nullable, tag 1 from v3.
    assert at(3) == ("int32,int8,?string,?[{uuid,[{int32,?string|}]|}],?{bool|}"
                     "|0=[int64],1=string")
