"""The compiled pcap record loop (kafka_net/capture/_pcap_loop.pyx) against its
readable reference (pcap._read_pcap with PacketDecoder): the same packets,
payload offsets, problems and counts on generated and damaged captures, whole
or read from a range, and the extension is built (a missing build fails here,
it is never skipped)."""

from __future__ import annotations

import struct
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.capture import _pcap_loop, packet, pcap
from kafka_net.capture.pcap import Cuts, PacketDecoder, CaptureRead, read_capture, walk_records
from tests.capture.packets import ethernet, ip_packet, ipv4, link_frame, pcap_file, tcp_header


@contextmanager
def _loop(compiled: bool, fast: bool = True):
    """Read with the compiled loop, or with the reference loop (with or without the
    decoder's one-unpack path), whatever KAFKA_NET_READABLE chose at import."""
    saved = pcap._pcap_loop, packet.FAST_PATH
    pcap._pcap_loop = _pcap_loop if compiled else None
    packet.FAST_PATH = fast
    try:
        yield
    finally:
        pcap._pcap_loop, packet.FAST_PATH = saved


def _read(data: bytes, compiled: bool, fast: bool = True, **kw) -> CaptureRead:
    with _loop(compiled, fast):
        return read_capture(data, **kw)


def _same(data: bytes, **kw) -> CaptureRead:
    """Compiled, reference with the one-unpack path, and the reference alone agree."""
    got = _read(data, True, **kw)
    for fast in (True, False):
        ref = _read(data, False, fast, **kw)
        assert got.packets == ref.packets
        assert [p.payload_at for p in got.packets] == [p.payload_at for p in ref.packets]
        assert [type(p.timestamp_ns) for p in got.packets] == [int] * len(got.packets)
        assert (got.format, got.problems, got.records, got.non_tcp, got.link_types) == (
            ref.format, ref.problems, ref.records, ref.non_tcp, ref.link_types)
    return got


def _modified(data: bytes) -> bytes:
    """A classic little-endian pcap rewritten as the "modified" format (24-byte
    record headers: ifindex, protocol, type, padding after the usual 16)."""
    out = [b"\x34\xcd\xb2\xa1" + data[4:24]]
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from("<I", data, pos + 8)[0]
        out.append(data[pos:pos + 16] + b"\x00" * 8 + data[pos + 16:pos + 16 + incl])
        pos += 16 + incl
    return b"".join(out)


def test_the_compiled_loop_is_built_and_chosen():
    assert _pcap_loop.read_pcap is not None
    # KAFKA_NET_READABLE selects the reference loop at import; otherwise the compiled one.
    assert (pcap._pcap_loop is None) == (not packet.FAST_PATH)


# One record of each kind the loop meets: the common packet, and what goes to
# PacketDecoder.decode (VLAN, IPv6, options, fragments, UDP, cut headers, bad lengths).
_A, _B, _A6 = "10.0.0.1", "10.0.0.2", "2001:db8::1"
_RECORD = st.one_of(
    st.builds(lambda p, s, f: ethernet(ip_packet(_A, 40000, _B, 9092, s, 7, f, p)),
              st.binary(max_size=40), st.integers(0, 2**32 - 1), st.integers(0, 255)),
    st.builds(lambda p: ethernet(ip_packet(_A, 1, _B, 2, 3, 4, 0x18, p), vlans=(5,)),
              st.binary(max_size=8)),
    st.builds(lambda p: ethernet(ip_packet(_A6, 1, "2001:db8::2", 2, 3, 4, 0x18, p)),
              st.binary(max_size=8)),
    st.builds(lambda p, o: ethernet(ipv4(_A, _B, tcp_header(1, 2, 3, 4, 0x10) + p,
                                         options=o)),
              st.binary(max_size=8), st.binary(min_size=1, max_size=8)),
    st.builds(lambda p, frag: ethernet(ipv4(_A, _B, tcp_header(1, 2, 3, 4, 0x10) + p,
                                            frag=frag, ident=9)),
              st.binary(max_size=16), st.sampled_from([0x2000, 0x0002, 0x4000])),
    st.builds(lambda p: ethernet(ipv4(_A, _B, p, proto=17)), st.binary(max_size=8)),
    st.builds(lambda p, total: ethernet(ipv4(_A, _B, tcp_header(1, 2, 3, 4, 0x10) + p,
                                             total_len=total)),
              st.binary(max_size=8), st.integers(0, 80)),
    st.binary(max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.tuples(st.integers(0, 2**32 - 1), _RECORD, st.integers(0, 70),
                                  st.integers(0, 30)), max_size=12),
       endian=st.sampled_from("<>"), nano=st.booleans(), modified=st.booleans(),
       linktype=st.sampled_from([1, 1, 1, 101, 113]))
