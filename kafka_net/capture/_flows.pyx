# cython: boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""One TCP flow's packets (index records) to its Kafka frames as columns, in one
compiled pass, sans-IO: the fast path beside :func:`kafka_net.capture.tcp.reassemble`
and the frame rows of ``spark_jobs.transforms.frames_of_flow``, the readable
reference, which builds a :class:`~kafka_net.capture.packet.Packet` per packet
and a ``Framed``, a ``Frame`` and a row dict per frame.

Input: the flow's packets as the conformance job's index records
(``spark_jobs.task_reads.PACKED``, little-endian, 42 bytes each, in file order)
and a buffer holding their payloads (``buf[at - base:]``).  Output: the frame
rows' columns as flat C arrays in bytes objects (see :func:`flow_columns`).

Only the common connection is taken here: one handshake (the client's SYN first,
the broker's SYN+ACK captured), packets in time order, every data segment either
the next bytes of its direction, whole (no snap-length cut), or a repeat of bytes
already delivered (a retransmission), nothing lost (a FIN or the peer's ACKs
beyond the captured bytes), every size prefix plausible.  For such a flow the
reference's byte streams are one run each, its frames need no search, no gap
markers, no sync markers, and its only marker is the client's FIN.  Anything
else returns None: the caller runs the reference, which says what is unusual.
Every rule below names the reference code it mirrors.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, strcmp

cdef enum:
    RECORD = 42                   # task_reads.PACKED.size
    FIN = 0x01
    SYN = 0x02
    ACK = 0x10
    MAX_FRAME_SIZE = 100 * 1024 * 1024   # tcp_frames.MAX_FRAME_SIZE
    MAX_BINARY = 2147483647              # an Arrow binary column's int32 offsets


ctypedef struct Packet:
    int64_t ts
    uint32_t seq
    uint32_t ack
    int64_t at
    uint32_t cap
    uint32_t plen
    int64_t record
    uint8_t from_a
    uint8_t flags


ctypedef struct Piece:           # a delivered segment: ByteStream.piece_*
    int64_t start
    int64_t end
    int64_t ts
    int64_t at                   # where its payload lies in the buffer
    int64_t record
    uint32_t ack
    uint8_t has_ack


ctypedef struct Framed:          # tcp_frames.Framed, and the CLOSE marker
    int64_t ts
    int64_t start
    int64_t end                  # the frame's end by its size prefix
    int64_t known_end            # the end of its captured bytes (< end: truncated)
    int64_t record               # the completing packet's record (-1: a marker)
    int32_t size
    uint32_t ack
    uint8_t has_ack
    uint8_t close


ctypedef struct Direction:       # one tcp_stream.ByteStream / tcp_frames.Flow
    Piece* pieces
    Py_ssize_t n_pieces
    Framed* frames
    Py_ssize_t n_frames
    Py_ssize_t frames_cap
    int has_isn
    uint32_t isn
    int has_fin
    uint32_t fin_seq
    int64_t fin_ts
    uint32_t fin_ack
    uint8_t fin_has_ack
    int64_t fin_off
    uint32_t ref_seq
    int64_t ref_off
    int64_t end


cdef inline uint32_t _le32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline int64_t _le64(const uint8_t* p) noexcept nogil:
    return <int64_t>(_le32(p) | (<unsigned long long>_le32(p + 4) << 32))


cdef inline int32_t _be32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16)
                     | (<uint32_t>p[2] << 8) | p[3])


cdef inline int16_t _be16(const uint8_t* p) noexcept nogil:
    return <int16_t>((p[0] << 8) | p[1])


cdef inline int64_t _offset(uint32_t seq, uint32_t ref_seq, int64_t ref_off) noexcept nogil:
    """ByteStream's ``ref_off + (seq - ref_seq + 2**31) % 2**32 - 2**31``."""
    return ref_off + <int32_t>(seq - ref_seq)


cdef int _read_packets(const uint8_t[::1] packed, Packet* out, Py_ssize_t n) noexcept nogil:
    """Decode the index records; 0 when they are not in time order (reassemble
    would sort them) or a payload is not in the buffer (put together from IP
    fragments)."""
    cdef Py_ssize_t i
    cdef const uint8_t* r
    for i in range(n):
        r = &packed[i * RECORD]
        out[i].ts = _le64(r)
        out[i].from_a = r[8]
        out[i].seq = _le32(r + 9)
        out[i].ack = _le32(r + 13)
        out[i].flags = r[17]
        out[i].at = _le64(r + 18)
        out[i].cap = _le32(r + 26)
        out[i].plen = _le32(r + 30)
        out[i].record = _le64(r + 34)
        if out[i].at < 0 or (i and out[i].ts < out[i - 1].ts):
            return 0
    return 1


