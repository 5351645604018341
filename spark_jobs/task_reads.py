"""The conformance job's stages on Spark: tasks read the capture bytes themselves.

Frame bytes never cross the JVM.  Spark schedules the tasks, shuffles a small
index, and aggregates the small checked rows; each Python task reads the bytes
it needs from the capture files (local paths every node can reach: a shared
mount on a cluster), checks whole connections, and writes its share of the
frames dataset (``frames.parquet``, ``markers.parquet``) with pyarrow:

* **kafka-net captures** (:func:`kncap_checks`, ``mapInArrow``): a connection
  lives in one Processor's segments (its id names the Processor), so the driver
  gives each task whole Processors' byte ranges, in order, and the part of
  their connections it keeps (a large Processor's connections are shared among
  several tasks by a hash of the id: ``conformance._kncap_tasks``); the task
  reads the ranges, checks its connections and returns one :data:`OUT_SCHEMA`
  row per connection.  No shuffle.
* **pcap and pcapng** (:func:`packet_index`, then :func:`flow_checks`): a TCP
  flow's packets may lie in any range of any file, so the first stage reads
  its range and returns, per flow, where each packet's payload lies in the file
  (:data:`INDEX_SCHEMA`: offsets, lengths, sequence numbers, flags, times,
  packed as one binary value per flow and range, 42 bytes a packet; payload
  bytes only for datagrams put together from IP fragments).  That index is
  shuffled by flow; the second stage reads its flows' payloads from the files,
  reassembles them, checks the connections.  Both halves have a compiled pass
  (:mod:`.pcap_arrow`): a plain classic pcap range to its index with no object per
  packet, a common connection's index to its frame columns with no object per
  frame; anything else takes the readable path (``transforms``).

Both return the problems met and each split file's range counts as rows of
the same table.  The per-file, per-flow and per-connection functions are
:mod:`kafka_net.spark_jobs.transforms`' own, as in every other path.  A small
input runs these same tasks in the driver's process, one after another, with
no Spark (``rdd_tasks.run_here``).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import struct

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, IntegerType, LongType, StringType, StructField,
    StructType)

from kafka_net.capture import reader
from kafka_net.spark_jobs import check_columns, pcap_arrow, summary_arrow, transforms
from kafka_net.spark_jobs.gc_policy import fewer_collections
from kafka_net.spark_jobs.arrow_stages import (
    FRAME_COLUMNS, PACKET, PROBLEM, RANGE, RANGE_FIELDS, RANGE_INPUT_SCHEMA, _arrow, rows_where)
from kafka_net.spark_jobs.schemas import (
    FRAME_DICTIONARY_COLUMNS, FRAME_SCHEMA, PAIR_DICTIONARY_COLUMNS, PAIR_SCHEMA,
    VIOLATION_SCHEMA)

CHECKED = "checked"
INDEX = "index"

_NOTE_FIELDS = [StructField("kind", StringType()), StructField("file", StringType()),
                StructField("problem", StringType())] + RANGE_FIELDS

# One row per flow and byte range: the flow's packets in that range.  Their
# numbers travel as one binary value, a :data:`PACKED` record a packet: the JVM
# copies one bytes value a row through the shuffle instead of converting ten
# arrays element by element on both sides of it (Arrow lists to Spark's rows
# and back), and the Python sides pack and unpack with ``struct``, not through
# ten Arrow list columns of Python ints.
INDEX_SCHEMA = StructType(_NOTE_FIELDS + [
    StructField("flow", StringType()),
    StructField("a_ip", StringType()),              # the flow's two ends, in order
    StructField("a_port", IntegerType()),
    StructField("b_ip", StringType()),
    StructField("b_port", IntegerType()),
    StructField("packets", BinaryType()),           # PACKED records, one a packet
    # One per packet, its payload put together from IP fragments (else null); an
    # empty list when the row has no such packet (the common case).
    StructField("inline", ArrayType(BinaryType())),
])
# A packet's index record (little-endian): its time; 1 if it goes from a to b,
# else 0; TCP seq, ack (32 bits) and flags (a byte); the payload's file offset
# (-1: see inline); the bytes captured there and its length on the wire (IP
# lengths: 32 bits hold them); its record number in its file.
PACKED = struct.Struct("<qBIIBqIIq")

# What a checking task returns per connection: its summary and findings, and
# its share of the report's aggregates (summary_arrow.partials: counts the
# driver adds up; the latencies themselves, for exact percentiles): a few hundred bytes, not a row per frame.
# The pairs table is written by the task itself.
_KEY = [StructField("api_key", IntegerType()), StructField("api_name", StringType()),
        StructField("api_version", IntegerType()), StructField("client_id", StringType())]
PARTIAL_FIELDS = [
    StructField("request_counts", ArrayType(StructType(_KEY + [
        StructField("requests", LongType()), StructField("responses", LongType())]))),
    StructField("error_counts", ArrayType(StructType(
        [_KEY[0], _KEY[2], _KEY[3], StructField("errors", LongType())]))),
    StructField("latencies", ArrayType(StructType(
        _KEY[:2] + [StructField("latency_ns", ArrayType(LongType()))]))),
    StructField("histogram", ArrayType(StructType([
        _KEY[1], StructField("bucket", LongType()), StructField("count", LongType())]))),
    StructField("timeline", ArrayType(StructType([
        StructField("second", LongType()), StructField("count", LongType())]))),
]
CHECKED_FIELDS = [StructField("connection", StringType()), StructField("summary", StringType()),
                  StructField("violations", ArrayType(VIOLATION_SCHEMA))] + PARTIAL_FIELDS

# A kafka-net task's notes say which part of its Processor's connections it
# kept, and whether the reference read the range (then its notes are the
# range's, as one task reading it all says them): the driver keeps one part's
# notes per range (:func:`once_per_range`).
PART_FIELDS = [StructField("kncap_part", IntegerType()),
               StructField("kncap_reference", BooleanType())]

# What the checking stages return: notes (problems, range counts) and one
# checked row per connection.
OUT_SCHEMA = StructType(_NOTE_FIELDS + PART_FIELDS + CHECKED_FIELDS)
CHECKED_COLUMNS = [f.name for f in CHECKED_FIELDS]
NOTE_COLUMNS = [f.name for f in _NOTE_FIELDS]
PART_COLUMNS = [f.name for f in PART_FIELDS]

FRAMES_TABLE = "frames.parquet"
MARKERS_TABLE = "markers.parquet"
PAIRS_TABLE = "pairs.parquet"
TASK_TABLES = (FRAMES_TABLE, MARKERS_TABLE, PAIRS_TABLE)
_OUT_ROWS = 64          # checked rows (connections) per returned batch


# -- kafka-net captures: whole Processors, or a part of their connections, per task ---------

def kncap_checks(out: str, tasks: list[list[tuple]]):
    """``mapInArrow`` function over ``spark.range`` ids: id i checks the pieces
    of ``tasks[i]``, each ``(range rows, parts, part)``: whole Processors' range
    rows (arrow_stages.RANGE_INPUT_SCHEMA tuples) of which it keeps the
    connections in ``part`` of ``parts`` (kncap_arrow.part_of; all of them when
    ``parts`` is 1) -> :data:`OUT_SCHEMA` batches."""
    def apply(batches):
        with fewer_collections():    # as the pcap tasks
            yield from _kncap_checks(batches, out, tasks)
    return apply


def _kncap_checks(batches, out: str, tasks: list[list[tuple]]):
    """:func:`kncap_checks`' work, for its batches."""
    ranges = sorted(((r, parts, part) for i in _ids(batches)
                     for rows, parts, part in tasks[i] for r in _range_rows(rows)),
                    key=lambda p: (p[0]["path"], p[0]["start"], p[2]))
    tables = FrameTables(out, "kncap")
    notes: list[dict] = []
    parts = []
    for r, of, part in ranges:
        table = _kncap_range(r, of, part, notes)
        if table is not None and table.num_rows:
            parts.append(tables.write_table(table))
    yield from _connection_batches(_kncap_connections(parts), notes, tables)


