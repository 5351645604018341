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
again.  The header is read by ``format.range_start``.  The records are walked in
compiled passes (``kafka_net/capture/_kncap_scan.pyx``): their lengths by the
reference's own rules (those of ``format.record_offsets``), once, then from
their offsets each CRC checked, the fixed parts read into numpy arrays, the
places of the variable fields noted and the frames joined into one buffer (or,
for a task's schema, left where they lie), with no Python object per record; the
string fields are gathered into Arrow string columns (whose UTF-8 Arrow
validates) and the frames become one binary column (or binary views).

Only a clean run of records is read here: every CRC matching, every record's
fields ending exactly at its end, the bytes after the last record nothing or a
zero tail.  Anything else (damage, a torn tail, garbage) returns None and the
caller runs the reference, which says what is wrong in its own words; so the
rows and problems are the reference's for every input.
``tests/spark/test_kncap_arrow.py`` compares the two, damaged files included.
"""

from __future__ import annotations

import zlib

import numpy as np

from kafka_net.capture import format as kncap
from kafka_net.capture.model import FAULT as FAULT_MARKER
from kafka_net.capture.reader import kncap_columns, kncap_run
from kafka_net.spark_jobs import check_columns

if check_columns.ENABLED:     # KAFKA_NET_READABLE: the reference alone, nothing compiled
    from kafka_net.capture import _kncap_scan

# The record layout the compiled pass reads (its module docstring): a change to
# the format's tables must change it too.
assert kncap.FIXED_FIELDS == (("timestamp_ns", "q"), ("direction", "b"), ("api_key", "h"),
                              ("api_version", "h"), ("correlation_id", "i"), ("flags", "B"),
                              ("frame_size", "i"))
assert kncap.VARIABLE_FIELDS == (("connection_id", "H"), ("peer", "H"), ("client_id", "h"),
                                 ("frame", "I"))


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


def part_of(connection_id: str, parts: int) -> int:
    """The part (of ``parts``) a connection's records go to when a Processor's
    connections are shared among tasks: the zlib CRC-32 of its id's UTF-8
    bytes (the bytes of the record) modulo ``parts``, as the compiled pass
    computes it; the same in every task and every run."""
    return zlib.crc32(connection_id.encode("utf-8")) % parts


def part_rows(path: str, data, resume: dict | None, base: int, schema, parts: int,
              part: int):
    """:func:`frame_rows` (``data`` any bytes-like object) for a task that keeps the connections of ``part`` of
    ``parts`` (:func:`part_of`) -> (their rows, the problems of the whole
    bytes, the rows of the whole bytes, whether the reference read them).

    The compiled pass checks only the kept records (their CRC, their fields):
    clean, it says nothing of the others, which the tasks keeping them check,
    so the range's problems are then none of this task's to say, and its count
    is every record's.  Otherwise the reference reads the whole bytes (its
    problems and count are the range's, as an unsplit task finds them) and the
    rows are cut to the part here."""
    import pyarrow as pa
    clean = _clean(path, data, resume, base, schema, parts, part)
    if clean is not None:
        table, records = clean
        return table, [], records, False
    columns, problems = kncap_columns(path, bytes(data), resume, base)
    whole = pa.Table.from_pydict({f.name: columns[f.name] for f in schema}, schema=schema)
    return _in_part(whole, kncap_run(path), parts, part), problems, whole.num_rows, True


def id_sizes(data, resume: dict | None, base: int) -> dict[int, tuple[int, int]] | None:
    """(records, bytes) of each connection in a whole segment (``resume``
    None) or in the range at ``base`` that ``resume`` describes, by the CRC-32
    of its id (:func:`part_of`'s number before the modulo), from the records'
    lengths and ids (no CRC): what the driver plans the tasks by.  None when
    the fast paths are off or the bytes are not a run of records whose ids can
    be read (the driver then guesses an even share)."""
    if not check_columns.ENABLED:
        return None
    view = memoryview(data)
    if resume:
        pos = kncap.FILE_HEADER.size if base == 0 else 0
    elif kncap.range_start(view) is None:
        return None
    else:
        pos = kncap.FILE_HEADER.size
    starts, _, _ = _kncap_scan.record_starts(view, pos, kncap.MIN_RECORD_LENGTH,
                                             kncap.MAX_RECORD_BYTES)
    got = _kncap_scan.id_sizes(view, starts)
    if got is None:
        return None
    ids, where = np.unique(got[0], return_inverse=True)
    return dict(zip(ids.tolist(), zip(np.bincount(where).tolist(), np.bincount(
        where, weights=got[1]).astype(np.int64).tolist())))


def _in_part(table, run: str, parts: int, part: int):
    """The rows of ``table`` whose connection ("<run>/<id>") is in ``part``
    (``arrow_stages.rows_where``: a filter that takes frames held as views)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from kafka_net.spark_jobs.arrow_stages import rows_where
    if parts == 1:
        return table
    cut = len(run) + 1
    kept = [c for c in pc.unique(table["connection"]).to_pylist()
            if part_of(c[cut:], parts) == part]
    return rows_where(table, pc.is_in(table["connection"], pa.array(kept, pa.string())))


def frame_table(path: str, data, resume: dict | None, base: int, schema, parts: int = 1,
                part: int = 0):
    """The frame rows of a whole segment (``resume`` None) or of the range at
    file offset ``base`` that ``resume`` (a ``RangeStart`` as JSON) describes,
    as an Arrow table of ``schema`` (FRAME_SCHEMA), exactly the rows of
    ``reader.kncap_columns`` (which then has no problems); None if the
    bytes are not a clean run of records, or the fast paths are off.  With
    ``parts`` > 1: the rows of the connections in ``part`` (:func:`part_of`)
    alone, None if one of those records is not clean (the others are not
    checked here)."""
    clean = _clean(path, data, resume, base, schema, parts, part)
    return None if clean is None else clean[0]


def _clean(path, data, resume, base, schema, parts, part):
    """(:func:`frame_table`'s table, the number of records walked), or None."""
    if not check_columns.ENABLED:
        return None
    try:
        return _table(path, memoryview(data), resume, base, schema, parts, part)
    except _NotClean:
        return None


def _table(path, view, resume, base, schema, parts=1, part=0):
    import pyarrow as pa
    if resume:
        start = kncap.RangeStart.from_json(resume)
        pid, seq = start.processor_id, start.segment_seq
        pos = kncap.FILE_HEADER.size if base == 0 else 0
    else:
        pid, seq = _header(view)
        pos = kncap.FILE_HEADER.size
    # A task keeping all of a range's records checks their CRCs as it walks
    # them; one keeping a part checks its own records' alone, in scan.
    crc_on_walk = parts == 1
    starts, stop, crcs_match = _kncap_scan.record_starts(
        view, pos, kncap.MIN_RECORD_LENGTH, kncap.MAX_RECORD_BYTES, crc=crc_on_walk)
    if stop != len(view) and not kncap._is_zero_tail(view, stop):
        raise _NotClean          # a torn tail or garbage: the reference reports it
    if not crcs_match:
        raise _NotClean          # the reference says which record
    in_place = pa.types.is_binary_view(schema.field("frame").type) and len(view) < 2**31
    fields = _kncap_scan.scan(view, starts, parts, part, join=not in_place,
                              crc_checked=crc_on_walk)
    if fields is None:
        raise _NotClean          # a CRC or a field that does not fit: the reference says which
    records, n = len(starts), len(fields["offset"])      # walked, and kept
    offsets = base + fields["offset"]
    direction = fields["direction"].astype(np.int32)
    is_request = direction == kncap.REQUEST
    _strings(view, fields["peer"])     # decoded, and thrown away, as the reference does
    columns = {
        "source": _same("kafka-net", n, schema.field("source").type),
        "file": _same(path, n, schema.field("file").type),
        "connection": _connections(kncap_run(path), _strings(view, fields["connection_id"])),
        "order_key": pa.ListArray.from_arrays(
            pa.array(np.arange(0, 3 * n + 1, 3, dtype=np.int32)),
            pa.array(np.column_stack([np.full(n, pid, np.int64), np.full(n, seq, np.int64),
                                      offsets]).reshape(-1))),
        "direction": pa.array(direction),
        "timestamp_ns": pa.array(fields["timestamp_ns"]),
        "frame_size": pa.array(fields["frame_size"]),
        "truncated": pa.array((fields["flags"] & kncap.FLAG_TRUNCATED) != 0),
        "after_gap": pa.array(np.zeros(n, bool)),
        "api_key": pa.array(fields["api_key"].astype(np.int32), mask=~is_request),
        "api_version": pa.array(fields["api_version"].astype(np.int32), mask=~is_request),
        "correlation_id": pa.array(fields["correlation_id"]),
        "client_id": _strings(view, fields["client_id"]),
        "frame": _views(view, fields["frame_start"], fields["frame_offsets"]) if in_place
        else _binary(fields["frame_offsets"], fields["frame_data"]),
        "marker": pa.array(np.where(direction == kncap.FAULT, FAULT_MARKER, None),
                           pa.string()),
        "gap_start": pa.nulls(n, pa.int64()), "gap_end": pa.nulls(n, pa.int64()),
        "frame_number": pa.array(np.zeros(n, np.int32)),
        "file_offset": pa.array(offsets),
    }
    return pa.Table.from_arrays([columns[f.name].cast(f.type) for f in schema],
                                schema=schema), records


def _header(view) -> tuple[int, int]:
    start = kncap.range_start(view)
    if start is None:
        raise _NotClean          # not a segment the reference reads: it says why
    return start.processor_id, start.segment_seq


def _strings(view, field):
    """A string column from a field's (starts, lengths, null mask or None) in
    ``view``; UTF-8 that does not decode is not clean (the reference's
    UnicodeDecodeError)."""
    import pyarrow as pa
    starts, lengths, nulls = field
    offsets, data = _kncap_scan.gather(view, starts, lengths)
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


def _connections(run: str, ids):
    """Each row's connection, "<run>/<connection id>" as the reference names it:
    joined once per distinct id (a segment holds a few dozen) and taken for
    every row.  Joining every row's took 0.27 CPU s of the 919,785-frame
    capture's segments, this 0.02."""
    import pyarrow.compute as pc
    codes = ids.dictionary_encode()
    return pc.binary_join_element_wise(run, codes.dictionary, "/").take(codes.indices)


def _same(value: str, n: int, type_):
    """One string on every row: a dictionary of it (indices all 0) where the
    schema asks for one (task_reads.task_frame_schema: the file's path repeated
    was 92 MB of fresh memory for the 919,785-frame capture), else repeated."""
    import pyarrow as pa
    if pa.types.is_dictionary(type_):
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                              pa.array([value], type_.value_type))
    return pa.repeat(pa.scalar(value, type_), n)


def _views(view, starts, offsets):
    """The frames as a binary_view array over the mapped range itself
    (task_reads.task_frame_schema): no frame copied (joined, they were 260 MB of
    fresh memory for the 919,785-frame capture).  The array keeps the mapping."""
    import pyarrow as pa
    return pa.Array.from_buffers(pa.binary_view(), len(starts), [
        None, pa.py_buffer(_kncap_scan.views(view, starts, offsets)), pa.py_buffer(view)])


def _binary(offsets, data):
    import pyarrow as pa
    if offsets[-1] >= 2**31:
        raise _NotClean
    return pa.BinaryArray.from_buffers(pa.binary(), len(offsets) - 1,
                                       [None, pa.py_buffer(offsets.astype(np.int32)),
                                        pa.py_buffer(data)])


__all__ = ["frame_rows", "frame_table", "part_of", "part_rows", "id_sizes"]
