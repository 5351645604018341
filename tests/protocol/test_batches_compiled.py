"""The compiled record-batch checks (``kafka_net/protocol/records/_batches.pyx``)
against their readable definitions.

The conformance job checks a Produce request's records with
``validate_produce_records`` and a Fetch response's with
``pairing_checks._check_fetched_batches``; the compiled pass runs first and
answers True ("the reference accepts these bytes") or False ("not sure: ask
the reference").  What must hold, on valid batches, the same cut, mutated
(and re-signed, so the record walk is what decides), and on noise:

* True is never said of bytes the reference refuses;
* of bytes the reference accepts, False is said only where the compiled pass
  does not go: a compressed batch, a batch of magic 0 or 1.

And the wiring: ``KAFKA_NET_READABLE=1`` keeps the compiled module from being
imported at all, and a missing build is an ImportError, not a quiet fall back.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.capture import pairing_checks
from kafka_net.protocol.records import _batches
from kafka_net.protocol.records.building import batch_from_payload, build_batch
from kafka_net.protocol.records.decoding import Record
from kafka_net.protocol.records.framing import (
    ATTRIBUTES_OFFSET, COMPRESSION_MASK, CRC_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD,
    MAGIC_OFFSET, MAGIC_V2, RecordError, compute_crc, crc32c_function, iter_batches)
from kafka_net.protocol.records.validation import validate_produce_records

CRC = crc32c_function()
EXAMPLES = settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])


def _produce_accepts(data: bytes) -> bool:
    try:
        validate_produce_records(data, 9)
    except RecordError:
        return False
    return True


def _fetch_accepts(data: bytes) -> bool:
    try:
        pairing_checks._check_fetched_batches(data)
    except RecordError:
        return False
    return True


def _compressed(batch) -> bool:
    return bool(batch[ATTRIBUTES_OFFSET + 1] & COMPRESSION_MASK)


def _assert_produce_agrees(data: bytes) -> None:
    fast = _batches.produce_records_ok(data, CRC)
    reference = _produce_accepts(data)
    if fast:
        assert reference, "compiled accepts what validate_produce_records refuses"
    elif reference:   # the one batch the reference checked is compressed
        assert _compressed(data), "compiled unsure of an uncompressed batch the reference accepts"


def _assert_fetch_agrees(data: bytes) -> None:
    fast = _batches.fetched_batches_ok(data, CRC)
    reference = _fetch_accepts(data)
    if fast:
        assert reference, "compiled accepts what _check_fetched_batches refuses"
    elif reference:
        whole = list(iter_batches(data, allow_partial_tail=True))
        assert any(b[MAGIC_OFFSET] != MAGIC_V2 or _compressed(b) for b in whole), \
            "compiled unsure of uncompressed magic-2 batches the reference accepts"


# --- what is generated ------------------------------------------------------------------

_INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
_headers = st.lists(st.tuples(st.text(max_size=5),
                              st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
_records = st.lists(st.builds(Record, st.one_of(st.none(), st.binary(max_size=12)),
                              st.one_of(st.none(), st.binary(max_size=300)), _headers,
                              st.integers(-(1 << 40), 1 << 40)),
                    min_size=1, max_size=6)
_producer = st.one_of(st.just({}), st.fixed_dictionaries({
    "producer_id": st.integers(0, (1 << 63) - 1), "producer_epoch": st.integers(0, 32767),
    "base_sequence": st.integers(0, (1 << 31) - 1), "transactional": st.booleans()}))


@st.composite
def produced_batches(draw, compressions=st.just(0)) -> bytes:
    """A batch a producer sends: base offset 0, offset deltas 0, 1, 2, ..."""
    return build_batch(draw(_records), compression=draw(compressions), **draw(_producer))


@st.composite
def stored_batches(draw, compressions=st.just(0)) -> bytes:
    """A batch as a Fetch response carries it: any base offset and leader epoch."""
    return build_batch(draw(st.lists(st.builds(Record, st.binary(max_size=8),
                                               st.binary(max_size=40)), max_size=4)),
                       compression=draw(compressions), base_offset=draw(st.integers(0, 1 << 50)),
                       partition_leader_epoch=draw(_INT32), **draw(_producer))


def _varint_bytes(value: int, pad: int = 0) -> bytes:
    """ZigZag varint of ``value``, with ``pad`` extra continuation bytes (still valid
    up to the type's length: Kafka reads them)."""
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    out = bytearray()
    while raw >= 0x80 or pad > 0:
        if raw < 0x80:
            pad -= 1
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


_odd_varints = st.one_of(
    st.builds(_varint_bytes, st.integers(-70, 70), st.integers(0, 5)),
    st.builds(_varint_bytes, _INT32),
    st.builds(_varint_bytes, st.integers(-(1 << 63), (1 << 63) - 1)),
    # the widest encodings, whose last byte may carry bits past the type's width
    st.integers(0, 0x7F).map(lambda last: b"\x80" * 4 + bytes([last])),
    st.integers(0, 0x7F).map(lambda last: b"\xff" * 9 + bytes([last])),
    st.binary(min_size=1, max_size=11).map(lambda b: bytes(x | 0x80 for x in b[:-1]) + b[-1:]),
    st.binary(min_size=1, max_size=3))


def _field(draw, canonical: bytes) -> bytes:
    """A record field's varint: mostly as a producer writes it, sometimes odd."""
    if draw(st.integers(0, 5)):
        return canonical
    return draw(_odd_varints)


@st.composite
def record_areas(draw) -> tuple[bytes, int]:
    """(records area, count): records assembled from fields that are mostly valid,
    sometimes odd (long, non-canonical, too wide, negative) or noise, so the record
    walk is what refuses or accepts them."""
    out = bytearray()
    count = draw(st.integers(0, 4))
    for _ in range(count):
        body = bytearray(draw(st.binary(min_size=1, max_size=1)))   # attributes
        body += _field(draw, _varint_bytes(draw(st.integers(-300, 300))))   # timestamp delta
        body += _field(draw, _varint_bytes(draw(st.integers(0, 3))))        # offset delta
        for _field_ in range(2):                                  # key, value
            data = draw(st.binary(max_size=6))
            length = draw(st.sampled_from([len(data)] * 4 + [-1, -2]))
            body += _field(draw, _varint_bytes(length)) + (data if length >= 0 else b"")
        header_count = draw(st.integers(0, 3))
        body += _field(draw, _varint_bytes(header_count))
        for _field_ in range(2 * header_count):
            data = draw(st.binary(max_size=3))
            length = draw(st.sampled_from([len(data)] * 4 + [-1]))
            body += _field(draw, _varint_bytes(length)) + (data if length >= 0 else b"")
        size = len(body) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
        out += _field(draw, _varint_bytes(size)) + body
    out += draw(st.sampled_from([b"", b"", b"", b"\x00", b"\x02\x00"]))
    return bytes(out), count + draw(st.sampled_from([0, 0, 0, -1, 1]))


def _resign(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf))
    return bytes(buf)


