# cython: boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The conformance job's record-batch checks, compiled: a typed pass over a
records field's bytes that accepts what the readable checks accept in the
common case (magic 2, uncompressed) and says "not sure" about the rest.

The readable definition stays in Python: :func:`.validation.validate_produce_records`
(a Produce request's records) and ``pairing_checks._check_fetched_batches``
(a Fetch response's).  Each function here answers True only where that
reference accepts the same bytes, and False ("not sure") for anything it does
not handle itself (compressed batches, magic 0 and 1, any rule broken):
the caller then runs the reference, which finds what is wrong and says so in
its own words.  False is therefore never a finding.  Hypothesis tests hold
the two against each other (tests/protocol/test_batches_compiled.py), and
``KAFKA_NET_READABLE=1`` keeps this module from being imported at all.

The CRC32C is the crc32c package's C function (hardware CRC instructions),
called once per batch by the caller's choice (``crc32c``), the same function
framing.py uses.  No module state: every function works on its arguments.
"""

from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t

# The batch layout of framing.py (Kafka's DefaultRecordBatch).
cdef enum:
    LENGTH_OFFSET = 8
    LOG_OVERHEAD = 12
    MAGIC_OFFSET = 16
    HEADER_SIZE_UP_TO_MAGIC = 17
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    PRODUCER_ID_OFFSET = 43
    BASE_SEQUENCE_OFFSET = 53
    RECORDS_COUNT_OFFSET = 57
    RECORD_BATCH_OVERHEAD = 61
    LEGACY_RECORD_OVERHEAD_V0 = 14
    MAGIC_V2 = 2
    COMPRESSION_MASK = 0x07
    CONTROL_MASK = 0x20


cdef inline uint32_t _u32(const unsigned char* p) noexcept nogil:
    return ((<uint32_t>p[0]) << 24) | ((<uint32_t>p[1]) << 16) | ((<uint32_t>p[2]) << 8) | p[3]


cdef inline int32_t _i32(const unsigned char* p) noexcept nogil:
    return <int32_t>_u32(p)


cdef inline int64_t _i64(const unsigned char* p) noexcept nogil:
    return <int64_t>(((<uint64_t>_u32(p)) << 32) | _u32(p + 4))


cdef inline Py_ssize_t _varint(const unsigned char* buf, Py_ssize_t p, Py_ssize_t end,
                               int max_bytes, int64_t* out) noexcept nogil:
    """The ZigZag varint (max_bytes 5, 32 bits) or varlong (10, 64 bits) at ``p``,
    read no further than ``end``; its end, or -1 where validation._varint refuses
    it (too long, too many bits) or it runs past ``end``.  Reading a record's fields
    only up to its end refuses no record the reference accepts: the reference reads
    up to the end of all records, but refuses a record whose fields go past its end."""
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    while shift < 7 * max_bytes:
        if p >= end:
            return -1
        b = buf[p]
        p += 1
        if shift == 63 and (b & 0x7F) > 1:
            return -1                      # more than 64 bits
        value |= (<uint64_t>(b & 0x7F)) << shift
        if not b & 0x80:
            if max_bytes == 5 and value >> 32:
                return -1                  # more than 32 bits
            out[0] = <int64_t>((value >> 1) ^ (0 - (value & 1)))
            return p
        shift += 7
    return -1


cdef bint _walk_records(const unsigned char* buf, Py_ssize_t end, int64_t count) noexcept nogil:
    """validation.walk_records (without offset checks or a budget): ``count``
    well-formed records fill ``buf[:end]`` exactly.  Each record: length,
    attributes (a byte nobody reads), timestamp delta (varlong), offset delta,
    key and value (length, negative = null), header count (0 <= it <= what is
    left of the record), headers (a key is never null)."""
    cdef Py_ssize_t pos = 0, p, rec_end
    cdef int64_t index, size, n, header_count, i
    for index in range(count):
        if pos >= end:
            return False
        pos = _varint(buf, pos, end, 5, &size)
        if pos < 0 or size < 0 or size > end - pos:
            return False
        rec_end = pos + size
        p = _varint(buf, pos + 1, rec_end, 10, &n)      # after the attributes byte
        if p < 0:
            return False
        p = _varint(buf, p, rec_end, 5, &n)             # the offset delta
        if p < 0:
            return False
        for i in range(2):                              # key, then value
            p = _varint(buf, p, rec_end, 5, &n)
            if p < 0:
                return False
            if n > 0:
                p += n
        p = _varint(buf, p, rec_end, 5, &header_count)
        if p < 0 or header_count < 0 or header_count > rec_end - p:
            return False
        for i in range(2 * header_count):               # key, value, key, value, ...
            p = _varint(buf, p, rec_end, 5, &n)
            if p < 0:
                return False
            if n > 0:
                p += n
            elif n < 0 and not i & 1:
                return False                            # a null header key
        if p != rec_end:
            return False
        pos = rec_end
    return pos == end


cdef int _batch_ok(const unsigned char* batch, Py_ssize_t size, bint from_client,
                   object crc32c) except -1:
    """validation._validate_framed for one whole magic-2 batch of ``size`` bytes (its
    size field and magic already checked): 1 if it accepts an uncompressed batch, 0
    if not sure.  ``from_client``: the producer rules of _check_count (base offset
    0, count = last offset delta + 1 > 0, no control batch, a sequence with a
    producer id); otherwise the count only needs to be >= 0."""
    cdef int16_t attributes
    cdef int64_t count, count_from_offsets
    cdef uint32_t computed
    if size < RECORD_BATCH_OVERHEAD:
        return 0
    attributes = <int16_t>((batch[ATTRIBUTES_OFFSET] << 8) | batch[ATTRIBUTES_OFFSET + 1])
    if attributes & COMPRESSION_MASK:
        return 0                    # compressed, or an unknown codec: the reference's work
    count = _i32(batch + RECORDS_COUNT_OFFSET)
    if from_client:
        count_from_offsets = <int64_t>_i32(batch + LAST_OFFSET_DELTA_OFFSET) + 1
        if (_i64(batch) != 0 or count <= 0 or count_from_offsets != count
                or attributes & CONTROL_MASK):
            return 0
        if _i64(batch + PRODUCER_ID_OFFSET) > -1 and _i32(batch + BASE_SEQUENCE_OFFSET) < 0:
            return 0
    elif count < 0:
        return 0
    # a memoryview over the batch's own bytes: no copy, no Python slice
    computed = crc32c(PyMemoryView_FromMemory(
        <char*>(batch + ATTRIBUTES_OFFSET), size - ATTRIBUTES_OFFSET, PyBUF_READ))
    if computed != _u32(batch + CRC_OFFSET):
        return 0
    return _walk_records(batch + RECORD_BATCH_OVERHEAD, size - RECORD_BATCH_OVERHEAD, count)


cdef inline int64_t _batch_length(const unsigned char* at) noexcept nogil:
    return _i32(at + LENGTH_OFFSET)


def produce_records_ok(records, crc32c) -> bool:
    """True if validation.validate_produce_records(records, v) accepts ``records``
    (a Produce v3+ partition's), for any v; False if not sure.

    As the reference: one complete batch from byte 0 (size field >= 14, magic 2),
    and whatever follows it must not be a second complete batch, nor start with a
    size field below 14 or a magic outside 0..2 (Kafka checks those as soon as
    they are there).  The version matters to the reference only for zstd (refused
    before v7), and this never accepts a compressed batch.
    """
    cdef const unsigned char[::1] view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, size, rest
    cdef int64_t length
    if records is None:
        return False
    try:
        view = records
    except (TypeError, ValueError, BufferError):
        return False                # not bytes-like as expected: the reference judges
    n = view.shape[0]
    if n < HEADER_SIZE_UP_TO_MAGIC:
        return False
    buf = &view[0]
    length = _batch_length(buf)
    if length < LEGACY_RECORD_OVERHEAD_V0 or buf[MAGIC_OFFSET] != MAGIC_V2:
        return False
    size = LOG_OVERHEAD + length
    if n < size:
        return False
    rest = n - size
    if rest >= LOG_OVERHEAD:        # the tail, as complete_batch_size(view, size) reads it
        length = _batch_length(buf + size)
        if length < LEGACY_RECORD_OVERHEAD_V0:
            return False
        if rest >= HEADER_SIZE_UP_TO_MAGIC and (buf[size + MAGIC_OFFSET] > MAGIC_V2
                                                or rest >= LOG_OVERHEAD + length):
            return False
    return _batch_ok(buf, size, True, crc32c) == 1


def fetched_batches_ok(records, crc32c) -> bool:
    """True if pairing_checks._check_fetched_batches(records) accepts ``records`` (a
    Fetch response partition's); False if not sure.

    As the reference: whole magic-2 batches with the broker's rules (a count >= 0,
    not the producer ones), then possibly a partial batch cut by the fetch size,
    whose size field and magic are still checked where they are there.  A batch of
    magic 0 or 1 (framed only by the reference) is "not sure" here.
    """
    cdef const unsigned char[::1] view
    cdef const unsigned char* buf
    cdef Py_ssize_t n, pos = 0, rest, size
    cdef int64_t length
    if records is None:
        return False
    try:
        view = records
    except (TypeError, ValueError, BufferError):
        return False
    n = view.shape[0]
    if n == 0:
        return True                 # no batches: nothing the reference refuses
    buf = &view[0]
    while pos < n:
        rest = n - pos
        if rest < LOG_OVERHEAD:
            break                   # a partial tail without a size field
        length = _batch_length(buf + pos)
        if length < LEGACY_RECORD_OVERHEAD_V0:
            return False
        if rest < HEADER_SIZE_UP_TO_MAGIC:
            break
        if buf[pos + MAGIC_OFFSET] > MAGIC_V2:
            return False            # a magic outside 0..2 (as a signed byte)
        size = LOG_OVERHEAD + length
        if rest < size:
            break                   # the partial tail the fetch size cut
        if buf[pos + MAGIC_OFFSET] != MAGIC_V2 or _batch_ok(buf + pos, size, False,
                                                            crc32c) != 1:
            return False
        pos += size
    return True