cdef int _one_handshake(Packet* ps, Py_ssize_t n) noexcept nogil:
    """tcp.reassemble's grouping and tcp._roles' "syn" rule, for one connection: the
    first packet is the client's SYN, and no other SYN starts another connection."""
    cdef Py_ssize_t i
    if not (ps[0].flags & SYN) or ps[0].flags & ACK:
        return 0
    for i in range(1, n):
        if ps[i].flags & SYN and not ps[i].flags & ACK and (
                ps[i].from_a != ps[0].from_a or ps[i].seq != ps[0].seq):
            return 0
    return 1


cdef int _add_packets(Direction* d, Packet* ps, Py_ssize_t n, uint8_t side) noexcept nogil:
    """ByteStream.add over this direction's packets: the ISN, the first FIN."""
    cdef Py_ssize_t i
    cdef uint32_t seq
    for i in range(n):
        if ps[i].from_a != side:
            continue
        seq = ps[i].seq
        if ps[i].flags & SYN:
            if not d.has_isn:
                d.has_isn, d.isn = 1, ps[i].seq
            seq = seq + 1
        if ps[i].flags & FIN and not d.has_fin:
            d.has_fin, d.fin_seq = 1, seq + ps[i].plen
            d.fin_ts = ps[i].ts
            d.fin_has_ack = (ps[i].flags & ACK) != 0
            d.fin_ack = ps[i].ack if d.fin_has_ack else 0
    return d.has_isn


cdef int _assemble(Direction* d, Packet* ps, Py_ssize_t n, uint8_t side) noexcept nogil:
    """ByteStream.assemble when every segment is next in line or a whole repeat;
    0 (refused) at the first one that is not, or when bytes were lost."""
    cdef uint32_t ref_seq = d.isn + 1, seq
    cdef int64_t ref_off = 0, rcv = 0, acked = 0, off, acked_at
    cdef Py_ssize_t i, next_ack = 0
    cdef Piece* piece
    for i in range(n):
        if ps[i].from_a != side or not ps[i].plen:
            continue
        # the peer's ACKs captured by now (ByteStream.assemble's acked_off)
        while next_ack < n:
            if ps[next_ack].from_a != side and ps[next_ack].flags & ACK:
                if ps[next_ack].ts > ps[i].ts:
                    break
                acked_at = _offset(ps[next_ack].ack, ref_seq, ref_off)
                if acked_at > acked:
                    acked = acked_at
            next_ack += 1
        seq = ps[i].seq + 1 if ps[i].flags & SYN else ps[i].seq
        off = _offset(seq, ref_seq, ref_off)
        if off > ref_off:
            ref_seq, ref_off = seq, off
        if off + ps[i].plen <= rcv:
            continue                      # a retransmission: nothing new
        if off != rcv or ps[i].cap != ps[i].plen:
            return 0                      # early, overlapping, or cut by the snap length
        piece = &d.pieces[d.n_pieces]
        d.n_pieces += 1
        piece.start, piece.end, piece.ts = off, off + ps[i].plen, ps[i].ts
        piece.at, piece.record = ps[i].at, ps[i].record
        piece.has_ack = (ps[i].flags & ACK) != 0
        piece.ack = ps[i].ack if piece.has_ack else 0
        rcv = piece.end
    for i in range(next_ack, n):
        if ps[i].from_a != side and ps[i].flags & ACK:
            acked_at = _offset(ps[i].ack, ref_seq, ref_off)
            if acked_at > acked:
                acked = acked_at
    d.end, d.ref_seq, d.ref_off = rcv, ref_seq, ref_off
    if d.has_fin:
        d.fin_off = _offset(d.fin_seq, ref_seq, ref_off)
        return d.fin_off <= rcv           # else bytes before the FIN were lost
    return acked <= rcv + 1               # else the peer acknowledged lost bytes


