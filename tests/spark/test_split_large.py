"""A pcap over 2 GiB (Spark's binaryFile reader cannot hold one: a Java trace)
cut into byte ranges, one task each, with exact ground truth: every record
counted once, every Kafka frame and connection found, Wireshark's frame numbers
right across the cuts.

The file is written sparse and quickly: 8,300 filler records of 256 KiB whose
bytes are holes (zeros on reading: an Ethernet header of type 0, not IP), with
eight Kafka connections' packets spread among them, so that each connection's
packets lie in many ranges and must be shuffled together by flow."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.spark_jobs import conformance
from tests.spark.conftest import (
    REQUEST, RESPONSE, TcpConversation, load_report, request_payload, response_payload,
    run_job)

FILLER = 256 * 1024          # captured bytes of each filler record (a hole on disk)
SIZE = 2**31 + 64 * 1024 * 1024
CONNECTIONS, PAIRS = 8, 50
BASE_NS = 1_700_000_000 * 10**9


def _conversations():
    packets, data_packets = [], []
    for c in range(CONNECTIONS):
        conv = TcpConversation(("10.1.0.1", 50000 + c), ("10.1.0.2", 9092),
                               BASE_NS + c * 137_000)
        for corr in range(PAIRS):
            for direction, payload in (
                    (REQUEST, request_payload(ApiKey.METADATA, 12, corr, {"topics": None})),
                    (RESPONSE, response_payload(ApiKey.METADATA, 12, corr))):
                (index,) = conv.send(direction, struct.pack(">i", len(payload)) + payload)
                data_packets.append((c, index))
        conv.close()
        packets += [(ts, c, i, raw) for i, (ts, raw) in enumerate(conv.packets)]
    packets.sort()
    return packets, set(data_packets)


def write_sparse_pcap(path) -> dict:
    """The file, and its ground truth: records, where each data packet went."""
    packets, data_packets = _conversations()
    fillers = (SIZE - 24) // (16 + FILLER) + 1
    every = fillers // len(packets) + 1
    record = 0
    numbers = []                  # Wireshark's numbers of the packets carrying frames
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        queue = iter(packets)
        for i in range(fillers):
            ts = BASE_NS + record * 1000
            fh.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, FILLER, FILLER))
            fh.seek(FILLER, os.SEEK_CUR)     # a hole: zeros, not written
            record += 1
            if i % every == 0:
                item = next(queue, None)
                if item is not None:
                    _, conn, index, raw = item
                    ts = BASE_NS + record * 1000
                    fh.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(raw),
                                         len(raw)) + raw)
                    record += 1
                    if (conn, index) in data_packets:
                        numbers.append(record)
        rest = list(queue)
        for _, conn, index, raw in rest:
            ts = BASE_NS + record * 1000
            fh.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(raw), len(raw))
                     + raw)
            record += 1
            if (conn, index) in data_packets:
                numbers.append(record)
    return {"records": record, "fillers": fillers, "tcp_packets": len(packets),
            "frame_numbers": sorted(numbers)}


@pytest.fixture
def big_pcap(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    if free < 1 << 30:   # sparse: a few MiB on disk, but leave room for the job's output
        pytest.fail(f"{tmp_path} has {free >> 20} MiB free; this test needs 1 GiB")
    path = tmp_path / "big.pcap"
    truth = write_sparse_pcap(path)
    yield path, truth
    path.unlink()


def test_pcap_over_2_gib_is_split_across_tasks_with_exact_ground_truth(spark, big_pcap,
                                                                       tmp_path):
    path, truth = big_pcap
    assert os.path.getsize(path) > 2**31
    # by default one range a slot, but none over MAX_INDEX_RANGE: three here
    # (a cut falls at the first record boundary at or past each split: a range
    # may pass it by one record)
    default = conformance.planned_ranges(spark, [str(path)], None).other
    size = os.path.getsize(path)
    assert len(default) == 3
    assert all((end if end >= 0 else size) - start <= conformance.MAX_INDEX_RANGE + FILLER + 16
               for _, start, end, _, _ in default)
    out = tmp_path / "out"
    summary = run_job(spark, [path], out, split_bytes=64 << 20)
    with open(out / conformance.PROBLEMS_FILE, encoding="utf-8") as fh:
        ranges = json.load(fh)["ranges"]
    assert summary["unreadable"] == []
    # split (--split-mb 64): 64 MiB ranges, each its own task, together every
    # record exactly once
    assert len(ranges) >= 30
    assert sum(r["records"] for r in ranges) == truth["records"]
    assert sum(r["non_tcp"] for r in ranges) == truth["fillers"]
    assert sum(r["packets"] for r in ranges) == truth["tcp_packets"]
    assert sum(1 for r in ranges if r["packets"]) >= 30
    report = load_report(out)
    totals = report["totals"]
    assert (totals["frames"], totals["connections"], totals["pairs"], totals["violations"]) \
        == (CONNECTIONS * PAIRS * 2, CONNECTIONS, CONNECTIONS * PAIRS, 0)
    frames = spark.read.parquet(str(out / "frames.parquet")).filter("marker is null")
    assert sorted(r.frame_number for r in frames.select("frame_number").collect()) \
        == truth["frame_numbers"]


def test_a_pcapng_cut_into_ranges_reads_as_the_whole_file(spark, tmp_path):
    """pcapng through the job's executors: sections and interfaces carried into each
    range; the same frames, Wireshark numbers and report as read whole in process."""
    from tests.capture.packets import pcapng_block, pcapng_epb, pcapng_idb, pcapng_shb
    packets, _ = _conversations()
    blocks = [pcapng_shb(), pcapng_idb(1, tsresol=9)]
    for i, (ts, _c, _i, raw) in enumerate(packets):
        if i == len(packets) // 2:          # a second interface, described mid-file
            blocks.append(pcapng_idb(1, tsresol=6))
        iface, units = (0, ts) if i < len(packets) // 2 else (1, ts // 1000)
        blocks.append(pcapng_epb(units, raw, iface))
    blocks.append(pcapng_block(0x0BAD, b"custom"))
    path = tmp_path / "conv.pcapng"
    path.write_bytes(b"".join(blocks))
    whole = conformance.run(spark, [str(path)], str(tmp_path / "whole"))
    cut = conformance.run(spark, [str(path)], str(tmp_path / "cut"), split_bytes=4096,
                          small_input_bytes=0)
    with open(tmp_path / "cut" / conformance.PROBLEMS_FILE, encoding="utf-8") as fh:
        assert len(json.load(fh)["ranges"]) >= 10
    assert cut["totals"] == whole["totals"]
    assert (cut["totals"]["frames"], cut["totals"]["violations"]) == (
        CONNECTIONS * PAIRS * 2, 0)
    assert cut["unreadable"] == whole["unreadable"] == []

    def numbers(out):
        rows = spark.read.parquet(str(tmp_path / out / "frames.parquet")).collect()
        return sorted((r.connection, r.frame_number, r.timestamp_ns) for r in rows)
    assert numbers("cut") == numbers("whole")


def test_by_default_a_pcap_is_one_range_a_slot_up_to_the_largest_range(spark, tmp_path,
                                                                       monkeypatch):
    """An index task's own work is small beside a task's cost, so a pcap is
    cut into one range an executor slot (the session's two), none when it is
    under the floor (4 MiB: no walk of the file), and ranges no larger than
    MAX_INDEX_RANGE however few the slots."""
    from tests.capture.test_pairing import conversation
    from tests.spark.conftest import write_pcap
    from tests.spark.test_conformance_job import pcap_of
    packets = [p for i in range(100) for p in pcap_of(conversation(), 41000 + i, i * 10**9)]
    pcap = write_pcap(tmp_path / "small.pcap", sorted(packets))
    size = os.path.getsize(pcap)
    assert conformance.planned_ranges(spark, [pcap], None).other == \
        [(pcap, 0, -1, None, False)]
    monkeypatch.setattr(conformance, "MIN_INDEX_RANGE", 1)
    plan = conformance.planned_ranges(spark, [pcap], None)
    assert len(plan.other) == 2 and plan.other_split == -(-size // 2)
    assert [row[1] for row in plan.other][1:] == [row[2] for row in plan.other][:-1]
    monkeypatch.setattr(conformance, "MAX_INDEX_RANGE", size // 5)
    plan = conformance.planned_ranges(spark, [pcap], None)
    assert len(plan.other) >= 5 and plan.other_split == size // 5
