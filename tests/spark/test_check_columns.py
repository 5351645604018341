"""The column-wise check of a plain connection (kafka_net.spark_jobs.check_columns)
against the reference, transforms.check_connection: the same pairs, requests,
states and connection row for every connection it takes, and None (the
reference runs) for every connection where the walk finds anything."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.capture import reader
from kafka_net.capture.pairing import CLOSE, GAP, REQUEST
from kafka_net.spark_jobs import arrow_stages as stages
from kafka_net.spark_jobs import check_columns, kncap_arrow, transforms
from tests.capture.test_pairing import INJECTIONS, ORDER, conversation

pytestmark = pytest.mark.skipif(not check_columns.ENABLED,
                                reason="KAFKA_NET_READABLE=1: the readable path only")


def rows_of(convo, order=None, truncated=(), markers=None) -> list[dict]:
    """Frame rows (reader.FRAME_FIELDS) of one connection; ``order``: the
    rows' order in the table (their order keys keep the conversation's)."""
    markers = markers or {}
    rows = []
    for i, (name, direction, data) in enumerate(convo):
        marker = markers.get(i)
        rows.append({
            "source": "kafka-net", "file": "f.kncap", "connection": "c", "order_key": [1, 0, i],
            "direction": direction, "timestamp_ns": 1_000_000 * (i + 1),
            "frame_size": len(data), "truncated": i in truncated, "after_gap": False,
            "api_key": None, "api_version": None, "correlation_id": None, "client_id": None,
            "frame": b"" if marker else data, "marker": marker,
            "gap_start": 0 if marker == GAP else None, "gap_end": 10 if marker == GAP else None,
            "frame_number": 0, "file_offset": 16 + i})
    return [rows[i] for i in order] if order is not None else rows


def table_of(rows):
    return pa.Table.from_pylist(rows, schema=stages._arrow(stages.UNIT_SCHEMA)).select(
        stages.FRAME_COLUMNS)


def reference(rows) -> dict:
    return transforms.check_connection("c", rows)


def same(got: dict, want: dict) -> None:
    got = check_columns.as_rows(got)
    for name in ("pairs", "requests", "states", "violations"):
        assert got[name] == want[name], name
    assert json.dumps(got["connection"]) == json.dumps(want["connection"])


def test_a_plain_conversation_is_checked_column_wise_as_the_walk_checks_it():
    rows = rows_of(conversation())
    got = check_columns.check_table(table_of(rows), stages._reference)
    assert got.get("columns"), "the plain conversation should take the column-wise path"
    want = reference(rows)
    same(got, want)
    assert want["connection"]["acks0_requests"] == 1 and len(want["pairs"]) == 9


def test_a_fin_with_nothing_waiting_stays_plain_and_one_with_a_request_waiting_does_not():
    convo = conversation() + [("fin", REQUEST, b"")]
    rows = rows_of(convo, markers={len(convo) - 1: CLOSE})
    got = check_columns.check_table(table_of(rows), stages._reference)
    assert got.get("columns")
    same(got, reference(rows))
    waiting = conversation(ORDER[:-1]) + [("fin", REQUEST, b"")]
    rows = rows_of(waiting, markers={len(waiting) - 1: CLOSE})
    assert check_columns._in_order_table(table_of(rows)) is None


@pytest.mark.parametrize("at", range(len(ORDER) + 1))
def test_a_fin_ahead_of_answers_on_the_way_stays_column_wise(at):
    """A pipelining client's FIN with answers still on the way (a pcap shows it
    before them), at every place in the conversation: each request waiting at it
    is answered later, so the walk finds nothing there and the column-wise
    report is the walk's."""
    convo = conversation()
    convo.insert(at, ("fin", REQUEST, b""))
    rows = rows_of(convo, markers={at: CLOSE})
    got = check_columns.check_table(table_of(rows), stages._reference)
    assert got.get("columns")
    same(got, reference(rows))


