"""The conformance job's row-level functions (kafka_net.spark_jobs.transforms), without Spark.

Every executor runs exactly these functions, so they are tested directly:
file -> units (frames of kafka-net captures, TCP packets of pcaps, problems),
packets of one flow -> frame rows, one connection's rows -> pairs,
violations and a connection summary.
"""

from __future__ import annotations

import random

import pytest

from kafka_net.capture import reader
from kafka_net.capture.writer import CaptureWriter
from kafka_net.protocol import ApiKey
from kafka_net.spark_jobs import transforms
from tests.spark.conftest import (
    REQUEST, RESPONSE, TcpConversation, kncap_file, kncap_record, request_payload,
    response_payload, write_pcap)

CONN = "127.0.0.1:9092-127.0.0.1:40000-0-0"


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def metadata_exchange(corr: int) -> tuple[bytes, bytes]:
    return (request_payload(ApiKey.METADATA, 12, corr, {"topics": None}),
            response_payload(ApiKey.METADATA, 12, corr, {}))


def kafka_pcap_conversation(client_port: int, calls: int = 3, start_ns: int = 10**18,
                            segment: int | None = None) -> TcpConversation:
    conv = TcpConversation(("127.0.0.1", client_port), ("127.0.0.1", 9092), start_ns)
    for corr in range(calls):
        q, r = metadata_exchange(corr)
        conv.send(REQUEST, len(q).to_bytes(4, "big") + q, segment)
        conv.send(RESPONSE, len(r).to_bytes(4, "big") + r, segment)
    conv.close()
    return conv


# -- sniffing ---------------------------------------------------------------------------------

def test_sniff(tmp_path):
    conv = kafka_pcap_conversation(40001)
    pcap = read(write_pcap(tmp_path / "a.pcap", conv.packets))
    kncap = read(kncap_file(tmp_path / "a.kncap", []))
    assert reader.sniff(kncap) == "kncap"
    assert reader.sniff(pcap) == "pcap"
    assert reader.sniff(b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a") == "pcapng"
    assert reader.sniff(b"") is None
    assert reader.sniff(b"GET / HTTP/1.1\r\n") is None


# -- kafka-net captures ------------------------------------------------------------------------

def write_conversation(directory, calls: int, segment_bytes: int, run_id: int = 77,
                       processor_id: int = 0) -> None:
    w = CaptureWriter(str(directory), processor_id, segment_bytes, 1 << 20, run_id=run_id)
    for corr in range(calls):
        q, r = metadata_exchange(corr)
        w.request(CONN, "127.0.0.1:40000", q, ApiKey.METADATA, 12, corr, "tester")
        w.response(CONN, "127.0.0.1:40000", r, ApiKey.METADATA, 12, corr)
    w.close()


def test_kncap_units_are_frames_with_write_order_keys(tmp_path):
    write_conversation(tmp_path, calls=10, segment_bytes=400, processor_id=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) > 2
    rows = []
    for name in names:
        units = transforms.file_units(str(tmp_path / name), read(tmp_path / name))
        assert {u[0] for u in units} == {"frame"}
        rows += [u[1] for u in units]
    assert len(rows) == 20
    assert {r["connection"] for r in rows} == {f"77/{CONN}"}
    assert {r["source"] for r in rows} == {"kafka-net"}
    keys = [tuple(r["order_key"]) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == 20
    assert {k[0] for k in keys} == {2}
    assert [r["direction"] for r in rows] == [REQUEST, RESPONSE] * 10
    assert [r["correlation_id"] for r in rows] == [i // 2 for i in range(20)]
    requests = [r for r in rows if r["direction"] == REQUEST]
    responses = [r for r in rows if r["direction"] == RESPONSE]
    assert {(r["api_key"], r["api_version"], r["client_id"]) for r in requests} == {
        (ApiKey.METADATA, 12, "tester")}
    assert {(r["api_key"], r["api_version"], r["client_id"]) for r in responses} == {
        (None, None, None)}


def test_torn_kncap_keeps_its_good_records_and_reports_the_tail(tmp_path):
    q, r = metadata_exchange(1)
    path = kncap_file(tmp_path / "kafka-net-5-p0-000000.kncap",
                      [kncap_record(REQUEST, q, CONN, 1), kncap_record(RESPONSE, r, CONN, 2)])
    data = read(path)[:-5]
    units = transforms.file_units(path, data)
    assert [u[0] for u in units].count("frame") == 1
    (problem,) = [u[1] for u in units if u[0] == "problem"]
    assert problem["file"] == path and "torn tail" in problem["problem"]


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"\x00garbage\xff" * 50, "neither"),
    (b"KNCAP", "KNCAP"),               # a header cut short
])
def test_unreadable_files_are_problems(data, words):
    units = transforms.file_units("/x/file", data)
    assert len(units) == 1 and units[0][0] == "problem"
    assert units[0][1]["file"] == "/x/file" and words in units[0][1]["problem"]


