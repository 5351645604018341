"""Packet and capture-file builders for the capture and Spark tests (not a test
module): IPv4/IPv6 and TCP headers, link layers, classic pcap and pcapng files,
built byte by byte so that each test knows exactly what is where."""

from __future__ import annotations

import ipaddress
import struct



def tcp_header(sport: int, dport: int, seq: int, ack: int, flags: int,
               options: bytes = b"") -> bytes:
    options += b"\x00" * (-len(options) % 4)
    doff = (20 + len(options)) // 4
    return struct.pack(">HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, doff << 4,
                       flags, 65535, 0, 0) + options


def ipv4(src: str, dst: str, payload: bytes, proto: int = 6, options: bytes = b"",
         frag: int = 0, total_len: int | None = None, ident: int = 1) -> bytes:
    options += b"\x00" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    total = 20 + len(options) + len(payload) if total_len is None else total_len
    return (struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, ident, frag, 64, proto, 0,
                        ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
            + options + payload)


def ipv6(src: str, dst: str, payload: bytes, next_header: int = 6,
         ext: list[tuple[int, bytes]] = ()) -> bytes:
    """``ext``: (header type, header bytes after its next-header byte) pairs, in order."""
    chain = b""
    types = [t for t, _ in ext] + [next_header]
    for i, (_t, body) in enumerate(ext):
        chain += bytes([types[i + 1]]) + body
    first = types[0]
    return (struct.pack(">IHBB16s16s", 0x60000000, len(chain) + len(payload), first, 64,
                        ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed)
            + chain + payload)


def ip_packet(src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int,
              payload: bytes = b"", **kw) -> bytes:
    tcp = tcp_header(sport, dport, seq, ack, flags) + payload
    if ":" in src:
        return ipv6(src, dst, tcp, **kw)
    return ipv4(src, dst, tcp, **kw)


def ethernet(ip: bytes, vlans: tuple[int, ...] = (), ethertype: int | None = None) -> bytes:
    if ethertype is None:
        ethertype = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    head = b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02"
    for i, vid in enumerate(vlans):
        head += struct.pack(">H", 0x88A8 if i == 0 and len(vlans) > 1 else 0x8100)
        head += struct.pack(">H", vid)
    return head + struct.pack(">H", ethertype) + ip


def _ethertype(ip: bytes) -> int:
    return 0x86DD if ip[0] >> 4 == 6 else 0x0800


def link_frame(linktype: int, ip: bytes) -> bytes:
    """Wrap an IP packet in the given link layer."""
    if linktype == 1:
        return ethernet(ip)
    if linktype == 113:   # SLL: type, ARPHRD, addr len, addr[8], protocol
        return struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, _ethertype(ip)) + ip
    if linktype == 276:   # SLL2: protocol, reserved, ifindex, ARPHRD, type, addr len, addr
        return struct.pack(">HHIHBB8s", _ethertype(ip), 0, 1, 772, 0, 6, b"\x00" * 8) + ip
    if linktype == 0:     # NULL: host byte order family (little-endian host here)
        return struct.pack("<I", 2 if ip[0] >> 4 == 4 else 30) + ip
    if linktype == 108:   # LOOP: network byte order family
        return struct.pack(">I", 2 if ip[0] >> 4 == 4 else 24) + ip
    if linktype in (101, 228, 229):
        return ip
    raise ValueError(linktype)


def pcap_file(records, linktype: int = 1, endian: str = "<", nano: bool = False,
              snaplen: int = 262144) -> bytes:
    """records: (timestamp_ns, frame bytes[, original length]) tuples."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for rec in records:
        ts, frame = rec[0], rec[1]
        orig = rec[2] if len(rec) > 2 else len(frame)
        frame = frame[:snaplen]
        sec, frac = divmod(ts, 1_000_000_000)
        if not nano:
            frac //= 1000
        out.append(struct.pack(endian + "IIII", sec, frac, len(frame), orig) + frame)
    return b"".join(out)


def _pad4(b: bytes) -> bytes:
    return b + b"\x00" * (-len(b) % 4)


def pcapng_block(btype: int, body: bytes, endian: str = "<") -> bytes:
    body = _pad4(body)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def pcapng_option(code: int, value: bytes, endian: str = "<") -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + _pad4(value)


def pcapng_shb(endian: str = "<") -> bytes:
    return pcapng_block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1),
                        endian)


def pcapng_idb(linktype: int = 1, endian: str = "<", tsresol: int | None = None,
               tsoffset: int | None = None, snaplen: int = 0) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += pcapng_option(9, bytes([tsresol]), endian)
    if tsoffset is not None:
        opts += pcapng_option(14, struct.pack(endian + "q", tsoffset), endian)
    if opts:
        opts += pcapng_option(0, b"", endian)
    return pcapng_block(1, struct.pack(endian + "HHI", linktype, 0, snaplen) + opts, endian)


def pcapng_epb(ts_units: int, frame: bytes, iface: int = 0, endian: str = "<",
               orig: int | None = None) -> bytes:
    body = struct.pack(endian + "IIIII", iface, ts_units >> 32, ts_units & 0xFFFFFFFF,
                       len(frame), len(frame) if orig is None else orig) + _pad4(frame)
    return pcapng_block(6, body, endian)


def pcapng_file(records, linktype: int = 1, endian: str = "<") -> bytes:
    """One section, one interface (microsecond timestamps), EPBs."""
    out = [pcapng_shb(endian), pcapng_idb(linktype, endian)]
    for rec in records:
        ts, frame = rec[0], rec[1]
        orig = rec[2] if len(rec) > 2 else None
        out.append(pcapng_epb(ts // 1000, frame, 0, endian, orig))
    return b"".join(out)