def test_a_fin_whose_oldest_waiting_request_is_answered_leaves_the_rest_in_flight():
    """q5, q6, q7 wait at the FIN; q5 and q6 are answered after it, q7 never (the
    capture ends there): the walk marks only the oldest as closed, so q7 is in
    flight, not unanswered."""
    convo = conversation(ORDER[:ORDER.index("r7")])
    convo.insert(index_of(convo, "r5"), ("fin", REQUEST, b""))
    rows = rows_of(convo, markers={index_of(convo, "fin"): CLOSE})
    got = check_columns.check_table(table_of(rows), stages._reference)
    assert got.get("columns")
    want = reference(rows)
    same(got, want)
    assert want["connection"]["in_flight_at_end"] == 1 and not want["violations"]


def index_of(convo, name: str) -> int:
    return [n for n, _, _ in convo].index(name)


@pytest.mark.parametrize("case", sorted(INJECTIONS))
def test_every_injected_violation_goes_to_the_reference(case):
    convo, expected = INJECTIONS[case]()
    rows = rows_of(convo, markers={i: CLOSE for i, (n, _, _) in enumerate(convo) if n == "fin"})
    assert check_columns._in_order_table(table_of(rows)) is None
    got = check_columns.check_table(table_of(rows), stages._reference)
    same(got, reference(rows))
    assert got["violations"], case


@st.composite
def mutated(draw):
    """The clean conversation, then a few edits: frames dropped, moved or repeated,
    a FIN or a gap marker inserted, a frame cut; the table's rows shuffled."""
    convo = conversation()
    markers: dict[int, str] = {}
    truncated: set[int] = set()
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(convo) - 1))
        edit = draw(st.sampled_from(["drop", "move", "repeat", "fin", "gap", "cut"]))
        if edit == "drop" and len(convo) > 1:
            del convo[i]
        elif edit == "move":
            convo.insert(draw(st.integers(0, len(convo) - 1)), convo.pop(i))
        elif edit == "repeat":
            convo.insert(i, convo[i])
        elif edit in ("fin", "gap"):
            convo.insert(i, (edit, draw(st.sampled_from([0, 1])), b""))
        else:
            truncated.add(i)
    markers = {i: CLOSE if n == "fin" else GAP for i, (n, _, _) in enumerate(convo)
               if n in ("fin", "gap")}
    order = draw(st.permutations(range(len(convo))))
    return rows_of(convo, order, truncated & set(range(len(convo))), markers)


@settings(max_examples=200, deadline=None)
@given(mutated())
def test_any_conversation_gets_the_references_result(rows):
    got = check_columns.check_table(table_of(rows), stages._reference)
    same(got, reference(rows))


@contextlib.contextmanager
def python_loops():
    """check_columns' per-frame loops in Python, their readable definition, in
    place of the compiled ones (kafka_net/capture/_plain_checks.pyx)."""
    compiled = check_columns._plain_checks
    assert compiled is not None, "the compiled loops are not in use"
    check_columns._plain_checks = None
    try:
        yield
    finally:
        check_columns._plain_checks = compiled


@settings(max_examples=200, deadline=None)
@given(mutated())
def test_the_compiled_loops_give_what_the_python_loops_give(rows):
    """Plain or not, and the same columns where plain (numpy arrays compared as
    lists: the Python loops give lists where the compiled ones give arrays)."""
    got = check_columns._in_order_table(table_of(rows))
    with python_loops():
        want = check_columns._in_order_table(table_of(rows))
    assert (got is None) == (want is None)
    if got is not None:
        assert check_columns.as_rows(got) == check_columns.as_rows(want)
        assert json.dumps(got["connection"]) == json.dumps(want["connection"])


def test_the_compiled_loops_take_a_plain_conversation():
    """Not the Python loops behind them: the test above compares two things."""
    calls = []
    real = check_columns._request

    def counted(*args):
        calls.append(args[1])
        return real(*args)
    check_columns._request = counted
    try:
        got = check_columns._in_order_table(table_of(rows_of(conversation())))
    finally:
        check_columns._request = real
    assert got is not None and not calls