def _kncap_connections(parts: list):
    """A task's frames tables -> (connection, its frames table without the frame
    bytes, where those lie: check_columns.Payloads), in order of the connection
    ids (a connection's records may lie in several segments):
    ``arrow_stages.groups_with_frames``."""
    import pyarrow as pa
    from kafka_net.spark_jobs import arrow_stages
    if parts:
        for group, frames in arrow_stages.groups_with_frames(pa.concat_tables(parts),
                                                             "connection"):
            yield group["connection"][0].as_py(), group, frames


def _by_connection(table):
    """(connection, its rows) of a frames table, in order of the connection ids;
    each connection's rows in the table's order (the sort is stable)."""
    from kafka_net.spark_jobs import arrow_stages
    for group in arrow_stages.groups(table, "connection"):
        yield group["connection"][0].as_py(), group


def _connection_batches(connections, notes: list[dict], tables: "FrameTables"):
    """(connection, its frames table[, its frame bytes where the table has none])
    in order of the ids -> OUT_SCHEMA
    batches, the notes first; each connection checked by
    arrow_stages.connection_result (column-wise when it is plain, else the
    reference on its rows).  The task's table parts complete at the end."""
    import pyarrow as pa
    from kafka_net.spark_jobs import arrow_stages
    schema = _arrow(OUT_SCHEMA)
    if notes:
        yield pa.RecordBatch.from_pylist(notes, schema=schema)
    done: list[dict] = []
    for connection, table, *frames in connections:
        result = arrow_stages.connection_result(table, *frames)
        done.append({"kind": CHECKED, **_checked_fields(connection, result, tables)})
        if len(done) == _OUT_ROWS:
            yield pa.RecordBatch.from_pylist(done, schema=schema)
            done = []
    tables.close()
    if done:
        yield pa.RecordBatch.from_pylist(done, schema=schema)


