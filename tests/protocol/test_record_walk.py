"""The broker's record walk (``walk_records``) against a plain reading of Kafka's rules.

``walk_records`` is written for speed: the common varints are decoded inline
and a field is only checked against its record's end when the record is
done.  The reference below reads every field one by one, the way Kafka's
``DefaultRecord.readFrom`` does, and Hypothesis checks that both accept
exactly the same record streams: well-formed ones, and the same ones cut
short, stretched, miscounted or with bytes changed.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol.primitives import Writer
from kafka_net.protocol.records import InvalidRecordError, Record, encode_record, walk_records


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def varint(self, max_bytes: int) -> int:
        """A ZigZag varint of at most ``max_bytes`` (5: 32 bits, 10: 64 bits)."""
        value = 0
        for i in range(max_bytes):
            b = self.buf[self.pos]  # IndexError: the records end inside a field
            self.pos += 1
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                if value >> (32 if max_bytes == 5 else 64):
                    raise ValueError("varint wider than its type")
                return (value >> 1) ^ -(value & 1)
        raise ValueError("varint too long")

    def skip_bytes(self, null_allowed: bool = True) -> None:
        n = self.varint(5)
        if n < 0 and not null_allowed:
            raise ValueError("null header key")
        self.pos += max(n, 0)


def reference_accepts(buf: bytes, count: int) -> bool:
    """True if ``count`` well-formed records fill ``buf`` exactly."""
    r = _Reader(buf)
    try:
        for _ in range(count):
            size = r.varint(5)
            if size < 0 or size > len(buf) - r.pos:
                return False
            start = r.pos
            r.pos += 1          # attributes
            r.varint(10)        # timestamp delta
            r.varint(5)         # offset delta
            r.skip_bytes()      # key
            r.skip_bytes()      # value
            headers = r.varint(5)
            if headers < 0:
                return False
            for _ in range(headers):
                r.skip_bytes(null_allowed=False)
                r.skip_bytes()
            if r.pos != start + size:
                return False
        return r.pos == len(buf)
    except (IndexError, ValueError):
        return False


def walk_accepts(buf: bytes, count: int) -> bool:
    try:
        walk_records(buf, count)
    except InvalidRecordError:
        return False
    return True


def _encoded(records: list[Record], length_errors: list[int] | None = None) -> bytes:
    """The records, each behind its length; ``length_errors[i]`` is added to record i's."""
    w = Writer()
    for delta, record in enumerate(records):
        one = Writer()
        encode_record(one, record, delta, record.timestamp or 0)
        body = _Reader(one.getvalue())
        size = body.varint(5)
        w.varint(size + (length_errors[delta] if length_errors else 0))
        w.raw(one.getvalue()[body.pos:])
    return w.getvalue()


_records = st.lists(st.builds(
    Record,
    key=st.none() | st.binary(max_size=200),
    # values past 8 KB take a three-byte length, the walk's slow path
    value=st.none() | st.binary(max_size=300) | st.binary(min_size=8190, max_size=8200),
    # header values of 64 bytes and more take a two-byte length
    headers=st.lists(st.tuples(st.text(max_size=8),
                               st.none() | st.binary(max_size=8) | st.binary(min_size=64,
                                                                             max_size=80)),
                     max_size=3).map(tuple),
    timestamp=st.integers(-2**40, 2**40)), max_size=5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records, st.data())
def test_walk_accepts_what_the_reference_accepts(records, data):
    length_errors = [data.draw(st.sampled_from([0, 0, 0, -2, -1, 1, 2])) for _ in records]
    buf = bytearray(_encoded(records, length_errors))
    count = len(records) + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    for _ in range(data.draw(st.integers(0, 3))):
        if not buf:
            break
        edit = data.draw(st.sampled_from(["set", "cut", "insert"]))
        pos = data.draw(st.integers(0, len(buf) - 1))
        if edit == "set":
            buf[pos] = data.draw(st.integers(0, 255))
        elif edit == "cut":
            del buf[pos:pos + data.draw(st.integers(1, 3))]
        else:
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=3))
    assert walk_accepts(bytes(buf), max(count, 0)) == reference_accepts(bytes(buf), max(count, 0))


@pytest.mark.parametrize("records", [
    [Record(None, b"v" * 100)] * 10,                    # kload's batch: two-byte lengths
    [Record(b"k" * 70, None, (("h", b"x"),), 5)] * 3,   # two-byte key length, a header
    [Record(None, b"v", (("h" * 70, b"x" * 100),))],    # two-byte header lengths
    [Record(b"", b"v" * 9000)],                         # a three-byte value length
])
def test_well_formed_records_are_accepted_by_both(records):
    buf = _encoded(records)
    assert walk_accepts(buf, len(records)) and reference_accepts(buf, len(records))


def test_the_zigzag_table_is_the_zigzag_decoding_of_every_index():
    # Built by interleaving two ranges (cheaper at import): each entry must still be
    # the ZigZag decoding of its index, for every one- and two-byte varint.
    from kafka_net.protocol.records.validation import _ZIGZAG
    assert len(_ZIGZAG) == 1 << 14
    assert all(_ZIGZAG[v] == (v >> 1) ^ -(v & 1) for v in range(1 << 14))