def test_generated_captures_read_the_same(records, endian, nano, modified, linktype):
    """Any mix of records, some cut by the snap length (``cut`` bytes off, the
    original length kept), any timestamps, both byte orders and resolutions."""
    recs = [(sec * 1_000_000_000 + 999_999_999, frame[:max(0, len(frame) - cut)],
             len(frame) + extra) for sec, frame, cut, extra in records]
    data = pcap_file(recs, linktype=linktype, endian=endian, nano=nano)
    if modified and endian == "<":
        data = _modified(data)
    _same(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.tuples(st.integers(0, 2**31), _RECORD), min_size=1, max_size=8),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8),
       cut=st.integers(0, 2_000))
def test_damaged_captures_read_the_same(records, flips, cut):
    """Bytes overwritten anywhere (record headers too: huge or cut lengths) and the
    file cut short: the same packets and the same problems."""
    data = bytearray(pcap_file([(ts, frame) for ts, frame in records]))
    for at, value in flips:
        data[at % len(data)] = value
    _same(bytes(data[:cut]))


def test_a_range_reads_the_same_as_the_reference():
    """Ranges of a file (capture_split's cuts, walked by the reference): each read
    from its resume point, with file offsets in the problems."""
    frames = [ethernet(ip_packet(_A, 40000, _B, 9092, 1000 + 10 * i, 7, 0x18, b"k" * (i % 50)))
              for i in range(300)]
    data = pcap_file([(i * 1000, f) for i, f in enumerate(frames)])[:-7]   # a cut tail
    cuts = Cuts(1500)
    walk_records(data, PacketDecoder(data, CaptureRead("pcap")), CaptureRead("pcap"),
                 cuts=cuts)
    assert len(cuts.at) > 5
    bounds = [24] + [pos for pos, _ in cuts.at] + [len(data)]
    states = [None] + [state for _, state in cuts.at]
    whole = _same(data)
    pieces = []
    for i, state in enumerate(states):
        if state is None:
            got = _same(data[:bounds[1]])
        else:
            got = _same(data[bounds[i]:], resume=state, base=bounds[i],
                        stop=bounds[i + 1] - bounds[i])
        pieces += got.packets
    assert [(p.record, p.payload) for p in pieces] == [(p.record, p.payload)
                                                      for p in whole.packets]


def test_cuts_are_taken_where_the_reference_takes_them():
    """A PacketDecoder given to walk_records with cuts: the compiled loop notes the
    same offsets and reader states as the reference."""
    data = pcap_file([(i, link_frame(1, ip_packet(_A, 1, _B, 2, i, 0, 0x18, b"x" * i)))
                      for i in range(200)])
    taken = []
    for compiled in (True, False):
        cuts = Cuts(1000)
        with _loop(compiled):
            walk_records(data, PacketDecoder(data, CaptureRead("pcap")), CaptureRead("pcap"),
                         cuts=cuts)
        taken.append([(pos, state.to_json()) for pos, state in cuts.at])
    assert taken[0] == taken[1] and len(taken[0]) > 10
