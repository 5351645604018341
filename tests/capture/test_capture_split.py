"""Capture files cut into byte ranges (kafka_net.capture.capture_split): every
range read alone, in any order, gives exactly the packets (numbers, timestamps,
bytes) and record counts of the whole file read at once; for kafka-net
segments, exactly the records, byte offsets and problems (bad CRCs, torn and
zero tails, garbage) of the whole segment read at once."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.capture import capture_split
from kafka_net.capture.capture_split import Range, plan_ranges
from kafka_net.capture.format import (
    FILE_HEADER, FORMAT_VERSION, MAX_RECORD_BYTES, MIN_RECORD_LENGTH, CaptureRecord,
    RangeStart, ReadResult, decode_range, decode_segment, encode_file_header, encode_record,
    range_start, record_offsets)
from kafka_net.capture.pcap import Resume, read_capture
from tests.capture.packets import (
    ethernet, ip_packet, pcap_file, pcapng_block, pcapng_epb, pcapng_idb, pcapng_shb)


def _frames(n: int, size_of=lambda i: 40 + (i * 37) % 900):
    """n Ethernet TCP packets of varied sizes, every 7th one UDP (not kept)."""
    out = []
    for i in range(n):
        proto = 17 if i % 7 == 3 else 6
        payload = bytes([i % 256]) * size_of(i)
        ip = ip_packet("10.0.0.1", 40000 + i % 5, "10.0.0.2", 9092, i * 1000, 1, 0x18,
                       payload) if proto == 6 else \
            ip_packet("10.0.0.1", 53, "10.0.0.2", 53, 0, 0, 0, payload)
        if proto == 17:
            ip = ip[:9] + b"\x11" + ip[10:]
        out.append((1_700_000_000_000_000_000 + i * 1_000_000, ethernet(ip)))
    return out


def _read_split(data: bytes, split: int):
    ranges = plan_ranges(data, split)
    packets, records, non_tcp, problems = [], 0, 0, []
    for r in reversed(ranges):          # any order: each range stands alone
        resume = r.resume and Resume.from_json(json.loads(json.dumps(r.resume.to_json())))
        got = read_capture(data[r.start:r.end], resume, base=r.start)
        packets += got.packets
        records += got.records
        non_tcp += got.non_tcp
        problems += got.problems
    return ranges, sorted(packets, key=lambda p: p.record), records, non_tcp, problems


def _same_as_whole(data: bytes, split: int, min_ranges: int):
    whole = read_capture(data)
    ranges, packets, records, non_tcp, problems = _read_split(data, split)
    assert len(ranges) >= min_ranges
    assert [(r.start, r.end) for r in ranges] == sorted((r.start, r.end) for r in ranges)
    assert ranges[0].start == 0 and ranges[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:]))
    assert packets == whole.packets and records == whole.records
    assert non_tcp == whole.non_tcp and problems == whole.problems
    return whole


@pytest.mark.parametrize("nano,endian", [(False, "<"), (True, ">")])
def test_pcap_ranges_read_alone_give_the_whole_file(nano, endian):
    data = pcap_file(_frames(400), nano=nano, endian=endian)
    whole = _same_as_whole(data, 10_000, 20)
    assert whole.records == 400 and len(whole.packets) == 400 - 57


def test_pcapng_ranges_carry_sections_interfaces_and_simple_packet_timestamps():
    frames = _frames(300)
    blocks = [pcapng_shb(), pcapng_idb(1, tsresol=9)]
    for i, (ts, frame) in enumerate(frames):
        if i == 100:       # an interface described mid-file, used from then on
            blocks.append(pcapng_idb(1, tsresol=6))
        if i == 200:       # a new section in the other byte order, its own interfaces
            blocks += [pcapng_shb(">"), pcapng_idb(1, ">", tsresol=3)]
        if 200 <= i:
            endian, iface, units = ">", 0, ts // 1_000_000
        else:
            endian, iface, units = "<", 1 if i >= 100 else 0, ts if i < 100 else ts // 1000
        if i % 10 == 5 and i < 100:   # a Simple Packet Block: the timestamp before it
            blocks.append(pcapng_block(3, len(frame).to_bytes(4, "little") + frame))
        else:
            blocks.append(pcapng_epb(units, frame, iface, endian))
    data = b"".join(blocks)
    whole = _same_as_whole(data, 8_000, 20)
    assert whole.records == 300 and not whole.problems


def test_a_corrupt_length_stops_the_cutting_and_the_last_range_reports_it():
    data = bytearray(pcap_file(_frames(200)))
    good = read_capture(bytes(data))
    # the 120th record's captured length made absurd
    pos = 24
    for rec in range(120):
        pos += 16 + int.from_bytes(data[pos + 8:pos + 12], "little")
    data[pos + 8:pos + 12] = (1 << 30).to_bytes(4, "little")
    whole = _same_as_whole(bytes(data), 5_000, 5)
    assert whole.records == 120 and good.records == 200
    assert whole.problems == [f"corrupt packet record at byte {pos} (captured length "
                              f"{1 << 30}); rest skipped"]


@pytest.mark.skipif(not capture_split.COMPILED,
                    reason="KAFKA_NET_READABLE=1: the reference alone runs")
@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 60), split=st.integers(1, 4000), size=st.none() | st.integers(40, 300),
       nano=st.booleans(), endian=st.sampled_from("<>"), cut=st.integers(0, 3000),
       bad=st.sampled_from([None, "length", "truncate"]), at=st.integers(0, 59))
def test_the_compiled_pcap_walk_cuts_where_the_python_walk_cuts(n, split, size, nano, endian,
                                                                cut, bad, at):
    """capture_split's compiled cut finder (classic pcap) against the reference
    record loop, on whole files and on files whose chain breaks (an absurd
    captured length, a file cut anywhere).  Records of one ``size`` put record
    boundaries exactly on multiples of the split, where "at or past" matters."""
    from kafka_net.capture.pcap import CaptureRead, Cuts, walk_records
    sizes = (lambda i: size) if size else (lambda i: 40 + (i * 37) % 900)
    data = bytearray(pcap_file(_frames(n, sizes), nano=nano, endian=endian))
    order = "little" if endian == "<" else "big"
    if size and n:               # a split of whole records: boundaries land on it
        split = (16 + int.from_bytes(data[32:36], order)) * (1 + split % 5)
    if bad == "length" and at < n:
        pos = 24
        for _ in range(at):
            pos += 16 + int.from_bytes(data[pos + 8:pos + 12], order)
        data[pos + 8:pos + 12] = (1 << 30).to_bytes(4, order)
    elif bad == "truncate":
        del data[max(24, len(data) - cut):]
    cuts = Cuts(split)
    walk_records(bytes(data), capture_split._Skip(), CaptureRead(None), cuts=cuts)
    assert capture_split._pcap_cuts(bytes(data), split) == cuts.at


def test_small_files_and_other_files_are_one_range():
    data = pcap_file(_frames(10))
    assert [(r.start, r.end, r.resume) for r in plan_ranges(data, 1 << 20)] == \
        [(0, len(data), None)]
    assert len(plan_ranges(b"x" * 100, 10)) == 1


# -- kafka-net segments (.kncap) -------------------------------------------------------------

def _kncap_records(n: int):
    return [CaptureRecord(1_700_000_000_000_000_000 + i, i % 2, 3, 12, i // 2,
                          30 + (i * 53) % 700, f"conn-{i % 3}", "127.0.0.1:4000",
                          "c" if i % 2 == 0 else None, bytes([i % 256]) * ((i * 53) % 700))
            for i in range(n)]


def _segment(recs) -> tuple[bytes, list[int]]:
    """A segment and each record's offset."""
    out, offsets = [encode_file_header(4, 17, 99)], []
    pos = FILE_HEADER.size
    for rec in recs:
        raw = encode_record(rec)
        offsets.append(pos)
        out.append(raw)
        pos += len(raw)
    return b"".join(out), offsets