@st.composite
def mutated(draw, batches) -> bytes:
    """A batch with bytes changed (re-signed or not), cut (its size field fixed or
    not), or stretched."""
    buf = bytearray(draw(batches))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(buf) - 1))
        buf[at] = draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, buf[at] ^ 1]))
    how = draw(st.sampled_from(["resign", "resign", "as is", "cut", "cut and fix", "stretch"]))
    if how == "cut":
        del buf[draw(st.integers(0, len(buf) - 1)):]
    elif how == "cut and fix" and len(buf) > 62:
        del buf[draw(st.integers(61, len(buf) - 1)):]
        struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf) - LOG_OVERHEAD)
    elif how == "stretch":
        buf += draw(st.binary(min_size=1, max_size=4))
        struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf) - LOG_OVERHEAD)
    if how != "as is" and len(buf) >= ATTRIBUTES_OFFSET:
        return _resign(buf)
    return bytes(buf)


@st.composite
def header_changed(draw, batches) -> bytes:
    """A batch with one header field set to an edge value, re-signed: each rule of
    the header (count, offsets, control, producer id and sequence) on its own."""
    buf = bytearray(draw(batches))
    offset, fmt, values = draw(st.sampled_from([
        (0, ">q", [0, 1, -1, 1 << 40]),                     # base offset
        (23, ">i", [-1, 0, 1, 2, (1 << 31) - 1, -(1 << 31)]),  # last offset delta
        (57, ">i", [-1, 0, 1, 2, 3, (1 << 31) - 1, -(1 << 31)]),  # records count
        (21, ">h", [0, 0x08, 0x10, 0x20, 0x40, 5, 6, 7, -1]),  # attributes
        (43, ">q", [-2, -1, 0, 1]),                         # producer id
        (53, ">i", [-2, -1, 0, 1]),                         # base sequence
        (16, ">b", [0, 1, 2, 3, -1]),                       # magic
        (8, ">i", [0, 13, 14, 49, len(buf) - 12, len(buf) - 11])]))  # batch length
    struct.pack_into(fmt, buf, offset, draw(st.sampled_from(values)))
    return _resign(buf)


@st.composite
def walked_batches(draw, base_offset=st.just(0)) -> bytes:
    """A signed batch around a generated records area, its count as generated."""
    area, count = draw(record_areas())
    return batch_from_payload(area, count, base_offset=draw(base_offset))


_one_batch = st.one_of(produced_batches(), walked_batches(), header_changed(produced_batches()),
                       mutated(produced_batches()), mutated(walked_batches()))
_tails = st.one_of(st.just(b""), st.binary(max_size=20), produced_batches().map(lambda b: b[:30]),
                   produced_batches(), mutated(produced_batches()))


