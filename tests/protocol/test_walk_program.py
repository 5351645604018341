"""The compiled walk programs against the Python walkers, on every message and version.

A program (:mod:`kafka_net.protocol.walk_program`, run by the compiled
``kafka_net.protocol._walk``) must give the Python walker's answer, or None
(not sure): never accept a body the walker refuses, and where it accepts, the
same end, top values, error codes (in body order) and records.  It must also
accept every valid body (so it is really the one used): the bodies Hypothesis
draws from each schema at each version, also inside a larger buffer and with
bytes after.  Broken bodies are drawn as ``test_codegen.py`` draws them:
mutated, cut short, noise.  Each program is tried keeping everything and
keeping nothing, as the walkers are (``test_walker.py``).

The compiled request header read (``_walk.request_header``) is held to
``headers.read_request_header`` the same way, on headers Hypothesis draws.

This module tests the compiled module itself, so it imports it in a
``KAFKA_NET_READABLE=1`` run too; that kafka-net's own code then leaves it
alone is checked here as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from kafka_net.capture import pairing_checks
from kafka_net.protocol import _walk, generated, readable, walk_program, walker as w
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.fields import MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS
from kafka_net.protocol.headers import (
    RequestHeader, encode_request_header, read_request_header)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import encode_uvarint
from kafka_net.protocol.schema import (
    INT16, INT32, NO_VERSIONS, STRING, Array, Field, Schema, Struct)
from kafka_net.testing import message_values
from tests.protocol.test_codegen import CASES, IDS, PER_VERSION, broken_bodies
from tests.protocol.test_walker import TAGGED, TAGGED_WIRES, top_fields


def programs(schema, version: int) -> list:
    """(program, its Python walker) keeping everything, and keeping nothing."""
    out = []
    for top, kept in ((top_fields(schema), True), ((), False)):
        ops, names, defaults = walk_program.program(schema, version, top, kept, kept)
        program = _walk.Program(ops, names, defaults, kept, kept, MAX_ARRAY_ELEMENTS,
                                MAX_TAGGED_FIELDS)
        out.append((program, w.walker(schema, version, top, codes=kept, records=kept)))
    return out


def walked(walk, data: bytes, offset: int):
    try:
        return walk(data, offset)
    except InvalidRequestError:
        return None


def assert_program_agrees(schema, version: int, data: bytes, offset: int = 0,
                          valid: bool = False) -> None:
    for program, walk in programs(schema, version):
        want = walked(walk, data, offset)
        got = program.walk(data, offset)
        if valid:
            assert got is not None, (schema.name, version, data.hex())
        if got is not None:
            assert want is not None, ("accepted what the walker refuses",
                                      schema.name, version, data.hex())
            # repr: NaN equals itself there, and a bool, a float or a tuple shows
            assert repr(got) == repr(want), (schema.name, version, data.hex())
        assert repr(program.walk(memoryview(data), offset)) == repr(got)


@pytest.mark.parametrize("schema, version", CASES, ids=IDS)
def test_programs_equal_walkers(schema, version):
    @PER_VERSION
    @given(data=st.data())
    def check(data):
        wire = schema.encode(data.draw(message_values(schema, version), label="value"),
                             version)
        trailing = data.draw(st.binary(min_size=1, max_size=4), label="trailing")
        for body, offset in ((wire, 0), (b"\x07\x07\x07" + wire, 3), (wire + trailing, 0)):
            assert_program_agrees(schema, version, body, offset, valid=True)
        for body in broken_bodies(data, wire):
            assert_program_agrees(schema, version, body)
    check()


@pytest.mark.parametrize("wire", TAGGED_WIRES + [
    "00000001" "01" "02" "04" "02" "03" "c3a9",        # names: ["é"], UTF-8 past ASCII
    "00000001" "01" "02" "04" "02" "03" "eda080",      # a surrogate: not UTF-8
    "00000001" "01" "02" "06" "80808080" "10",         # a varint over 32 bits
    "00000001" "01" "02" "06" "8080808080",            # a varint of 6 bytes
])
def test_tagged_sections_by_hand(wire):
    assert_program_agrees(TAGGED, 0, bytes.fromhex(wire))


FIXED_ITEMS = Schema("FixedItems", valid="0-1", flexible="1+", fields=[
    Field("items", Array(Struct(Field("a", INT32), Field("b", INT16)))),
])


@pytest.mark.parametrize("wire, accepted", [
    ("03" "00000001" "0002" "00" "00000003" "0004" "00", True),   # every tag count 0
    ("03" "00000001" "0002" "00" "00000003" "0004" "01" "0700", True),  # a tag, skipped
    ("03" "00000001" "0002" "00" "00000003" "0004" "01" "07", False),   # ...cut
    ("03" "00000001" "0002" "00" "00000003" "0004", False),       # the last count cut
])
def test_fixed_width_structs_with_tags(wire, accepted):
    data = bytes.fromhex(wire + "00")
    assert_program_agrees(FIXED_ITEMS, 1, data, valid=accepted)
    assert (walked(w.walker(FIXED_ITEMS, 1), data, 0) is not None) == accepted


def test_counts_over_the_caps_are_refused():
    over_tags = encode_uvarint(MAX_TAGGED_FIELDS + 1)
    assert_program_agrees(TAGGED, 0, bytes.fromhex("00000001") + over_tags + b"\x00" * 8)
    huge = Schema("Huge", valid="0-1", flexible="1+", fields=[Field("n", Array(INT16))])
    for version, count in ((0, (MAX_ARRAY_ELEMENTS + 1).to_bytes(4, "big")),
                           (1, encode_uvarint(MAX_ARRAY_ELEMENTS + 2))):
        data = count + b"\x00" * (2 * MAX_ARRAY_ELEMENTS + 4) + b"\x00"
        program, walk = programs(huge, version)[0]
        assert program.walk(data, 0) is None
        assert walked(walk, data, 0) is None


def test_a_program_answers_with_its_fallback_when_not_sure():
    strings = Schema("Strings", valid="0", flexible="none", fields=[Field("s", STRING)])
    ops, names, defaults = walk_program.program(strings, 0)
    calls = []
    program = _walk.Program(ops, names, defaults, False, False, MAX_ARRAY_ELEMENTS,
                            MAX_TAGGED_FIELDS, fallback=lambda *a: calls.append(a) or "asked")
    assert program(b"\x00\x01A", 0) == (3, {}, (), ())
    assert program(b"\x00\x02A", 0) == "asked"
    assert calls == [(b"\x00\x02A", 0)]


def test_every_message_and_version_has_a_program():
    for schema, version in CASES:
        assert walk_program.program(schema, version, top_fields(schema), True, True)


def test_readable_runs_never_import_the_compiled_module():
    code = ("import sys; import kafka_net.capture.pairing_checks, spark_jobs.check_columns; "
            "print('kafka_net.protocol._walk' in sys.modules)")
    for readable, imported in (("1", "False"), ("0", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "KAFKA_NET_READABLE": readable},
                             cwd=Path(__file__).parents[2], check=True)
        assert out.stdout.strip() == imported


@pytest.mark.parametrize("version, header", [
    (7, "00000007"),                 # header v0: the correlation id alone
    (13, "00000007" "00"),           # header v1, no tagged fields: compiled
    (13, "00000007" "010500"),       # header v1 with a tag: the Python walk answers
])
def test_response_walk_reads_the_header_then_the_body(version, header):
    fetch = MESSAGES[ApiKey.FETCH].response
    value = fetch.defaults()
    value["error_code"] = 3
    payload = bytes.fromhex(header) + fetch.encode(value, version)
    walk = pairing_checks._response_walk(fetch, ApiKey.FETCH, version)
    # compiled unless KAFKA_NET_READABLE (then the same answers from the Python walk)
    assert isinstance(getattr(walk, "__self__", None), _walk.Program) != readable.READABLE
    assert walk(payload) == ([3], [])
    with pytest.raises(InvalidRequestError):
        walk(payload + b"\x00")
    with pytest.raises(InvalidRequestError):
        walk(payload[:-1])


def header_read(frame: bytes, version: int):
    try:
        header, offset = read_request_header(frame, 0, 9, 7, NO_VERSIONS, version)
    except InvalidRequestError:
        return None
    return header.client_id, offset


@given(client_id=st.one_of(st.none(), st.text(max_size=20)), version=st.sampled_from([1, 2]),
       body=st.binary(max_size=8), cut=st.integers(0, 40), noise=st.binary(max_size=24),
       at=st.integers(0, 40), byte=st.integers(0, 255))
def test_request_header_equals_the_python_reader(client_id, version, body, cut, noise, at,
                                                 byte):
    header = RequestHeader(0, 9, 7, client_id, version)
    frame = encode_request_header(header) + body
    assert _walk.request_header(frame, version) == header_read(frame, version) \
        == (client_id or "", len(frame) - len(body))
    broken = bytearray(frame)
    if at < len(broken):
        broken[at] = byte
    for data in (frame[:cut], bytes(broken), noise, b"\x00" * 8 + noise):
        got = _walk.request_header(data, version)
        assert got is None or got == header_read(data, version), data.hex()
        assert _walk.request_header(memoryview(data), version) == got


def test_request_header_hands_back_what_it_does_not_read():
    frame = encode_request_header(RequestHeader(0, 9, 7, "c", 2))
    tagged = frame[:-1] + b"\x01\x00\x00"          # a tagged field in the header
    assert _walk.request_header(tagged, 2) is None
    assert header_read(tagged, 2) == ("c", len(tagged))
    assert _walk.request_header(frame, 0) is None  # version 0: no client id to read
    assert _walk.request_header(b"\x00" * 8 + b"\x00\x01\xff", 1) is None  # not UTF-8
    assert header_read(b"\x00" * 8 + b"\x00\x01\xff", 1) is None


def test_cli_prints_a_program(capsys):
    assert generated.main(["Fetch", "13", "--response", "--program", "--codes",
                           "--records"]) == 0
    text = capsys.readouterr().out
    ops = walk_program.program(MESSAGES[ApiKey.FETCH].response, 13, (), True, True)[0]
    assert text == walk_program.listing(ops)
    lines = text.splitlines()
    assert lines[0].split() == ["0", "CODE", "at=4"]    # the response's own error_code
    assert lines[-1].split() == [str(len(ops) - 1), "END"]
    for words in ("ARRAY flexible=1 nullable=1 width=-17", "BYTES flexible=1 nullable=1 "
                  "keep=1", "TAGS known=3", "tag 2 (size 4):"):
        assert words in text
