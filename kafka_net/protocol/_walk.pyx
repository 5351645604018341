# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled interpreter of body-walk programs (:mod:`kafka_net.protocol.walk_program`).

A :class:`Program` holds one walk's ops (made from the message definitions at
run time) and runs them over a body's bytes: it proves the body reaches its
end under the same rules as the generated Python walker
(:mod:`kafka_net.protocol.walker`) and keeps the same values.  It answers
what that walker answers, or None when it is not sure, and then the Python
walker (``fallback``) answers instead.  Every way a body can be wrong is "not
sure" here: a refused body is handed to the walker, which refuses it and says
why, so this module never has to agree with anyone's error words.

The one rule to keep: never accept a body the Python walker refuses.  Each
read is checked against the buffer's length before it is made; a skip that
lands past the buffer's end is refused at once (the walker refuses it later:
offsets only grow, and the end of a body or of a tagged value is never past
the buffer's).

Nothing here is mutable once made: a Program is shared between threads.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from uuid import UUID

# The opcodes: kafka_net/protocol/walk_program.py writes them, and says what each means.
cdef enum:
    END, SKIP, TOP, CODE, TAG_BYTE, SKIP_TAGS, TAGS, STRING, BYTES, ARRAY, NULLABLE_STRUCT

# REFUSED (not sure: the Python walker decides) and RAISED (a Python exception is
# set), the internal functions' signals, are in _walk.pxd with Program's fields.


cdef inline uint64_t _be(const unsigned char* s, int width) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(width):
        v = (v << 8) | s[i]
    return v


cdef inline Py_ssize_t _uvarint(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p,
                                int64_t* out) noexcept:
    """An unsigned varint of at most 5 bytes and 32 bits at ``p``: the offset after it."""
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char byte
    for _ in range(5):
        if p >= nb:
            return REFUSED
        byte = b[p]
        p += 1
        value |= (<uint64_t>(byte & 0x7F)) << shift
        if not byte & 0x80:
            if value >> 32:
                return REFUSED
            out[0] = <int64_t>value
            return p
        shift += 7
    return REFUSED


cdef inline Py_ssize_t _tag_header(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p,
                                   int64_t last, int64_t* tag, int64_t* size) noexcept:
    """A tagged field's tag and size, after ``last`` and within the buffer."""
    p = _uvarint(b, nb, p, tag)
    if p < 0:
        return REFUSED
    p = _uvarint(b, nb, p, size)
    if p < 0 or tag[0] <= last or p + size[0] > nb:
        return REFUSED
    return p


cdef Py_ssize_t _skip_tags(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p,
                           int64_t max_tags) noexcept:
    """A tagged-field section none of whose tags are known: the offset after it."""
    cdef int64_t count = 0, tag = 0, size = 0, last = -1
    p = _uvarint(b, nb, p, &count)
    if p < 0 or count > max_tags:
        return REFUSED
    for _ in range(count):
        p = _tag_header(b, nb, p, last, &tag, &size)
        if p < 0:
            return REFUSED
        last = tag
        p += size
    return p


cdef inline Py_ssize_t _length(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p,
                               bint flexible, int width, int64_t* n) noexcept:
    """A length prefix: compact (uvarint N+1) or classic (signed, ``width`` bytes)."""
    if flexible:
        p = _uvarint(b, nb, p, n)
        n[0] -= 1
        return p
    if p + width > nb:
        return REFUSED
    if width == 2:
        n[0] = <int16_t>_be(b + p, 2)
    else:
        n[0] = <int32_t>_be(b + p, 4)
    return p + width


cdef int _utf8(const unsigned char* s, Py_ssize_t n) except -1:
    """1 if the ``n`` bytes are UTF-8 as Python's strict decoder reads it, else 0."""
    cdef unsigned char seen = 0
    cdef Py_ssize_t i
    for i in range(n):
        seen |= s[i]
    if seen < 0x80:
        return 1
    try:
        PyUnicode_DecodeUTF8(<const char*>s, n, NULL)
    except UnicodeDecodeError:
        return 0
    return 1


