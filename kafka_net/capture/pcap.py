"""pcap and pcapng files to TCP packets, sans-IO: bytes in, packets out.

The conformance jobs read captures of *any* Kafka broker's traffic, taken
with tcpdump, tshark, dumpcap and friends.  This module turns one such file
(given as bytes) into the TCP segments it holds; :mod:`.tcp` reassembles them
into Kafka frames.

What is understood
------------------
* **File formats**: classic pcap in both byte orders, with microsecond
  (``0xa1b2c3d4``) or nanosecond (``0xa1b23c4d``) timestamps, and the old
  "modified" pcap (``0xa1b2cd34``, 24-byte record headers); pcapng with
  sections of either byte order (several sections per file, each with its own
  interfaces), Interface Description Blocks (per-interface link type,
  ``if_tsresol`` and ``if_tsoffset``), Enhanced, Simple and (obsolete) Packet
  Blocks.  Other blocks (name resolution, statistics, secrets, custom) are
  skipped.  A Simple Packet Block has no timestamp: it gets the timestamp of
  the packet before it.
* **Link layers**: Ethernet (1, with any number of 802.1Q / 802.1ad VLAN
  tags), Linux cooked capture SLL (113) and SLL2 (276), BSD loopback NULL (0)
  and OpenBSD LOOP (108), raw IP (101, and 228 / 229 for IPv4 / IPv6 only).
* **Network**: IPv4 (with options) and IPv6 (extension headers skipped).
  Fragments are not reassembled: a first fragment is kept (its TCP stream
  then shows a gap where the other fragments' bytes were), later fragments
  are skipped, and both are reported as problems.  Only TCP is kept;
  UDP, ICMP, ARP and the rest are counted and ignored.

Lengths: the IP header says how long the TCP payload really was
(:attr:`Packet.payload_len`); a capture's snap length may have kept fewer
bytes (``len(payload)``); :attr:`Packet.truncated` says so.  Ethernet
padding and trailing FCS bytes are cut off by the same IP length.

Bad input never raises: :func:`read_capture` (and :func:`read_packets`)
return what could be read plus a list of problems in plain words (``"not a
pcap or pcapng file"``, ``"truncated packet record at byte N"``,
``"unsupported link type N"`` ...).  Per-packet problems are counted and
reported once per kind, so a huge file cannot produce a huge problem list.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

__all__ = [
    "ACK", "FIN", "PSH", "RST", "SYN", "CaptureRead", "Packet", "read_capture",
    "read_packets", "sniff_format",
]

# TCP flags (the low byte of the flags field).
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

KNCAP_MAGIC = b"KNCAP"

# Classic pcap magic numbers as they appear in the first four bytes of a file.
_PCAP_MAGICS = {
    # bytes           (byte order, ns per fraction unit, record header size)
    b"\xd4\xc3\xb2\xa1": ("<", 1000, 16),   # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": (">", 1000, 16),   # microseconds, big-endian
    b"\x4d\x3c\xb2\xa1": ("<", 1, 16),      # nanoseconds, little-endian
    b"\xa1\xb2\x3c\x4d": (">", 1, 16),      # nanoseconds, big-endian
    b"\x34\xcd\xb2\xa1": ("<", 1000, 24),   # "modified" pcap (Kuznetzov patches)
    b"\xa1\xb2\xcd\x34": (">", 1000, 24),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_PCAPNG_BOM = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}

# A record or block bigger than this is certainly garbage (real snap lengths
# are at most 256 KiB; jumbo TSO captures stay far below this).
_MAX_RECORD = 64 * 1024 * 1024

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
    """Everything :func:`read_capture` found in one file."""

    format: str | None                       # "pcap", "pcapng" or None
    packets: list[Packet] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    records: int = 0                         # packet records read
    non_tcp: int = 0                         # records that were not TCP over IP
    link_types: set[int] = field(default_factory=set)


def sniff_format(data: bytes) -> str | None:
    """``"kncap"``, ``"pcap"``, ``"pcapng"`` or None, by the file's first bytes."""
    head = bytes(data[:12])
    if head.startswith(KNCAP_MAGIC):
        return "kncap"
    if head[:4] in _PCAP_MAGICS:
        return "pcap"
    if head[:4] == _PCAPNG_SHB and (len(head) < 12 or head[8:12] in _PCAPNG_BOM):
        return "pcapng"
    return None


def read_packets(data: bytes) -> tuple[list[Packet], list[str]]:
    """The TCP packets of a pcap or pcapng file, and the problems met; never raises."""
    result = read_capture(data)
    return result.packets, result.problems