def _kncap_range(r: dict, parts: int, part: int, notes: list[dict]):
    """One range's frame rows of the connections in ``part`` of ``parts`` as an
    Arrow table (:func:`task_frame_schema`), read by kncap_arrow.part_rows (column-wise when
    the kept records are clean, else the capture reader, which reports what is
    wrong); None if unreadable.  Its notes carry the part and whether the
    reference read the range (see :data:`PART_FIELDS`)."""
    from kafka_net.spark_jobs import kncap_arrow
    path = transforms.local_path(r["path"])
    said = {"range_start": r["start"], "kncap_part": part}
    try:
        data = _mapped(r["path"], r["start"], r["end"])
    except OSError as exc:
        notes.append({"kind": PROBLEM, "file": path, **said, "kncap_reference": True,
                      "problem": f"cannot be read ({exc.strerror or exc})"})
        return None
    resume = json.loads(r["resume"]) if r["resume"] else None
    table, problems, records, whole = kncap_arrow.part_rows(
        path, data, resume, r["start"], task_frame_schema(), parts, part)
    said["kncap_reference"] = whole
    notes += [{"kind": PROBLEM, "file": path, **said, "problem": p} for p in problems]
    if resume:
        notes.append({"kind": RANGE, **said, **transforms.kncap_range_counts(
            path, r["start"], records)})
    return table


@functools.cache
def task_frame_schema():
    """FRAME_SCHEMA as a .kncap task holds its frames in memory: the file and
    source columns dictionaries of their one value, the frame bytes views of
    where they lie in the mapped capture (kncap_arrow._same, _views).  Their
    Parquet types are FRAME_SCHEMA's (FrameTables writes no Arrow schema), so
    readers of frames.parquet see no difference."""
    import pyarrow as pa
    schema = _arrow(FRAME_SCHEMA)
    for name, type_ in (("source", pa.dictionary(pa.int32(), pa.string())),
                        ("file", pa.dictionary(pa.int32(), pa.string())),
                        ("frame", pa.binary_view())):
        schema = schema.set(schema.get_field_index(name), schema.field(name).with_type(type_))
    return schema