def test_check_connection_orders_rows_across_segments(tmp_path):
    """Rows arrive from Spark in any order; the order key puts them back."""
    write_conversation(tmp_path, calls=6, segment_bytes=300)
    rows = []
    for path in tmp_path.iterdir():
        rows += [u[1] for u in transforms.file_units(str(path), read(path))]
    random.Random(4).shuffle(rows)
    result = transforms.check_connection(f"77/{CONN}", rows)
    assert result["violations"] == []
    assert [p["correlation_id"] for p in result["pairs"]] == list(range(6))
    summary = result["connection"]
    (cell,) = summary.pop("cells")
    assert summary.pop("versions_served") == {}     # no ApiVersions exchange here
    assert {k: cell[k] for k in ("api_key", "requests", "responses", "pairs", "violations",
                                 "checked", "header_only", "unverifiable")} == {
        "api_key": 3, "requests": 6, "responses": 6, "pairs": 6, "violations": 0,
        "checked": 12, "header_only": 0, "unverifiable": 0}
    assert summary == {"connection": f"77/{CONN}", "source": "kafka-net", "frames": 12,
                       "requests": 6, "responses": 6, "pairs": 6, "violations": 0,
                       "in_flight_at_end": 0, "acks0_requests": 0, "unverifiable_from": None,
                       "unverifiable_requests": 0, "frames_checked": 12,
                       "frames_header_only": 0, "frames_unverifiable": 0,
                       "frames_not_kafka": 0, "header_only_reasons": {}, "gaps": []}
    assert {(p["api_name"], p["client_id"]) for p in result["pairs"]} == {
        ("Metadata", "tester")}
    assert all(p["latency_ns"] == p["response_ns"] - p["request_ns"] >= 0
               for p in result["pairs"])
    assert [r["api_name"] for r in result["requests"]] == ["Metadata"] * 6


def test_check_connection_reports_a_violation_at_its_position():
    q1, r1 = metadata_exchange(1)
    q2, r2 = metadata_exchange(2)
    recs = [kncap_record(REQUEST, q1, CONN, 1), kncap_record(REQUEST, q2, CONN, 2),
            kncap_record(RESPONSE, r2, CONN, 3), kncap_record(RESPONSE, r1, CONN, 4)]
    rows = [{"source": "kafka-net", "order_key": (0, 0, i), "direction": r.direction,
             "marker": None, "gap_start": None,
             "timestamp_ns": r.timestamp_ns, "frame": r.frame, "frame_size": r.frame_size,
             "truncated": r.truncated, "after_gap": False} for i, r in enumerate(recs)]
    result = transforms.check_connection("c", rows)
    assert [(v["connection"], v["check"], v["position"], v["correlation_id"])
            for v in result["violations"]] == [("c", "correlation_mismatch", 2, 2)]
    assert result["connection"]["violations"] == 1


# -- pcap files --------------------------------------------------------------------------------

def pcap_units(paths) -> list[tuple]:
    packets = {}
    for path in paths:
        for unit in transforms.file_units(str(path), read(path)):
            assert unit[0] == "packet", unit
            packets.setdefault(unit[1], []).append(unit[2])
    units = []
    for flow in packets.values():
        units += transforms.frames_of_flow(flow)
    return units


def pcap_frames(paths, markers: bool = False) -> list[dict]:
    """Frame rows (and, with ``markers``, the gap and close marker rows)."""
    units = pcap_units(paths)
    assert all(kind == "frame" for kind, _ in units), units
    return [row for _, row in units if markers or row["marker"] is None]


def test_pcap_flow_becomes_frame_rows(tmp_path):
    conv = kafka_pcap_conversation(40002, calls=3, segment=7)   # frames split over packets
    rows = pcap_frames([write_pcap(tmp_path / "a.pcap", conv.packets)])
    assert [(r["direction"], r["correlation_id"]) for r in rows] == [
        (d, c) for c in range(3) for d in (REQUEST, RESPONSE)]
    assert {r["connection"] for r in rows} == {"127.0.0.1:40002-127.0.0.1:9092"}
    assert {r["source"] for r in rows} == {"pcap"}
    assert not any(r["after_gap"] or r["truncated"] for r in rows)
    assert [r["frame"] for r in rows if r["direction"] == REQUEST] == [
        metadata_exchange(c)[0] for c in range(3)]
    result = transforms.check_connection(rows[0]["connection"], rows)
    assert result["violations"] == [] and len(result["pairs"]) == 3


def test_pcap_flow_cut_across_two_files_is_joined(tmp_path):
    conv = kafka_pcap_conversation(40003, calls=4, segment=10)
    half = len(conv.packets) // 2
    whole = pcap_frames([write_pcap(tmp_path / "all.pcap", conv.packets)])
    split = pcap_frames([write_pcap(tmp_path / "part1.pcap", conv.packets[:half]),
                         write_pcap(tmp_path / "part2.pcap", conv.packets[half:])])
    assert [(r["direction"], r["frame"]) for r in split] == [
        (r["direction"], r["frame"]) for r in whole]
    assert len(split) == 8