def _read_kncap_ranges(data: bytes, ranges) -> ReadResult:
    """Every range read alone (from the resume's JSON, as an executor gets it),
    in reverse order, then put together."""
    got = ReadResult(None)
    parts = []
    for r in reversed(ranges):
        start = RangeStart.from_json(json.loads(json.dumps(r.resume.to_json())))
        parts.append(decode_range(data[r.start:r.end], r.start, start))
    for part in reversed(parts):
        got.segment = got.segment or part.segment
        got.records += part.records
        got.offsets += part.offsets
        got.problems += part.problems
        got.torn_tail_bytes += part.torn_tail_bytes
    return got


def _same_segment(data: bytes, ranges) -> ReadResult:
    whole = decode_segment(data)
    got = _read_kncap_ranges(data, ranges)
    assert ranges[0].start == 0 and ranges[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:]))
    assert (got.records, got.offsets, got.problems, got.torn_tail_bytes) == (
        whole.records, whole.offsets, whole.problems, whole.torn_tail_bytes)
    assert got.segment == whole.segment
    return whole


# What may follow a segment's records: a zero tail (an unclosed segment), a torn
# record (a crash), a record torn into the zero tail, garbage.
_TAILS = st.sampled_from(["", "zeros", "torn", "torn+zeros", "stray", "garbage"])


