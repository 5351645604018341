"""The capture file format (kafka_net.capture.format): records to bytes and back.

What the issue asks of it: every field of a record survives the round trip
(truncation flag included); a crash loses at most the record being written,
and the reader reports that *torn tail* instead of failing; anything that is
not a capture (garbage, an empty file, a wrong magic or version) is a
reported problem, never an exception.  A segment whose writer has not closed
it (still running, or crashed) ends in a *zero tail*, the mapped part never
written: the reader takes it as the clean end, and a record half-copied into
it as a torn tail.
"""

from __future__ import annotations

import struct
import zlib

import pytest

from hypothesis import given, settings, strategies as st

from kafka_net.capture.format import (
    FILE_HEADER, FORMAT_VERSION, MAGIC, MIN_RECORD_LENGTH, REQUEST, RESPONSE, ZERO_TAIL_MIN,
    CaptureRecord,
    ReadResult, decode_segment, encode_file_header, encode_record, encode_record_fields,
    encode_strings)

FAST = settings(max_examples=200, deadline=None)

INT16 = st.integers(-2**15, 2**15 - 1)
INT32 = st.integers(-2**31, 2**31 - 1)
INT64 = st.integers(-2**63, 2**63 - 1)

records = st.builds(
    CaptureRecord,
    timestamp_ns=INT64,
    direction=st.sampled_from([REQUEST, RESPONSE]),
    api_key=INT16,
    api_version=INT16,
    correlation_id=INT32,
    frame_size=INT32,
    connection_id=st.text(max_size=60),
    peer=st.text(max_size=60),
    client_id=st.none() | st.text(max_size=60),
    frame=st.binary(max_size=300),
    truncated=st.booleans(),
)


def record(i: int, **kw) -> CaptureRecord:
    """A plausible record; ``i`` makes each one different."""
    base = dict(timestamp_ns=1_700_000_000_000_000_000 + i, direction=i % 2,
                api_key=3, api_version=12, correlation_id=i, frame_size=20 + i,
                connection_id="127.0.0.1:9092-127.0.0.1:50000-0-0", peer="127.0.0.1:50000",
                client_id="client" if i % 2 == 0 else None, frame=bytes([i % 256]) * (20 + i))
    base.update(kw)
    return CaptureRecord(**base)


def segment(recs, processor_id: int = 0, seq: int = 0) -> bytes:
    return encode_file_header(processor_id, seq, 123) + b"".join(map(encode_record, recs))


def assert_read_is_clean(result: ReadResult, expected) -> None:
    assert result.problems == []
    assert result.torn_tail_bytes == 0
    assert result.records == list(expected)


# -- round trip -------------------------------------------------------------------------

@FAST
@given(st.lists(records, max_size=8), st.integers(-2**31, 2**31 - 1),
       st.integers(0, 2**63 - 1), st.integers(-2**63, 2**63 - 1))
def test_round_trip_of_every_field(recs, processor_id, seq, created):
    data = encode_file_header(processor_id, seq, created) + b"".join(map(encode_record, recs))
    result = decode_segment(data)
    assert_read_is_clean(result, recs)
    assert (result.segment.processor_id, result.segment.segment_seq,
            result.segment.created_ns) == (processor_id, seq, created)


def test_encode_record_fields_is_encode_record_without_the_record_object():
    """The writer's fast path (strings encoded once per connection, frames as views)
    produces exactly the bytes of encode_record."""
    for rec in [record(i, truncated=i % 3 == 0) for i in range(6)]:
        strings = encode_strings(rec.connection_id, rec.peer, rec.client_id)
        fast = encode_record_fields(
            rec.timestamp_ns, rec.direction, rec.api_key, rec.api_version,
            rec.correlation_id, rec.frame_size, rec.truncated, strings,
            memoryview(b"xx" + rec.frame)[2:])
        assert fast == encode_record(rec)


def test_truncated_flag_survives():
    recs = [record(1, truncated=True), record(2, truncated=False)]
    got = decode_segment(segment(recs)).records
    assert [r.truncated for r in got] == [True, False]
    assert got == recs


def test_client_id_none_and_empty_are_different():
    recs = [record(0, client_id=None), record(2, client_id="")]
    assert [r.client_id for r in decode_segment(segment(recs)).records] == [None, ""]


def test_file_header_layout():
    header = encode_file_header(7, 42, 99)
    assert len(header) == FILE_HEADER.size == 26
    assert header[:5] == MAGIC and header[5] == FORMAT_VERSION


