"""pcap / pcapng reading: synthetic files built byte by byte (the builders are
in tests/capture/packets.py, shared with test_tcp.py and the Spark tests).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.capture.pcap import (
    ACK, FIN, PSH, RST, SYN, Packet, read_capture, read_packets, sniff_format)
from tests.capture.packets import (
    ethernet, ip_packet, ipv4, ipv6, link_frame, pcap_file, pcapng_block, pcapng_epb,
    pcapng_file, pcapng_idb, pcapng_shb, tcp_header)

A, B = "10.0.0.1", "10.0.0.2"
A6, B6 = "2001:db8::1", "2001:db8::2"


def _one(ts=1_500_000_000_123_456_000, payload=b"hello", flags=PSH | ACK, src=A, dst=B):
    return ts, ip_packet(src, 40000, dst, 9092, 1000, 2000, flags, payload)


def test_sniff_format():
    assert sniff_format(b"KNCAP\x01") is None   # the reader's to tell (reader.sniff)
    assert sniff_format(pcap_file([])) == "pcap"
    assert sniff_format(pcap_file([], endian=">", nano=True)) == "pcap"
    assert sniff_format(pcapng_shb()) == "pcapng"
    assert sniff_format(pcapng_shb(">")) == "pcapng"
    assert sniff_format(b"") is None
    assert sniff_format(b"GET / HTTP/1.1\r\n") is None


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_classic_pcap_both_byte_orders_and_resolutions(endian, nano):
    ts, ip = _one()
    data = pcap_file([(ts, ethernet(ip))], endian=endian, nano=nano)
    packets, problems = read_packets(data)
    assert problems == []
    assert packets == [Packet(ts, A, 40000, B, 9092, 1000, 2000, PSH | ACK, b"hello", 5, 0)]
    assert not packets[0].truncated


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcapng_both_byte_orders(endian):
    ts, ip = _one()
    data = pcapng_file([(ts, ethernet(ip))], endian=endian)
    packets, problems = read_packets(data)
    assert problems == []
    assert [(p.timestamp_ns, p.payload, p.src_ip, p.dst_port) for p in packets] == [
        (ts, b"hello", A, 9092)]


def test_pcapng_tsresol_tsoffset_interfaces_sections_and_other_blocks():
    _, ip = _one()
    sll = link_frame(113, ip)
    raw = link_frame(101, ip)
    data = b"".join([
        pcapng_shb("<"),
        pcapng_idb(1, "<", tsresol=9),                  # ns
        pcapng_idb(113, "<", tsresol=0x80 | 10),        # 2**-10 s
        pcapng_idb(101, "<", tsoffset=100),             # us, +100 s
        pcapng_block(4, b"\x00\x00\x00\x00"),           # name resolution: skipped
        pcapng_epb(1_234_567_891, ethernet(ip), 0),
        pcapng_epb(3 * 1024 + 512, sll, 1),
        pcapng_epb(5_000_000, raw, 2),
        pcapng_block(5, b"\x00" * 12),                  # interface statistics: skipped
        pcapng_block(0x40000BAD, b"\x00" * 8),          # custom: skipped
        # A second section, big-endian, with its own interface numbering.
        pcapng_shb(">"),
        pcapng_idb(229, ">", tsresol=3),                # ms
        pcapng_epb(7, link_frame(229, ip_packet(A6, 1, B6, 9092, 5, 6, ACK, b"v6")), 0, ">"),
        # An obsolete Packet Block (type 2) with a 16-bit interface id.
        pcapng_block(2, struct.pack(">HHIIII", 0, 0, 0, 8, len(raw := link_frame(229, ip_packet(
            A6, 1, B6, 9092, 7, 6, ACK, b"opb"))), len(raw)) + raw, ">"),
        # A Simple Packet Block: no timestamp, so the one before it is reused.
        pcapng_block(3, struct.pack(">I", len(raw2 := link_frame(229, ip_packet(
            A6, 1, B6, 9092, 10, 6, ACK, b"spb")))) + raw2, ">"),
    ])
    packets, problems = read_packets(data)
    assert problems == []
    assert [p.timestamp_ns for p in packets] == [
        1_234_567_891, 3_500_000_000, 105_000_000_000, 7_000_000, 8_000_000, 8_000_000]
    assert [p.payload for p in packets] == [b"hello"] * 3 + [b"v6", b"opb", b"spb"]
    assert packets[3].src_ip == A6


@pytest.mark.parametrize("linktype,family", [
    (lt, fam) for lt in (0, 1, 101, 108, 113, 228, 229, 276) for fam in (4, 6)
    if (lt, fam) not in ((228, 6), (229, 4))])   # 228 / 229: one IP version only
def test_each_link_type(linktype, family):
    src, dst = (A, B) if family == 4 else (A6, B6)
    ip = ip_packet(src, 40000, dst, 9092, 1, 2, PSH | ACK, b"kafka")
    for data in (pcap_file([(1000, link_frame(linktype, ip))], linktype),
                 pcapng_file([(1000, link_frame(linktype, ip))], linktype)):
        packets, problems = read_packets(data)
        assert problems == []
        assert [(p.src_ip, p.dst_ip, p.payload) for p in packets] == [(src, dst, b"kafka")]


def test_null_link_type_in_big_endian_host_order():
    ip = ip_packet(A, 1, B, 2, 0, 0, ACK, b"x")
    packets, _ = read_packets(pcap_file([(0, struct.pack(">I", 2) + ip)], 0))
    assert [p.payload for p in packets] == [b"x"]


def test_vlan_tags_ip_options_and_tcp_options():
    tcp = tcp_header(1, 2, 3, 4, ACK, options=b"\x01\x01\x08\x0a" + b"\x00" * 8) + b"data"
    ip = ipv4(A, B, tcp, options=b"\x01\x01\x01\x00")      # NOPs + end of options
    frames = [ethernet(ip, vlans=(100,)), ethernet(ip, vlans=(100, 200))]
    packets, problems = read_packets(pcap_file([(0, f) for f in frames]))
    assert problems == []
    assert [p.payload for p in packets] == [b"data", b"data"]


def test_ipv6_extension_headers_are_skipped():
    hop = b"\x00" + b"\x01\x04\x00\x00\x00\x00"           # len 0 (8 bytes), PadN
    dest = b"\x00" + b"\x01\x04\x00\x00\x00\x00"
    tcp = tcp_header(1, 2, 3, 4, ACK) + b"through"
    ip = ipv6(A6, B6, tcp, ext=[(0, hop), (60, dest)])
    packets, problems = read_packets(pcap_file([(0, ethernet(ip))]))
    assert problems == [] and [p.payload for p in packets] == [b"through"]


def test_non_tcp_is_skipped_quietly():
    udp = ipv4(A, B, b"\x00\x35\x00\x35\x00\x0c\x00\x00abcd", proto=17)
    arp = ethernet(b"\x00" * 28, ethertype=0x0806)
    udp6 = ipv6(A6, B6, b"\x00" * 12, next_header=17)
    result = read_capture(pcap_file([(0, ethernet(udp)), (1, arp), (2, ethernet(udp6))]))
    assert result.packets == [] and result.problems == []
    assert result.records == 3 and result.non_tcp == 3


def test_ipv4_fragments_are_reassembled_in_any_order():
    tcp = tcp_header(1, 2, 3, 4, ACK) + b"first part, then the " + b"second part"
    head, tail = tcp[:40], tcp[40:]                        # fragments: 8-byte units
    first = ipv4(A, B, head, frag=0x2000)                  # MF, offset 0
    later = ipv4(A, B, tail, frag=5)                       # offset 40, last
    for order in ([first, later], [later, first]):
        packets, problems = read_packets(pcap_file(
            [(i * 10**9, ethernet(ip)) for i, ip in enumerate(order)]))
        assert problems == []
        (p,) = packets
        assert p.payload == b"first part, then the second part" and not p.truncated
        assert p.timestamp_ns == 1_000_000_000   # when the datagram was complete


def test_ipv6_fragments_are_reassembled():
    tcp = tcp_header(1, 2, 3, 4, ACK) + b"sixteen bytes ok" * 2
    first = ipv6(A6, B6, tcp[:24], ext=[(44, struct.pack(">BHI", 0, (0 << 3) | 1, 7))])
    last = ipv6(A6, B6, tcp[24:], ext=[(44, struct.pack(">BHI", 0, 3 << 3, 7))])  # 24 bytes
    packets, problems = read_packets(pcap_file([(0, ethernet(first)), (1, ethernet(last))]))
    assert problems == [] and [p.payload for p in packets] == [b"sixteen bytes ok" * 2]


def test_a_datagram_missing_a_fragment_is_reported_not_guessed():
    tcp = tcp_header(1, 2, 3, 4, ACK) + b"x" * 60
    first = ipv4(A, B, tcp[:40], frag=0x2000)
    packets, problems = read_packets(pcap_file([(0, ethernet(first))]))
    assert packets == []
    assert any("1 fragmented IP datagrams never completed" in p for p in problems)


def test_snaplen_truncation_is_marked():
    payload = bytes(range(200))
    ip = ip_packet(A, 1, B, 2, 0, 0, ACK, payload)
    frame = ethernet(ip)
    data = pcap_file([(0, frame, len(frame))], snaplen=14 + 20 + 20 + 50)
    (packet,), problems = read_packets(data)
    assert problems == []
    assert packet.payload == payload[:50] and packet.payload_len == 200 and packet.truncated


def test_snaplen_cutting_the_tcp_header_keeps_the_lengths():
    ip = ipv4(A, B, tcp_header(1, 2, 77, 0, ACK, options=b"\x01" * 12) + b"x" * 100)
    (packet,), _ = read_packets(pcap_file([(0, ethernet(ip), 14 + len(ip))],
                                          snaplen=14 + 20 + 20))
    assert packet.seq == 77 and packet.payload == b"" and packet.payload_len == 100


def test_ethernet_padding_and_tso_zero_length():
    short = ethernet(ip_packet(A, 1, B, 2, 0, 0, ACK, b"ab")) + b"\x00" * 10   # padded
    tso_ip = bytearray(ip_packet(A, 1, B, 2, 0, 0, ACK, b"z" * 3000))
    tso_ip[2:4] = b"\x00\x00"                                # total length 0 (TSO)
    packets, problems = read_packets(pcap_file([(0, short), (1, ethernet(bytes(tso_ip)))]))
    assert problems == []
    assert [p.payload for p in packets] == [b"ab", b"z" * 3000]


@pytest.mark.parametrize("data,expected", [
    (b"", "not a pcap or pcapng file (empty file)"),
    (b"\x00" * 100, "not a pcap or pcapng file"),
    (b"KNCAP\x01" + b"\x00" * 20, "not a pcap or pcapng file (unknown magic 4b4e4341)"),
    (pcap_file([])[:10], "truncated pcap file header"),
    (pcapng_shb()[:20], "truncated block at byte 0"),
])
def test_bad_files_give_problems(data, expected):
    packets, problems = read_packets(data)
    assert packets == []
    assert len(problems) == 1 and problems[0].startswith(expected)


def test_truncated_record_keeps_what_came_before():
    _, ip = _one()
    data = pcap_file([(1, ethernet(ip)), (2, ethernet(ip))])
    packets, problems = read_packets(data[:-5])
    assert len(packets) == 1
    second = 24 + 16 + len(ethernet(ip))
    assert problems == [f"truncated packet record at byte {second} "
                        f"({len(ethernet(ip)) - 5} of {len(ethernet(ip))} bytes)"]
    packets, problems = read_packets(data[:second + 7])
    assert len(packets) == 1 and problems[0].startswith(
        f"truncated packet record at byte {second}")


def test_pcapng_corruption_and_unsupported_link_type():
    _, ip = _one()
    good = pcapng_file([(1000, ethernet(ip))])
    bad_trailer = good[:-4] + b"\xff\xff\xff\x7f"
    packets, problems = read_packets(bad_trailer)
    assert packets == [] and "trailing length does not match" in problems[0]
    packets, problems = read_packets(good[:-3])
    assert packets == [] and problems[0].startswith("truncated block at byte")
    bad_byte_order = b"\x0a\x0d\x0d\x0a" + b"\x1c\x00\x00\x00" + b"\x00" * 20
    assert read_packets(bad_byte_order)[1][0].startswith("not a pcap or pcapng file")
    weird = pcap_file([(0, b"\x00" * 40)] * 3, linktype=147)
    packets, problems = read_packets(weird)
    assert packets == [] and problems == ["unsupported link type 147 (3 packets skipped)"]
    undescribed = pcapng_shb() + pcapng_epb(0, ethernet(ip), iface=3)
    packets, problems = read_packets(undescribed)
    assert packets == [] and "interface 3" in problems[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data):
    for prefix in (b"", pcap_file([])[:24], pcap_file([], endian=">", nano=True)[:24],
                   pcapng_shb(), pcapng_shb(">") + pcapng_idb(1, ">")):
        packets, problems = read_packets(prefix + data)
        assert isinstance(packets, list) and isinstance(problems, list)
        assert all(isinstance(p, str) and "internal error" not in p for p in problems)


_VALID = [
    pcap_file([(i, ethernet(ip_packet(A, 1, B, 2, i, 0, ACK, b"payload" * i)))
               for i in range(4)]),
    pcapng_file([(i * 1000, link_frame(276, ip_packet(A6, 1, B6, 2, i, 0, ACK, b"p" * i)))
                 for i in range(4)], 276, ">"),
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_VALID), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                          max_size=8), st.integers(0, 10_000))
def test_mutated_files_never_raise(base, flips, cut):
    data = bytearray(base)
    for at, value in flips:
        data[at % len(data)] = value
    packets, problems = read_packets(bytes(data[:cut]))
    assert isinstance(packets, list)
    assert all(isinstance(p, str) and "internal error" not in p for p in problems)


def test_flags_helpers():
    p = Packet(0, A, 1, B, 2, 0, 0, SYN | ACK | FIN | RST, b"", 0)
    assert p.syn and p.has_ack and p.fin and p.rst and not p.truncated


# -- the common packet's fast path (PacketDecoder._eth_ipv4_tcp) against the general one ----

# Half the records the common kind (the fast path's), half any other.
_COMMON = st.fixed_dictionaries({"vhl": st.just(0x45), "frag": st.sampled_from([0, 0x4000]),
                                 "proto": st.just(6), "ethertype": st.just(0x0800)})
_OTHER = st.fixed_dictionaries({
    "vhl": st.sampled_from([0x45, 0x46, 0x44, 0x55, 0x4F]),           # options, bad
    "frag": st.sampled_from([0, 0x4000, 0x2000, 0x0001, 0x2001]),     # DF, MF, offsets
    "proto": st.sampled_from([6, 17]), "ethertype": st.sampled_from([0x0800, 0x86DD, 0x8100])})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.one_of(_COMMON, _OTHER), doff=st.integers(0, 15),
       payload=st.binary(max_size=64), total_delta=st.integers(-70, 10),
       cut=st.integers(0, 80))
def test_the_fast_path_decodes_as_the_general_path(head, doff, payload, total_delta, cut):
    """Any Ethernet record, well formed or not, cut by the snap length or not: the
    same packets, problems and counts with the fast path as without it."""
    from kafka_net.capture import packet
    tcp = struct.pack(">HHIIBBHHH", 50000, 9092, 7, 9, doff << 4, 0x18, 65535, 0, 0)
    body = b"\x01" * (max(0, (head["vhl"] & 0x0F) * 4 - 20)) + tcp + payload
    ip = struct.pack(">BBHHHBBH4s4s", head["vhl"], 0, max(0, 20 + len(body) + total_delta),
                     1, head["frag"], 64, head["proto"], 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2])) + body
    frame = (b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
             + struct.pack(">H", head["ethertype"]) + ip)
    data = pcap_file([(1_000, frame[:len(frame) - cut] if cut < len(frame) else frame[:1],
                       len(frame))])
    fast = read_capture(data)
    packet.FAST_PATH = False
    try:
        general = read_capture(data)
    finally:
        packet.FAST_PATH = True
    assert fast.packets == general.packets
    assert [p.payload_at for p in fast.packets] == [p.payload_at for p in general.packets]
    assert (fast.problems, fast.records, fast.non_tcp) == \
        (general.problems, general.records, general.non_tcp)
