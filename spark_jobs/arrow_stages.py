"""The conformance job's Python stages as Arrow functions for Spark.

Spark hands each stage Arrow record batches and takes Arrow record batches
back (``mapInArrow``, ``groupBy(...).applyInArrow``): no Python row object
crosses the JVM boundary, and no pickled dict goes through a shuffle.  Inside
a stage the work is done by the plain per-file / per-flow / per-connection
functions of :mod:`kafka_net.spark_jobs.transforms`; this module only turns Arrow
columns into their arguments and their results back into Arrow columns.

The Arrow schemas are derived from :mod:`kafka_net.spark_jobs.schemas`, so a column
added there (and filled in by transforms' row dicts) flows through.

Stages:

* :func:`range_units` (``mapInArrow`` over :data:`RANGE_INPUT_SCHEMA` rows, one
  byte range of a local file each, read by the executor): each range -> *unit*
  rows (:data:`UNIT_SCHEMA`): kafka-net frames (of a whole segment or of a
  range of one), TCP packets of pcap files (with their flow), problems, a
  split file's range counts.  :func:`file_units` does
  the same over Spark's ``binaryFile`` rows (URIs: hdfs://, s3a://).
* :func:`flow_frames` (``groupBy("flow").applyInArrow``): one flow's packets,
  from any number of files -> frame units (or a problem).
* :func:`check_connection` (``groupBy("connection").applyInArrow``): one
  connection's frames -> one :data:`CHECKED_SCHEMA` row, whose array columns
  (pairs, violations, requests, states) Spark SQL explodes into tables.

Three fast paths sit beside the readable ones and fall back to them for
anything unusual (``KAFKA_NET_READABLE=1`` turns them off): a clean .kncap
segment is read into columns by :mod:`.kncap_arrow` instead of
``kafka_net.capture.reader.kncap_columns``, a plain classic pcap range is indexed
and a common TCP connection made into frame columns by :mod:`.pcap_arrow`'s
compiled passes instead of ``transforms.file_units`` and
``transforms.frames_of_flow``, and a plain connection is checked column-wise
by :mod:`.check_columns` instead of ``transforms.check_connection``.
"""

from __future__ import annotations

import json

import numpy as np

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, IntegerType, LongType, StringType, StructField, StructType)

from kafka_net.capture import reader
from kafka_net.spark_jobs import check_columns, transforms
from kafka_net.spark_jobs.schemas import (
    FRAME_SCHEMA, PAIR_SCHEMA, REQUEST_SCHEMA, STATE_SCHEMA, VIOLATION_SCHEMA)

FRAME = "frame"
PACKET = "packet"
PROBLEM = "problem"
RANGE = "range"       # one range of a split file: its record counts

# The first stage's input: one row per byte range of a capture file
# (kafka_net.capture.capture_split), read by the executor that runs it.
RANGE_INPUT_SCHEMA = StructType([
    StructField("path", StringType()),
    StructField("start", LongType()),
    StructField("end", LongType()),       # -1: to the end of the file
    StructField("resume", StringType()),  # pcap.Resume or format.RangeStart as JSON;
    #                                       null: a pcap's start, or a whole file
    StructField("split", BooleanType()),  # one of several ranges of its file
])

RANGE_FIELDS = [StructField(name, LongType()) for name in
                ("range_start", "range_records", "range_packets", "range_non_tcp")]

# A TCP packet of a pcap file, as columns (kafka_net.capture.packet.Packet's fields).
PACKET_FIELDS = [
    StructField("flow", StringType()),
    StructField("packet_src_ip", StringType()),
    StructField("packet_src_port", IntegerType()),
    StructField("packet_dst_ip", StringType()),
    StructField("packet_dst_port", IntegerType()),
    StructField("packet_seq", LongType()),
    StructField("packet_ack", LongType()),
    StructField("packet_flags", IntegerType()),
    StructField("packet_payload", BinaryType()),
    StructField("packet_payload_len", LongType()),
    StructField("packet_record", LongType()),
]