def test_header_only_file_is_a_clean_empty_segment():
    result = decode_segment(encode_file_header(1, 0, 5))
    assert_read_is_clean(result, [])
    assert result.segment.processor_id == 1


def test_over_long_strings_still_decode():
    """Strings are cut to their length field's limit; the cut must leave a record
    the reader can read (a UTF-8 sequence cut in two would make it undecodable)."""
    rec = record(0, client_id="é" * 20_000, connection_id="ü" * 40_000)
    result = decode_segment(segment([rec, record(1)]))
    assert result.problems == []
    assert len(result.records) == 2
    got = result.records[0]
    assert got.client_id and set(got.client_id) == {"é"}
    assert got.connection_id and set(got.connection_id) == {"ü"}
    assert result.records[1] == record(1)


# -- torn tails: a crash in the middle of a write -----------------------------------------

def test_torn_tail_at_every_cut_point_of_the_last_record():
    recs = [record(i) for i in range(4)]
    whole = segment(recs)
    last = len(encode_record(recs[-1]))
    start = len(whole) - last
    for kept in range(1, last):
        result = decode_segment(whole[:start + kept])
        assert result.records == recs[:-1], kept
        assert result.torn_tail_bytes == kept, kept
        assert len(result.problems) == 1 and "torn tail" in result.problems[0], kept
    # Cut exactly at the record boundary: nothing is torn.
    assert_read_is_clean(decode_segment(whole[:start]), recs[:-1])


def test_last_record_with_bad_crc_is_a_torn_tail():
    recs = [record(i) for i in range(3)]
    data = bytearray(segment(recs))
    data[-1] ^= 0xFF  # the last byte of the last record's frame
    result = decode_segment(bytes(data))
    assert result.records == recs[:-1]
    assert result.torn_tail_bytes == len(encode_record(recs[-1]))
    assert "torn tail" in result.problems[0]


def test_corrupt_record_in_the_middle_is_skipped_by_its_length():
    """The CRC covers the body, not the length: the record is reported and
    skipped, the records after it read as written."""
    recs = [record(i) for i in range(3)]
    data = bytearray(segment(recs))
    second = FILE_HEADER.size + len(encode_record(recs[0]))
    data[second + 12] ^= 0x55  # inside the second record's body
    result = decode_segment(bytes(data))
    assert result.records == [recs[0], recs[2]]
    assert result.offsets == [record_starts(recs)[0], record_starts(recs)[2]]
    assert result.torn_tail_bytes == 0
    assert result.problems == [f"corrupt record at byte {second} (CRC mismatch); "
                               f"{len(encode_record(recs[1]))} bytes skipped"]


def test_lengths_under_the_shortest_record_are_garbage():
    """A length too short for the fixed fields frames no record: reading stops
    there (before, a record of such a length failed its CRC and stopped it too)."""
    for length in (4, MIN_RECORD_LENGTH - 1):
        data = segment([record(0)]) + struct.pack(">II", length, 0) + bytes(length) \
            + encode_record(record(1))
        result = decode_segment(data)
        assert result.records == [record(0)], length
        assert result.problems == [f"garbage at byte {record_starts([record(0)])[1]}: record "
                                   f"length {length}; rest skipped"]
    empty = encode_record(CaptureRecord(0, 0, 0, 0, 0, 0, "", "", None, b""))
    assert len(empty) == 4 + MIN_RECORD_LENGTH
    assert_read_is_clean(decode_segment(encode_file_header(0, 0, 0) + empty),
                         [CaptureRecord(0, 0, 0, 0, 0, 0, "", "", None, b"")])


def test_absurd_record_length_is_garbage_not_a_torn_tail():
    data = segment([record(0)]) + struct.pack(">II", 0xFFFFFFF0, 0) + b"x" * 10
    result = decode_segment(data)
    assert result.records == [record(0)]
    assert "garbage" in result.problems[0]


def test_record_whose_inner_lengths_lie_is_reported_and_skipped():
    """A body with a good CRC whose frame length does not match the record: its
    length still frames it, so the next record reads."""
    body = bytearray(encode_record(record(0))[8:])
    body[-len(record(0).frame) - 4:-len(record(0).frame)] = struct.pack(">I", 5)
    forged = struct.pack(">II", len(body) + 4, zlib.crc32(bytes(body))) + bytes(body)
    result = decode_segment(encode_file_header(0, 0, 0) + forged + encode_record(record(1)))
    assert result.records == [record(1)]
    assert len(result.problems) == 1 and "does not decode" in result.problems[0]
    assert f"{len(forged)} bytes skipped" in result.problems[0]


