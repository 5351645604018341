# cython: boundscheck=False, wraparound=False
"""The per-frame loops of a plain connection's column-wise check
(``spark_jobs/check_columns.py``: ``_requests``, ``_response_ids``,
``_responses``, their readable definitions), compiled.

A plain connection's frames are checked one at a time by the same walks as
everywhere (``pairing_checks.request_walk`` / ``response_walk``: compiled
programs, the Python walkers behind them) and the same record-batch checks
(``check_produced`` / ``check_fetched``).  What is left in Python around them
is the loop: for each frame a lookup of its walk, a header read, a few calls and
appends, about as much CPU as the checks themselves.  Here the loop, the header
peek and the outputs are C; each frame still calls the walk and the records
check (Python-level calls into compiled code), and anything not in the common
shape goes to the caller's ``slow`` function, which is the readable loop's own
body for one frame: so every value, and every reason to give up (``NotPlain``),
is the readable code's.

Walks are looked up per (API key, version) in a dict the caller keeps, made by
the caller's ``entry`` function on first sight: a request entry is
``(header version, walk, records check, is Produce)``, a response entry
``(walk, records check)``, a records check being ``(compiled check, its CRC32C
function, the readable check)``: the compiled one is asked first, the readable
one (which says what is wrong) when it is not sure, as
``pairing_checks.check_produced`` / ``check_fetched`` do; ``True`` means "always the slow path" (an unknown
version, header v0) and ``False`` "not plain" (an unknown API).

The frames come as a list of bytes, or as ``check_columns.Payloads``: where they
lie in an Arrow buffer, an address and a size each.  Those are read in place,
and a compiled walk (``_walk.Program``) and the header read are called on the
address, so no frame is copied into a bytes object unless the slow path needs
it (for the 919,785-frame capture, those copies were 290 MB of fresh memory).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint64_t, uintptr_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from kafka_net.protocol._walk cimport Program, _request_header

import numpy as np

from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.records.framing import RecordError


cdef inline int32_t _i32(const unsigned char* b) noexcept:
    return <int32_t>((<unsigned int>b[0] << 24) | (<unsigned int>b[1] << 16)
                     | (<unsigned int>b[2] << 8) | <unsigned int>b[3])


cdef inline int16_t _i16(const unsigned char* b) noexcept:
    return <int16_t>((<unsigned int>b[0] << 8) | <unsigned int>b[1])


def response_ids(frames, const int64_t[::1] positions, not_plain):
    """Each response's correlation id (its first four bytes), int64; ``not_plain``
    raised for a frame shorter than that."""
    cdef Py_ssize_t i, nb, n = positions.shape[0]
    cdef _Frames read = _Frames(frames)
    cdef const unsigned char* b
    out = np.empty(n, np.int64)
    cdef int64_t[::1] ids = out
    for i in range(n):
        b = read.at(positions[i], &nb)
        if nb < 4:
            raise not_plain
        ids[i] = _i32(b)
    return out


cdef inline bytes _bytes(object frame):
    return frame if type(frame) is bytes else bytes(frame)


cdef class _Frames:
    """The frames as the loops read them: frame ``i`` at ``at(i)``, its size
    set, and as bytes where a Python function needs it (``payload(i)``).  A
    list's frames are its bytes objects; Payloads' are addresses in the Arrow
    buffers that the Payloads object keeps alive."""
    cdef list items
    cdef object keep
    cdef const uint64_t[::1] address
    cdef const int64_t[::1] size
    cdef bytes held           # the list's frame last read, kept while it is in use

    def __cinit__(self, frames):
        if type(frames) is list:
            self.items = frames
        else:
            self.keep, self.address, self.size = frames, frames.address, frames.size

    cdef inline const unsigned char* at(self, Py_ssize_t i, Py_ssize_t* size) except NULL:
        if self.items is None:
            size[0] = self.size[i]
            return <const unsigned char*><uintptr_t>self.address[i]
        self.held = _bytes(self.items[i])
        size[0] = PyBytes_GET_SIZE(self.held)
        return <const unsigned char*>PyBytes_AS_STRING(self.held)

    cdef bytes payload(self, Py_ssize_t i):
        if self.items is not None:
            return _bytes(self.items[i])
        return PyBytes_FromStringAndSize(<const char*><uintptr_t>self.address[i],
                                         self.size[i])


def requests(frames, const int64_t[::1] positions, dict entries, entry, slow,
             not_plain):
    """Each request's (API key, version, correlation id, client id, whether it is
    an acks=0 Produce, why its body is not checked): ``(keys, versions, ids,
    client ids, acks0, whys)``, the numbers as int32 / int64 / bool arrays.
    ``slow(payload, key, version, id)`` gives ``(client id, acks0, why)`` for
    one request the readable way."""
    cdef Py_ssize_t i, j, n = positions.shape[0], nb
    cdef _Frames read = _Frames(frames)
    cdef const unsigned char* b
    cdef int key, version
    keys = np.empty(n, np.int32)
    versions = np.empty(n, np.int32)
    ids = np.empty(n, np.int64)
    zeros = np.zeros(n, np.bool_)
    cdef int[::1] k_out = keys
    cdef int[::1] v_out = versions
    cdef int64_t[::1] c_out = ids
    cdef unsigned char[::1] z_out = zeros.view(np.uint8)
    clients, whys = [None] * n, [None] * n
    for i in range(n):
        j = positions[i]
        b = read.at(j, &nb)
        if nb < 8:
            raise not_plain
        key, version = _i16(b), _i16(b + 2)
        k_out[i], v_out[i], c_out[i] = key, version, _i32(b + 4)
        found = entries.get((key << 16) | (version & 0xFFFF))
        if found is None:
            found = entries[(key << 16) | (version & 0xFFFF)] = entry(key, version)
        if found is False:
            raise not_plain
        got = None if found is True else _request(read, j, b, nb, version, found)
        if got is None:
            got = slow(read.payload(j), key, version, c_out[i])
        clients[i], zero, whys[i] = got
        z_out[i] = bool(zero)
    return keys, versions, ids, clients, zeros, whys


cdef object _request(_Frames read, Py_ssize_t j, const unsigned char* b, Py_ssize_t nb,
                     int version, tuple found):
    """(client id, acks0, None) of a request whose header and body walk and whose
    records check; None for the slow path (it also says why a body is wrong)."""
    header_version, walk, check, produce = found
    head = _request_header(b, nb, header_version)
    if head is None:
        return None
    try:
        got = (<Program>walk)._walk(b, nb, head[1]) if type(walk) is Program else None
        if got is None:     # a walk in Python, or one the program is not sure of
            got = walk(read.payload(j), head[1])
        end, values, _, records = got
        if end != nb:
            return None
        fast, crc, readable = check
        for recs in records:
            if not fast(recs, crc):
                readable(recs, version)
    except (InvalidRequestError, RecordError):
        return None
    return head[0], produce and values.get("acks") == 0, None


def responses(frames, const int64_t[::1] positions, const int64_t[::1] answered,
              keys, versions, dict entries, entry, slow):
    """Each response's sorted distinct non-zero error codes and why its body is
    not checked (None: checked), checked for the API and version of the request
    it answers (``answered``: its index in ``keys`` / ``versions``).
    ``slow(payload, key, version)`` gives ``(codes or None, why)`` the readable
    way."""
    cdef Py_ssize_t i, j, r, n = positions.shape[0], nb
    cdef _Frames read = _Frames(frames)
    cdef const unsigned char* b
    cdef int key, version
    cdef int[::1] k_in = keys
    cdef int[::1] v_in = versions
    codes_out, whys = [None] * n, [None] * n
    for i in range(n):
        j = positions[i]
        b = read.at(j, &nb)
        r = answered[i]
        key, version = k_in[r], v_in[r]
        found = entries.get((key << 16) | (version & 0xFFFF))
        if found is None:
            found = entries[(key << 16) | (version & 0xFFFF)] = _with_program(
                entry(key, version))
        got = None if found is True else _response(read, j, b, nb, found)
        if got is None:
            got = slow(read.payload(j), key, version)
        codes, whys[i] = got
        codes_out[i] = sorted(set(codes)) if codes else []
    return codes_out, whys


cdef object _with_program(found):
    """A response entry with its compiled program last (None: the walk is Python):
    ``(walk, records check, program)``; True as it is."""
    if found is True:
        return True
    walk, check = found
    program = getattr(walk, "__self__", None)     # walk: a Program's bound response
    return walk, check, program if type(program) is Program else None


cdef object _response(_Frames read, Py_ssize_t j, const unsigned char* b, Py_ssize_t nb,
                      tuple found):
    walk, (fast, crc, readable), program = found
    try:
        got = (<Program>program)._response(b, nb) if program is not None else None
        if got is None:     # a walk in Python, or a response the program is not sure of
            got = walk(read.payload(j))
        codes, records = got
        for recs in records:
            if not fast(recs, crc):
                readable(recs)
    except (InvalidRequestError, RecordError):
        return None
    return codes, None
