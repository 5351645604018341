"""``kafka-net decode``'s core (kafka_net.capture.decode), the one sniffing reader
(kafka_net.capture.reader) and where frames are in their capture files: the
frame number Wireshark gives the packet completing each frame (checked against
tshark itself), and a .kncap record's byte offset."""

from __future__ import annotations

import shutil
import uuid
import subprocess
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.capture.decode import decode_file
from kafka_net.capture.format import encode_file_header, encode_record
from kafka_net.capture.model import REQUEST, RESPONSE
from kafka_net.capture.reader import read_capture_file
from kafka_net.protocol import ApiKey, encode_request
from kafka_net.protocol.records.building import build_batch
from tests.capture.packets import ethernet, ip_packet, pcap_file, pcapng_file
from tests.capture.tcp_wire import B, C, Wire
from tests.capture.test_pairing import payload
from tests.spark.conftest import kncap_record

T0 = 1_700_000_000_000_000_000


def wire_of(names, mss=60, wire=None, extra: dict | None = None) -> Wire:
    """A TCP connection carrying test_pairing's requests ("q<n>") and responses
    ("r<n>") in this order; ``extra`` replaces a name's bytes (size prefix added)."""
    wire = wire or Wire(t0=T0).handshake()
    for name in names:
        body = (extra or {}).get(name) or payload(name)
        wire.send(C if name[0] == "q" else B, len(body).to_bytes(4, "big") + body, mss)
    return wire.close()


def pcap_bytes(wire: Wire, ng: bool = False) -> bytes:
    records = [(p.timestamp_ns, ethernet(ip_packet(p.src_ip, p.src_port, p.dst_ip,
                                                   p.dst_port, p.seq, p.ack, p.flags,
                                                   p.payload))) for p in wire.packets]
    return pcapng_file(records) if ng else pcap_file(records)


def tshark_frames(path) -> list[tuple[int, int]]:
    """(frame number, correlation id) of every Kafka PDU, as tshark numbers them."""
    out = subprocess.run(
        [shutil.which("tshark"), "-r", str(path), "-d", "tcp.port==9092,kafka", "-Y", "kafka",
         "-T", "fields", "-e", "frame.number", "-e", "kafka.correlation_id"],
        capture_output=True, text=True, timeout=120, check=True).stdout
    rows = []
    for line in out.splitlines():
        number, ids = line.split("\t")
        rows += [(int(number), int(i)) for i in ids.split(",")]
    return rows


def our_frames(data: bytes) -> list[tuple[int, int]]:
    (conn,) = read_capture_file(data, "x").connections
    return [(f.frame_number, int.from_bytes(f.frame[4:8] if f.direction == REQUEST
                                            else f.frame[:4], "big", signed=True))
            for f in conn.frames if f.marker is None]


def test_frame_numbers_are_the_ones_tshark_shows(tmp_path):
    names = ["q1", "r1", "q2", "q3", "r2", "r3", "q5", "r5", "q9", "r9"]
    for ng in (False, True):
        path = tmp_path / ("c.pcapng" if ng else "c.pcap")
        path.write_bytes(pcap_bytes(wire_of(names), ng))
        ours = our_frames(path.read_bytes())
        assert len(ours) == len(names)
        assert ours == tshark_frames(path)


def test_a_reordered_frame_is_numbered_by_its_last_captured_packet():
    wire = wire_of(["q2", "r2"], mss=10)
    packets = wire.packets
    # the request's first data segment (after the handshake) arrives last of its frame
    first = next(i for i, p in enumerate(packets) if p.payload)
    moved = packets.pop(first)
    last_of_request = max(i for i, p in enumerate(packets) if p.payload and p.dst_port == 9092)
    packets.insert(last_of_request + 1, moved)
    wire.packets = [replace(p, timestamp_ns=T0 + 1000 * i) for i, p in enumerate(packets)]
    data = pcap_bytes(wire)
    (conn,) = read_capture_file(data, "x").connections
    request = next(f for f in conn.frames if f.direction == REQUEST and f.marker is None)
    assert request.frame_number == last_of_request + 2    # 1-based, the moved packet


def test_kncap_frames_carry_their_record_offsets(tmp_path):
    recs = [kncap_record(REQUEST, payload("q2"), "c-1", 1), kncap_record(RESPONSE,
                                                                       payload("r2"), "c-1", 2)]
    header = encode_file_header(0, 0, 1)
    data = header + b"".join(encode_record(r) for r in recs)
    (conn,) = read_capture_file(data, "seg.kncap").connections
    assert [f.file_offset for f in conn.frames] == [len(header),
                                                   len(header) + len(encode_record(recs[0]))]
    assert all(f.file == "seg.kncap" and f.frame_number == 0 for f in conn.frames)


