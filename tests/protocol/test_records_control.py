"""records/control.py (the marker record of a control batch) and the header reads
the log uses (framing.read_header_prefix, read_batch_size, next_whole_batch)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_net.protocol.records import build_batch, read_header
from kafka_net.protocol.records.control import (
    ABORT, COMMIT, UNKNOWN_CONTROL, control_key, control_key_type, control_type,
    end_txn_marker_value)
from kafka_net.protocol.records.framing import (
    HEADER_PREFIX_SIZE, next_whole_batch, read_base_offset, read_batch_size, read_header_prefix)


def marker(key: bytes | None, value: bytes | None = None) -> bytes:
    return build_batch([(key, value or end_txn_marker_value(0), (), 1000)], producer_id=7,
                       producer_epoch=1, transactional=True, control=True)


def test_a_marker_reads_back_as_written():
    assert control_type(marker(control_key(COMMIT))) == COMMIT
    assert control_type(marker(control_key(ABORT))) == ABORT
    # Kafka's layout: version 0, then the type; value: version 0, coordinator epoch.
    assert control_key(COMMIT) == b"\0\0\0\1"
    assert end_txn_marker_value(5) == b"\0\0\0\0\0\5"


def test_another_type_or_a_short_key_is_unknown_and_an_empty_batch_none():
    assert control_type(marker(b"\0\0\0\5")) == UNKNOWN_CONTROL
    assert control_type(marker(b"\0\0")) == UNKNOWN_CONTROL
    assert control_key_type(None) == UNKNOWN_CONTROL
    empty = build_batch([], control=True, transactional=True, producer_id=7, producer_epoch=1)
    assert control_type(empty) is None


@given(st.binary(max_size=8))
def test_control_key_type_reads_any_key_without_failing(key):
    assert control_key_type(key) in (ABORT, COMMIT, UNKNOWN_CONTROL)


@given(base=st.integers(0, 2**62), count=st.integers(1, 5),
       timestamp=st.integers(0, 2**40))
def test_the_header_prefix_agrees_with_the_whole_header(base, count, timestamp):
    batch = build_batch([(None, b"v", (), timestamp + i) for i in range(count)],
                        base_offset=base)
    header = read_header(batch)
    assert read_header_prefix(batch) == (header.base_offset, header.size, header.last_offset,
                                         header.max_timestamp, header.magic)
    assert read_header_prefix(batch[:HEADER_PREFIX_SIZE]) == read_header_prefix(batch)
    padded = b"x" * 3 + batch
    assert read_base_offset(padded, 3) == base and read_batch_size(padded, 3) == len(batch)


def test_next_whole_batch_skips_damage_to_the_next_intact_batch():
    first, second = build_batch([(None, b"a")]), build_batch([(None, b"b")], base_offset=1)
    data = bytearray(first + second)
    assert next_whole_batch(memoryview(bytes(data)), 0) == 0
    data[len(first) - 1] ^= 0xFF             # the first batch's CRC no longer matches
    assert next_whole_batch(memoryview(bytes(data)), 0) == len(first)
    assert next_whole_batch(memoryview(bytes(data)), len(first) + 1) is None
