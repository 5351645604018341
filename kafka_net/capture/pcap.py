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
    ACK, FIN, PSH, RST, SUPPORTED_LINK_TYPES, SYN, CaptureRead, Packet, PacketDecoder)

__all__ = [
    "ACK", "FIN", "PSH", "RST", "SYN", "CaptureRead", "Packet", "SUPPORTED_LINK_TYPES",
    "Cuts", "Resume", "read_capture", "read_packets", "sniff_format", "walk_records",
]


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


def sniff_format(data: bytes) -> str | None:
    """``"pcap"``, ``"pcapng"`` or None, by the file's first bytes (which capture
    kind a file is, .kncap included, is :func:`kafka_net.capture.reader.sniff`'s)."""
    head = bytes(data[:12])
    if head[:4] in _PCAP_MAGICS:
        return "pcap"
    if head[:4] == _PCAPNG_SHB and (len(head) < 12 or head[8:12] in _PCAPNG_BOM):
        return "pcapng"
    return None


def read_packets(data: bytes) -> tuple[list[Packet], list[str]]:
    """The TCP packets of a pcap or pcapng file, and the problems met; never raises."""
    result = read_capture(data)
    return result.packets, result.problems


def read_capture(data: bytes, resume: "Resume | None" = None, base: int = 0,
                 stop: int | None = None) -> CaptureRead:
    """Like :func:`read_packets`, with the format and counts as well; never raises.

    A byte range of a file (:mod:`.capture_split`): ``data`` holds the file's
    bytes from offset ``base`` on, the first at a record boundary where a reader
    stood in ``resume``'s state; records starting at ``stop`` (relative to
    ``data``) or later are left to the next range.  Problems name file offsets."""
    data = bytes(data)
    if resume is None:
        kind = sniff_format(data)
        if kind not in ("pcap", "pcapng"):
            what = "empty file" if not data else "unknown magic " + data[:4].hex()
            return CaptureRead(None, problems=[f"not a pcap or pcapng file ({what})"])
    else:
        kind = resume.kind
    result = CaptureRead(kind)
    decoder = PacketDecoder(data, result)
    try:
        walk_records(data, decoder, result, resume, base, len(data) if stop is None else stop)
    except Exception as exc:  # noqa: BLE001 -- last resort: bad input must not raise
        result.problems.append(f"internal error while reading the file: {exc!r}; rest skipped")
    decoder.summarise()
    return result


@dataclass(slots=True)
class _Interface:
    """A pcapng interface: its link type, snap length and timestamp units."""

    linktype: int
    snaplen: int
    ts_mul: int = 1000      # timestamp units -> ns: units * ts_mul // ts_div
    ts_div: int = 1
    offset_ns: int = 0


@dataclass
class Resume:
    """Where a reader stands at a record boundary of a pcap/pcapng file: enough
    to read on from there without the bytes before (a range's start)."""

    kind: str                         # "pcap" or "pcapng"
    index: int = 0                    # packet records before this point
    endian: str = ""
    linktype: int = 0                 # pcap: the file's link type
    frac_ns: int = 1000               # pcap: ns per timestamp fraction unit
    rec_size: int = 16                # pcap: record header size
    interfaces: list = field(default_factory=list)   # pcapng: this section's
    last_ts: int = 0                  # pcapng: for Simple Packet Blocks (no timestamp)

    def copy(self) -> "Resume":
        return Resume(self.kind, self.index, self.endian, self.linktype, self.frac_ns,
                      self.rec_size, list(self.interfaces), self.last_ts)

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in ("kind", "index", "endian", "linktype",
                                             "frac_ns", "rec_size", "last_ts")}
        out["interfaces"] = [[i.linktype, i.snaplen, i.ts_mul, i.ts_div, i.offset_ns]
                             for i in self.interfaces]
        return out

    @classmethod
    def from_json(cls, obj: dict) -> "Resume":
        fields = dict(obj)
        fields["interfaces"] = [_Interface(*i) for i in obj.get("interfaces", ())]
        return cls(**fields)