GOLDEN = """\
demo.pcap: pcap capture, 1 connection(s)

Frame 4 (demo.pcap, packet 4)
    Time: 2023-11-14T22:13:20.000004000Z (1700000000000004000 ns)
    Connection: 10.0.0.1:50123-10.0.0.2:9092, client -> broker (request)
    Length: 124 (after the 4-byte size prefix)
    Coverage: checked
    Kafka: Produce v9 request (api key 0), correlation id 7, client id 'golden'
    Body:
        transactional_id: None
        acks: 1
        timeout_ms: 1000
        topic_data: 1 item(s)
            [0]
                name: 'orders'
                partition_data: 1 item(s)
                    [0]
                        index: 0
                        records: 83 bytes
                            batch: base offset 0, 2 record(s), codec none, 83 bytes, producer id -1

Frame 5 (demo.pcap, packet 5)
    Time: 2023-11-14T22:13:20.000005000Z (1700000000000005000 ns)
    Connection: 10.0.0.1:50123-10.0.0.2:9092, broker -> client (response)
    Length: 13 (after the 4-byte size prefix)
    Coverage: checked
    Kafka: Produce v9 response (api key 0), correlation id 7
    Body:
        responses: 0 item(s)
        throttle_time_ms: 0
    Trailing bytes: 2 after the body's end
        000f: ca fe
    DEVIATION trailing_bytes (broker's): Produce v9 response (header v1): 2 bytes after the body's end (offset 11)

[close] 10.0.0.1:50123-10.0.0.2:9092: the client closed the connection (FIN) at 2023-11-14T22:13:20.000006000Z"""


def test_decode_prints_a_tree_per_frame_golden():
    batch = build_batch([(b"k1", b"v1"), (b"k2", b"v2")], base_offset=0)
    body = {"acks": 1, "timeout_ms": 1000, "transactional_id": None, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]}
    request = encode_request(ApiKey.PRODUCE, 9, 7, body, client_id="golden")[4:]
    response = (7).to_bytes(4, "big") + b"\x00" + b"\x01" + b"\x00\x00\x00\x00" + b"\x00"
    response += b"\xca\xfe"     # trailing bytes: a violation, shown in hex
    wire = Wire(t0=T0).handshake()
    wire.send(C, len(request).to_bytes(4, "big") + request)
    wire.send(B, len(response).to_bytes(4, "big") + response)
    wire.packet(C, wire.seq[C], 0x11)          # the client's FIN
    text = "\n".join(decode_file(pcap_bytes(wire), "demo.pcap"))
    assert text == GOLDEN


def test_decode_limits_and_filters():
    data = pcap_bytes(wire_of(["q2", "r2", "q9", "r9"]))
    lines = list(decode_file(data, "d.pcap", max_frames=1))
    assert sum(line.startswith("Frame ") for line in lines) == 1
    assert lines[-1] == "... 3 more frame(s) not shown (--max 1)"
    assert not any(line.startswith("Frame ")
                   for line in decode_file(data, "d.pcap", connection="nowhere"))


def test_decode_notes_gaps_and_keeps_going():
    wire = wire_of(["q2", "r2", "q9", "r9", "q10", "r10"], mss=40)
    lost = next(i for i, p in enumerate(wire.packets) if p.payload and p.dst_port == 9092
                and p.payload[8:12] == (9).to_bytes(4, "big"))
    del wire.packets[lost]
    text = "\n".join(decode_file(pcap_bytes(wire), "g.pcap"))
    assert "[gap] 10.0.0.1:50123-10.0.0.2:9092 client -> broker: stream bytes" in text
    assert "Coverage: unverifiable" in text
    assert "Heartbeat v4 request" not in text.split("[gap]")[0]
    assert "Metadata v12 request (api key 3), correlation id 10" in text   # after the gap


