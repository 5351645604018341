"""pcap and pcapng files to TCP packets, sans-IO: bytes in, packets out.

The conformance jobs read captures of *any* Kafka broker's traffic, taken
with tcpdump, tshark, dumpcap and friends.  This module turns one such file
(given as bytes) into the TCP segments it holds (:mod:`.packet` decodes each
record); :mod:`.tcp` reassembles them into Kafka frames.

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
* **Link layers, IP and TCP**: see :mod:`.packet` (Ethernet with VLAN tags,
  Linux SLL/SLL2, loopback, raw IP; IPv4 and IPv6; TCP only).

Bad input never raises: :func:`read_capture` (and :func:`read_packets`)
return what could be read plus a list of problems in plain words (``"not a
pcap or pcapng file"``, ``"truncated packet record at byte N"``,
``"unsupported link type N"`` ...).  Per-packet problems are counted and
reported once per kind, so a huge file cannot produce a huge problem list.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafka_net.capture.packet import (
    ACK, FIN, PSH, RST, SUPPORTED_LINK_TYPES, SYN, Packet, PacketDecoder)

__all__ = [
    "ACK", "FIN", "PSH", "RST", "SYN", "CaptureRead", "Packet", "SUPPORTED_LINK_TYPES",
    "read_capture", "read_packets", "sniff_format",
]

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
    decoder = PacketDecoder(data, result)
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


def _read_pcap(data: bytes, decoder: PacketDecoder, result: CaptureRead) -> None:
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


def _read_pcapng(data: bytes, decoder: PacketDecoder, result: CaptureRead) -> None:
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