cdef object _top_value(const unsigned char* s, int kind):
    """A kept top-level value of one of walk_program.TOP_TYPES."""
    cdef uint64_t raw
    cdef double d = 0
    if kind == 0:
        return <int8_t>s[0]
    if kind == 1:
        return <int16_t>_be(s, 2)
    if kind == 2:
        return <uint16_t>_be(s, 2)
    if kind == 3:
        return <int32_t>_be(s, 4)
    if kind == 4:
        return <uint32_t>_be(s, 4)
    if kind == 5:
        return <int64_t>_be(s, 8)
    if kind == 6:
        raw = _be(s, 8)
        memcpy(&d, &raw, 8)
        return d
    if kind == 8:
        return UUID(bytes=PyBytes_FromStringAndSize(<const char*>s, 16))
    return s[0] != 0


cdef inline int _top_width(int kind) noexcept:
    if kind == 8:
        return 16
    return 1 if kind == 0 or kind == 7 else 2 if kind < 3 else 4 if kind < 5 else 8


cdef int _top(const unsigned char* b, Py_ssize_t nb, Py_ssize_t at, int kind, int slot,
              bint is_code, list tops, list codes) except RAISED:
    """``TOP``: a kept top-level value at ``at`` (and kept as an error code too)."""
    if at + _top_width(kind) > nb:
        return REFUSED
    value = _top_value(b + at, kind)
    tops[slot] = value
    if is_code and value:
        codes.append(value)
    return 0


cdef int _code(const unsigned char* b, Py_ssize_t nb, Py_ssize_t at,
               list codes) except RAISED:
    """``CODE``: a non-zero int16 error_code at ``at`` is kept."""
    if at + 2 > nb:
        return REFUSED
    if b[at] or b[at + 1]:
        codes.append(<int16_t>_be(b + at, 2))
    return 0


cdef inline Py_ssize_t _no_known_tags(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p,
                                      int64_t max_tags) noexcept:
    """``TAG_BYTE``, ``SKIP_TAGS``: a tagged-field section, 0 (empty) or skipped."""
    if p >= nb:
        return REFUSED
    if b[p] == 0:
        return p + 1
    return _skip_tags(b, nb, p, max_tags)


cdef Py_ssize_t _string(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p, Py_ssize_t lim,
                        bint flexible, bint nullable) except RAISED:
    """``STRING``: a length (null where nullable), then that many bytes of UTF-8
    within ``lim``."""
    cdef int64_t n = 0
    p = _length(b, nb, p, flexible, 2, &n)
    if p < 0:
        return REFUSED
    if n < 0:
        return p if nullable and n == -1 else REFUSED
    if p + n > lim or not _utf8(b + p, n):
        return REFUSED
    return p + n


cdef Py_ssize_t _bytes(const unsigned char* b, Py_ssize_t nb, Py_ssize_t p, bint flexible,
                       bint nullable, bint keep, list recs) except RAISED:
    """``BYTES``: a length (null where nullable), then that many bytes, kept as
    records when ``keep`` and not empty."""
    cdef int64_t n = 0
    p = _length(b, nb, p, flexible, 4, &n)
    if p < 0:
        return REFUSED
    if n < 0:
        return p if nullable and n == -1 else REFUSED
    if p + n > nb:
        return REFUSED
    if keep and n:
        recs.append(PyBytes_FromStringAndSize(<const char*>(b + p), n))
    return p + n


