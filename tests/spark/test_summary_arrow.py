"""A small input's report, made without Spark, is the one Spark makes: every
path computes the aggregates with spark_jobs/summary_arrow.py (a share of
the checked rows, the sum of shares), from one share in process, one per
connection in Spark's tasks, one per batch of checked rows on the
``--frames-from`` path.

Each capture goes through ``conformance.main`` twice: as it is (small: read,
checked and summarised in this process, no SparkSession) and with
``--in-process-below-mb 0`` (Spark's executors).  The exit
codes, the verdict lines, report.json, report.html and junit.xml (less their
timings), problems and every Parquet table must be the same.  The captures:
three APIs, two client ids (one null, which the job keeps as ""), error
codes, latencies over six decades and requests over several seconds, a
violation; the synthetic captures of test_conformance_job (every injected
violation, pcaps with a lost packet and FINs); a capture file with
no records; an empty file.
"""

from __future__ import annotations

import json
import os
import re
from unittest import mock

import pyarrow.parquet as pq
import pytest

from kafka_net.spark_jobs import conformance, summary_arrow
from tests.spark.conftest import (
    REQUEST, RESPONSE, kncap_file, kncap_record, request_payload, response_payload)
from tests.spark.test_conformance_job import main_in_process, synthetic  # noqa: F401

pytestmark = pytest.mark.spark

TABLES = ("frames", "markers", "pairs", "violations")
S = 10**9


def mixed_capture(directory) -> list[str]:
    """Two connections; ApiVersions, Metadata and FindCoordinator, some answered
    with an error; one client without a client id; one response answering an id
    never asked (a violation); latencies from 1 µs to 1.2 s, over five seconds."""
    os.makedirs(directory, exist_ok=True)
    records = []
    conns = [("127.0.0.1:9092-127.0.0.1:40001-0-0", "tester"),
             ("127.0.0.1:9092-127.0.0.1:40002-0-1", None)]
    for c, (conn, client_id) in enumerate(conns):
        peer = conn.split("-")[1]
        for corr in range(12):
            api, version, body = [
                (18, 0, {"error_code": 35 if corr % 5 == 0 else 0, "api_keys": []}),
                (3, 1, {}),
                (10, 1, {"error_code": 15 if corr % 2 else 0})][corr % 3]
            start = 10 * S + corr * S // 2 + c
            latency = (corr + 1) * 10 ** (3 + (corr + 2 * c) % 6) + c   # 1 µs .. 1.2 s
            records.append(kncap_record(REQUEST, request_payload(
                api, version, corr, client_id=client_id), conn, start, peer))
            answered = 99 if (c, corr) == (1, 7) else corr      # 7: never answered
            records.append(kncap_record(RESPONSE, response_payload(
                api, version, answered, body), conn, start + latency, peer))
    records.sort(key=lambda r: r.timestamp_ns)
    return [kncap_file(os.path.join(directory, "kafka-net-9-p0-000000.kncap"), records)]


def no_records(directory) -> list[str]:
    os.makedirs(directory, exist_ok=True)
    return [kncap_file(os.path.join(directory, "kafka-net-9-p0-000000.kncap"), [])]


def empty_file(directory) -> list[str]:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "empty.kncap")
    open(path, "wb").close()
    return [path]


def run_both(inputs, tmp_path, capsys) -> dict:
    done = {}
    for way, flags in (("arrow", []), ("spark", ["--in-process-below-mb", "0"])):
        out = tmp_path / way
        # The small path must not ask for a SparkSession at all; the other must.
        with mock.patch.object(conformance, "get_spark", wraps=conformance.get_spark) as got:
            code = main_in_process([*inputs, "--out", out, *flags])
        assert got.called == (way == "spark"), way
        done[way] = {"code": code, "out": out, "stdout": capsys.readouterr().out}
    return done


def report(out) -> dict:
    with open(out / "report.json", encoding="utf-8") as fh:
        content = json.load(fh)
    del content["job"], content["generated_at"]      # timings
    return content


def table(out, name: str):
    path = out / f"{name}.parquet"
    if not path.exists():
        return None
    data = pq.read_table(path)
    return ([(f.name, str(f.type)) for f in data.schema],
            sorted(map(repr, data.to_pylist())))


def assert_same(done: dict) -> None:
    arrow, spark = done["arrow"], done["spark"]
    assert arrow["code"] == spark["code"]
    assert arrow["stdout"] == spark["stdout"]
    assert report(arrow["out"]) == report(spark["out"])
    for name in TABLES:
        assert table(arrow["out"], name) == table(spark["out"], name), name
    with open(arrow["out"] / conformance.PROBLEMS_FILE, encoding="utf-8") as a, \
            open(spark["out"] / conformance.PROBLEMS_FILE, encoding="utf-8") as b:
        assert json.load(a)["problems"] == json.load(b)["problems"]
    for name, timing in (("report.html", r"Generated [0-9T:+-]+"),
                         ("junit.xml", r' time="[0-9.]+"')):
        assert without(arrow["out"] / name, timing) == without(spark["out"] / name, timing)