def test_decode_marks_where_a_mid_stream_capture_found_its_framing():
    wire = wire_of(["q2", "r2", "q9", "r9"], mss=40)
    # The capture starts after the first packet of response 2 (Metadata, several packets).
    started = next(i for i, p in enumerate(wire.packets) if p.payload and p.src_port == 9092)
    wire.packets[:started + 1] = []
    text = "\n".join(decode_file(pcap_bytes(wire), "m.pcap", broker_ports={9092}))
    # Each side's first frame is announced; the rest of response 2 is skipped.
    assert "[sync] 10.0.0.1:50123-10.0.0.2:9092 client -> broker: the capture started " \
           "mid-stream; the first frame boundary was found by searching (0 bytes " \
           "skipped before it)" in text
    assert "[sync] 10.0.0.1:50123-10.0.0.2:9092 broker -> client: the capture started " \
           "mid-stream; the first frame boundary was found by searching (" in text
    assert "Heartbeat v4 request (api key 12), correlation id 9" in text
    assert "Metadata" not in text and "Coverage: unverifiable" not in text


def test_decode_says_what_is_not_a_capture():
    (line,) = list(decode_file(b"hello world", "junk"))
    assert line == "junk: not a capture (neither a kafka-net capture nor a pcap/pcapng file)"


def test_decode_of_a_kncap_names_record_offsets_and_shows_violations():
    recs = [kncap_record(REQUEST, payload("q2"), "c-1", 1),
            kncap_record(RESPONSE, payload("r2"), "c-1", 2),
            kncap_record(RESPONSE, payload("r2"), "c-1", 3)]     # answered twice
    header = encode_file_header(0, 0, 1)
    data = header + b"".join(encode_record(r) for r in recs)
    text = "\n".join(decode_file(data, "s.kncap"))
    assert f"Record at byte {len(header)} of s.kncap" in text
    assert text.count("Kafka: Metadata v12 response (api key 3), correlation id 2") == 2
    assert "VIOLATION duplicate_response (broker's): correlation id 2 was answered already" in text


def test_decode_shows_an_unknown_api_in_hex():
    odd = (999).to_bytes(2, "big") + (0).to_bytes(2, "big") + (5).to_bytes(4, "big") + b"\xff"
    data = encode_file_header(0, 0, 1) + encode_record(kncap_record(REQUEST, odd, "c", 1))
    text = "\n".join(decode_file(data, "u.kncap"))
    assert "Kafka: Unknown(999) v0 request (api key 999), correlation id 5 (no schema" in text
    assert "    0000: 00 00 00 09 03 e7 00 00 00 00 00 05 ff" in text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([REQUEST, RESPONSE]), st.binary(max_size=80)),
                max_size=8))
def test_decode_never_raises_on_arbitrary_frames(frames):
    recs = [kncap_record(d, p, "c", i + 1) for i, (d, p) in enumerate(frames)]
    data = encode_file_header(0, 0, 1) + b"".join(encode_record(r) for r in recs)
    lines = list(decode_file(data, "h.kncap"))
    assert lines[0].startswith("h.kncap: kncap capture")
    assert sum(line.startswith("Record at byte") for line in lines) == len(frames)


def test_decode_shows_a_push_telemetry_payloads_metrics():
    import cramjam

    from tests.otlp_support import gauge, metrics_data, number_point, sum_metric
    otlp = metrics_data(
        gauge("org.apache.kafka.producer.node.request.latency.avg",
              number_point(0.5, {"node.id": 1})),
        sum_metric("org.apache.kafka.producer.connection.creation.total", number_point(2)),
        scope="librdkafka")
    body = {"client_instance_id": uuid.UUID(int=5), "subscription_id": 3,
            "terminating": False, "compression_type": 4,
            "metrics": bytes(cramjam.zstd.compress(otlp))}
    frames = [encode_request(ApiKey.PUSH_TELEMETRY, 0, 9, body, client_id="rdkafka")[4:],
              encode_request(ApiKey.PUSH_TELEMETRY, 0, 10, {**body, "metrics": b"\x01\x02"},
                             client_id="rdkafka")[4:]]
    data = encode_file_header(0, 0, 1) + b"".join(
        encode_record(kncap_record(REQUEST, f, "c", i + 1)) for i, f in enumerate(frames))
    text = "\n".join(decode_file(data, "t.kncap"))
    assert "metrics: " in text and ", zstd, OTLP: 2 metric(s)" in text
    assert "scope: 'librdkafka'" in text
    assert ("org.apache.kafka.producer.node.request.latency.avg (gauge) {node.id=1} = 0.5"
            in text)
    assert ("org.apache.kafka.producer.connection.creation.total (sum, delta, monotonic) = 2"
            in text)
    assert "metrics: 2 bytes, zstd: not OTLP metrics (cannot decompress" in text