cdef Py_ssize_t _piece_at(Direction* d, int64_t pos) noexcept nogil:
    """bisect_right(piece_starts, pos) - 1."""
    cdef Py_ssize_t lo = 0, hi = d.n_pieces, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if d.pieces[mid].start <= pos:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


cdef Py_ssize_t _piece_before(Direction* d, int64_t pos) noexcept nogil:
    """bisect_left(piece_starts, pos) - 1."""
    cdef Py_ssize_t lo = 0, hi = d.n_pieces, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if d.pieces[mid].start < pos:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


cdef void _gather(Direction* d, const uint8_t* buf, int64_t base, int64_t start,
                  int64_t stop, uint8_t* out) noexcept nogil:
    """The stream's bytes [start, stop) (all captured: one run) into ``out``."""
    cdef Py_ssize_t k = _piece_at(d, start)
    cdef int64_t lo, hi
    while start < stop:
        lo = start
        hi = d.pieces[k].end if d.pieces[k].end < stop else stop
        memcpy(out, buf + (d.pieces[k].at - base) + (lo - d.pieces[k].start), hi - lo)
        out += hi - lo
        start = hi
        k += 1


cdef int _append(Direction* d, Framed f) noexcept nogil:
    cdef Framed* grown
    if d.n_frames == d.frames_cap:
        d.frames_cap = d.frames_cap * 2 + 16
        grown = <Framed*>realloc(d.frames, d.frames_cap * sizeof(Framed))
        if grown is NULL:
            return 0
        d.frames = grown
    d.frames[d.n_frames] = f
    d.n_frames += 1
    return 1


cdef void _place(Direction* d, Framed* f, int64_t stop) noexcept nogil:
    """A frame's time (ByteStream._ts: the latest packet holding its bytes), the
    packet that completed it (completing_packet: the last captured among them; in
    time order, the last) and the ACK its first packet carried (ack_at)."""
    cdef Py_ssize_t i = _piece_at(d, f.start), j, k, best
    if i < 0:
        i = 0
    j = _piece_before(d, stop)
    if j < i:
        j = i
    f.ts = d.pieces[i].ts
    for k in range(i + 1, j + 1):
        if d.pieces[k].ts > f.ts:
            f.ts = d.pieces[k].ts
    j = _piece_before(d, f.end)
    if j < i:
        j = i
    best = i
    for k in range(i + 1, j + 1):
        if d.pieces[k].ts >= d.pieces[best].ts:
            best = k
    f.record = d.pieces[best].record
    k = _piece_at(d, f.start)
    f.has_ack = d.pieces[k].has_ack
    f.ack = d.pieces[k].ack


cdef int _split(Direction* d, const uint8_t* buf, int64_t base, int request,
                object header_complete) except -1:
    """Flow.split for one run of bytes from offset 0; 0 when it would need a gap
    marker (an implausible size prefix).  A frame the data ends inside is kept,
    truncated, when ``header_complete`` (Flow._header_complete) says pairing can
    use it."""
    cdef int64_t pos = 0, fend, last_ts = 0
    cdef uint8_t prefix[4]
    cdef int32_t size
    cdef Framed f
    while d.end - pos >= 4:
        _gather(d, buf, base, pos, pos + 4, prefix)
        size = _be32(prefix)
        if size < 0 or size > MAX_FRAME_SIZE:
            return 0
        fend = pos + 4 + size
        f.start, f.end, f.size, f.close = pos, fend, size, 0
        if fend > d.end:
            f.known_end = d.end
            if not header_complete(_stream_bytes(d, buf, base, pos + 4, d.end), request):
                break
            _place(d, &f, d.end)
            if f.ts < last_ts:
                f.ts = last_ts
            if not _append(d, f):
                raise MemoryError()
            break
        f.known_end = fend
        _place(d, &f, fend)
        if f.ts < last_ts:
            f.ts = last_ts
        last_ts = f.ts
        if not _append(d, f):
            raise MemoryError()
        pos = fend
    return 1