def test_pcap_flow_with_a_lost_packet_is_unverifiable_after_it(tmp_path):
    conv = kafka_pcap_conversation(40004, calls=4, segment=10)
    lost = len(conv.packets) // 2
    rows = pcap_frames([write_pcap(tmp_path / "lossy.pcap",
                                  conv.packets[:lost] + conv.packets[lost + 1:])], markers=True)
    assert any(r["after_gap"] or r["marker"] == "gap" for r in rows)
    assert [r["marker"] for r in rows].count("close") == 1
    result = transforms.check_connection(rows[0]["connection"], rows)
    assert result["violations"] == []
    summary = result["connection"]
    assert summary["unverifiable_from"] is not None and summary["gaps"]
    assert summary["frames_unverifiable"] >= 1 and summary["in_flight_at_end"] == 0
    # Every frame (not the markers) has one state; the unverifiable ones say which
    # bytes were lost.
    frames = [i for i, r in enumerate(sorted(rows, key=lambda r: r["order_key"]))
              if r["marker"] is None]
    assert [s["position"] for s in result["states"]] == frames
    lost = [s for s in result["states"] if s["state"] == "unverifiable"]
    assert len(lost) == summary["frames_unverifiable"]
    assert all(s["gap_end"] > s["gap_start"] >= 0 and "lost" in s["reason"] for s in lost)
    # Checking went on after the loss.
    assert len(result["pairs"]) >= 3


def test_non_kafka_pcap_gives_no_frames(tmp_path):
    conv = TcpConversation(("127.0.0.1", 40005), ("127.0.0.1", 8080), 10**18)
    conv.send(REQUEST, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    conv.send(RESPONSE, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    conv.close()
    units = pcap_units([write_pcap(tmp_path / "http.pcap", conv.packets)])
    assert [kind for kind, _ in units] == ["problem"]    # no frame rows, one reason
    assert "not Kafka" in units[0][1]["problem"]
    assert units[0][1]["file"].endswith("http.pcap")


def test_a_handshake_alone_is_no_problem_and_no_frame(tmp_path):
    """An empty TCP connection (opened and closed, nothing sent) is not an
    unreadable input: nothing to check, nothing wrong."""
    conv = TcpConversation(("127.0.0.1", 40006), ("127.0.0.1", 9092), 10**18)
    conv.close()
    assert pcap_units([write_pcap(tmp_path / "empty-conn.pcap", conv.packets)]) == []


def test_pcap_rows_carry_the_client_id_for_every_api(tmp_path):
    conv = TcpConversation(("127.0.0.1", 40007), ("127.0.0.1", 9092), 10**18)
    # LeaderAndIsr (controller-to-broker) has no schema here: the header is read
    # leniently all the same.
    q = b"\x00\x04\x00\x07\x00\x00\x00\x01\x00\x06tester\x00" + b"\x00" * 8
    conv.send(REQUEST, len(q).to_bytes(4, "big") + q)
    conv.close()
    (row,) = pcap_frames([write_pcap(tmp_path / "leader-and-isr.pcap", conv.packets)])
    assert (row["api_key"], row["client_id"]) == (ApiKey.LEADER_AND_ISR, "tester")


def test_pcap_frames_split_over_two_files_name_the_file_and_its_frame_number():
    """A connection whose packets are in two files (a rotated capture): each frame
    names the file holding the packet that completed it, numbered within that file."""
    from tests.capture.test_decode import pcap_bytes, wire_of
    wire = wire_of(["q2", "r2", "q9", "r9"], mss=1000)
    half = len(wire.packets) // 2
    packets = wire.packets
    wire.packets = packets[:half]
    first = pcap_bytes(wire)
    wire.packets = packets[half:]
    second = pcap_bytes(wire)
    units = transforms.file_units("/c/one.pcap", first) + \
        transforms.file_units("/c/two.pcap", second)
    flow = [u[2] for u in units if u[0] == "packet"]
    rows = [u[1] for u in transforms.frames_of_flow(flow) if u[0] == "frame"
            and u[1]["marker"] is None]
    # one.pcap: the handshake (3 packets), q2; two.pcap: r2, q9, r9, the FINs
    assert [(r["file"], r["frame_number"]) for r in rows] == [
        ("/c/one.pcap", 4), ("/c/two.pcap", 1), ("/c/two.pcap", 2), ("/c/two.pcap", 3)]


def test_connection_cells_fit_their_declared_schema(tmp_path):
    """The "cells" of a connection's summary have exactly CELL_SCHEMA's fields."""
    from kafka_net.spark_jobs.schemas import CELL_SCHEMA
    write_conversation(tmp_path, calls=3, segment_bytes=1 << 20)
    rows = []
    for path in tmp_path.iterdir():
        rows += [u[1] for u in transforms.file_units(str(path), read(path))]
    cells = transforms.check_connection(f"77/{CONN}", rows)["connection"]["cells"]
    assert cells and all(list(c) == CELL_SCHEMA.fieldNames() for c in cells)
