"""The generated body walkers against the decoders.

A walker (:mod:`kafka_net.protocol.walker`) must accept exactly the bodies the
compiled decoder accepts, stop at the same offset, and keep the same values
(non-zero error codes anywhere, non-empty ``records`` fields, the top-level
fields asked for): :func:`assert_agree`.  Each walker is tried twice: keeping
everything (error codes and records read inside arrays) and keeping nothing
(runs and arrays of fixed-width structs skipped in one step), since the two
take different paths.  On every message and version, the bodies Hypothesis
draws for the compiled codec (valid, mutated, cut short, with bytes added,
noise) are checked here too (test_codegen.py's
``test_compiled_codec_and_walkers_equal_interpreter``); this module holds the
cases picked by hand.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_net.capture.pairing_checks import _records_fields, error_codes
from kafka_net.protocol import walker as w
from kafka_net.protocol.codegen_emit import _FIXED
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import encode_uvarint
from kafka_net.protocol.schema import (
    INT8, INT32, MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS, STRING, Array, Field, Schema, Struct)


def top_fields(schema) -> tuple[str, ...]:
    return tuple(f.name for f in schema.struct.fields if f.type in _FIXED and f.tag is None)


def decoded(schema, data: bytes, version: int, offset: int):
    try:
        body, end = schema.decoder(version)(data, offset)
    except InvalidRequestError:
        return ("invalid",)
    return ("ok", end, body)


def walked(walk, data: bytes, offset: int):
    try:
        end, top, codes, records = walk(data, offset)
    except InvalidRequestError:
        return ("invalid",)
    return ("ok", end, (top, codes, records))


def assert_agree(schema, version: int, data: bytes, offset: int = 0) -> None:
    """The decoder and both walkers give the same verdict, end and kept values."""
    want = decoded(schema, data, version, offset)
    keep_all = w.walker(schema, version, top_fields(schema), codes=True, records=True)
    keep_none = w.walker(schema, version)
    for walk, kept in ((keep_all, True), (keep_none, False)):
        got = walked(walk, data, offset)
        assert got[0] == want[0], (schema.name, version, kept, data.hex())
        if want[0] == "invalid":
            continue
        assert got[1] == want[1], (schema.name, version, kept, data.hex())
        top, codes, records = got[2]
        body = want[2]
        if kept:
            assert top == {name: body[name] for name in top_fields(schema)}
            assert sorted(codes) == sorted(error_codes(body))
            assert records == _records_fields(body)
        else:
            assert (top, codes, records) == ({}, (), ())


# --- hand-picked bodies ------------------------------------------------------------------

TAGGED = Schema("Tagged", valid="0", flexible="0+", fields=[
    Field("a", INT32),
    Field("t", Struct(Field("x", INT32), Field("s", STRING)), tag=1),
    Field("names", Array(STRING), tag=2),
])


# TAGGED bodies picked by hand (hex), also test_walk_program's.
TAGGED_WIRES = [
    "00000001" "00",                                   # no tags
    "00000001" "01" "01" "06" "00000002" "0100",       # tag 1: x=2, s="", its tags
    "00000001" "01" "01" "07" "00000002" "010000",     # tag 1 with a byte to spare
    "00000001" "01" "01" "05" "00000002" "01",         # tag 1 cut inside its own size
    "00000001" "01" "01" "06" "00000002" "0200",       # s runs past the value's size
    "00000001" "02" "01" "06" "00000002" "0100" "01" "00",   # tags out of order
    "00000001" "01" "07" "02" "0000",                  # unknown tag, skipped
    "00000001" "01" "02" "03" "02" "02" "ff",          # names: one string, not UTF-8
    "00000001" "01" "02" "03" "02" "02" "41",          # names: ["A"]
]


@pytest.mark.parametrize("wire", TAGGED_WIRES)
def test_tagged_values_are_walked_within_their_size(wire):
    assert_agree(TAGGED, 0, bytes.fromhex(wire))


def test_walkers_refuse_counts_over_the_decoders_limits():
    # The decoder refuses, before allocating, more array elements and more tagged
    # fields than Kafka 4.4 allows; a walker, which allocates nothing, refuses them too.
    many = MAX_ARRAY_ELEMENTS + 1
    classic = Schema("Many", valid="0", flexible="none", fields=[Field("xs", Array(INT8))])
    tags = Schema("Tags", valid="0", flexible="0+", fields=[Field("a", INT8)])
    too_many_tags = b"\x00" + encode_uvarint(MAX_TAGGED_FIELDS + 1) + b"".join(
        encode_uvarint(tag) + b"\x00" for tag in range(MAX_TAGGED_FIELDS + 1))
    for schema, wire in ((classic, many.to_bytes(4, "big") + bytes(many)),
                         (tags, too_many_tags)):
        assert decoded(schema, wire, 0, 0) == ("invalid",)
        assert_agree(schema, 0, wire)
    assert decoded(classic, (many - 1).to_bytes(4, "big") + bytes(many - 1), 0, 0)[0] == "ok"


def test_a_walk_past_the_end_is_refused_even_when_skipped():
    # Fetch v4 request: replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level,
    # then the topics array; cut inside the skipped fixed-width run.
    schema = MESSAGES[1].request
    wire = schema.encode(schema.defaults(), 4)
    for cut in range(len(wire)):
        with pytest.raises(InvalidRequestError):
            w.walker(schema, 4)(wire[:cut], 0)
    assert w.walker(schema, 4, ("max_wait_ms",))(wire, 0)[:2] == (len(wire), {"max_wait_ms": 0})


def test_each_walker_is_compiled_once():
    schema = MESSAGES[18].response
    assert w.walker(schema, 3, codes=True) is w.walker(schema, 3, codes=True)
    assert w.walker(schema, 3, codes=True) is not w.walker(schema, 3)


def test_only_fixed_width_top_fields_can_be_kept():
    with pytest.raises(ValueError):
        w.walker(MESSAGES[0].request, 9, ("transactional_id",))
    with pytest.raises(ValueError):
        w.walker(MESSAGES[0].request, 99)


def test_cli_prints_compilable_source():
    out = subprocess.run([sys.executable, "-m", "kafka_net.protocol.generated", "Fetch", "13",
                          "--response", "--walk", "--codes", "--records"],
                         capture_output=True, text=True, check=True).stdout
    compile(out, "walker", "exec")
    assert "def walk_FetchResponse_v13(buf, p):" in out


def _api_versions_v3(entries: list[bytes]) -> bytes:
    """An ApiVersions v3 response body with these api_keys entries (each ending in
    its own tagged-field section)."""
    return b"\x00\x00" + bytes([len(entries) + 1]) + b"".join(entries) + b"\x00\x00\x00\x00\x00"


@pytest.mark.parametrize("entries", [
    [],
    [b"\x00\x12\x00\x00\x00\x03\x00"] * 3,                       # no tags: one step
    [b"\x00\x12\x00\x00\x00\x03\x00", b"\x00\x01\x00\x00\x00\x0c\x01\x05\x00"],  # a tag
    [b"\x00\x12\x00\x00\x00\x03\x01\x05\x02ab"],                 # an unknown tag with data
    [b"\x00\x12\x00\x00\x00\x03\x01\x05\x09ab"],                 # its size runs past the end
    [b"\x00\x12\x00\x00\x00\x03\x00", b"\x00\x12\x00\x00\x00"],  # the last one cut
], ids=["none", "untagged", "one-tagged", "unknown-tag", "tag-past-end", "cut"])
def test_flexible_fixed_width_structs_skip_alike_with_and_without_tags(entries):
    schema = MESSAGES[18].response
    body = _api_versions_v3(entries)
    assert_agree(schema, 3, body)
    assert_agree(schema, 3, body[:-5])