def _damaged_segment(draw, n: int):
    recs = _kncap_records(n)
    data, offsets = _segment(recs)
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):        # bad CRCs (bodies damaged)
        i = draw(st.integers(0, n - 1))
        data[offsets[i] + 8 + draw(st.integers(0, 20))] ^= 0x5A
    if draw(st.booleans()):                         # a length damaged, anywhere
        i = draw(st.integers(0, n - 1))
        data[offsets[i] + draw(st.integers(0, 3))] ^= draw(st.integers(1, 255))
    tail = draw(_TAILS)
    extra = encode_record(_kncap_records(n + 1)[-1])
    data += {"": b"", "zeros": bytes(4096), "torn": extra[:len(extra) // 2],
             "torn+zeros": extra[:len(extra) // 2] + bytes(2048),
             "stray": bytes(100) + b"\x01" + bytes(50),
             "garbage": struct.pack(">II", 3, 0) + b"junk" * 10}[tail]
    return bytes(data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_kncap_cut_at_any_record_boundaries_reads_as_the_whole_segment(data):
    """Any cut points the lengths lead to, any damage: the ranges read alone
    give the whole read's records, offsets and problems, each record once."""
    raw = _damaged_segment(data.draw, data.draw(st.integers(1, 60)))
    boundaries = list(record_offsets(raw))
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(boundaries), max_size=12))
                      if boundaries else []))
    start = range_start(raw)
    bounds = [0] + cuts + [len(raw)]
    ranges = [Range(a, b, start) for a, b in zip(bounds, bounds[1:])]
    _same_segment(raw, ranges)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_kncap_planned_ranges_read_as_the_whole_segment(data):
    raw = _damaged_segment(data.draw, data.draw(st.integers(1, 60)))
    split = data.draw(st.integers(1, len(raw)))
    ranges = plan_ranges(raw, split)
    if len(ranges) > 1:
        assert all(isinstance(r.resume, RangeStart) for r in ranges)
        _same_segment(raw, ranges)
    else:
        assert ranges == [Range(0, len(raw))] or ranges[0].end == len(raw)


@pytest.mark.skipif(not capture_split.COMPILED,
                    reason="KAFKA_NET_READABLE=1: the reference alone runs")
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_compiled_kncap_walk_cuts_where_record_offsets_leads(data):
    """_kncap_scan.record_cuts against the Python walk of format.record_offsets,
    on damaged segments and splits from one byte to the whole file, boundaries
    on the split included."""
    from kafka_net.capture import _kncap_scan
    raw = _damaged_segment(data.draw, data.draw(st.integers(1, 60)))
    boundaries = list(record_offsets(raw))
    split = data.draw(st.integers(1, len(raw)) | st.sampled_from(boundaries or [1]))
    bounds, next_cut = [], split
    for pos in boundaries:
        if pos >= next_cut:
            bounds.append(pos)
            next_cut = pos + split
    assert _kncap_scan.record_cuts(raw, FILE_HEADER.size, MIN_RECORD_LENGTH,
                                   MAX_RECORD_BYTES, split) == bounds


def test_kncap_is_cut_near_every_split_and_each_record_read_once():
    recs = _kncap_records(2000)
    raw, offsets = _segment(recs)
    ranges = plan_ranges(raw + bytes(10_000), 50_000)      # a zero tail, too
    assert len(ranges) >= len(raw) // 50_000
    assert {r.start for r in ranges[1:]} <= set(offsets)
    assert all(r.end - r.start < 50_000 + 800 for r in ranges[:-1])
    whole = _same_segment(raw + bytes(10_000), ranges)
    assert whole.records == recs and whole.problems == []
    counts = [len(decode_range(raw[r.start:r.end], r.start, r.resume).records) for r in ranges]
    assert sum(counts) == 2000 and min(counts[:-1]) > 0


def test_kncap_corrupt_length_stops_the_cutting_and_the_last_range_reports_it():
    recs = _kncap_records(1000)
    raw, offsets = _segment(recs)
    data = bytearray(raw)
    data[offsets[300]:offsets[300] + 4] = struct.pack(">I", 1 << 30)   # over the maximum
    data[offsets[100] + 20] ^= 1                                       # and a bad CRC
    ranges = plan_ranges(bytes(data), 20_000)
    assert max(r.start for r in ranges) < offsets[300] < ranges[-1].end == len(data)
    whole = _same_segment(bytes(data), ranges)
    assert whole.records == recs[:100] + recs[101:300]
    assert whole.problems == [
        f"corrupt record at byte {offsets[100]} (CRC mismatch); "
        f"{offsets[101] - offsets[100]} bytes skipped",
        f"garbage at byte {offsets[300]}: record length {1 << 30}; rest skipped"]


def test_kncap_files_not_read_are_one_range_without_resume():
    raw, _ = _segment(_kncap_records(50))
    other_version = raw[:5] + bytes([FORMAT_VERSION + 1]) + raw[6:]
    assert plan_ranges(other_version, 100) == [Range(0, len(raw))]
    assert [(r.start, r.end) for r in plan_ranges(raw, 1 << 20)] == [(0, len(raw))]