def _mapped(path: str, start: int, end: int):
    """:func:`arrow_stages.read_range`'s bytes as a view of the file mapped
    into memory: a task keeping a part of a Processor's connections steps over
    most of its bytes, and the compiled passes copy out only what they keep
    (a .kncap's frames, a pcap range's index), so nothing copies the whole
    range first (about 0.1 s of a 151 MB Processor's, per task).  The map goes
    when the last view of it does; nothing read from it keeps a view."""
    import mmap
    with open(transforms.local_path(path), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if not size:
            return b""
        view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    return view[min(start, size):size if end < 0 else min(end, size)]


def kncap_id_sizes(rows: list[tuple]) -> dict[int, tuple[int, int]] | None:
    """(records, bytes) of each connection in a Processor's range rows, by
    the CRC-32 of its id (kncap_arrow.id_sizes, from the lengths and ids): how
    the driver sizes the tasks; None if a range cannot say (the driver
    guesses)."""
    from kafka_net.spark_jobs import kncap_arrow
    sizes: dict[int, tuple[int, int]] = {}
    for r in _range_rows(rows):
        try:
            data = _mapped(r["path"], r["start"], r["end"])
        except OSError:
            return None      # the task that reads it says why
        resume = json.loads(r["resume"]) if r["resume"] else None
        got = kncap_arrow.id_sizes(data, resume, r["start"])
        if got is None:
            return None
        for h, (records, size) in got.items():
            was = sizes.get(h, (0, 0))
            sizes[h] = (was[0] + records, was[1] + size)
    return sizes


def once_per_range(notes: list[dict]) -> list[dict]:
    """The notes of the checking tasks with each kafka-net range's said once:
    the tasks that keep parts of one Processor's connections all read its
    ranges, and all say the same of a range when the reference read it there
    (its problems, its count), so one task's notes stand for the range: a task
    where the reference read it if there is one (a task whose kept records were
    clean says nothing of the others'), else the lowest part.  In order of file
    and range, each range's notes in the order said; the other notes (pcap)
    after them, as they came."""
    by_range: dict[tuple, dict[tuple, list]] = {}
    other = []
    for n in notes:
        if n.get("kncap_part") is None:
            other.append(n)
            continue
        by_task = by_range.setdefault((n["file"], n["range_start"]), {})
        by_task.setdefault((not n["kncap_reference"], n["kncap_part"]), []).append(n)
    kept = [n for key in sorted(by_range) for n in by_range[key][min(by_range[key])]]
    return [{k: v for k, v in n.items() if k not in PART_COLUMNS} for n in kept + other]


# -- pcap and pcapng: an index by flow, then the flows' payloads read back -----------------

def packet_index(chunks: list[list[tuple]]):
    """``mapInArrow`` function over ``spark.range`` ids: id i reads the range
    rows of ``chunks[i]`` -> :data:`INDEX_SCHEMA` batches (index rows, problems,
    range counts)."""
    def apply(batches):
        with fewer_collections():
            yield from _index_batches(r for i in _ids(batches) for r in _range_rows(chunks[i]))
    return apply


def _ids(batches):
    for batch in batches:
        yield from batch.column("id").to_pylist()


def _range_rows(rows: list[tuple]) -> list[dict]:
    return [dict(zip(RANGE_INPUT_SCHEMA.fieldNames(), row)) for row in rows]


def _index_batches(ranges):
    """Range rows -> index batches, one range at a time."""
    import pyarrow as pa
    schema = _arrow(INDEX_SCHEMA)
    for r in ranges:
        path = transforms.local_path(r["path"])
        try:
            data = _mapped(r["path"], r["start"], r["end"])
        except OSError as exc:
            yield pa.RecordBatch.from_pylist([{
                "kind": PROBLEM, "file": path,
                "problem": f"cannot be read ({exc.strerror or exc})"}], schema=schema)
            continue
        resume = json.loads(r["resume"]) if r["resume"] else None
        rows = range_index(path, data, resume, r["start"], r["split"])
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)


def range_index(path: str, data, resume: dict | None, base: int,
                split: bool) -> list[dict]:
    """One range of a pcap or pcapng file (at file offset ``base``) -> its note
    rows and index rows: read straight into index records by the compiled record
    loop (:func:`.pcap_arrow.range_index`) when it is a plain classic pcap range,
    else by the reference (``transforms.file_units``, then :func:`index_rows`).
    ``data`` may be a view of the mapped file (:func:`_mapped`), which the
    compiled loop reads in place: reading the 333 MB pcap into bytes first cost
    0.2-0.4 CPU s; the reference gets a copy."""
    fast = pcap_arrow.range_index(path, data, resume, base, split)
    if fast is None:
        return index_rows(path, base, transforms.file_units(path, bytes(data), resume, base,
                                                            split))
    notes, flows = fast
    return [_note(u) for u in notes] + [{
        "kind": INDEX, "file": path, "range_start": base, "flow": repr(((a_ip, a_port),
                                                                        (b_ip, b_port))),
        "a_ip": a_ip, "a_port": a_port, "b_ip": b_ip, "b_port": b_port, "packets": packed,
        "inline": []} for a_ip, a_port, b_ip, b_port, packed in flows]


