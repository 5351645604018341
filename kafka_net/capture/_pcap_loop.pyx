# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible=True
"""The classic pcap record loop, compiled (issue 29): :func:`kafka_net.capture.pcap._read_pcap`
with the common packet (Ethernet, IPv4 without options, TCP) decoded in typed C.

The readable reference is ``pcap._read_pcap`` with ``PacketDecoder._eth_ipv4_tcp``;
this loop must give the very same packets (``payload_at`` included), problems and
counts, and tests hold it to that on generated and damaged captures.  Anything
but the common packet goes to ``decoder.decode``, the reference itself.

Sans-IO: bytes in, :class:`~kafka_net.capture.packet.Packet` objects out.  It
keeps no module state (its address cache lives for one call), hence the
``freethreading_compatible`` directive: loading it leaves a free-threaded
interpreter's GIL off.
"""

from libc.stdint cimport int64_t, uint32_t

from cpython.bytes cimport PyBytes_FromStringAndSize

from kafka_net.capture.packet import Packet

# The reference's limit on a record's captured length (pcap._MAX_RECORD).
DEF MAX_RECORD = 64 * 1024 * 1024
# The common packet's least length: Ethernet 14, IPv4 20, TCP up to its flags.
DEF ETH_IPV4_TCP_MIN = 14 + 20 + 14


cdef inline uint32_t _u32(const unsigned char[:] b, Py_ssize_t at, bint little) noexcept nogil:
    if little:
        return b[at] | (<uint32_t>b[at + 1] << 8) | (<uint32_t>b[at + 2] << 16) \
            | (<uint32_t>b[at + 3] << 24)
    return (<uint32_t>b[at] << 24) | (<uint32_t>b[at + 1] << 16) \
        | (<uint32_t>b[at + 2] << 8) | b[at + 3]


cdef inline unsigned int _be16(const unsigned char[:] b, Py_ssize_t at) noexcept nogil:
    return (<unsigned int>b[at] << 8) | b[at + 1]


cdef str _ipv4_text(uint32_t addr, dict cache):
    """A dotted quad, made once per address (the reference's ``_addr``)."""
    text = cache.get(addr)
    if text is None:
        text = f"{addr >> 24}.{(addr >> 16) & 0xFF}.{(addr >> 8) & 0xFF}.{addr & 0xFF}"
        cache[addr] = text
    return text


def read_pcap(bytes data, decoder, result, state, Py_ssize_t pos, Py_ssize_t stop,
              int64_t base, cuts):
    """``pcap._read_pcap``'s loop: each record of ``data[pos:stop]`` decoded, the
    common packet here, any other by ``decoder.decode``; ``state.index`` updated."""
    cdef const unsigned char[:] b = data
    cdef Py_ssize_t n = len(data)
    cdef Py_ssize_t rec_size = state.rec_size
    cdef int64_t frac_ns = state.frac_ns
    cdef int64_t index = state.index
    cdef long linktype = state.linktype
    cdef bint little = state.endian == "<"
    cdef bint ethernet = linktype == 1
    cdef Py_ssize_t next_cut = cuts.next if cuts else n + 1   # as the reference
    cdef Py_ssize_t start, end, t, ip_end, pstart, pend
    cdef uint32_t sec, frac, incl, orig, total, thl
    cdef int64_t payload_len
    cdef dict addresses = {}
    cdef list out = result.packets
    cdef bint seen = False
    cdef object payload
    while pos < stop:
        if pos >= next_cut:
            state.index = index
            cuts.cut(base + pos, state)
            next_cut = cuts.next - base
        if pos + rec_size > n:
            result.problems.append(f"truncated packet record at byte {base + pos} "
                                   f"(header cut at {n - pos} bytes)")
            break
        sec, frac = _u32(b, pos, little), _u32(b, pos + 4, little)
        incl, orig = _u32(b, pos + 8, little), _u32(b, pos + 12, little)
        if incl > MAX_RECORD:
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
        if not seen:        # the reference adds the link type at every record
            result.link_types.add(linktype)
            seen = True
        # The common packet (PacketDecoder._eth_ipv4_tcp's conditions, in order).
        if (ethernet and end - start >= ETH_IPV4_TCP_MIN and _be16(b, start + 12) == 0x0800
                and b[start + 14] == 0x45 and b[start + 23] == 6
                and not (_be16(b, start + 20) & 0x3FFF)):
            total = _be16(b, start + 16)
            t = start + 34
            thl = (b[t + 12] >> 4) * 4
            ip_end = start + 14 + total
            payload_len = ip_end - t - thl
            if total >= 20 and thl >= 20 and payload_len >= 0:
                pstart = t + thl
                pend = ip_end if ip_end < end else end
                if pend > pstart:
                    payload = PyBytes_FromStringAndSize(<const char*>&b[pstart], pend - pstart)
                else:
                    payload = b""
                out.append(Packet(
                    <int64_t>sec * 1_000_000_000 + <int64_t>frac * frac_ns,
                    _ipv4_text(_u32(b, start + 26, False), addresses), _be16(b, t),
                    _ipv4_text(_u32(b, start + 30, False), addresses), _be16(b, t + 2),
                    _u32(b, t + 4, False), _u32(b, t + 8, False), b[t + 13],
                    payload, payload_len, index, "", pstart))
                index += 1
                pos = end
                continue
        decoder.decode(linktype, start, end, orig if orig > incl else incl,
                       <int64_t>sec * 1_000_000_000 + <int64_t>frac * frac_ns, index)
        index += 1
        pos = end
    state.index = index
