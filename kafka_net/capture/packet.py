"""One captured record's link, network and transport headers to a TCP
:class:`Packet`, sans-IO (the decoding half of :mod:`.pcap`, which reads the
file formats).

* **Link layers**: Ethernet (1, with any number of 802.1Q / 802.1ad VLAN
  tags), Linux cooked capture SLL (113) and SLL2 (276), BSD loopback NULL (0)
  and OpenBSD LOOP (108), raw IP (101, and 228 / 229 for IPv4 / IPv6 only).
* **Network**: IPv4 (with options) and IPv6 (extension headers skipped).
  Fragments are reassembled (:mod:`.ip_fragments`): the TCP segment is
  decoded when its datagram's last missing fragment arrives; datagrams never
  completed are reported as a problem (their bytes are a gap in the TCP
  stream).  Only TCP is kept; UDP, ICMP, ARP and the rest are counted and
  ignored.

Lengths: the IP header says how long the TCP payload really was
(:attr:`Packet.payload_len`); a capture's snap length may have kept fewer
bytes (``len(payload)``); :attr:`Packet.truncated` says so.  Ethernet
padding and trailing FCS bytes are cut off by the same IP length.

Per-packet problems (fragments, malformed or cut headers, unsupported link
types) are counted and reported once per kind by :meth:`PacketDecoder.summarise`.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

from kafka_net.capture.ip_fragments import FragmentReassembler
from kafka_net.protocol import readable

# TCP flags (the low byte of the flags field).
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

# Link-layer header types (https://www.tcpdump.org/linktypes.html).
LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP = 0, 1, 101, 108
LINKTYPE_LINUX_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2 = 113, 228, 229, 276
SUPPORTED_LINK_TYPES = frozenset({
    LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP, LINKTYPE_LINUX_SLL,
    LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2})

_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_ETH_VLAN = frozenset({0x8100, 0x88A8, 0x9100})
_IPPROTO_TCP = 6
# IPv6 extension headers with the generic (next header, length in 8-octet
# units beyond the first 8) layout; 44 (fragment) and 51 (AH) are special.
_IPV6_GENERIC_EXT = frozenset({0, 43, 60, 135, 139, 140, 253, 254})

_U16 = struct.Struct(">H")
_TCP = struct.Struct(">HHIIBB")   # ports, seq, ack, data offset, flags
_IPV4_FIXED = struct.Struct(">BBHHHBB")  # vhl, tos, total len, id, frag, ttl, proto
# The common case in one unpack: Ethernet (no VLAN tag), IPv4 without options,
# TCP: ethertype; vhl, total length, fragment field, protocol, addresses; ports,
# seq, ack, data offset, flags.
_ETH_IPV4_TCP = struct.Struct(">12xH B1xH2xH1xB2x4s4s HHIIBB")
_ETH_IPV4_TCP_MIN = 14 + 20 + 14
# The switch to the reference path alone (False: every packet goes the general
# way; KAFKA_NET_READABLE sets it so); tests compare the two on arbitrary records.
FAST_PATH = not readable.READABLE


@dataclass(frozen=True, slots=True)
class Packet:
    """One TCP segment found in a capture."""

    timestamp_ns: int
    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    seq: int
    ack: int
    flags: int           # TCP flags byte: FIN SYN RST PSH ACK ...
    payload: bytes       # the TCP payload bytes the capture kept
    payload_len: int     # the TCP payload's length on the wire (>= len(payload))
    record: int = -1     # index of the packet record in its file (for messages)
    file: str = ""       # that file, when packets of several files are reassembled
    # Where the payload starts in the bytes the decoder read (-1: put together
    # from IP fragments): the conformance job ships this offset, not the bytes.
    payload_at: int = field(default=-1, compare=False)

    @property
    def truncated(self) -> bool:
        """The capture's snap length cut part of the payload off."""
        return self.payload_len > len(self.payload)

    @property
    def syn(self) -> bool:
        return bool(self.flags & SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & RST)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & ACK)


@dataclass
class CaptureRead:
    """Everything :func:`kafka_net.capture.pcap.read_capture` found in one file:
    the packets the :class:`PacketDecoder` made of its records, and what it met."""

    format: str | None                       # "pcap", "pcapng" or None
    packets: list[Packet] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    records: int = 0                         # packet records read
    non_tcp: int = 0                         # records that were not TCP over IP
    link_types: set[int] = field(default_factory=set)