def without(path, pattern: str) -> str:
    """A file's text less its timings (when generated, how long the job took)."""
    with open(path, encoding="utf-8") as fh:
        return re.sub(pattern, "", fh.read())


def test_mixed_capture_gives_the_same_report_both_ways(spark, tmp_path, capsys):
    done = run_both(mixed_capture(tmp_path / "caps"), tmp_path, capsys)
    assert_same(done)
    got = report(done["arrow"]["out"])
    # the capture is what the docstring says, so the comparison covers it
    assert {r["api_name"] for r in got["per_api"]} == {"ApiVersions", "Metadata",
                                                       "FindCoordinator"}
    assert "" in {r["client_id"] for r in got["per_api"]}   # a null id, as the job keeps it
    assert sum(r["errors"] for r in got["per_api"]) > 0
    assert got["totals"]["violations"] > 0
    assert len({r["bucket"] for r in got["latency_histogram"]}) >= 5
    assert len(got["timeline"]) >= 5
    assert any(r["p99_ms"] != r["p50_ms"] for r in got["latency"])


def test_synthetic_captures_give_the_same_report_both_ways(synthetic, spark,  # noqa: F811
                                                          tmp_path, capsys):
    done = run_both([synthetic["caps"]], tmp_path, capsys)
    assert_same(done)
    assert report(done["arrow"]["out"])["totals"]["violations"] == len(synthetic["expected"])


@pytest.mark.parametrize("capture", [no_records, empty_file])
def test_nothing_to_check_gives_the_same_report_both_ways(capture, spark, tmp_path, capsys):
    done = run_both(capture(tmp_path / "caps"), tmp_path, capsys)
    assert_same(done)
    assert report(done["arrow"]["out"])["totals"]["frames"] == 0


def test_percentile_interpolates_between_closest_ranks_as_spark_does():
    assert summary_arrow.percentile([1, 2, 3, 4], 0.5) == 2.5
    # position 3 * 0.99 = 2.97: 3% of the third value, 97% of the fourth
    assert summary_arrow.percentile([10, 20, 30, 40], 0.99) == pytest.approx(39.7)
    assert summary_arrow.percentile([7], 0.999) == 7.0
    assert summary_arrow.percentile([5, 5, 9], 0.25) == 5.0


def test_a_large_file_that_is_no_capture_is_refused_by_its_first_bytes(tmp_path, capsys):
    """A 2.2 GB log file given by mistake: refused without reading it and without
    starting Spark (the first 12 bytes say it is no capture), exit 2 (NO DATA)."""
    path = tmp_path / "server.log"
    with open(path, "wb") as fh:
        fh.write(b"[2026-12-07 01:00:00,000] INFO starting\n")
        fh.truncate(2_200_000_000)        # sparse: no disk used, nothing to read
    out = tmp_path / "out"
    with mock.patch.object(conformance, "get_spark", wraps=conformance.get_spark) as got:
        code = main_in_process([str(path), "--out", out])
    assert not got.called
    assert code == conformance.EXIT_USAGE
    with open(out / "report.json", encoding="utf-8") as fh:
        unreadable = json.load(fh)["unreadable"]
    assert [(u["file"], u["problem"]) for u in unreadable] == [
        (str(path), "neither a kafka-net capture nor a pcap/pcapng file")]


def test_a_broker_segment_of_a_few_frames_is_small_whatever_its_file_size(tmp_path):
    """A running broker's .kncap segment is 64 MiB on disk from its first record
    (sized up front, then a zero tail): its records decide, not its file size."""
    from kafka_net.capture.writer import CaptureWriter
    writer = CaptureWriter(str(tmp_path), 0, 64 << 20, 1 << 20, run_id=1)
    writer.request("127.0.0.1:9092-127.0.0.1:5000-0-0", "127.0.0.1:5000",
                   b"\x00\x12\x00\x03\x00\x00\x00\x01\xff\xff", 18, 3, 1, None)
    [path] = [str(p) for p in tmp_path.iterdir()]
    assert os.path.getsize(path) > 60 << 20        # still open: sized up front
    assert conformance.is_small_input([path], None, 4 << 20)
    assert not conformance.is_small_input([path], None, 100)
    writer.close()


@pytest.mark.parametrize("capture", [mixed_capture, "synthetic"])
def test_a_second_analysis_on_spark_gives_the_in_process_report(capture, request, spark,
                                                                 tmp_path, capsys):
    """--frames-from runs the checks and the aggregates on Spark (the path URI
    inputs take too): its report is the small input's, to the byte, less the
    timings and the inputs (a second analysis names none)."""
    inputs = ([request.getfixturevalue("synthetic")["caps"]] if capture == "synthetic"
              else capture(tmp_path / "caps"))
    first, again = tmp_path / "first", tmp_path / "again"
    code = main_in_process([*inputs, "--out", first])
    with mock.patch.object(conformance, "get_spark", wraps=conformance.get_spark) as got:
        assert main_in_process(["--frames-from", first, "--out", again]) == code
    assert got.called
    want, have = report(first), report(again)
    del want["inputs"], have["inputs"]
    assert json.dumps(have) == json.dumps(want)
    for name in ("pairs", "violations"):
        assert table(again, name) == table(first, name), name