# One table for whatever a stage finds: "kind" says which columns are filled.
# Frames use FRAME_SCHEMA's columns (timestamp_ns and file shared with packets).
UNIT_SCHEMA = StructType(
    [StructField("kind", StringType())] + list(FRAME_SCHEMA.fields) + PACKET_FIELDS
    + [StructField("problem", StringType())] + RANGE_FIELDS)

CHECKED_SCHEMA = StructType([
    StructField("connection", StringType()),
    StructField("summary", StringType()),          # transforms' connection dict, as JSON
    StructField("pairs", ArrayType(PAIR_SCHEMA)),
    StructField("violations", ArrayType(VIOLATION_SCHEMA)),
    StructField("requests", ArrayType(REQUEST_SCHEMA)),
    StructField("states", ArrayType(STATE_SCHEMA)),
])

FRAME_COLUMNS = FRAME_SCHEMA.fieldNames()
BATCH_ROWS = 8192


_ARROW: dict[int, object] = {}   # id(StructType) -> its Arrow schema, made once per worker


def _arrow(schema: StructType):
    if id(schema) not in _ARROW:
        from pyspark.sql.pandas.types import to_arrow_schema
        _ARROW[id(schema)] = to_arrow_schema(schema)
    return _ARROW[id(schema)]


def _rows(table, columns: list[str]) -> list[dict]:
    """A table's rows as dicts; column-wise conversion first (pyarrow's
    ``to_pylist`` builds each row's dict in a slower loop, about 2x)."""
    cols = table.select(columns).to_pydict()
    return [dict(zip(columns, values)) for values in zip(*cols.values())]


def file_units(batches):
    """``mapInArrow`` function: binaryFile rows (path, content) -> unit batches."""
    import pyarrow as pa
    schema = _arrow(UNIT_SCHEMA)
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for i, path in enumerate(paths):
            data = contents[i].as_py()
            if reader.kind_of(data) == reader.KNCAP:
                # kafka-net's own captures straight to columns (most of a big input)
                yield from _kncap_batches(transforms.local_path(path), data, schema)
                continue
            rows = [_unit_row(u) for u in transforms.file_units(path, data)]
            for start in range(0, len(rows), BATCH_ROWS):
                yield pa.RecordBatch.from_pylist(rows[start:start + BATCH_ROWS], schema=schema)


def range_units(batches):
    """``mapInArrow`` function: range rows (:data:`RANGE_INPUT_SCHEMA`) -> unit
    batches.  Each executor reads its own byte range of the file (a local path
    every node can reach: a shared mount on a cluster)."""
    schema = _arrow(UNIT_SCHEMA)
    for batch in batches:
        for row in batch.to_pylist():
            for part in _range_parts(row, schema):
                if isinstance(part, list):
                    yield from _unit_batches(part, schema)
                else:
                    yield part


def _range_parts(row: dict, schema):
    """One range row -> record batches (problems; kafka-net frames, as columns) and,
    for pcap files, the list transforms.file_units makes of it (units: packets,
    problems, range counts)."""
    path = transforms.local_path(row["path"])
    try:
        data = read_range(row["path"], row["start"], row["end"])
    except OSError as exc:
        yield _problem_batch(path, f"cannot be read ({exc.strerror or exc})", schema)
        return
    resume = json.loads(row["resume"]) if row["resume"] else None
    if reader.kind_of(data, resume, row["split"]) == reader.KNCAP:
        # kafka-net's own captures straight to columns (most of a big input)
        yield from _kncap_batches(path, data, schema, resume, row["start"])
        return
    yield transforms.file_units(path, data, resume, row["start"], row["split"])