def index_rows(path: str, base: int, units: list[tuple]) -> list[dict]:
    """transforms.file_units' units of one range (at file offset ``base``) ->
    index rows, one per flow, and the other units as note rows."""
    rows = []
    flows: dict[tuple, list] = {}
    for u in units:
        if u[0] == PACKET:
            flows.setdefault(u[1], []).append(u[2][1])
        else:
            rows.append(_note(u))
    for (a, b), ps in flows.items():
        rows.append({
            "kind": INDEX, "file": path, "range_start": base, "flow": repr((a, b)),
            "a_ip": a[0], "a_port": a[1], "b_ip": b[0], "b_port": b[1],
            "packets": _packed(a, base, ps),
            "inline": [] if all(p.payload_at >= 0 for p in ps) else
            [None if p.payload_at >= 0 else p.payload for p in ps],
        })
    return rows


def _packed(a: tuple, base: int, ps: list) -> bytes:
    """One flow's packets as :data:`PACKED` records, in order."""
    pack = PACKED.pack
    return b"".join([
        pack(p.timestamp_ns, p.src_port == a[1] and p.src_ip == a[0], p.seq, p.ack, p.flags,
             base + p.payload_at if p.payload_at >= 0 else -1, len(p.payload),
             p.payload_len, p.record)
        for p in ps])


def _note(unit: tuple) -> dict:
    if unit[0] == PROBLEM:
        return {"kind": PROBLEM, "file": unit[1]["file"], "problem": unit[1]["problem"]}
    if unit[0] == RANGE:
        return {"kind": RANGE, **unit[1]}
    # A kafka-net frame here means the file changed after the driver sniffed it.
    return {"kind": PROBLEM, "file": unit[1]["file"],
            "problem": "changed while read (a kafka-net capture now)"}


def flow_checks(broker_ports: set[int] | None, out: str):
    """``mapInArrow`` function over index rows shuffled by flow: each flow's
    payloads read from the files, reassembled and checked -> :data:`OUT_SCHEMA`
    batches.  Other rows (problems, range counts) pass through."""
    def apply(batches):
        with fewer_collections():
            yield from _flow_checks(batches, broker_ports, out)
    return apply


def _flow_checks(batches, broker_ports: set[int] | None, out: str):
    """:func:`flow_checks`' work, for its batches."""
    flows: dict[str, list[dict]] = {}
    notes: list[dict] = []
    for batch in batches:
        for r in batch.to_pylist():
            if r["kind"] == INDEX:
                flows.setdefault(r["flow"], []).append(r)
            else:
                notes.append({k: r[k] for k in NOTE_COLUMNS})
    tables = FrameTables(out, "pcap")
    connections: dict[str, list] = {}
    with PayloadReader() as files:
        for flow in sorted(flows):
            table, problems = flow_frames(flows.pop(flow), files, broker_ports)
            notes += [{"kind": PROBLEM, **p} for p in problems]
            table = tables.write_table(table) if table is not None else None
            for connection, rows in _by_connection(table) if table is not None else ():
                connections.setdefault(connection, []).append(rows)
    yield from _connection_batches(_flow_connections(connections), notes, tables)


def flow_frames(parts: list[dict], files: "PayloadReader", broker_ports: set[int] | None):
    """One flow's index rows -> (its frame rows as a FRAME_SCHEMA table, or None if
    it has none; its problem rows): in one compiled pass (:mod:`.pcap_arrow`) when
    the flow is a common one, else by the reference (``transforms.frames_of_flow``
    over the flow's packets)."""
    import pyarrow as pa
    schema = _arrow(FRAME_SCHEMA)
    table = pcap_arrow.flow_table(parts, files, schema)
    if table is not None:
        return table, []
    units = transforms.frames_of_flow(flow_packets(parts, files), broker_ports)
    frames = [u[1] for u in units if u[0] != PROBLEM]
    problems = [u[1] for u in units if u[0] == PROBLEM]
    if not frames:
        return None, problems
    return pa.Table.from_pydict({c: [f[c] for f in frames] for c in FRAME_COLUMNS},
                                schema=schema), problems


