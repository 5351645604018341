"""Capture files cut into byte ranges (kafka_net.capture.capture_split): every
range read alone, in any order, gives exactly the packets (numbers, timestamps,
bytes) and record counts of the whole file read at once."""

from __future__ import annotations

import json

import pytest

from kafka_net.capture.capture_split import plan_ranges
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


def test_small_files_and_other_files_are_one_range():
    data = pcap_file(_frames(10))
    assert [(r.start, r.end, r.resume) for r in plan_ranges(data, 1 << 20)] == \
        [(0, len(data), None)]
    assert len(plan_ranges(b"x" * 100, 10)) == 1