def read_range(path: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of a local file (``end`` -1: to its end)."""
    with open(transforms.local_path(path), "rb") as fh:
        fh.seek(start)
        return fh.read(-1 if end < 0 else end - start)


def _problem_batch(path: str, problem: str, schema):
    import pyarrow as pa
    return pa.RecordBatch.from_pylist([{"kind": PROBLEM, "file": path, "problem": problem}],
                                      schema=schema)


def _unit_batches(units: list[tuple], schema):
    """Packets column by column (most of a pcap's units); the rest as rows."""
    import pyarrow as pa
    packets = [u for u in units if u[0] == PACKET]
    rows = [_unit_row(u) for u in units if u[0] != PACKET]
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=schema)
    for start in range(0, len(packets), BATCH_ROWS):
        yield _packet_batch(packets[start:start + BATCH_ROWS], schema)


def _packet_batch(units: list[tuple], schema):
    import pyarrow as pa
    ps = [u[2][1] for u in units]
    n = len(ps)
    columns = {
        "kind": [PACKET] * n, "flow": [repr(u[1]) for u in units],
        "file": [u[2][0] for u in units], "timestamp_ns": [p.timestamp_ns for p in ps],
        "packet_src_ip": [p.src_ip for p in ps], "packet_src_port": [p.src_port for p in ps],
        "packet_dst_ip": [p.dst_ip for p in ps], "packet_dst_port": [p.dst_port for p in ps],
        "packet_seq": [p.seq for p in ps], "packet_ack": [p.ack for p in ps],
        "packet_flags": [p.flags for p in ps], "packet_payload": [p.payload for p in ps],
        "packet_payload_len": [p.payload_len for p in ps],
        "packet_record": [p.record for p in ps],
    }
    arrays = [pa.array(columns[f.name], type=f.type) if f.name in columns
              else pa.nulls(n, type=f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _kncap_batches(path: str, data: bytes, schema, resume: dict | None = None,
                   base: int = 0):
    """A .kncap file, or one range of it (``resume``: its ``RangeStart`` as
    JSON, at offset ``base``), as the rows of transforms.file_units, in order."""
    import pyarrow as pa
    from kafka_net.spark_jobs import kncap_arrow
    table, problems = kncap_arrow.frame_rows(path, data, resume, base, _arrow(FRAME_SCHEMA))
    notes = [{"kind": PROBLEM, "file": path, "problem": p} for p in problems]
    if resume:
        notes.append({"kind": RANGE, **transforms.kncap_range_counts(
            path, base, table.num_rows)})
    if notes:
        yield pa.RecordBatch.from_pylist(notes, schema=schema)
    n = table.num_rows
    arrays = [_same(FRAME, n) if f.name == "kind" else table[f.name]
              if f.name in FRAME_COLUMNS else pa.nulls(n, f.type) for f in schema]
    yield from pa.Table.from_arrays(arrays, schema=schema).to_batches(BATCH_ROWS)


def _same(value: str, n: int):
    """A string column of ``n`` times one short value: a take of it, which
    costs about 7 ns a row where ``pa.repeat`` cost about 240 (0.2 s of CPU
    for the kind of a 920k-frame capture's frames)."""
    import pyarrow as pa
    return pa.array([value], pa.string()).take(np.zeros(n, np.int32))


def _unit_row(unit: tuple) -> dict:
    kind = unit[0]
    if kind == FRAME:
        return {"kind": FRAME, **unit[1]}
    if kind == PROBLEM:
        return {"kind": PROBLEM, "file": unit[1]["file"], "problem": unit[1]["problem"]}
    if kind == RANGE:
        return {"kind": RANGE, **unit[1]}
    flow, (path, p) = unit[1], unit[2]
    return {"kind": PACKET, "flow": repr(flow), "file": path, "timestamp_ns": p.timestamp_ns,
            "packet_src_ip": p.src_ip, "packet_src_port": p.src_port,
            "packet_dst_ip": p.dst_ip, "packet_dst_port": p.dst_port,
            "packet_seq": p.seq, "packet_ack": p.ack, "packet_flags": p.flags,
            "packet_payload": p.payload, "packet_payload_len": p.payload_len,
            "packet_record": p.record}


def flow_frames(broker_ports: set[int] | None):
    """``applyInArrow`` function for one flow's packet units -> frame/problem units."""
    def apply(table):
        import pyarrow as pa
        from kafka_net.capture.packet import Packet
        cols = table.to_pydict()
        packets = [(path, Packet(ts, str(src), sport, str(dst), dport, seq, ack, flags,
                                 payload, plen, rec))
                   for path, ts, src, sport, dst, dport, seq, ack, flags, payload, plen, rec
                   in zip(cols["file"], cols["timestamp_ns"], cols["packet_src_ip"],
                          cols["packet_src_port"], cols["packet_dst_ip"],
                          cols["packet_dst_port"], cols["packet_seq"], cols["packet_ack"],
                          cols["packet_flags"], cols["packet_payload"],
                          cols["packet_payload_len"], cols["packet_record"])]
        rows = [_unit_row(u) for u in transforms.frames_of_flow(packets, broker_ports)]
        return pa.Table.from_pylist(rows, schema=_arrow(UNIT_SCHEMA))
    return apply


def check_connection(table):
    """``applyInArrow`` function: one connection's frames -> one checked row."""
    return check_columns.checked_table([connection_result(table)], _arrow(CHECKED_SCHEMA))


def connection_result(table, frames: check_columns.Payloads | None = None) -> dict:
    """One connection's frames table checked: column-wise if it is plain
    (:mod:`kafka_net.spark_jobs.check_columns`), else by transforms.check_connection
    on its rows, the reference every path falls back to.  ``frames``: where its
    frame bytes lie, where the table has no "frame" column
    (:func:`groups_with_frames`)."""
    return check_columns.check_table(table, _reference, frames)


def _reference(table) -> dict:
    rows = _rows(table, FRAME_COLUMNS)
    return transforms.check_connection(rows[0]["connection"], rows)


# -- a table's rows, picked and grouped -------------------------------------------------------

def rows_where(table, mask):
    """``table.filter(mask)``, without copying where it need not: the table itself
    (or none of it) when the mask keeps every row (or none), and slices of it
    when the rows kept lie in a few runs (the frames of a pcap between its few
    markers).  A filter copies every column, the frame bytes too."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if pc.all(mask).as_py():
        return table
    if not pc.any(mask).as_py():
        return table.slice(0, 0)
    keep = np.asarray(mask.to_numpy(zero_copy_only=False), bool)   # an array or chunked
    edges = np.flatnonzero(np.diff(np.concatenate([[False], keep, [False]]).astype(np.int8)))
    if len(edges) // 2 > _SLICED_RUNS:
        return _filtered(table, mask)
    return pa.concat_tables([table.slice(start, end - start)
                             for start, end in zip(edges[::2].tolist(), edges[1::2].tolist())])


def _filtered(table, mask):
    """``table.filter(mask)``; binary_view columns (a .kncap task's frames, where
    they lie in the capture) through binary and back: pyarrow 26 has no take or
    filter for views."""
    import pyarrow as pa
    views = [f.name for f in table.schema if pa.types.is_binary_view(f.type)]
    if not views:
        return table.filter(mask)
    plain = table
    for name in views:
        i = plain.schema.get_field_index(name)
        plain = plain.set_column(i, pa.field(name, pa.binary()), plain[name].cast(pa.binary()))
    return plain.filter(mask).cast(table.schema)


# rows_where's slices: at most this many runs of kept rows (a filter beyond).
_SLICED_RUNS = 1024


def groups(table, key: str):
    """A table's rows grouped by one column's value, each group a table, in the
    order of the values (rows with a null value last, as one group); each
    group's rows in the table's order.

    The order is found on integers: each row's value as its rank among the
    distinct values (a dictionary encoding, a few dozen connections), a
    stable sort of those.  Sorting the rows by the strings themselves (and
    finding the groups' bounds by comparing strings) took 0.40 s of CPU for a
    920k-frame capture's connections, this 0.11 s.
    Each column is made one chunk first (a .kncap read gives one per segment
    range): ``take`` from columns of many chunks joins the chunks within
    every take, which cost about 2 s of CPU for the frame bytes of that
    capture.  Then the groups are taken a block of up to
    :data:`GROUP_BLOCK_ROWS` rows (or one larger group) at a time, when the
    caller asks for them, so that each block reuses the memory of the one
    before (the caller checks a group and lets it go) where one take of the
    whole table in group order wrote half a gigabyte of new pages (0.85-2.3
    -> 0.46-0.56 s of CPU for that capture, its frames read as Python bytes
    included), and many small connections are still a few takes, not one
    each (a take of every column costs about 0.1 ms however few its rows)."""
    import pyarrow as pa
    if table.num_rows == 0:
        return
    order, bounds = _grouped_order(table.column(key))
    if (order[1:] > order[:-1]).all():
        # In order already (a pcap flow's table: most often one connection): slices,
        # where a take copied the frame bytes (0.29 CPU s of the 919,785-frame pcap).
        for start, end in zip(bounds, bounds[1:]):
            yield table.slice(start, end - start)
        return
    table = pa.Table.from_arrays(
        [column.combine_chunks() if column.num_chunks > 1 else column.chunk(0)
         for column in table.columns], schema=table.schema)
    first = 0                     # the first group of the block
    while first < len(bounds) - 1:
        last = first + 1          # one past the block's last group
        while last < len(bounds) - 1 and bounds[last + 1] - bounds[first] <= GROUP_BLOCK_ROWS:
            last += 1
        block = table.take(order[bounds[first]:bounds[last]])
        for start, end in zip(bounds[first:last], bounds[first + 1:last + 1]):
            yield block.slice(start - bounds[first], end - start)
        first = last


# Rows taken at a time by groups(): a block of this many rows or one group, the larger.
# Smaller takes reuse memory better (the real capture's groups, about 27k rows each:
# 0.47-0.95 s taken one or two at a time, 0.90-1.06 s in blocks of 65,536 rows).
GROUP_BLOCK_ROWS = 8192


def _grouped_order(values) -> tuple[np.ndarray, list[int]]:
    """The rows' order by their value's rank (stable: each group's rows in the
    table's order), and where each group starts in it, then the end."""
    ranks = _ranks(values)
    order = np.argsort(ranks, kind="stable")
    ordered = ranks[order]
    return order, [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(order)]


def _ranks(values) -> np.ndarray:
    """Each value's rank among the column's distinct values, in their order
    (a null: after them all)."""
    import pyarrow.compute as pc
    codes = pc.dictionary_encode(values).combine_chunks()
    distinct = codes.dictionary
    rank = np.empty(len(distinct) + 1, np.int64)
    rank[:-1] = pc.rank(distinct, sort_keys="ascending").to_numpy() - 1
    rank[-1] = len(distinct)
    return rank[pc.fill_null(codes.indices, len(distinct)).to_numpy()]


def _taken(table, order, encode: tuple[str, ...] = ()):
    """``table.take(order)``, a column at a time, each made one chunk first; the
    ``encode`` columns (a few distinct strings, repeated on every row: the file's
    path) dictionary-encoded before that, so that neither the join nor the take
    moves the strings, only indices (they read back as the same Python strings)."""
    import pyarrow as pa
    columns = []
    for name, column in zip(table.column_names, table.columns):
        if name in encode:       # before the chunks are joined: joining the strings
            # themselves copied every row's path (0.19 of 0.21 s for the 920k-frame
            # capture, whose .kncap reads give 118 chunks)
            column = column.dictionary_encode().unify_dictionaries()
        column = column.combine_chunks() if column.num_chunks > 1 else column.chunk(0)
        columns.append(column.take(order))
    return pa.Table.from_arrays(columns, names=table.column_names)


def groups_with_frames(table, key: str):
    """:func:`groups` of a frames table, each group's frame bytes given as
    ``check_columns.Payloads`` (where they lie in the table's frame column)
    beside a table of its other columns: the bytes are neither copied into a
    table per group nor read into Python (for the 920k-frame capture the first
    was the largest cost of checking in one process after the checks were
    compiled; the second, one bytes object per frame, 290 MB of fresh memory)."""
    if table.num_rows == 0:
        return
    order, bounds = _grouped_order(table.column(key))
    payloads = check_columns.Payloads(table.column("frame"))
    rest = _taken(table.drop_columns(["frame"]), order, encode=("file", "source"))
    for start, end in zip(bounds, bounds[1:]):
        yield rest.slice(start, end - start), payloads.taken(order[start:end])