def _flow_connections(connections: dict[str, list]):
    """A flow task's frames tables by connection -> (connection, its frames
    table), in order of the ids."""
    import pyarrow as pa
    for connection in sorted(connections):
        parts = connections.pop(connection)
        yield connection, parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def flow_packets(parts: list[dict], files: "PayloadReader") -> list[tuple]:
    """One flow's index rows (from any ranges and files) -> (path, Packet) pairs
    in file and record order, payloads read from the files."""
    from kafka_net.capture.packet import Packet
    packets = []
    for r in sorted(parts, key=lambda r: (r["file"], r["range_start"])):
        path = r["file"]
        ends = ((r["a_ip"], r["a_port"]), (r["b_ip"], r["b_port"]))
        records = PACKED.iter_unpack(r["packets"])
        inline = r["inline"] or itertools.repeat(None)
        for (ts, from_a, seq, ack, flags, at, cap, plen, rec), fragments in zip(records, inline):
            src, dst = ends if from_a else ends[::-1]
            payload = fragments if at < 0 else files.read(path, at, cap)
            packets.append((path, Packet(ts, src[0], src[1], dst[0], dst[1], seq, ack, flags,
                                         payload, plen, rec)))
    return packets


class PayloadReader:
    """Byte ranges of capture files, each file mapped once per task."""

    def __init__(self) -> None:
        self._maps: dict[str, object] = {}
        self._files: list = []

    def read(self, path: str, at: int, length: int) -> bytes:
        return self.buffer(path)[at:at + length]

    def buffer(self, path: str):
        """The whole file, mapped (an empty file: empty bytes, which cannot be mapped)."""
        mm = self._maps.get(path)
        if mm is None:
            import mmap
            fh = open(path, "rb")
            self._files.append(fh)
            size = os.fstat(fh.fileno()).st_size
            mm = self._maps[path] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) \
                if size else b""
        return mm

    def __enter__(self) -> "PayloadReader":
        return self

    def __exit__(self, *exc) -> None:
        for mm in self._maps.values():
            if mm:
                mm.close()
        for fh in self._files:
            fh.close()


# -- what every checking task returns and writes ----------------------------------------------

def _checked_fields(connection: str, result: dict, tables: "FrameTables") -> dict:
    """A connection's checked row from its result: the reference's rows, or the
    columns of check_columns (no dict per pair or request)."""
    if result.get("columns"):
        tables.add_pair_columns(result["pairs"])
        pairs = check_columns.share_fields(result["pairs"], summary_arrow.PAIR_FIELDS)
        requests = check_columns.share_fields(result["requests"], summary_arrow.REQUEST_FIELDS)
    else:
        tables.add_pairs(result["pairs"])
        pairs = summary_arrow.columns_of(result["pairs"], summary_arrow.PAIR_FIELDS)
        requests = summary_arrow.columns_of(result["requests"], summary_arrow.REQUEST_FIELDS)
    return {"connection": connection, "summary": json.dumps(result["connection"]),
            "violations": result["violations"], **summary_arrow.partials(pairs, requests)}


def shares(batches):
    """``mapInArrow`` function over checked rows (``arrow_stages.CHECKED_SCHEMA``:
    a connection's pairs and requests) -> :data:`CHECKED_FIELDS` rows: each
    batch's share of the aggregates (summary_arrow.partials, as every path
    makes it) on its first row, the others' share columns empty, so the driver
    adds them up as it adds up the tasks' (summary_arrow.summarise_partials)."""
    import pyarrow as pa
    schema = _arrow(StructType(CHECKED_FIELDS))
    for batch in batches:
        if not batch.num_rows:
            continue
        share = summary_arrow.partials(
            summary_arrow.flattened(batch, "pairs", summary_arrow.PAIR_FIELDS),
            summary_arrow.flattened(batch, "requests", summary_arrow.REQUEST_FIELDS))
        empty = [[]] * (batch.num_rows - 1)
        yield pa.RecordBatch.from_arrays(
            [batch.column(f.name) if f.name in ("connection", "summary", "violations")
             else pa.array([share[f.name]] + empty, type=f.type) for f in schema],
            schema=schema)