cdef class Program:
    """One body walk, compiled: ``walk(buf, p)`` gives the Python walker's
    ``(end, {top value}, [error codes], [records])`` or None (not sure);
    calling it gives the same, asking ``fallback(buf, p)`` when not sure.
    ``response(payload)`` is :func:`pairing_checks._response_walk`'s run: the
    response header (version ``header_version``) skipped, the body walked to
    the payload's exact end, ``(codes, records)``; ``fallback(payload)`` when
    not sure."""

    # its fields are declared in _walk.pxd

    def __cinit__(self, ops, tuple names, tuple defaults, bint codes, bint records,
                  int64_t max_elements, int64_t max_tags, fallback=None,
                  int header_version=-1):
        self.size = len(ops)
        self.ops = <int*>malloc(max(self.size, 1) * sizeof(int))
        if self.ops == NULL:
            raise MemoryError()
        for i in range(self.size):
            self.ops[i] = ops[i]
        self.names, self.defaults = names, defaults
        self.codes, self.records = codes, records
        self.max_elements, self.max_tags = max_elements, max_tags
        self.fallback, self.header_version = fallback, header_version

    def __dealloc__(self):
        free(self.ops)

    def walk(self, buf, Py_ssize_t p):
        """The Python walker's ``(end, top, codes, records)`` of ``buf`` from ``p``,
        or None (not sure)."""
        if type(buf) is bytes:     # as frames come: no buffer to acquire
            return self._walk(<const unsigned char*>PyBytes_AS_STRING(buf),
                              PyBytes_GET_SIZE(buf), p)
        return self._walk_view(buf, p)

    def __call__(self, buf, Py_ssize_t p):
        got = self.walk(buf, p)
        return self.fallback(buf, p) if got is None else got

    def response(self, payload):
        """``(codes, records)`` of a response payload (header and body), or what
        ``fallback(payload)`` says when not sure."""
        if type(payload) is bytes:
            got = self._response(<const unsigned char*>PyBytes_AS_STRING(payload),
                                 PyBytes_GET_SIZE(payload))
        else:
            got = self._response_view(payload)
        return self.fallback(payload) if got is None else got

    cdef object _walk_view(self, const unsigned char[::1] view, Py_ssize_t p):
        return self._walk(&view[0] if view.shape[0] else NULL, view.shape[0], p)

    cdef object _response_view(self, const unsigned char[::1] view):
        return self._response(&view[0] if view.shape[0] else NULL, view.shape[0])

    cdef object _walk(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t p):
        cdef Py_ssize_t end
        if p < 0 or p > nb:
            return None
        tops = list(self.defaults) if self.names else None
        codes = [] if self.codes else None
        recs = [] if self.records else None
        end = self._run(b, nb, 0, p, nb, tops, codes, recs)
        if end < 0:
            return None
        top = {}
        for i in range(len(self.names)):
            top[self.names[i]] = tops[i]
        return (end, top, codes if self.codes else (), recs if self.records else ())

    cdef object _response(self, const unsigned char* b, Py_ssize_t nb):
        cdef Py_ssize_t p
        if nb < 5 or self.header_version < 0:
            return None
        if self.header_version == 0:
            p = 4
        elif b[4] == 0:
            p = 5        # the header's tagged fields: none, as nearly always
        else:
            return None
        codes = [] if self.codes else None
        recs = [] if self.records else None
        if self._run(b, nb, 0, p, nb, None, codes, recs) != nb:
            return None
        return (codes if self.codes else (), recs if self.records else ())

    cdef Py_ssize_t _run(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                         Py_ssize_t p, Py_ssize_t lim, list tops, list codes,
                         list recs) except RAISED:
        """Run the ops from ``pc`` to their END over ``b`` from ``p``, with ``lim``
        the end of the value being read (the buffer's, or a tagged value's):
        the offset after, or REFUSED."""
        cdef const int* ops = self.ops
        cdef int op
        while True:
            op = ops[pc]
            if op == END:
                return p
            if op == SKIP:
                p += ops[pc + 1]
                pc += 2
            elif op == TOP:
                if _top(b, nb, p + ops[pc + 3], ops[pc + 2], ops[pc + 1], ops[pc + 4],
                        tops, codes) < 0:
                    return REFUSED
                pc += 5
            elif op == CODE:
                if _code(b, nb, p + ops[pc + 1], codes) < 0:
                    return REFUSED
                pc += 2
            elif op == TAG_BYTE or op == SKIP_TAGS:
                p = _no_known_tags(b, nb, p, self.max_tags)
                pc += 1
            elif op == TAGS:
                p = self._tags(b, nb, pc, p, tops, codes, recs)
                pc += 3 + ops[pc + 2]
            elif op == STRING:
                p = _string(b, nb, p, lim, ops[pc + 1], ops[pc + 2])
                pc += 3
            elif op == BYTES:
                p = _bytes(b, nb, p, ops[pc + 1], ops[pc + 2], ops[pc + 3], recs)
                pc += 4
            elif op == ARRAY:
                p = self._array(b, nb, pc, p, lim, tops, codes, recs)
                pc += 5 + ops[pc + 4]
            elif op == NULLABLE_STRUCT:
                if p >= nb:
                    return REFUSED
                p += 1
                pc += 2 + (ops[pc + 1] if b[p - 1] > 127 else 0)
            else:
                return REFUSED
            if p < 0 or p > nb:
                return REFUSED

    cdef Py_ssize_t _array(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                           Py_ssize_t p, Py_ssize_t lim, list tops, list codes,
                           list recs) except RAISED:
        """``ARRAY flexible nullable width size`` + body at ``pc``."""
        cdef const int* ops = self.ops
        cdef int64_t n = 0, width = ops[pc + 3]
        cdef Py_ssize_t q
        p = _length(b, nb, p, ops[pc + 1], 4, &n)
        if p < 0:
            return REFUSED
        if n < 0:
            return p if ops[pc + 2] and n == -1 else REFUSED
        if n > lim - p or n > self.max_elements:
            return REFUSED
        if width > 0:
            p += n * width
            return p if p <= nb else REFUSED
        if width < 0 and p + n * -width <= nb:
            # Structs of fixed-width fields, each ending in its tagged-field count:
            # when every count is 0 (as brokers write them), one step.
            q = p - width - 1
            for _ in range(n):
                if b[q]:
                    break
                q -= width
            else:
                return p + n * -width
        for _ in range(n):
            p = self._run(b, nb, pc + 5, p, lim, tops, codes, recs)
            if p < 0:
                return p
        return p

    cdef Py_ssize_t _tags(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                          Py_ssize_t p, list tops, list codes, list recs) except RAISED:
        """``TAGS count size`` + entries at ``pc``: each known tag's value walked
        within its own size, the others skipped."""
        cdef const int* ops = self.ops
        cdef int64_t count = 0, tag = 0, size = 0, last = -1
        cdef Py_ssize_t stop, e, got
        if p >= nb:
            return REFUSED
        if b[p] == 0:
            return p + 1
        p = _uvarint(b, nb, p, &count)
        if p < 0 or count > self.max_tags:
            return REFUSED
        for _ in range(count):
            p = _tag_header(b, nb, p, last, &tag, &size)
            if p < 0:
                return REFUSED
            last, stop = tag, p + size
            e = pc + 3
            for _ in range(ops[pc + 1]):
                if ops[e] == tag:
                    got = self._run(b, nb, e + 2, p, stop, tops, codes, recs)
                    if got < 0 or got > stop:
                        return REFUSED
                    break
                e += 2 + ops[e + 1]
            p = stop     # what a known value left unread is ignored, as the decoder does
        return p


