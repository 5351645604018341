"""A kafka-net capture segment (or a byte range of one) read straight into an
Arrow table of frame rows: the fast path beside the capture reader's
:func:`kafka_net.capture.reader.kncap_columns`, the readable reference,
which decodes each record into a :class:`~kafka_net.capture.format.CaptureRecord`
and builds the columns as Python lists.

The record format (:mod:`kafka_net.capture.format`) has a fixed part at a
fixed place in every record (``format.FIXED_FIELDS``: timestamp, direction,
API key and version, correlation id, flags, frame size) and then four
length-prefixed fields (``format.VARIABLE_FIELDS``: connection id, peer,
client id, frame); both are read here from those tables, not written out
again.  The header is read by ``format.range_start``.  Here the record lengths are walked
once (:func:`~kafka_net.capture.format.record_offsets`, the reference's own
walk) and each record's CRC checked, one C call a record; everything else is
read for all records at once: the fixed parts as a numpy structured array
gathered from their offsets, the string fields gathered into Arrow string
columns (whose UTF-8 Arrow validates), the frames joined into one binary column.

Only a clean run of records is read here: every CRC matching, every record's
fields ending exactly at its end, the bytes after the last record nothing or a
zero tail.  Anything else (damage, a torn tail, garbage) returns None and the
caller runs the reference, which says what is wrong in its own words; so the
rows and problems are the reference's for every input.
``tests/spark/test_kncap_arrow.py`` compares the two, damaged files included.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from kafka_net.capture import format as kncap
from kafka_net.capture.model import FAULT as FAULT_MARKER
from kafka_net.capture.reader import kncap_columns, kncap_run
from kafka_net.spark_jobs import check_columns

# The fixed part of a record body (format.FIXED_FIELDS), as numpy reads it: the
# struct codes' big-endian numpy types.
_NUMPY = {"q": ">i8", "b": "i1", "h": ">i2", "i": ">i4", "B": "u1"}
_FIXED = np.dtype([(name, _NUMPY[code]) for name, code in kncap.FIXED_FIELDS])


class _NotClean(Exception):
    """The bytes need the reference reader (see the module docstring)."""


def frame_rows(path: str, data, resume: dict | None, base: int, schema):
    """The frame rows of a whole segment (``resume`` None) or of the range at
    file offset ``base`` that ``resume`` describes, as an Arrow table of
    ``schema`` (FRAME_SCHEMA), and the problems met: read column-wise
    (:func:`frame_table`) when the bytes are a clean run of records, else by
    the capture reader (``reader.kncap_columns``), which says what is wrong."""
    import pyarrow as pa
    table = frame_table(path, data, resume, base, schema)
    if table is not None:
        return table, []
    columns, problems = kncap_columns(path, data, resume, base)
    return pa.Table.from_pydict({f.name: columns[f.name] for f in schema}, schema=schema), \
        problems


def frame_table(path: str, data, resume: dict | None, base: int, schema):
    """The frame rows of a whole segment (``resume`` None) or of the range at
    file offset ``base`` that ``resume`` (a ``RangeStart`` as JSON) describes,
    as an Arrow table of ``schema`` (FRAME_SCHEMA), exactly the rows of
    ``reader.kncap_columns`` (which then has no problems); None if the
    bytes are not a clean run of records, or the fast paths are off."""
    if not check_columns.ENABLED:
        return None
    try:
        return _table(path, memoryview(data), resume, base, schema)
    except _NotClean:
        return None


def _table(path, view, resume, base, schema):
    import pyarrow as pa
    import pyarrow.compute as pc
    if resume:
        start = kncap.RangeStart.from_json(resume)
        pid, seq = start.processor_id, start.segment_seq
        pos = kncap.FILE_HEADER.size if base == 0 else 0
    else:
        pid, seq = _header(view)
        pos = kncap.FILE_HEADER.size
    arr = np.frombuffer(view, np.uint8)
    offsets = np.fromiter(kncap.record_offsets(view, pos), np.int64)
    ends = offsets + 4 + _u32(arr, offsets) if len(offsets) else offsets
    stop = int(ends[-1]) if len(ends) else pos
    if stop != len(view) and not kncap._is_zero_tail(view, stop):
        raise _NotClean          # a torn tail or garbage: the reference reports it
    _check_crcs(view, offsets, _u32(arr, offsets + 4), ends)
    fields = _fields(view, arr, offsets, ends)
    n = len(offsets)
    fixed = fields["fixed"]
    direction = fixed["direction"].astype(np.int32)
    is_request = direction == kncap.REQUEST
    run = kncap_run(path)
    columns = {
        "source": pa.repeat(pa.scalar("kafka-net"), n),
        "file": pa.repeat(pa.scalar(path), n),
        # "<run>/<connection id>", as the reference names a connection
        "connection": pc.binary_join_element_wise(run, _strings(fields["connection_id"]),
                                                  "/"),
        "order_key": pa.ListArray.from_arrays(
            pa.array(np.arange(0, 3 * n + 1, 3, dtype=np.int32)),
            pa.array(np.column_stack([np.full(n, pid, np.int64), np.full(n, seq, np.int64),
                                      base + offsets]).reshape(-1))),
        "direction": pa.array(direction),
        "timestamp_ns": pa.array(fixed["timestamp_ns"].astype(np.int64)),
        "frame_size": pa.array(fixed["frame_size"].astype(np.int32)),
        "truncated": pa.array((fixed["flags"] & kncap.FLAG_TRUNCATED) != 0),
        "after_gap": pa.array(np.zeros(n, bool)),
        "api_key": pa.array(fixed["api_key"].astype(np.int32), mask=~is_request),
        "api_version": pa.array(fixed["api_version"].astype(np.int32), mask=~is_request),
        "correlation_id": pa.array(fixed["correlation_id"].astype(np.int32)),
        "client_id": _strings(fields["client_id"]),
        "frame": fields["frame"],
        "marker": pa.array(np.where(direction == kncap.FAULT, FAULT_MARKER, None),
                           pa.string()),
        "gap_start": pa.nulls(n, pa.int64()), "gap_end": pa.nulls(n, pa.int64()),
        "frame_number": pa.array(np.zeros(n, np.int32)),
        "file_offset": pa.array(base + offsets),
    }
    return pa.Table.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _header(view) -> tuple[int, int]:
    start = kncap.range_start(view)
    if start is None:
        raise _NotClean          # not a segment the reference reads: it says why
    return start.processor_id, start.segment_seq


def _check_crcs(view, offsets, crcs, ends) -> None:
    crc32 = zlib.crc32
    for start, end, crc in zip((offsets + 8).tolist(), ends.tolist(), crcs.tolist()):
        if crc32(view[start:end]) != crc:
            raise _NotClean


def _u16(arr, at):
    return (arr[at].astype(np.int64) << 8) | arr[at + 1]


def _u32(arr, at):
    return ((arr[at].astype(np.int64) << 24) | (arr[at + 1].astype(np.int64) << 16)
            | (arr[at + 2].astype(np.int64) << 8) | arr[at + 3])


_LENGTHS = {2: _u16, 4: _u32}     # a length prefix's size -> its reader


def _fields(view, arr, offsets, ends) -> dict:
    """Each record's fixed part and its variable fields (format.VARIABLE_FIELDS,
    in order) as (bytes, starts, lengths, null mask or None); the frame as a
    binary column.  A field running past its record, or a frame not ending
    where its record does (the reference's ValueError), is not clean."""
    n = len(offsets)
    body = offsets + 8
    fixed = arr[(body[:, None] + np.arange(_FIXED.itemsize))].view(_FIXED).reshape(n) \
        if n else np.zeros(0, _FIXED)
    last = len(arr) - 1
    at = body + _FIXED.itemsize
    out = {"fixed": fixed}
    for name, code in kncap.VARIABLE_FIELDS:
        size = struct.calcsize(code)
        _within(at + size, ends)
        length = _LENGTHS[size](arr, np.minimum(at, last - (size - 1)))
        nulls = None
        if code.islower():          # signed: below zero is a null, no bytes
            length = np.where(length >= 1 << (8 * size - 1), length - (1 << 8 * size), length)
            nulls, length = length < 0, np.maximum(length, 0)
        out[name] = (arr, at + size, length, nulls)
        at = at + size + length
    if not np.array_equal(at, ends):
        raise _NotClean          # "frame length does not match the record"
    _strings(out["peer"])        # decoded, and thrown away, as the reference does
    _, starts, lengths, _ = out["frame"]
    out["frame"] = _frames(view, starts, lengths)
    return out


def _within(limit, ends) -> None:
    if (limit > ends).any():
        raise _NotClean


def _gather(arr, starts, lengths):
    """Variable-length byte runs of ``arr`` into one buffer, and their offsets."""
    out = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    total = int(out[-1])
    if not total:
        return out, np.zeros(0, np.uint8)
    index = np.arange(total, dtype=np.int64) + np.repeat(starts - out[:-1], lengths)
    return out, arr[index]


def _strings(field):
    """A string column from (bytes, starts, lengths, null mask or None); UTF-8
    that does not decode is not clean (the reference's UnicodeDecodeError)."""
    import pyarrow as pa
    arr, starts, lengths, nulls = field
    offsets, data = _gather(arr, starts, lengths)
    if offsets[-1] >= 2**31:
        raise _NotClean
    validity = None
    if nulls is not None and nulls.any():
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    column = pa.StringArray.from_buffers(
        len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data), validity)
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        raise _NotClean from None
    return column


def _frames(view, starts, lengths):
    import pyarrow as pa
    data = b"".join([view[s:s + n] for s, n in zip(starts.tolist(), lengths.tolist())])
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise _NotClean
    return pa.BinaryArray.from_buffers(pa.binary(), len(starts),
                                       [None, pa.py_buffer(offsets.astype(np.int32)),
                                        pa.py_buffer(data)])


__all__ = ["frame_rows", "frame_table"]