class FrameTables:
    """A task's parts of ``frames.parquet``, ``markers.parquet`` and
    ``pairs.parquet`` under ``out``, written with pyarrow (no frame byte goes
    to the JVM).  Each part is written under a hidden name and renamed when
    complete; its name is the task's partition, so a retried task replaces its
    own part."""

    PAIR_ROWS = 8192      # pairs buffered before a row group is written

    def __init__(self, out: str, prefix: str) -> None:
        self.out = out
        self.name = f"part-{prefix}-{_partition():05d}.parquet"
        self.writers: dict[str, object] = {}
        self.pairs: list = []            # Arrow tables of pairs, not yet written
        self.pair_rows = 0

    def write_table(self, table):
        """Frame rows (a FRAME_SCHEMA table): frames and markers apart; the table.
        The frames are picked by ``arrow_stages.rows_where``: a pcap connection's
        frames lie in a few runs between its markers (a FIN, a gap), which a
        filter copied, bytes and all (0.43 CPU s of the 919,785-frame pcap)."""
        import pyarrow.compute as pc
        is_frame = pc.is_null(table["marker"])
        for name, mask in ((FRAMES_TABLE, is_frame), (MARKERS_TABLE, pc.invert(is_frame))):
            rows = rows_where(table, mask)
            if rows.num_rows:
                self._writer(name, rows.schema, FRAME_DICTIONARY_COLUMNS).write_table(rows)
        return table

    def add_pairs(self, pairs: list[dict]) -> None:
        import pyarrow as pa
        if pairs:
            self._add_pair_table(pa.Table.from_pylist(pairs, schema=_arrow(PAIR_SCHEMA)))

    def add_pair_columns(self, pairs: dict) -> None:
        """:meth:`add_pairs` for check_columns' columns (numpy or Arrow arrays, a
        list, or a str: every row's)."""
        import pyarrow as pa
        n = len(pairs["api_key"])
        if n:
            self._add_pair_table(pa.Table.from_pydict(
                {f: pa.repeat(pa.scalar(v, pa.string()), n) if isinstance(v, str) else v
                 for f, v in pairs.items()}, schema=_arrow(PAIR_SCHEMA)))

    def _add_pair_table(self, table) -> None:
        self.pairs.append(table)
        self.pair_rows += table.num_rows
        if self.pair_rows >= self.PAIR_ROWS:
            self._flush_pairs()

    def _flush_pairs(self) -> None:
        import pyarrow as pa
        if self.pairs:
            self._writer(PAIRS_TABLE, _arrow(PAIR_SCHEMA), PAIR_DICTIONARY_COLUMNS).write_table(
                pa.concat_tables(self.pairs))
            self.pairs, self.pair_rows = [], 0

    def _writer(self, table: str, schema, dictionary: list[str]):
        """The table's part, written as Parquet's own types: no Arrow schema is
        stored, so a frames table held as dictionaries and views
        (:func:`task_frame_schema`) reads back as FRAME_SCHEMA's strings and
        bytes, in Spark and pyarrow alike."""
        writer = self.writers.get(table)
        if writer is None:
            import pyarrow.parquet as pq
            writer = self.writers[table] = pq.ParquetWriter(
                self._path(table, hidden=True), schema, use_dictionary=dictionary,
                store_schema=False)
        return writer

    def _path(self, table: str, hidden: bool) -> str:
        return os.path.join(self.out, table, ("." if hidden else "") + self.name)

    def close(self) -> None:
        self._flush_pairs()
        for table, writer in self.writers.items():
            writer.close()
            os.replace(self._path(table, hidden=True), self._path(table, hidden=False))
        self.writers = {}


def _partition() -> int:
    from kafka_net.spark_jobs import rdd_tasks
    return rdd_tasks.partition()


def kncap_group(path: str) -> str:
    """The task group of a .kncap file: its run and Processor, as kafka-net names
    segments (a connection's id names its Processor, so all its records are in
    that Processor's segments); any other file name is a group of its own."""
    m = reader.RUN_NAME.search(os.path.basename(path))
    return f"{m.group(1)}-p{m.group(2)}" if m else path