class PacketDecoder:
    """Decodes one record's bytes (link layer down to TCP) into a :class:`Packet`."""

    def __init__(self, data: bytes, result: CaptureRead) -> None:
        self.data = data
        self.result = result
        self.out = result.packets
        self.fragments = FragmentReassembler()
        self.addr_cache: dict[bytes, str] = {}
        self.unsupported: dict[int, int] = {}
        self.counts: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def summarise(self) -> None:
        problems = self.result.problems
        for linktype, n in sorted(self.unsupported.items()):
            problems.append(f"unsupported link type {linktype} ({n} packets skipped)")
        if self.fragments.incomplete:
            problems.append(f"{self.fragments.incomplete} fragmented IP datagrams never "
                            f"completed (a fragment is missing from the capture)")
        messages = {
            "malformed": "malformed IP/TCP headers skipped",
            "cut_header": "packets cut by the snap length before the end of their TCP "
                          "header skipped",
        }
        for key, text in messages.items():
            if self.counts.get(key):
                problems.append(f"{self.counts[key]} {text}")

    def _addr(self, raw: bytes) -> str:
        text = self.addr_cache.get(raw)
        if text is None:
            if len(raw) == 4:
                text = f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}"
            else:
                text = ipaddress.IPv6Address(raw).compressed
            self.addr_cache[raw] = text
        return text

    def decode(self, linktype: int, start: int, end: int, wire_len: int, ts: int,
               index: int) -> None:
        """Decode record bytes ``data[start:end]`` (``wire_len`` bytes on the wire)."""
        data = self.data
        self.result.link_types.add(linktype)
        if (linktype == LINKTYPE_ETHERNET and end - start >= _ETH_IPV4_TCP_MIN and FAST_PATH
                and self._eth_ipv4_tcp(start, end, ts, index)):
            return
        version = 0          # 4, 6, or 0 = look at the IP version nibble
        if linktype == LINKTYPE_ETHERNET:
            p = start + 12
            if p + 2 > end:
                self.result.non_tcp += 1
                return
            etype = _U16.unpack_from(data, p)[0]
            p += 2
            while etype in _ETH_VLAN:
                if p + 4 > end:
                    self.result.non_tcp += 1
                    return
                etype = _U16.unpack_from(data, p + 2)[0]
                p += 4
            if etype == _ETH_IPV4:
                version = 4
            elif etype == _ETH_IPV6:
                version = 6
            else:
                self.result.non_tcp += 1
                return
        elif linktype == LINKTYPE_LINUX_SLL or linktype == LINKTYPE_LINUX_SLL2:
            hdr = 16 if linktype == LINKTYPE_LINUX_SLL else 20
            if start + hdr > end:
                self.result.non_tcp += 1
                return
            proto_at = start + 14 if linktype == LINKTYPE_LINUX_SLL else start
            etype = _U16.unpack_from(data, proto_at)[0]
            if etype == _ETH_IPV4:
                version = 4
            elif etype == _ETH_IPV6:
                version = 6
            else:
                self.result.non_tcp += 1
                return
            p = start + hdr
        elif linktype == LINKTYPE_NULL or linktype == LINKTYPE_LOOP:
            # A 4-byte address family (host byte order for NULL, network order for
            # LOOP; the values differ between systems): the IP version nibble decides.
            p = start + 4
        elif linktype == LINKTYPE_RAW:
            p = start
        elif linktype == LINKTYPE_IPV4:
            p, version = start, 4
        elif linktype == LINKTYPE_IPV6:
            p, version = start, 6
        else:
            self.unsupported[linktype] = self.unsupported.get(linktype, 0) + 1
            return
        if p >= end:
            self.result.non_tcp += 1
            return
        nibble = data[p] >> 4
        if version == 0:
            version = nibble
        if version != nibble or version not in (4, 6):
            self.result.non_tcp += 1
            return
        wire_ip_len = wire_len - (p - start)
        if version == 4:
            self._ipv4(p, end, wire_ip_len, ts, index)
        else:
            self._ipv6(p, end, wire_ip_len, ts, index)

    def _eth_ipv4_tcp(self, start: int, end: int, ts: int, index: int) -> bool:
        """The packet :meth:`decode` would make of an Ethernet frame holding IPv4
        without options (not a fragment, its length known) and TCP, in one unpack
        (most packets of a capture; a faster path, no other result): False, and
        nothing done, for any other packet.  The general path below is the
        reference: a packet taken here must decode the same there."""
        (etype, vhl, total, frag, proto, src, dst, sport, dport, seq, ack, doff,
         flags) = _ETH_IPV4_TCP.unpack_from(self.data, start)
        if etype != _ETH_IPV4 or vhl != 0x45 or proto != _IPPROTO_TCP or frag & 0x3FFF \
                or total < 20:
            return False
        t = start + 34
        thl = (doff >> 4) * 4
        ip_end = start + 14 + total
        payload_len = ip_end - t - thl
        if thl < 20 or payload_len < 0:
            return False
        pstart = t + thl
        pend = min(ip_end, end)
        payload = self.data[pstart:pend] if pend > pstart else b""
        addr = self.addr_cache
        self.out.append(Packet(ts, addr.get(src) or self._addr(src), sport,
                               addr.get(dst) or self._addr(dst), dport, seq, ack, flags,
                               payload, payload_len, index, "", pstart))
        return True

    def _ipv4(self, p: int, end: int, wire_ip_len: int, ts: int, index: int) -> None:
        data = self.data
        if p + 20 > end:
            self._count("cut_header")
            return
        vhl, _tos, total, ident, frag, _ttl, proto = _IPV4_FIXED.unpack_from(data, p)
        ihl = (vhl & 0x0F) * 4
        if ihl < 20:
            self._count("malformed")
            return
        if proto != _IPPROTO_TCP:
            self.result.non_tcp += 1
            return
        ip_len = total if total >= ihl else wire_ip_len   # 0: TSO, length unknown
        if frag & 0x3FFF:    # an offset, or more fragments: part of a datagram
            key = (data[p + 12:p + 20], ident, proto)
            self._fragment(key, (frag & 0x1FFF) * 8, bool(frag & 0x2000), p + ihl,
                           p + ip_len, end, data[p + 12:p + 16], data[p + 16:p + 20], ts,
                           index)
            return
        self._tcp(p + ihl, p + ip_len, end, data[p + 12:p + 16], data[p + 16:p + 20], ts,
                  index)

    def _ipv6(self, p: int, end: int, wire_ip_len: int, ts: int, index: int) -> None:
        data = self.data
        if p + 40 > end:
            self._count("cut_header")
            return
        plen = _U16.unpack_from(data, p + 4)[0]
        nh = data[p + 6]
        ip_end = p + 40 + plen if plen else p + wire_ip_len   # 0: jumbogram
        q = p + 40
        while True:
            if nh == _IPPROTO_TCP:
                break
            if nh in _IPV6_GENERIC_EXT or nh == 51 or nh == 44:
                if q + 8 > end:
                    self._count("cut_header")
                    return
                if nh == 44:
                    off_m = _U16.unpack_from(data, q + 2)[0]
                    if data[q] != _IPPROTO_TCP:
                        self.result.non_tcp += 1
                        return
                    key = (data[p + 8:p + 40], data[q + 4:q + 8])
                    self._fragment(key, off_m & 0xFFF8, bool(off_m & 1), q + 8, ip_end, end,
                                   data[p + 8:p + 24], data[p + 24:p + 40], ts, index)
                    return
                elif nh == 51:
                    hlen = (data[q + 1] + 2) * 4
                else:
                    hlen = (data[q + 1] + 1) * 8
                nh = data[q]
                q += hlen
                continue
            self.result.non_tcp += 1   # UDP, ICMPv6, ESP, no next header ...
            return
        self._tcp(q, ip_end, end, data[p + 8:p + 24], data[p + 24:p + 40], ts, index)

    def _fragment(self, key: tuple, offset: int, more: bool, start: int, ip_end: int,
                  cap_end: int, src: bytes, dst: bytes, ts: int, index: int) -> None:
        """One fragment of a datagram carrying TCP (the bytes [start, ip_end) of
        the record, captured up to cap_end); decode the segment once complete."""
        whole = self.fragments.add(key, offset, more, ip_end - start,
                                   self.data[start:min(ip_end, cap_end)])
        if whole is not None:
            self._tcp(0, whole.wire_len, len(whole.payload), src, dst, ts, index,
                      whole.payload)

    def _tcp(self, t: int, ip_end: int, cap_end: int, src: bytes, dst: bytes, ts: int,
             index: int, data: bytes | None = None) -> None:
        data = self.data if data is None else data
        if t + 14 > cap_end:
            self._count("cut_header")
            return
        sport, dport, seq, ack, doff, flags = _TCP.unpack_from(data, t)
        thl = (doff >> 4) * 4
        payload_len = ip_end - t - thl
        if thl < 20 or payload_len < 0:
            self._count("malformed")
            return
        pstart = t + thl
        pend = min(ip_end, cap_end)
        payload = data[pstart:pend] if pend > pstart else b""
        self.out.append(Packet(ts, self._addr(src), sport, self._addr(dst), dport, seq, ack,
                               flags, payload, payload_len, index, "",
                               pstart if data is self.data else -1))