# --- Produce: validate_produce_records --------------------------------------------------


@EXAMPLES
@given(produced_batches())
def test_valid_uncompressed_produced_batches_are_accepted(batch):
    assert _batches.produce_records_ok(batch, CRC)
    assert _produce_accepts(batch)


@EXAMPLES
@given(produced_batches(compressions=st.sampled_from([1, 2, 3, 4])))
def test_compressed_batches_are_left_to_the_reference(batch):
    assert not _batches.produce_records_ok(batch, CRC)
    assert _produce_accepts(batch)


@EXAMPLES
@given(_one_batch, _tails)
def test_produce_compiled_never_accepts_what_the_reference_refuses(batch, tail):
    _assert_produce_agrees(batch + tail)


@EXAMPLES
@given(st.binary(max_size=200))
def test_produce_noise(data):
    _assert_produce_agrees(data)


@EXAMPLES
@given(produced_batches(), st.data())
def test_produce_cut_anywhere(batch, data):
    _assert_produce_agrees(batch[:data.draw(st.integers(0, len(batch)))])


# --- Fetch: _check_fetched_batches ------------------------------------------------------

_stored = st.one_of(stored_batches(), walked_batches(st.integers(-1, 1 << 40)),
                    header_changed(stored_batches()), mutated(stored_batches()))


@EXAMPLES
@given(st.lists(stored_batches(), min_size=1, max_size=4), st.data())
def test_valid_stored_batches_with_a_partial_tail_are_accepted(batches, data):
    whole = b"".join(batches)
    cut = data.draw(st.integers(0, len(batches[-1]) - 1))
    fetched = whole[:len(whole) - cut]     # the fetch size may cut the last batch
    assert _batches.fetched_batches_ok(fetched, CRC)
    assert _fetch_accepts(fetched)


@EXAMPLES
@given(st.lists(st.one_of(_stored, produced_batches(st.sampled_from([0, 1, 4]))),
                min_size=1, max_size=3), st.binary(max_size=30))
def test_fetch_compiled_never_accepts_what_the_reference_refuses(batches, tail):
    _assert_fetch_agrees(b"".join(batches) + tail)


@EXAMPLES
@given(st.binary(max_size=200))
def test_fetch_noise(data):
    _assert_fetch_agrees(data)


@EXAMPLES
@given(stored_batches(), st.sampled_from([0, 1]))
def test_legacy_magic_is_left_to_the_reference(batch, magic):
    """A batch of magic 0 or 1 the reference frames only: not sure here."""
    buf = bytearray(batch)
    buf[MAGIC_OFFSET] = magic
    assert not _batches.fetched_batches_ok(bytes(buf), CRC)
    assert _fetch_accepts(bytes(buf))


def test_not_bytes_like_is_not_sure():
    batch = build_batch([(b"k", b"v")])
    for odd in (None, "text", 5, memoryview(batch).cast("b")):
        assert not _batches.produce_records_ok(odd, CRC)
        assert not _batches.fetched_batches_ok(odd, CRC)
    assert _batches.produce_records_ok(memoryview(batch), CRC)
    assert _batches.fetched_batches_ok(bytearray(batch), CRC)
    assert _batches.fetched_batches_ok(b"", CRC)


# --- the wiring ------------------------------------------------------------------------

_PROBE = ("import sys; import kafka_net.capture.pairing_checks as p; "
          "print('kafka_net.protocol.records._batches' in sys.modules, "
          "p.check_produced.__name__, p.check_fetched.__name__)")


def _probe(readable: str, code: str = _PROBE) -> subprocess.CompletedProcess:
    env = dict(os.environ, KAFKA_NET_READABLE=readable)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_readable_never_imports_the_compiled_module():
    out = _probe("1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "validate_produce_records", "_check_fetched_batches"]


def test_the_compiled_module_runs_by_default():
    out = _probe("0")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "check_produced", "check_fetched"]


def test_a_missing_build_is_an_import_error():
    """No quiet fall back to the reference: a build without the module fails to import."""
    out = _probe("0", "import sys; sys.modules['kafka_net.protocol.records._batches'] = None\n"
                      "try:\n    import kafka_net.capture.pairing_checks\n"
                      "except ImportError as exc:\n    print('ImportError', exc.name)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ImportError", "kafka_net.protocol.records._batches"]


@pytest.mark.parametrize("records", [build_batch([(b"k", b"v")], compression=1),
                                     build_batch([(b"k", b"v")])[:-1]])
def test_pairing_checks_runs_the_reference_when_not_sure(records):
    """Compressed: the reference accepts; cut: the reference refuses in its own words."""
    if _produce_accepts(records):
        pairing_checks.check_produced(records, 9)
    else:
        with pytest.raises(RecordError, match="at least one record batch"):
            pairing_checks.check_produced(records, 9)