cdef bytes _stream_bytes(Direction* d, const uint8_t* buf, int64_t base, int64_t start,
                         int64_t stop):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, stop - start)
    _gather(d, buf, base, start, stop, <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef int _request_first(Framed* q, Framed* r, Direction* req, Direction* resp) noexcept nogil:
    """tcp._merge's rule for the next request ``q`` and response ``r`` (no gap
    markers here): by the response's ACK, else the request's, else the times."""
    if r.has_ack:
        return _offset(r.ack, req.ref_seq, req.ref_off) >= q.end
    if q.has_ack:
        return _offset(q.ack, resp.ref_seq, resp.ref_off) < r.end
    return q.ts <= r.ts


def flow_columns(const uint8_t[::1] packed, const uint8_t[::1] buf, int64_t base,
                 object plausible_request, object header_complete):
    """One flow's frame rows as columns, or None for the reference (see the module
    docstring).  ``packed``: its index records; ``buf``: the bytes holding their
    payloads, ``buf[0]`` at file offset ``base``.  ``plausible_request(head)`` and
    ``header_complete(payload, is_request)`` are the reference's own checks, asked
    at most once per direction.

    Returns (client_from_a, rows, direction int32[], timestamp_ns int64[],
    frame_size int32[], truncated uint8[], close uint8[] (the client's FIN marker),
    frame offsets int32[rows + 1], frame bytes, frame_number int32[], api_key int16[],
    api_version int16[], correlation_id int32[], header uint8[] (2: the request
    fields are there, 1: a correlation id only, 0: none), client_id int32[] (an
    index into client_ids, -1: null), client_ids (a list of str)), the arrays as
    bytes in the machine's byte order."""
    cdef Py_ssize_t n = packed.shape[0] // RECORD, i
    if n == 0 or n * RECORD != packed.shape[0]:
        return None
    cdef Packet* ps = <Packet*>malloc(n * sizeof(Packet))
    cdef Direction dirs[2]
    cdef uint8_t client, side
    _clear(&dirs[0])
    _clear(&dirs[1])
    if ps is NULL:
        raise MemoryError()
    try:
        if not _read_packets(packed, ps, n) or not _one_handshake(ps, n):
            return None
        for i in range(n):   # every payload must lie in the buffer
            if ps[i].plen and (ps[i].at < base or ps[i].at - base + ps[i].cap > buf.shape[0]):
                return None
        client = ps[0].from_a
        for i in range(2):
            dirs[i].pieces = <Piece*>malloc(n * sizeof(Piece))
            if dirs[i].pieces is NULL:
                raise MemoryError()
            side = client if i == 0 else 1 - client
            if not _add_packets(&dirs[i], ps, n, side) or not _assemble(&dirs[i], ps, n, side):
                return None
        return _frames(dirs, &buf[0] if buf.shape[0] else NULL, base, client,
                       plausible_request, header_complete)
    finally:
        free(ps)
        for i in range(2):
            free(dirs[i].pieces)
            free(dirs[i].frames)


cdef void _clear(Direction* d) noexcept nogil:
    d.pieces = NULL
    d.n_pieces = 0
    d.frames = NULL
    d.n_frames = d.frames_cap = 0
    d.has_isn = d.has_fin = 0
    d.isn = d.fin_seq = d.fin_ack = d.ref_seq = 0
    d.fin_ts = d.fin_off = d.ref_off = d.end = 0
    d.fin_has_ack = 0


cdef object _frames(Direction* dirs, const uint8_t* buf, int64_t base, uint8_t client,
                    object plausible_request, object header_complete):
    """tcp._build from the byte streams on: split, the client's FIN, the merge, rows."""
    cdef Direction* req = &dirs[0]
    cdef Direction* resp = &dirs[1]
    cdef Framed close
    if req.end >= 8 and not plausible_request(
            _stream_bytes(req, buf, base, 0, req.end if req.end < 16 else 16)):
        return None                         # not Kafka: the reference says so
    if not _split(req, buf, base, 1, header_complete) \
            or not _split(resp, buf, base, 0, header_complete):
        return None
    if req.n_frames + resp.n_frames == 0:
        return None                         # the reference reports it, or drops it
    if req.has_fin:
        close.ts, close.start, close.end = req.fin_ts, req.fin_off, req.fin_off + 1
        close.known_end, close.size, close.record, close.close = req.fin_off, 0, -1, 1
        close.has_ack, close.ack = req.fin_has_ack, req.fin_ack
        if not _append(req, close):
            raise MemoryError()
    return _rows(dirs, buf, base, client)


cdef object _rows(Direction* dirs, const uint8_t* buf, int64_t base, uint8_t client):
    """Both directions' frames in tcp._merge's order, as the row columns."""
    cdef Direction* req = &dirs[0]
    cdef Direction* resp = &dirs[1]
    cdef Py_ssize_t rows = req.n_frames + resp.n_frames, i = 0, j = 0, k, total = 0
    cdef Framed* f
    for k in range(req.n_frames):
        total += req.frames[k].known_end - req.frames[k].start - (0 if req.frames[k].close else 4)
    for k in range(resp.n_frames):
        total += resp.frames[k].known_end - resp.frames[k].start - 4
    if total > MAX_BINARY:
        return None
    cdef bytes direction = PyBytes_FromStringAndSize(NULL, rows * 4)
    cdef bytes ts = PyBytes_FromStringAndSize(NULL, rows * 8)
    cdef bytes size = PyBytes_FromStringAndSize(NULL, rows * 4)
    cdef bytes truncated = PyBytes_FromStringAndSize(NULL, rows)
    cdef bytes close = PyBytes_FromStringAndSize(NULL, rows)
    cdef bytes number = PyBytes_FromStringAndSize(NULL, rows * 4)
    cdef bytes offsets = PyBytes_FromStringAndSize(NULL, (rows + 1) * 4)
    cdef bytes data = PyBytes_FromStringAndSize(NULL, total)
    cdef int32_t* o_dir = <int32_t*>PyBytes_AS_STRING(direction)
    cdef int64_t* o_ts = <int64_t*>PyBytes_AS_STRING(ts)
    cdef int32_t* o_size = <int32_t*>PyBytes_AS_STRING(size)
    cdef uint8_t* o_trunc = <uint8_t*>PyBytes_AS_STRING(truncated)
    cdef uint8_t* o_close = <uint8_t*>PyBytes_AS_STRING(close)
    cdef int32_t* o_num = <int32_t*>PyBytes_AS_STRING(number)
    cdef int32_t* o_off = <int32_t*>PyBytes_AS_STRING(offsets)
    cdef uint8_t* o_data = <uint8_t*>PyBytes_AS_STRING(data)
    cdef int64_t at = 0
    cdef Py_ssize_t row
    cdef Direction* d
    o_off[0] = 0
    for row in range(rows):
        if j >= resp.n_frames or (i < req.n_frames and _request_first(
                &req.frames[i], &resp.frames[j], req, resp)):
            d = req
            f = &req.frames[i]
            i += 1
            o_dir[row] = 0
        else:
            d = resp
            f = &resp.frames[j]
            j += 1
            o_dir[row] = 1
        o_ts[row] = f.ts
        o_size[row] = f.size
        o_trunc[row] = f.known_end < f.end and not f.close
        o_close[row] = f.close
        o_num[row] = 0 if f.close or f.record < 0 else <int32_t>(f.record + 1)
        if not f.close:
            _gather(d, buf, base, f.start + 4, f.known_end, o_data + at)
            at += f.known_end - f.start - 4
        o_off[row + 1] = <int32_t>at
    return (client, rows, direction, ts, size, truncated, close, offsets, data, number) \
        + _headers(rows, direction, close, offsets, data)


cdef tuple _headers(Py_ssize_t rows, bytes direction, bytes close, bytes offsets, bytes data):
    """headers.peek_frame_header of every frame: a request's key, version,
    correlation id and client id (a v1+ header's, when readable); a response's
    correlation id.  Client ids are decoded once per distinct value."""
    cdef const int32_t* dirs = <const int32_t*>PyBytes_AS_STRING(direction)
    cdef const uint8_t* closes = <const uint8_t*>PyBytes_AS_STRING(close)
    cdef const int32_t* offs = <const int32_t*>PyBytes_AS_STRING(offsets)
    cdef const uint8_t* frames = <const uint8_t*>PyBytes_AS_STRING(data)
    cdef bytes key = PyBytes_FromStringAndSize(NULL, rows * 2)
    cdef bytes version = PyBytes_FromStringAndSize(NULL, rows * 2)
    cdef bytes corr = PyBytes_FromStringAndSize(NULL, rows * 4)
    cdef bytes present = PyBytes_FromStringAndSize(NULL, rows)
    cdef bytes client_id = PyBytes_FromStringAndSize(NULL, rows * 4)
    cdef int16_t* o_key = <int16_t*>PyBytes_AS_STRING(key)
    cdef int16_t* o_ver = <int16_t*>PyBytes_AS_STRING(version)
    cdef int32_t* o_corr = <int32_t*>PyBytes_AS_STRING(corr)
    cdef uint8_t* o_present = <uint8_t*>PyBytes_AS_STRING(present)
    cdef int32_t* o_cid = <int32_t*>PyBytes_AS_STRING(client_id)
    cdef list names = []
    cdef dict index = {}
    cdef Py_ssize_t row, length, n, last_n = -1
    cdef const uint8_t* f
    cdef const uint8_t* last = NULL
    cdef int32_t last_index = -1
    for row in range(rows):
        f = frames + offs[row]
        length = offs[row + 1] - offs[row]
        o_key[row] = o_ver[row] = 0
        o_corr[row] = 0
        o_cid[row] = -1
        o_present[row] = 0
        if closes[row]:
            continue
        if dirs[row] == 1:
            if length >= 4:
                o_present[row] = 1
                o_corr[row] = _be32(f)
            continue
        if length < 8:
            continue
        o_present[row] = 2
        o_key[row], o_ver[row], o_corr[row] = _be16(f), _be16(f + 2), _be32(f + 4)
        if length < 10:
            continue
        n = _be16(f + 8)
        if n < 0 or length < 10 + n:
            continue
        if last is not NULL and n == last_n and memcmp(f + 10, last, n) == 0:
            o_cid[row] = last_index
            continue
        raw = PyBytes_FromStringAndSize(<const char*>(f + 10), n)
        found = index.get(raw)
        if found is None:
            found = len(names)
            index[raw] = found
            names.append(raw.decode("utf-8", "replace"))
        last, last_n, last_index = f + 10, n, found
        o_cid[row] = last_index
    return (key, version, corr, present, client_id, names)


# --- the index: a classic pcap's records to each flow's index records -------------------

cdef enum:
    MAX_RECORD = 64 * 1024 * 1024       # pcap._MAX_RECORD
    LINKTYPE_ETHERNET = 1               # packet.LINKTYPE_*
    LINKTYPE_LINUX_SLL = 113
    LINKTYPE_LINUX_SLL2 = 276


ctypedef struct FlowIndex:       # one flow's records: its two ends, its packed records
    uint64_t low                 # the ends as (ip << 16 | port), the lower first
    uint64_t high
    uint64_t a                   # the end that sorts first as (ip text, port)
    uint8_t* packed
    Py_ssize_t size
    Py_ssize_t cap


cdef inline uint32_t _rd32(const uint8_t* p, int big) noexcept nogil:
    if big:
        return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]
    return _le32(p)


