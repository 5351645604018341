"""One pcap flow's frame rows as an Arrow table straight from its index records:
the fast path beside ``transforms.frames_of_flow`` over ``task_reads.flow_packets``
(the readable reference: a ``Packet`` per packet, TCP reassembly into
``Connection`` and ``Frame`` objects, a row dict per frame).

The compiled pass (:mod:`kafka_net.capture._flows`) reads the flow's packed
index records and its payloads where they lie in the capture file, rebuilds
both byte streams, splits them into frames, merges the two directions by their
ACKs and returns the frame columns as flat arrays; here they become the
FRAME_SCHEMA table, the same rows the reference makes.  It takes only the common
connection (one handshake, nothing lost, cut, reordered or overlapping, a whole
file's packets) and returns None for anything else, so the caller runs the
reference, which also reports what is unusual.  ``KAFKA_NET_READABLE=1`` makes
:func:`flow_table` return None, and the compiled module is not imported.
``tests/spark/test_pcap_arrow.py`` holds the two equal on generated captures.
"""

from __future__ import annotations

from kafka_net.capture import reader
from kafka_net.capture.model import CLOSE, REQUEST, RESPONSE
from kafka_net.capture.tcp import _endpoint
from kafka_net.capture.tcp_frames import Flow, plausible_request
from kafka_net.protocol import readable

ENABLED = not readable.READABLE     # read once (kafka_net/protocol/readable.py)
if ENABLED:     # a missing build is an ImportError, never the reference in its place
    from kafka_net.capture import _flows


def _header_complete(payload: bytes, is_request: int) -> bool:
    """The reference's test for a frame the data ends inside (Flow._header_complete)."""
    return Flow._header_complete(None, payload, REQUEST if is_request else RESPONSE)


def flow_table(parts: list[dict], files, schema):
    """One flow's index rows (``task_reads.INDEX_SCHEMA`` dicts, any ranges of one
    file) -> its frame rows as a table of ``schema`` (FRAME_SCHEMA), or None for
    the reference (see the module docstring).  ``files``: a ``task_reads.PayloadReader``."""
    if not ENABLED or not parts or any(r["inline"] for r in parts):
        return None
    path = parts[0]["file"]
    a, b = (parts[0]["a_ip"], parts[0]["a_port"]), (parts[0]["b_ip"], parts[0]["b_port"])
    if a == b or any(r["file"] != path for r in parts):
        return None      # one end talking to itself; a flow across files
    parts = sorted(parts, key=lambda r: r["range_start"])
    packed = parts[0]["packets"] if len(parts) == 1 else b"".join(r["packets"] for r in parts)
    columns = _flows.flow_columns(packed, files.buffer(path), 0, plausible_request,
                                  _header_complete)
    if columns is None:
        return None
    client, broker = (a, b) if columns[0] else (b, a)
    return _table(columns, path, f"{_endpoint(*client)}-{_endpoint(*broker)}", schema)


def _table(columns: tuple, path: str, connection: str, schema):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    (_client, n, direction, ts, size, truncated, close, offsets, data, number, key,
     version, corr, present, client_id, names) = columns
    present = np.frombuffer(present, np.uint8)
    cid = np.frombuffer(client_id, np.int32)
    is_close = np.frombuffer(close, np.uint8).astype(bool)
    order = np.zeros(3 * n, np.int64)
    order[2::3] = np.arange(n)
    arrays = {
        "source": pa.repeat(pa.scalar("pcap"), n),
        "file": pa.repeat(pa.scalar(path), n),
        "connection": pa.repeat(pa.scalar(connection), n),
        "order_key": pa.ListArray.from_arrays(np.arange(0, 3 * n + 1, 3, dtype=np.int32), order),
        "direction": np.frombuffer(direction, np.int32),
        "timestamp_ns": np.frombuffer(ts, np.int64),
        "frame_size": np.frombuffer(size, np.int32),
        "truncated": np.frombuffer(truncated, np.uint8).astype(bool),
        "after_gap": np.zeros(n, bool),
        "api_key": pa.array(np.frombuffer(key, np.int16).astype(np.int32), mask=present != 2),
        "api_version": pa.array(np.frombuffer(version, np.int16).astype(np.int32),
                                mask=present != 2),
        "correlation_id": pa.array(np.frombuffer(corr, np.int32), mask=present == 0),
        "client_id": pc.take(pa.array(names, pa.string()), pa.array(cid, mask=cid < 0)),
        "frame": pa.Array.from_buffers(pa.binary(), n,
                                       [None, pa.py_buffer(offsets), pa.py_buffer(data)]),
        "marker": pc.take(pa.array([CLOSE], pa.string()),
                          pa.array(np.zeros(n, np.int32), mask=~is_close)),
        "gap_start": pa.nulls(n, pa.int64()),
        "gap_end": pa.nulls(n, pa.int64()),
        "frame_number": np.frombuffer(number, np.int32),
        "file_offset": np.full(n, -1, np.int64),
    }
    return pa.Table.from_arrays([pa.array(arrays[f.name]).cast(f.type) if not isinstance(
        arrays[f.name], (pa.Array, pa.ChunkedArray)) else arrays[f.name].cast(f.type)
        for f in schema], schema=schema)


def range_index(path: str, data, resume: dict | None, base: int, split: bool):
    """A classic pcap range's index (Ethernet, Linux SLL or SLL2 link type), as
    ``transforms.file_units`` then ``task_reads.index_rows`` would give it, with no
    object per packet: (its notes as units: problems, the range counts; its flows
    as (a ip, a port, b ip, b port, packed records)), or None for the reference,
    which reads every range of another format, link type or packet kind (see
    ``_flows.index_pcap``).  ``base``: the range's file offset; the rest as
    ``reader.read_file`` takes them."""
    if not ENABLED or reader.kind_of(data, resume, split) != reader.PCAP:
        return None
    from kafka_net.capture.packet import CaptureRead
    from kafka_net.capture.pcap import Resume, _pcap_header
    if split and resume:       # the reader goes on in the state the range starts in
        state, pos = Resume.from_json(resume), 0
        if state.kind != reader.PCAP:
            return None
    else:                      # the reader reads the file's header first
        state, pos = Resume(reader.PCAP), 24
        if reader.sniff(data) != reader.PCAP or not _pcap_header(data, state,
                                                                 CaptureRead(reader.PCAP)):
            return None
    found = _flows.index_pcap(data, pos, state.linktype, state.endian == ">", state.frac_ns,
                              state.rec_size, state.index, base)
    if found is None:
        return None
    records, packets, stop, at, detail, flows = found
    at += base if split else 0        # reader.read_file names file offsets of a split file
    problems = [_record_problem(stop, at, detail, len(data) - found[3] - state.rec_size)] \
        if stop else []
    notes = [("problem", {"file": path, "problem": p}) for p in problems]
    if split:
        notes.append(("range", {"file": path, "range_start": base, "range_records": records,
                                "range_packets": packets, "range_non_tcp": 0}))
    elif not packets and not problems:
        notes.append(("problem", {"file": path, "problem": "no TCP packets"}))
    return notes, flows


def _record_problem(stop: int, at: int, detail: int, left: int) -> str:
    """pcap._read_pcap's words for where its record loop stopped."""
    if stop == 1:
        return f"truncated packet record at byte {at} (header cut at {detail} bytes)"
    if stop == 2:
        return f"corrupt packet record at byte {at} (captured length {detail}); rest skipped"
    return f"truncated packet record at byte {at} ({left} of {detail} bytes)"


__all__ = ["ENABLED", "flow_table", "range_index"]
