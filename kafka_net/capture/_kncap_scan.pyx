# distutils: libraries = z
# cython: boundscheck=False, wraparound=False
"""One compiled pass over a clean run of .kncap records: the conformance job's
column-wise reader (``spark_jobs/kncap_arrow.py``) gets every record's fixed
fields, the places of its variable fields and the frames joined into one buffer,
with no Python object per record.

The layout is :mod:`kafka_net.capture.format`'s (its module docstring): a
record is ``length uint32, crc uint32, body``; the body is the fixed part
(``format.FIXED_FIELDS``: timestamp_ns q, direction b, api_key h, api_version h,
correlation_id i, flags B, frame_size i; 22 bytes) and then
``format.VARIABLE_FIELDS``: connection_id (uint16 length), peer (uint16),
client_id (int16, below zero a null), frame (uint32).  ``kncap_arrow`` checks at
import that those tables still say so.

The walk stops where ``format.record_offsets`` stops (the same length rules);
every record must then be clean: its zlib CRC-32 matching (the same function
Python's ``zlib.crc32`` calls) and its fields ending exactly at its end.  A
record that is not clean returns None: the caller hands the bytes to the
reference reader, which says what is wrong in its own words.

A task that keeps only some of a Processor's connections (``parts`` > 1) reads
only the records whose connection id hashes to its ``part``: the zlib CRC-32
of the id's bytes, modulo ``parts`` (``kncap_arrow.part_of``, the same number
in Python).  The other records are stepped over by their lengths, their CRC
and fields left to the task that keeps them, so each record's CRC is still
checked once in the job.  A record whose id does not fit in it has no part:
the whole run goes to the reference in every task.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len) nogil

cdef enum:
    FIXED = 22          # the fixed part of a body (format.FIXED_FIELDS)


cdef inline uint32_t _u32(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return (<uint32_t>b[p] << 24) | (<uint32_t>b[p + 1] << 16) | (<uint32_t>b[p + 2] << 8) \
        | <uint32_t>b[p + 3]


cdef inline int64_t _u16(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return (<int64_t>b[p] << 8) | <int64_t>b[p + 1]


def record_starts(const uint8_t[::1] data, Py_ssize_t pos, int64_t min_length,
                  int64_t max_length, bint crc=False):
    """(each record's offset, int64, where the walk stops, whether every CRC
    matched) from ``pos``, by the lengths alone, as ``format.record_offsets``
    walks them.  Each length is read only once the one before it is: a chain of
    memory reads, about 110 ns a record on the 919,785-record capture, so the
    other passes take these offsets rather than walk the lengths again.  With
    ``crc`` (a task that reads every record), each record's CRC is checked on
    the way, which also hides the chain: the CRC reads the record through, and
    the next length comes into the cache with it.  Without, the third value is
    True."""
    cdef Py_ssize_t size = data.shape[0], n = 0, cap = max(16, size // 256)
    cdef int64_t length
    cdef bint clean = True
    starts = np.empty(cap, np.int64)
    cdef int64_t[::1] out = starts
    while size - pos >= 8:
        length = _u32(data, pos)
        if length < min_length or length > max_length or size - pos < 4 + length:
            break
        if n == cap:
            cap *= 2
            starts = np.resize(starts, cap)
            out = starts
        out[n] = pos
        n += 1
        if crc and clean:       # min_length covers the CRC field and more
            clean = crc32(0, &data[pos + 8], <unsigned int>(length - 4)) == _u32(data, pos + 4)
        pos += 4 + length
    return starts[:n], pos, clean


def record_cuts(const uint8_t[::1] data, Py_ssize_t pos, int64_t min_length,
                int64_t max_length, Py_ssize_t every):
    """Where capture_split cuts a segment: the first record offset at or past every
    ``every`` bytes from the last cut (the first cut at ``every``), walking the
    lengths from ``pos`` as :func:`record_starts` (and ``format.record_offsets``)
    walk them, to where they stop -> [offset]."""
    cdef Py_ssize_t size = data.shape[0], next_cut = every
    cdef int64_t length
    cuts = []
    while size - pos >= 8:
        length = _u32(data, pos)
        if length < min_length or length > max_length or size - pos < 4 + length:
            break
        if pos >= next_cut:
            cuts.append(pos)
            next_cut = pos + every
        pos += 4 + length
    return cuts


def scan(const uint8_t[::1] data, const int64_t[::1] starts, int64_t parts=1,
         int64_t part=0, bint join=True, bint crc_checked=False):
    """The records at ``starts`` (found by :func:`record_starts`) whose
    connection id is in ``part`` of ``parts`` (all of them when ``parts`` is 1)
    as columns, or None if one of them is not clean (a CRC mismatch, a field
    past its record, a frame not ending at the record's end) or if any record's
    id does not fit in it.  ``crc_checked``: every record's CRC matched already
    (record_starts with ``crc``), so they are not computed again.

    Returns a dict: "offset" (int64, each record's offset in ``data``), the fixed
    fields ("timestamp_ns", "direction", "api_key", "api_version",
    "correlation_id", "flags", "frame_size"), for each of "connection_id",
    "peer", "client_id" its (starts, lengths, nulls) in ``data`` (nulls: a bool
    array, client_id only, else None), and "frame_offsets" (int64, m + 1) with
    "frame_data" (uint8): the frames joined; with ``join`` False, "frame_start"
    (int64, where each frame lies in ``data``) instead of "frame_data"."""
    if parts < 1 or not 0 <= part < parts:
        raise ValueError(f"part {part} of {parts}")
    cdef Py_ssize_t m
    offset = np.asarray(starts)
    if parts > 1:
        ids = id_sizes(data, starts)
        if ids is None:
            return None
        offset = offset[ids[0] % parts == part]
    m = offset.shape[0]
    ts = np.empty(m, np.int64)
    direction = np.empty(m, np.int8)
    api_key = np.empty(m, np.int16)
    api_version = np.empty(m, np.int16)
    corr = np.empty(m, np.int32)
    flags = np.empty(m, np.uint8)
    frame_size = np.empty(m, np.int32)
    field_starts = np.empty((3, m), np.int64)
    lengths = np.empty((3, m), np.int64)
    nulls = np.zeros(m, np.bool_)
    frame_start = np.empty(m, np.int64)
    frame_offsets = np.zeros(m + 1, np.int64)
    if not _fill(data, offset, ts, direction, api_key, api_version, corr, flags,
                 frame_size, field_starts, lengths, nulls, frame_start, frame_offsets,
                 not crc_checked):
        return None
    found = {"offset": offset, "timestamp_ns": ts, "direction": direction,
             "api_key": api_key, "api_version": api_version, "correlation_id": corr,
             "flags": flags, "frame_size": frame_size,
             "connection_id": (field_starts[0], lengths[0], None),
             "peer": (field_starts[1], lengths[1], None),
             "client_id": (field_starts[2], lengths[2], nulls),
             "frame_offsets": frame_offsets}
    if not join:
        found["frame_start"] = frame_start
        return found
    frame_data = np.empty(frame_offsets[m], np.uint8)
    _join(data, frame_start, frame_offsets, frame_data)
    found["frame_data"] = frame_data
    return found


def views(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] offsets):
    """Arrow's binary views of byte runs of ``data`` (run i at ``starts[i]``,
    ``offsets[i + 1] - offsets[i]`` bytes): 16 bytes each, little-endian, as the
    Arrow format lays them out: the length; then a run of up to 12 bytes itself,
    or its first 4 bytes, the data buffer's index (0: ``data``) and its offset
    there.  The runs stay where they are: a binary_view array over ``data``
    copies none of them.  ``data`` must be under 2 GiB (offsets are int32)."""
    cdef Py_ssize_t i, n = starts.shape[0]
    cdef int64_t length
    out = np.zeros(16 * n, np.uint8)
    cdef uint8_t[::1] v = out
    with nogil:
        for i in range(n):
            length = offsets[i + 1] - offsets[i]
            _le32(&v[16 * i], <uint32_t>length)
            if length <= 12:
                if length:
                    memcpy(&v[16 * i + 4], &data[starts[i]], length)
            else:
                memcpy(&v[16 * i + 4], &data[starts[i]], 4)
                _le32(&v[16 * i + 12], <uint32_t>starts[i])    # buffer 0 (bytes 8-11 zero)
    return out


cdef inline void _le32(uint8_t* at, uint32_t value) noexcept nogil:
    at[0] = value & 0xFF
    at[1] = (value >> 8) & 0xFF
    at[2] = (value >> 16) & 0xFF
    at[3] = (value >> 24) & 0xFF


def id_sizes(const uint8_t[::1] data, const int64_t[::1] starts):
    """Each record at ``starts`` (found by :func:`record_starts`): the CRC-32 of
    its connection id (what :func:`scan` takes its part from) and its length in
    bytes, as (uint32 array, int64 array); None if a record's id does not fit
    in it.  From the lengths and ids alone (no CRC): how the driver sizes the
    tasks."""
    cdef Py_ssize_t n = starts.shape[0]
    hashes = np.empty(n, np.uint32)
    sizes = np.empty(n, np.int64)
    if _id_sizes(data, starts, hashes, sizes) < 0:
        return None
    return hashes, sizes


cdef inline int64_t _id_hash(const uint8_t[::1] b, Py_ssize_t pos,
                             Py_ssize_t end) noexcept nogil:
    """The CRC-32 of the connection id of the record at ``pos`` (ending at
    ``end``), which names its part; -1 if the id does not fit in the record."""
    cdef Py_ssize_t at = pos + 8 + FIXED
    cdef int64_t length
    if at + 2 > end:
        return -1
    length = _u16(b, at)
    if at + 2 + length > end:
        return -1
    return <int64_t>crc32(0, &b[at + 2], <unsigned int>length) if length else 0


cdef int _id_sizes(const uint8_t[::1] b, const int64_t[::1] starts, uint32_t[::1] hashes,
                   int64_t[::1] sizes) noexcept nogil:
    cdef Py_ssize_t i, pos, end
    cdef int64_t h
    for i in range(starts.shape[0]):
        pos = starts[i]
        end = pos + 4 + _u32(b, pos)            # record_starts proved it fits
        h = _id_hash(b, pos, end)
        if h < 0:
            return -1
        hashes[i] = <uint32_t>h
        sizes[i] = end - pos
    return 0


cdef bint _fill(const uint8_t[::1] b, const int64_t[::1] offset,
                int64_t[::1] ts, int8_t[::1] direction, int16_t[::1] api_key,
                int16_t[::1] api_version, int32_t[::1] corr, uint8_t[::1] flags,
                int32_t[::1] frame_size, int64_t[:, ::1] starts, int64_t[:, ::1] lengths,
                uint8_t[::1] nulls, int64_t[::1] frame_start,
                int64_t[::1] frame_offsets, bint crc) noexcept nogil:
    """The records at ``offset`` read into the arrays; False if one is not clean."""
    cdef Py_ssize_t i, k, at, end, body, pos
    cdef int64_t length, size
    for i in range(offset.shape[0]):
        pos = offset[i]
        end = pos + 4 + _u32(b, pos)            # record_starts proved it fits
        body = pos + 8
        if crc and crc32(0, &b[body], <unsigned int>(end - body)) != _u32(b, pos + 4):
            return False
        if end - body < FIXED:
            return False
        ts[i] = <int64_t>((<uint64_t>_u32(b, body) << 32) | _u32(b, body + 4))
        direction[i] = <int8_t>b[body + 8]
        api_key[i] = <int16_t>_u16(b, body + 9)
        api_version[i] = <int16_t>_u16(b, body + 11)
        corr[i] = <int32_t>_u32(b, body + 13)
        flags[i] = b[body + 17]
        frame_size[i] = <int32_t>_u32(b, body + 18)
        at = body + FIXED
        for k in range(3):                      # connection_id, peer, client_id
            if at + 2 > end:
                return False
            length = _u16(b, at)
            at += 2
            if k == 2 and length >= 0x8000:     # int16 below zero: a null
                nulls[i] = 1
                length = 0
            starts[k, i] = at
            lengths[k, i] = length
            at += length
        if at + 4 > end:
            return False
        size = _u32(b, at)
        at += 4
        if at + size != end:                    # "frame length does not match the record"
            return False
        frame_start[i] = at
        frame_offsets[i + 1] = frame_offsets[i] + size
    return True


cdef void _join(const uint8_t[::1] b, int64_t[::1] start, int64_t[::1] offsets,
                uint8_t[::1] out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(start.shape[0]):
        if offsets[i + 1] > offsets[i]:
            memcpy(&out[offsets[i]], &b[start[i]], offsets[i + 1] - offsets[i])


def gather(const uint8_t[::1] data, int64_t[::1] starts, int64_t[::1] lengths):
    """Variable-length byte runs of ``data`` joined: (offsets int64 n + 1, bytes
    uint8)."""
    cdef Py_ssize_t i, n = starts.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    cdef int64_t[::1] o = offsets
    for i in range(n):
        o[i + 1] = o[i] + lengths[i]
    out = np.empty(o[n], np.uint8)
    cdef uint8_t[::1] view = out
    with nogil:
        for i in range(n):
            if lengths[i]:
                memcpy(&view[o[i]], &data[starts[i]], lengths[i])
    return offsets, out