cdef inline uint32_t _be32u(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline void _put32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0], p[1], p[2], p[3] = v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, v >> 24


cdef inline void _put64(uint8_t* p, int64_t v) noexcept nogil:
    _put32(p, <uint32_t>(<unsigned long long>v & 0xFFFFFFFFULL))
    _put32(p + 4, <uint32_t>(<unsigned long long>v >> 32))


cdef int _text_order(uint64_t x, uint64_t y) noexcept nogil:
    """-1/0/1 as Python compares (ip text, port) of two IPv4 ends."""
    cdef char tx[16]
    cdef char ty[16]
    cdef int c
    _ip_text(<uint32_t>(x >> 16), tx)
    _ip_text(<uint32_t>(y >> 16), ty)
    c = strcmp(tx, ty)
    if c == 0:
        c = <int>(x & 0xFFFF) - <int>(y & 0xFFFF)
    return (c > 0) - (c < 0)


cdef void _ip_text(uint32_t ip, char* out) noexcept nogil:
    cdef int shift, v
    cdef char* p = out
    for shift in range(24, -8, -8):
        v = (ip >> shift) & 0xFF
        if v >= 100:
            p[0] = 48 + v // 100
            p += 1
        if v >= 10:
            p[0] = 48 + (v // 10) % 10
            p += 1
        p[0] = 48 + v % 10
        p += 1
        p[0] = 46 if shift else 0
        p += 1


cdef class _Flows:
    """The flows of one range, by their ends (an open-addressing table)."""

    cdef FlowIndex* flows
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef Py_ssize_t* slots       # index + 1 into flows, 0: free
    cdef Py_ssize_t n_slots

    def __cinit__(self):
        self.n, self.cap, self.n_slots = 0, 16, 64
        self.flows = <FlowIndex*>malloc(self.cap * sizeof(FlowIndex))
        self.slots = <Py_ssize_t*>calloc(self.n_slots, sizeof(Py_ssize_t))
        if self.flows is NULL or self.slots is NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.flows is not NULL:
            for i in range(self.n):
                free(self.flows[i].packed)
            free(self.flows)
        free(self.slots)

    cdef FlowIndex* get(self, uint64_t src, uint64_t dst) except NULL:
        cdef uint64_t low = src if src < dst else dst, high = dst if src < dst else src
        cdef uint64_t h = (low * 0x9E3779B97F4A7C15ULL) ^ (high * 0xC2B2AE3D27D4EB4FULL)
        cdef Py_ssize_t s = <Py_ssize_t>((h >> 17) & (self.n_slots - 1))
        cdef FlowIndex* f
        while self.slots[s]:
            f = &self.flows[self.slots[s] - 1]
            if f.low == low and f.high == high:
                return f
            s = (s + 1) & (self.n_slots - 1)
        return self._add(low, high, s)

    cdef FlowIndex* _add(self, uint64_t low, uint64_t high, Py_ssize_t s) except NULL:
        cdef FlowIndex* grown
        if self.n == self.cap:
            grown = <FlowIndex*>realloc(self.flows, 2 * self.cap * sizeof(FlowIndex))
            if grown is NULL:
                raise MemoryError()
            self.flows, self.cap = grown, 2 * self.cap
        f = &self.flows[self.n]
        f.low, f.high, f.packed, f.size, f.cap = low, high, NULL, 0, 0
        f.a = low if _text_order(low, high) <= 0 else high
        self.n += 1
        self.slots[s] = self.n
        if 2 * self.n > self.n_slots:
            self._rehash()
        return f

    cdef int _rehash(self) except -1:
        cdef Py_ssize_t i, s, size = self.n_slots * 4
        cdef Py_ssize_t* slots = <Py_ssize_t*>calloc(size, sizeof(Py_ssize_t))
        cdef uint64_t h
        if slots is NULL:
            raise MemoryError()
        for i in range(self.n):
            h = (self.flows[i].low * 0x9E3779B97F4A7C15ULL) ^ (
                self.flows[i].high * 0xC2B2AE3D27D4EB4FULL)
            s = <Py_ssize_t>((h >> 17) & (size - 1))
            while slots[s]:
                s = (s + 1) & (size - 1)
            slots[s] = i + 1
        free(self.slots)
        self.slots, self.n_slots = slots, size
        return 0

    def rows(self):
        """[(a ip, a port, b ip, b port, packed records)], in order of first packet."""
        cdef Py_ssize_t i
        cdef char text[16]
        cdef uint64_t b
        out = []
        for i in range(self.n):
            f = &self.flows[i]
            b = f.high if f.a == f.low else f.low
            _ip_text(<uint32_t>(f.a >> 16), text)
            a_ip = text.decode("ascii")
            _ip_text(<uint32_t>(b >> 16), text)
            out.append((a_ip, <int>(f.a & 0xFFFF), text.decode("ascii"), <int>(b & 0xFFFF),
                        PyBytes_FromStringAndSize(<char*>f.packed, f.size)))
        return out


cdef int _pack(FlowIndex* f, int64_t ts, uint8_t from_a, uint32_t seq, uint32_t ack,
               uint8_t flags, int64_t at, uint32_t cap, uint32_t plen,
               int64_t record) except -1:
    """One task_reads.PACKED record appended to the flow's."""
    cdef uint8_t* grown
    cdef uint8_t* r
    if f.size + RECORD > f.cap:
        f.cap = 2 * f.cap + 64 * RECORD
        grown = <uint8_t*>realloc(f.packed, f.cap)
        if grown is NULL:
            raise MemoryError()
        f.packed = grown
    r = f.packed + f.size
    _put64(r, ts)
    r[8] = from_a
    _put32(r + 9, seq)
    _put32(r + 13, ack)
    r[17] = flags
    _put64(r + 18, at)
    _put32(r + 26, cap)
    _put32(r + 30, plen)
    _put64(r + 34, record)
    f.size += RECORD
    return 0


def index_pcap(const uint8_t[::1] data, Py_ssize_t pos, int linktype, int big_endian,
               int64_t frac_ns, Py_ssize_t rec_size, int64_t index, int64_t base):
    """The record loop of pcap._read_pcap from ``pos`` to the end of ``data``, each
    packet decoded as packet.PacketDecoder decodes IPv4 without options, not a
    fragment, carrying TCP, in an Ethernet frame (its one-unpack path) or a Linux
    cooked capture header (SLL, SLL2), and appended to its flow's index records
    (``at``: ``base`` + its payload's place in ``data``).

    None for another link type, and at the first record none of those (the
    reference reads the range); else (records, packets, stop, pos, detail, flows):
    ``stop`` 0 at the end, 1 a record header cut (``detail``: the bytes left), 2 a
    captured length over the limit (``detail``: that length), 3 a record cut
    (``detail``: its captured length), ``pos`` the record's offset; ``flows`` as
    _Flows.rows."""
    cdef Py_ssize_t n = data.shape[0], start, end, t, ip_end, pstart, pend, l2, etype_at
    cdef const uint8_t* d = &data[0] if n else NULL
    cdef const uint8_t* ip
    cdef uint32_t sec, frac, incl
    cdef int64_t records = 0, packets = 0, plen, total
    cdef int stop = 0, thl
    cdef uint64_t src, dst
    cdef _Flows flows = _Flows()
    cdef FlowIndex* f
    if linktype == LINKTYPE_ETHERNET:
        l2, etype_at = 14, 12
    elif linktype == LINKTYPE_LINUX_SLL:
        l2, etype_at = 16, 14
    elif linktype == LINKTYPE_LINUX_SLL2:
        l2, etype_at = 20, 0
    else:
        return None
    while pos < n:
        if pos + rec_size > n:
            stop = 1
            break
        sec, frac = _rd32(d + pos, big_endian), _rd32(d + pos + 4, big_endian)
        incl = _rd32(d + pos + 8, big_endian)
        if incl > MAX_RECORD:
            stop = 2
            break
        start = pos + rec_size
        end = start + incl
        if end > n:
            stop = 3
            break
        records += 1
        ip = d + start + l2
        total = ip[2] << 8 | ip[3] if end - start >= l2 + 4 else 0
        # the decoder's conditions for this kind; any other record: the reference
        if end - start < l2 + 34 or d[start + etype_at] != 0x08 or d[start + etype_at + 1] \
                or ip[0] != 0x45 or ip[9] != 6 or (ip[6] & 0x3F) or ip[7] or total < 20:
            return None
        t = start + l2 + 20
        thl = (ip[32] >> 4) * 4
        ip_end = start + l2 + total
        plen = ip_end - t - thl
        if thl < 20 or plen < 0:
            return None
        pstart = t + thl
        pend = ip_end if ip_end < end else end
        src = (<uint64_t>_be32u(ip + 12) << 16) | (ip[20] << 8 | ip[21])
        dst = (<uint64_t>_be32u(ip + 16) << 16) | (ip[22] << 8 | ip[23])
        f = flows.get(src, dst)
        _pack(f, <int64_t>sec * 1000000000 + <int64_t>frac * frac_ns, src == f.a,
              _be32u(ip + 24), _be32u(ip + 28), ip[33], base + pstart,
              <uint32_t>(pend - pstart if pend > pstart else 0), <uint32_t>plen, index)
        packets += 1
        index += 1
        pos = end
    detail = (n - pos) if stop == 1 else incl if stop else 0
    return records, packets, stop, pos, detail, flows.rows()


def pcap_cuts(const uint8_t[::1] data, Py_ssize_t pos, int big_endian, Py_ssize_t rec_size,
              int64_t index, Py_ssize_t every):
    """Where capture_split.plan_ranges cuts a classic pcap: pcap._read_pcap's loop
    from ``pos`` (past the file header) following the records' lengths only, a
    cut at the first record boundary at or past every ``every`` bytes from the
    last cut -> [(offset, packet records before it)].  It stops where that loop
    stops (a record header or record cut by the end, a captured length over the
    limit), as the reference walk does; the cut list it found so far stands."""
    cdef Py_ssize_t n = data.shape[0], next_cut = every, end
    cdef const uint8_t* d = &data[0] if n else NULL
    cdef uint32_t incl
    cuts = []
    while pos < n:
        if pos >= next_cut:
            cuts.append((pos, index))
            next_cut = pos + every
        if pos + rec_size > n:
            break
        incl = _rd32(d + pos + 8, big_endian)
        if incl > MAX_RECORD:
            break
        end = pos + rec_size + incl
        if end > n:
            break
        index += 1
        pos = end
    return cuts