def read_capture(data: bytes) -> CaptureRead:
    """Like :func:`read_packets`, with the format and counts as well; never raises."""
    data = bytes(data)
    kind = sniff_format(data)
    if kind not in ("pcap", "pcapng"):
        what = "empty file" if not data else (
            "a kafka-net capture" if kind == "kncap" else "unknown magic " + data[:4].hex())
        return CaptureRead(None, problems=[f"not a pcap or pcapng file ({what})"])
    result = CaptureRead(kind)
    decoder = _PacketDecoder(data, result)
    try:
        if kind == "pcap":
            _read_pcap(data, decoder, result)
        else:
            _read_pcapng(data, decoder, result)
    except Exception as exc:  # noqa: BLE001 -- last resort: bad input must not raise
        result.problems.append(f"internal error while reading the file: {exc!r}; rest skipped")
    decoder.summarise()
    return result


# --- classic pcap ------------------------------------------------------------------------


def _read_pcap(data: bytes, decoder: "_PacketDecoder", result: CaptureRead) -> None:
    endian, frac_ns, rec_size = _PCAP_MAGICS[data[:4]]
    if len(data) < 24:
        result.problems.append(f"truncated pcap file header ({len(data)} of 24 bytes)")
        return
    major, minor, _zone, _sigfigs, _snaplen, network = struct.unpack_from(
        endian + "HHiIII", data, 4)
    if major != 2:
        result.problems.append(f"unsupported pcap version {major}.{minor}")
        return
    linktype = network & 0xFFFF   # the upper bits may carry FCS information
    rec = struct.Struct(endian + "IIII")
    pos, n, index = 24, len(data), 0
    while pos < n:
        if pos + rec_size > n:
            result.problems.append(
                f"truncated packet record at byte {pos} (header cut at {n - pos} bytes)")
            return
        sec, frac, incl, orig = rec.unpack_from(data, pos)
        if incl > _MAX_RECORD:
            result.problems.append(
                f"corrupt packet record at byte {pos} (captured length {incl}); rest skipped")
            return
        start = pos + rec_size
        end = start + incl
        if end > n:
            result.problems.append(
                f"truncated packet record at byte {pos} ({n - start} of {incl} bytes)")
            return
        result.records += 1
        decoder.decode(linktype, start, end, max(orig, incl),
                       sec * 1_000_000_000 + frac * frac_ns, index)
        index += 1
        pos = end


# --- pcapng ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Interface:
    linktype: int
    snaplen: int
    ts_mul: int = 1000      # timestamp units -> ns: units * ts_mul // ts_div
    ts_div: int = 1
    offset_ns: int = 0


def _read_pcapng(data: bytes, decoder: "_PacketDecoder", result: CaptureRead) -> None:
    pos, n = 0, len(data)
    endian = ""
    u32 = u16 = None
    interfaces: list[_Interface] = []
    last_ts = 0
    index = 0
    warned_if: set[int] = set()
    while pos < n:
        if n - pos < 12:
            result.problems.append(f"truncated block at byte {pos} ({n - pos} bytes left)")
            return
        if data[pos:pos + 4] == _PCAPNG_SHB:
            bom = data[pos + 8:pos + 12]
            if bom not in _PCAPNG_BOM:
                result.problems.append(
                    f"section header at byte {pos} has no valid byte-order magic; rest skipped")
                return
            endian = _PCAPNG_BOM[bom]
            u32 = struct.Struct(endian + "I")
            u16 = struct.Struct(endian + "H")
            interfaces = []
        elif not endian:
            result.problems.append("not a pcapng file (no section header block first)")
            return
        btype, blen = struct.unpack_from(endian + "II", data, pos)
        if blen < 12 or blen % 4:
            result.problems.append(f"corrupt block at byte {pos} (length {blen}); rest skipped")
            return
        if blen > n - pos:
            result.problems.append(
                f"truncated block at byte {pos} ({n - pos} of {blen} bytes)")
            return
        if u32.unpack_from(data, pos + blen - 4)[0] != blen:
            result.problems.append(
                f"corrupt block at byte {pos} (trailing length does not match); rest skipped")
            return
        body, bend = pos + 8, pos + blen - 4
        if btype == 0x0A0D0D0A:                                  # section header
            if bend - body < 16:
                result.problems.append(f"corrupt section header block at byte {pos}")
                return
            major = u16.unpack_from(data, body + 4)[0]
            if major != 1:
                result.problems.append(f"unsupported pcapng version {major} at byte {pos}")
                return
        elif btype == 1:                                         # interface description
            if bend - body < 8:
                result.problems.append(f"corrupt interface description block at byte {pos}")
                return
            linktype, _reserved, snaplen = struct.unpack_from(endian + "HHI", data, body)
            iface = _Interface(linktype, snaplen)
            _idb_options(data, body + 8, bend, endian, iface)
            interfaces.append(iface)
        elif btype in (6, 2):                                    # enhanced / obsolete packet
            if bend - body < 20:
                result.problems.append(f"corrupt packet block at byte {pos}; skipped")
                pos += blen
                continue
            if btype == 6:
                if_id, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(
                    endian + "IIIII", data, body)
            else:
                if_id, _drops, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(
                    endian + "HHIIII", data, body)
            start = body + 20
            if caplen > bend - start:
                result.problems.append(
                    f"corrupt packet block at byte {pos} (captured length {caplen} "
                    f"exceeds the block); skipped")
                pos += blen
                continue
            if if_id >= len(interfaces):
                if if_id not in warned_if:
                    warned_if.add(if_id)
                    result.problems.append(
                        f"packet block at byte {pos} names interface {if_id}, which is not "
                        f"described; its packets are skipped")
                pos += blen
                continue
            iface = interfaces[if_id]
            last_ts = ((ts_hi << 32) | ts_lo) * iface.ts_mul // iface.ts_div + iface.offset_ns
            result.records += 1
            decoder.decode(iface.linktype, start, start + caplen, max(origlen, caplen),
                           last_ts, index)
            index += 1
        elif btype == 3:                                         # simple packet
            if not interfaces:
                result.problems.append(
                    f"simple packet block at byte {pos} before any interface; skipped")
                pos += blen
                continue
            if bend - body < 4:
                result.problems.append(f"corrupt simple packet block at byte {pos}; skipped")
                pos += blen
                continue
            iface = interfaces[0]
            origlen = u32.unpack_from(data, body)[0]
            caplen = min(origlen, bend - body - 4)
            if iface.snaplen:
                caplen = min(caplen, iface.snaplen)
            result.records += 1
            decoder.decode(iface.linktype, body + 4, body + 4 + caplen, origlen, last_ts,
                           index)
            index += 1
        # any other block type: skipped
        pos += blen