# -- not a capture at all ----------------------------------------------------------------

def test_empty_data():
    result = decode_segment(b"")
    assert result.segment is None and result.records == [] and result.problems


def test_wrong_magic():
    data = b"KNCAQ" + segment([record(0)])[5:]
    result = decode_segment(data)
    assert result.segment is None and result.records == []
    assert "KNCAP" in result.problems[0]


def test_short_header():
    result = decode_segment(MAGIC + b"\x01\x00")
    assert result.segment is None and result.problems


def test_unsupported_format_version():
    data = bytearray(segment([record(0)]))
    data[5] = FORMAT_VERSION + 1
    result = decode_segment(bytes(data))
    assert result.records == []
    assert "version" in result.problems[0]


@FAST
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data):
    result = decode_segment(data)
    if not data.startswith(MAGIC):
        assert result.segment is None and result.records == [] and result.problems


@FAST
@given(st.binary(max_size=400) | st.binary(max_size=40).map(lambda b: b + bytes(20)))
def test_arbitrary_bytes_after_a_valid_header_never_raise(tail):
    result = decode_segment(encode_file_header(0, 0, 0) + tail)
    assert result.segment is not None
    if tail and not (len(tail) >= ZERO_TAIL_MIN and not any(tail)):
        # Only a zero tail (an unclosed segment with nothing in it) is clean and empty.
        assert result.records or result.problems


