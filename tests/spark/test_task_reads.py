"""The pcap index of the Spark job (kafka_net.spark_jobs.task_reads): what the range
stage sends through the shuffle instead of payload bytes, and the flow stage's
read-back from the files, give exactly the packets a whole read of the file gives:
from the file's start, from byte ranges cut at record boundaries, and for a segment
put together from IP fragments (its bytes travel in the index: no one offset holds
them)."""

from __future__ import annotations

import json

from kafka_net.capture.packet import ACK, PSH, SYN
from kafka_net.capture.pcap import read_capture
from kafka_net.spark_jobs import conformance, transforms
from kafka_net.spark_jobs.arrow_stages import read_range
from kafka_net.spark_jobs.task_reads import (
    INDEX, PayloadReader, flow_packets, index_rows)
from tests.capture.packets import ethernet, ip_packet, ipv4, pcap_file, tcp_header

A, B, C = "10.0.0.1", "10.0.0.2", "10.0.0.3"


def _capture(path) -> bytes:
    records = []
    ts = 1_700_000_000_000_000_000
    for i in range(40):      # two flows, taking turns, payloads of several sizes
        for src, sport in ((A, 40000 + i % 2), (C, 41000)):
            ts += 1000
            flags = SYN if i == 0 else PSH | ACK
            payload = bytes([i]) * (i * 7 % 50) if i else b""
            records.append((ts, ethernet(ip_packet(src, sport, B, 9092, 1000 + i * 100,
                                                   5000, flags, payload))))
    # one TCP segment in two IPv4 fragments (offset 16 bytes: 2 units of 8)
    segment = tcp_header(40000, 9092, 99999, 5000, PSH | ACK) + b"fragmented payload"
    records.append((ts + 1, ethernet(ipv4(A, B, segment[:16], frag=0x2000, ident=7,
                                          total_len=20 + 16))))
    records.append((ts + 2, ethernet(ipv4(A, B, segment[16:], frag=2, ident=7))))
    data = pcap_file(records)
    path.write_bytes(data)
    return data


def _flows(rows: list[dict]) -> dict[str, list[dict]]:
    flows: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] == INDEX:
            flows.setdefault(r["flow"], []).append(r)
    return flows


def _expected(data: bytes, path: str) -> dict[str, list]:
    units = transforms.file_units(path, data)
    out: dict[str, list] = {}
    for u in units:
        if u[0] == "packet":
            out.setdefault(repr(u[1]), []).append(u[2])
    return out


def _read_back(flows: dict[str, list[dict]]) -> dict[str, list]:
    with PayloadReader() as files:
        return {flow: flow_packets(parts, files) for flow, parts in flows.items()}


def test_the_index_reads_back_the_packets_of_a_whole_file(tmp_path):
    path = tmp_path / "two-flows.pcap"
    data = _capture(path)
    rows = index_rows(str(path), 0, transforms.file_units(str(path), data))
    flows = _flows(rows)
    assert len(flows) == 3          # A:40000, A:40001 and C:41000 to B:9092
    got = _read_back(flows)
    assert got == _expected(data, str(path))
    fragmented = [p for _, p in got[repr(((A, 40000), (B, 9092)))] if p.seq == 99999]
    assert [p.payload for p in fragmented] == [b"fragmented payload"]
    inline = [v for r in rows if r["kind"] == INDEX for v in r["inline"] if v is not None]
    assert inline == [b"fragmented payload"]    # the only payload bytes in the index


def test_ranges_index_file_offsets_that_read_back_the_whole_files_packets(tmp_path):
    path = tmp_path / "cut.pcap"
    data = _capture(path)
    ranges = conformance.plan_inputs([str(path)], 600)
    assert len(ranges) > 3
    rows = []
    for p, start, end, resume, split in ranges:
        part = read_range(p, start, end)
        units = transforms.file_units(p, part, resume and json.loads(resume), start, split)
        rows += index_rows(p, start, units)
    got = _read_back(_flows(rows))
    assert got == _expected(data, str(path))
    assert sum(len(v) for v in got.values()) == len(read_capture(data).packets)