def _idb_options(data: bytes, pos: int, end: int, endian: str, iface: _Interface) -> None:
    """Read if_tsresol (9) and if_tsoffset (14) from an IDB's options."""
    hdr = struct.Struct(endian + "HH")
    while pos + 4 <= end:
        code, length = hdr.unpack_from(data, pos)
        value = pos + 4
        if code == 0 or value + length > end:
            return
        if code == 9 and length >= 1:
            res = data[value]
            exp = res & 0x7F
            if res & 0x80:            # 2 ** -exp seconds
                iface.ts_mul, iface.ts_div = 1_000_000_000, 1 << exp
            elif exp <= 9:            # 10 ** -exp seconds
                iface.ts_mul, iface.ts_div = 10 ** (9 - exp), 1
            else:
                iface.ts_mul, iface.ts_div = 1, 10 ** (exp - 9)
        elif code == 14 and length >= 8:
            iface.offset_ns = struct.unpack_from(endian + "q", data, value)[0] * 1_000_000_000
        pos = value + ((length + 3) & ~3)


# --- link, network and transport layers --------------------------------------------------


class _PacketDecoder:
    """Decodes one record's bytes (link layer down to TCP) into a :class:`Packet`."""

    def __init__(self, data: bytes, result: CaptureRead) -> None:
        self.data = data
        self.result = result
        self.out = result.packets
        self.addr_cache: dict[bytes, str] = {}
        self.unsupported: dict[int, int] = {}
        self.counts: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def summarise(self) -> None:
        problems = self.result.problems
        for linktype, n in sorted(self.unsupported.items()):
            problems.append(f"unsupported link type {linktype} ({n} packets skipped)")
        messages = {
            "first_fragment": "fragmented IPv4/IPv6 packets (first fragments kept, "
                              "fragments are not reassembled)",
            "later_fragment": "non-first IP fragments skipped (fragments are not reassembled)",
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

    def _ipv4(self, p: int, end: int, wire_ip_len: int, ts: int, index: int) -> None:
        data = self.data
        if p + 20 > end:
            self._count("cut_header")
            return
        vhl, _tos, total, _ident, frag, _ttl, proto = _IPV4_FIXED.unpack_from(data, p)
        ihl = (vhl & 0x0F) * 4
        if ihl < 20:
            self._count("malformed")
            return
        if proto != _IPPROTO_TCP:
            self.result.non_tcp += 1
            return
        if frag & 0x1FFF:
            self._count("later_fragment")
            return
        if frag & 0x2000:
            self._count("first_fragment")
        ip_len = total if total >= ihl else wire_ip_len   # 0: TSO, length unknown
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
                    if off_m & 0xFFF8:
                        self._count("later_fragment")
                        return
                    if off_m & 1:
                        self._count("first_fragment")
                    hlen = 8
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

    def _tcp(self, t: int, ip_end: int, cap_end: int, src: bytes, dst: bytes, ts: int,
             index: int) -> None:
        data = self.data
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
                               flags, payload, payload_len, index))