def request_header(frame, int header_version):
    """``(client_id, body offset)`` of a request frame whose header (version 1 or 2)
    is read as :func:`kafka_net.protocol.headers.read_request_header` reads it, or
    None (not sure: that function answers, and says what is wrong)."""
    if type(frame) is bytes:
        return _request_header(<const unsigned char*>PyBytes_AS_STRING(frame),
                               PyBytes_GET_SIZE(frame), header_version)
    return _request_header_view(frame, header_version)


cdef object _request_header_view(const unsigned char[::1] view, int header_version):
    return _request_header(&view[0] if view.shape[0] else NULL, view.shape[0],
                           header_version)


cdef object _request_header(const unsigned char* b, Py_ssize_t nb, int header_version):
    cdef Py_ssize_t n, pos
    if header_version not in (1, 2) or nb < 10:
        return None
    n = <int16_t>_be(b + 8, 2)
    if n == -1:
        client_id, pos = "", 10      # a null client_id reads as ""
    elif n < 0 or 10 + n > nb:
        return None
    else:
        pos = 10 + n
        try:
            client_id = PyUnicode_DecodeUTF8(<const char*>(b + 10), n, NULL)
        except UnicodeDecodeError:
            return None
    if header_version == 2:
        if pos >= nb or b[pos] != 0:
            return None              # tagged fields in the header: rare
        pos += 1
    return client_id, pos