def run_in_process(inputs, out, fast: bool, monkeypatch) -> tuple[str, dict]:
    """The job in this process with the fast paths on or off: its summary as
    JSON, and its pairs and violations tables as rows."""
    import pyarrow.parquet as pq
    from kafka_net.spark_jobs import conformance
    monkeypatch.setattr(check_columns, "ENABLED", fast)
    summary = conformance.run(None, [str(p) for p in inputs], str(out),
                              small_input_bytes=1 << 40)
    tables = {name: pq.read_table(out / f"{name}.parquet").to_pylist()
              for name in ("pairs", "violations", "frames", "markers")}
    summary.pop("generated_at")               # when, not what
    return json.dumps(summary), tables


def test_the_job_reports_the_same_with_and_without_the_fast_paths(tmp_path, monkeypatch):
    """Every injected violation on a kafka-net connection of its own, clean ones
    beside them, a damaged segment, and pcap connections (a FIN, a lost packet):
    the same report, pairs, violations and frames, to the byte."""
    from kafka_net.capture.writer import CaptureWriter
    from tests.spark.test_conformance_job import (
        PCAP_ONLY, RUN, closed_unanswered, kncap_conn, pcap_of, write_interleaved)
    from tests.spark.conftest import write_pcap
    caps = tmp_path / "captures"
    writer = CaptureWriter(str(caps), 0, segment_bytes=4000, max_frame_bytes=1 << 20,
                           run_id=RUN)
    convos = {kncap_conn(41000 + i, 0, i): INJECTIONS[check]()[0]
              for i, check in enumerate(sorted(set(INJECTIONS) - PCAP_ONLY))}
    convos.update({kncap_conn(41100 + i, 0, 100 + i): conversation() for i in range(3)})
    write_interleaved(writer, convos)
    writer.close()
    segments = sorted(caps.iterdir())
    data = bytearray(segments[1].read_bytes())
    data[len(data) // 2] ^= 0x20                  # one record of one segment damaged
    segments[1].write_bytes(bytes(data))
    lossy = pcap_of(conversation(), 42001, 2 * 10**18, segment=40)
    del lossy[len(lossy) // 2]
    write_pcap(caps / "lossy.pcap", lossy)
    write_pcap(caps / "clean.pcap", pcap_of(conversation(), 42002, 3 * 10**18))
    write_pcap(caps / "closed.pcap", pcap_of(closed_unanswered()[0], 42003, 4 * 10**18))
    inputs = sorted(caps.iterdir())
    taken = {"connections": 0, "segments": 0}
    check, read = check_columns.check_in_order, kncap_arrow._clean

    def counted(count, function):
        def call(*args):
            result = function(*args)
            taken[count] += result is not None
            return result
        return call
    monkeypatch.setattr(check_columns, "check_in_order", counted("connections", check))
    monkeypatch.setattr(kncap_arrow, "_clean", counted("segments", read))
    fast = run_in_process(inputs, tmp_path / "fast", True, monkeypatch)
    assert taken["connections"] >= 4 and 0 < taken["segments"] < len(segments)
    readable = run_in_process(inputs, tmp_path / "readable", False, monkeypatch)
    assert fast[0] == readable[0]
    assert fast[1] == readable[1]
    assert len(fast[1]["violations"]) > len(INJECTIONS) and len(segments) > 2


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-2**62, 2**62)),
                max_size=30))
def test_rows_in_order_are_exactly_those_a_stable_sort_leaves_alone(keys):
    """_ascending: the check that spares a connection's sort."""
    columns = [np.array([k[i] for k in keys], np.int64) for i in range(3)]
    sorted_order = np.lexsort((columns[2], columns[1], columns[0]))
    assert check_columns._ascending(*columns) == \
        bool((sorted_order == np.arange(len(keys))).all())