@FAST
@given(st.lists(records, min_size=1, max_size=5), st.data())
def test_any_single_byte_flip_loses_only_records_and_is_reported(recs, data):
    """Whatever byte is damaged, the reader returns the written records in order
    with at least one missing (the CRC catches the damage; a damaged length
    may lose the records it leads over), reports it, and never raises."""
    raw = bytearray(segment(recs))
    i = data.draw(st.integers(FILE_HEADER.size, len(raw) - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    result = decode_segment(bytes(raw))
    starts = record_starts(recs)
    written = dict(zip(starts, recs))
    assert [written.get(o) for o in result.offsets] == result.records
    assert result.offsets == sorted(result.offsets)
    assert len(result.records) < len(recs)
    assert result.problems


@FAST
@given(st.lists(records, min_size=1, max_size=5), st.data())
def test_any_cut_gives_a_prefix_and_reports_a_torn_tail(recs, data):
    raw = segment(recs)
    cut = data.draw(st.integers(FILE_HEADER.size, len(raw)))
    result = decode_segment(raw[:cut])
    assert result.records == recs[:len(result.records)]
    boundaries, pos = set(), FILE_HEADER.size
    for r in recs:
        boundaries.add(pos)
        pos += len(encode_record(r))
    boundaries.add(pos)
    if cut in boundaries:
        assert result.problems == [] and result.torn_tail_bytes == 0
    else:
        assert result.torn_tail_bytes > 0 and "torn tail" in result.problems[0]


# -- zero tails: a segment whose writer has not closed it ----------------------------------

def record_starts(recs) -> list[int]:
    """Byte offset of each record in ``segment(recs)``, and of the end."""
    out = [FILE_HEADER.size]
    for r in recs:
        out.append(out[-1] + len(encode_record(r)))
    return out


@pytest.mark.parametrize("tail", [ZERO_TAIL_MIN, ZERO_TAIL_MIN + 1, 4096, 1 << 20])
def test_zero_tail_is_a_clean_end(tail):
    recs = [record(i) for i in range(5)]
    assert_read_is_clean(decode_segment(segment(recs) + bytes(tail)), recs)


def test_header_then_zero_tail_is_a_clean_empty_segment():
    assert_read_is_clean(decode_segment(encode_file_header(0, 0, 0) + bytes(100)), [])


@pytest.mark.parametrize("tail", range(1, ZERO_TAIL_MIN))
def test_zeros_shorter_than_a_record_prefix_are_still_a_torn_tail(tail):
    """The writer always leaves at least a whole prefix of zeros; fewer are what
    a ``write``-per-record file cut in a length's high (zero) bytes looks like."""
    recs = [record(i) for i in range(2)]
    result = decode_segment(segment(recs) + bytes(tail))
    assert result.records == recs
    assert result.torn_tail_bytes == tail and "torn tail" in result.problems[0]


def test_record_half_copied_into_the_zero_tail_is_a_torn_tail_at_every_cut():
    """A crash while a record is being copied into the mapping: the record's
    first ``kept`` bytes are there, then the zero tail."""
    recs = [record(i) for i in range(3)]
    torn = encode_record(record(3))
    for kept in range(1, len(torn)):
        data = segment(recs) + torn[:kept] + bytes(len(torn) - kept + 64)
        result = decode_segment(data)
        assert result.records == recs, kept
        if not any(torn[:kept]):
            # Only high zero bytes of the length arrived: nothing to tell it from
            # no record at all.  The record is lost, as a crash may lose it.
            assert result.problems == [], kept
        else:
            assert result.torn_tail_bytes > 0, kept
            assert len(result.problems) == 1 and "torn tail" in result.problems[0], kept


def test_record_copied_back_to_front_is_a_torn_tail():
    """A copy may store the record's first bytes (its length) last: a zero length
    followed by written bytes is a torn tail, not the clean end."""
    recs = [record(i) for i in range(3)]
    torn = encode_record(record(3))
    for missing in (4, 8, len(torn) // 2, len(torn) - 1):
        data = segment(recs) + bytes(missing) + torn[missing:] + bytes(64)
        result = decode_segment(data)
        assert result.records == recs, missing
        assert result.torn_tail_bytes == len(torn), missing
        assert "torn tail" in result.problems[0] and "zero record length" in result.problems[0]


def test_bad_crc_on_the_record_before_the_zero_tail_is_a_torn_tail():
    recs = [record(i) for i in range(3)]
    data = bytearray(segment(recs))
    data[-1] ^= 0xFF
    result = decode_segment(bytes(data) + bytes(1000))
    assert result.records == recs[:-1]
    assert result.torn_tail_bytes == len(encode_record(recs[-1]))
    assert "torn tail" in result.problems[0] and "CRC" in result.problems[0]


def test_bad_crc_in_the_middle_of_a_zero_tailed_segment_is_still_corruption():
    recs = [record(i) for i in range(3)]
    data = bytearray(segment(recs) + bytes(100))
    data[record_starts(recs)[1] + 12] ^= 0x55
    result = decode_segment(bytes(data))
    assert result.records == [recs[0], recs[2]]
    assert result.torn_tail_bytes == 0
    assert len(result.problems) == 1 and "corrupt record" in result.problems[0]


@pytest.mark.parametrize("length", [1, 3, 0xFFFFFFF0])
def test_nonzero_garbage_length_before_a_zero_tail_is_still_garbage(length):
    data = segment([record(0)]) + struct.pack(">II", length, 0) + bytes(100)
    result = decode_segment(data)
    assert result.records == [record(0)]
    assert "garbage" in result.problems[0]


def test_zero_tail_with_a_stray_byte_far_behind_is_a_torn_tail():
    """Pages lost in a power cut need not be the last ones: a zero length with
    written bytes anywhere after it is reported, not taken as the end."""
    recs = [record(i) for i in range(2)]
    end = record_starts(recs)[-1]
    data = bytearray(segment(recs) + bytes(200_000))
    data[150_000] = 1
    result = decode_segment(bytes(data))
    assert result.records == recs
    assert result.torn_tail_bytes == 150_001 - end
    assert "up to byte 150001" in result.problems[0]


@FAST
@given(st.lists(records, max_size=5), st.integers(ZERO_TAIL_MIN, 5000))
def test_any_segment_with_a_zero_tail_reads_clean(recs, tail):
    assert_read_is_clean(decode_segment(segment(recs) + bytes(tail)), recs)


@FAST
@given(st.lists(records, min_size=1, max_size=5), st.data())
def test_any_cut_in_a_zero_tailed_segment_gives_a_prefix(recs, data):
    """What a crash leaves: the records up to some byte, then the zero tail."""
    raw = segment(recs)
    cut = data.draw(st.integers(FILE_HEADER.size, len(raw)))
    result = decode_segment(raw[:cut] + bytes(len(raw) - cut + ZERO_TAIL_MIN))
    assert result.records == recs[:len(result.records)]
    if cut in record_starts(recs):
        assert result.problems == [] and len(result.records) == record_starts(recs).index(cut)
    else:
        assert result.problems == [] or "torn tail" in result.problems[0]