class Cuts:
    """A hook for :func:`walk_records`: at the first record boundary at or past
    each multiple of ``every`` bytes, note the offset and the reader's state."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.next = every
        self.at: list[tuple[int, Resume]] = []

    def cut(self, pos: int, state: Resume) -> None:
        self.at.append((pos, state.copy()))
        self.next = pos + self.every


def walk_records(data, decoder, result: CaptureRead, resume: "Resume | None" = None,
                 base: int = 0, stop: int | None = None, cuts: "Cuts | None" = None) -> Resume:
    """The record loop of both formats: each packet record to ``decoder.decode``.
    From the file's start (``resume`` None) or from a :class:`Resume` point;
    returns the state where it stopped."""
    stop = len(data) if stop is None else stop
    if resume is None:
        state = Resume(sniff_format(data[:12]) or "")
        if state.kind == "pcap":
            if not _pcap_header(data, state, result):
                return state
            pos = 24
        else:
            pos = 0
    else:
        state, pos = resume.copy(), 0
    if state.kind == "pcap":
        _read_pcap(data, decoder, result, state, pos, stop, base, cuts)
    else:
        _read_pcapng(data, decoder, result, state, pos, stop, base, cuts)
    return state


# --- classic pcap ------------------------------------------------------------------------


def _pcap_header(data, state: Resume, result: CaptureRead) -> bool:
    endian, frac_ns, rec_size = _PCAP_MAGICS[bytes(data[:4])]
    if len(data) < 24:
        result.problems.append(f"truncated pcap file header ({len(data)} of 24 bytes)")
        return False
    major, minor, _zone, _sigfigs, _snaplen, network = struct.unpack_from(
        endian + "HHiIII", data, 4)
    if major != 2:
        result.problems.append(f"unsupported pcap version {major}.{minor}")
        return False
    state.endian, state.frac_ns, state.rec_size = endian, frac_ns, rec_size
    state.linktype = network & 0xFFFF   # the upper bits may carry FCS information
    return True


def _read_pcap(data, decoder, result: CaptureRead, state: Resume, pos: int, stop: int,
               base: int, cuts: "Cuts | None") -> None:
    rec = struct.Struct(state.endian + "IIII")
    n, index, rec_size, frac_ns, linktype = (len(data), state.index, state.rec_size,
                                             state.frac_ns, state.linktype)
    next_cut = cuts.next if cuts else n + 1
    while pos < stop:
        if pos >= next_cut:
            state.index = index
            cuts.cut(base + pos, state)
            next_cut = cuts.next - base
        if pos + rec_size > n:
            result.problems.append(f"truncated packet record at byte {base + pos} "
                                   f"(header cut at {n - pos} bytes)")
            break
        sec, frac, incl, orig = rec.unpack_from(data, pos)
        if incl > _MAX_RECORD:
            result.problems.append(f"corrupt packet record at byte {base + pos} "
                                   f"(captured length {incl}); rest skipped")
            break
        start = pos + rec_size
        end = start + incl
        if end > n:
            result.problems.append(f"truncated packet record at byte {base + pos} "
                                   f"({n - start} of {incl} bytes)")
            break
        result.records += 1
        decoder.decode(linktype, start, end, max(orig, incl),
                       sec * 1_000_000_000 + frac * frac_ns, index)
        index += 1
        pos = end
    state.index = index


# --- pcapng ------------------------------------------------------------------------------


def _read_pcapng(data, decoder, result: CaptureRead, state: Resume, pos: int, stop: int,
                 base: int, cuts: "Cuts | None") -> None:
    n = len(data)
    u32 = struct.Struct(state.endian + "I") if state.endian else None
    warned_if: set[int] = set()
    next_cut = cuts.next if cuts else n + 1
    while pos < stop:
        if pos >= next_cut:
            cuts.cut(base + pos, state)
            next_cut = cuts.next - base
        at = base + pos
        if n - pos < 12:
            result.problems.append(f"truncated block at byte {at} ({n - pos} bytes left)")
            return
        if data[pos:pos + 4] == _PCAPNG_SHB:
            bom = bytes(data[pos + 8:pos + 12])
            if bom not in _PCAPNG_BOM:
                result.problems.append(
                    f"section header at byte {at} has no valid byte-order magic; rest skipped")
                return
            state.endian = _PCAPNG_BOM[bom]
            u32 = struct.Struct(state.endian + "I")
            state.interfaces = []
        elif not state.endian:
            result.problems.append("not a pcapng file (no section header block first)")
            return
        endian = state.endian
        btype, blen = struct.unpack_from(endian + "II", data, pos)
        if blen < 12 or blen % 4:
            result.problems.append(f"corrupt block at byte {at} (length {blen}); rest skipped")
            return
        if blen > n - pos:
            result.problems.append(f"truncated block at byte {at} ({n - pos} of {blen} bytes)")
            return
        if u32.unpack_from(data, pos + blen - 4)[0] != blen:
            result.problems.append(
                f"corrupt block at byte {at} (trailing length does not match); rest skipped")
            return
        if _pcapng_block(data, decoder, result, state, btype, pos, blen, at, warned_if):
            return
        pos += blen


def _pcapng_block(data, decoder, result: CaptureRead, state: Resume, btype: int, pos: int,
                  blen: int, at: int, warned_if: set[int]) -> bool:
    """One block; True to stop reading (the rest cannot be trusted)."""
    endian = state.endian
    body, bend = pos + 8, pos + blen - 4
    if btype == 0x0A0D0D0A:                                  # section header
        if bend - body < 16:
            result.problems.append(f"corrupt section header block at byte {at}")
            return True
        major = struct.unpack_from(endian + "H", data, body + 4)[0]
        if major != 1:
            result.problems.append(f"unsupported pcapng version {major} at byte {at}")
            return True
    elif btype == 1:                                         # interface description
        if bend - body < 8:
            result.problems.append(f"corrupt interface description block at byte {at}")
            return True
        linktype, _reserved, snaplen = struct.unpack_from(endian + "HHI", data, body)
        iface = _Interface(linktype, snaplen)
        _idb_options(data, body + 8, bend, endian, iface)
        state.interfaces.append(iface)
    elif btype in (6, 2):                                    # enhanced / obsolete packet
        if bend - body < 20:
            result.problems.append(f"corrupt packet block at byte {at}; skipped")
            return False
        if btype == 6:
            if_id, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(
                endian + "IIIII", data, body)
        else:
            if_id, _drops, ts_hi, ts_lo, caplen, origlen = struct.unpack_from(
                endian + "HHIIII", data, body)
        start = body + 20
        if caplen > bend - start:
            result.problems.append(
                f"corrupt packet block at byte {at} (captured length {caplen} "
                f"exceeds the block); skipped")
            return False
        if if_id >= len(state.interfaces):
            if if_id not in warned_if:
                warned_if.add(if_id)
                result.problems.append(
                    f"packet block at byte {at} names interface {if_id}, which is not "
                    f"described; its packets are skipped")
            return False
        iface = state.interfaces[if_id]
        state.last_ts = ((ts_hi << 32) | ts_lo) * iface.ts_mul // iface.ts_div \
            + iface.offset_ns
        result.records += 1
        decoder.decode(iface.linktype, start, start + caplen, max(origlen, caplen),
                       state.last_ts, state.index)
        state.index += 1
    elif btype == 3:                                         # simple packet
        if not state.interfaces:
            result.problems.append(
                f"simple packet block at byte {at} before any interface; skipped")
            return False
        if bend - body < 4:
            result.problems.append(f"corrupt simple packet block at byte {at}; skipped")
            return False
        iface = state.interfaces[0]
        origlen = struct.unpack_from(endian + "I", data, body)[0]
        caplen = min(origlen, bend - body - 4)
        if iface.snaplen:
            caplen = min(caplen, iface.snaplen)
        result.records += 1
        decoder.decode(iface.linktype, body + 4, body + 4 + caplen, origlen, state.last_ts,
                       state.index)
        state.index += 1
    # any other block type: skipped
    return False


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
