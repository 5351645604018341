"""The PySpark conformance job end to end (spark_jobs/conformance.py).

Issue 4's "Done when", one section each ((a) and (d), the live run with real
clients and tcpdump, are in test_conformance_live.py):

(a) a live kafka-net run with real clients (kafka-python producer, admin and
    consumer group, a kafka-python acks=0 producer, a confluent-kafka producer,
    an aiokafka consumer group) writes captures whose report has zero
    violations and exactly the request counts per API and version that the
    broker's own RequestsPerSec metrics counted;
(b) synthetic captures with each violation injected at a known place, over
    several connections, processors and rotated segment files (and pcap
    files): each is reported exactly once at its connection and position,
    in report.json and violations.parquet; a clean capture reports none;
(c) bad captures (torn, garbage, empty, an empty directory, a non-Kafka
    pcap, a cut pcap): the job completes, report.json says what could not be
    read, the exit code is the documented one, no traceback;
(d) tcpdump on the loopback during the live run of (a): the pcap's report
    validates and agrees with kafka-net's own capture of the same
    conversation (connections, requests per API key and version, pairs).

One SparkSession serves every test (conftest.py); the jobs run in-process
through ``conformance.run``/``conformance.main``, and the CLI runs as a
subprocess twice (exit codes, stderr).  Loopback only, every wait bounded, no
assertion on elapsed time.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
import subprocess
import sys
from collections import Counter, defaultdict
from unittest import mock
from xml.etree import ElementTree as ET

import pytest

from kafka_net.capture.format import decode_segment
from kafka_net.capture.pairing import CHECKS
from kafka_net.capture.writer import CaptureWriter
from kafka_net.protocol import ApiKey
from kafka_net.spark_jobs import conformance
from tests.capture.test_pairing import INJECTIONS, conversation
from tests.spark.conftest import (
    REQUEST, RESPONSE, TcpConversation, kncap_file, kncap_record, load_report, parquet_rows,
    request_payload, response_payload, write_pcap)

pytestmark = pytest.mark.spark

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = 4242
BROKER = ("127.0.0.1", 9092)


PCAP_ONLY = {"unanswered_before_close"}     # needs the client's FIN


def closed_unanswered():
    """The pcap form of the injection: the client closes after request 10, unanswered
    (TcpConversation.close() sends its FIN)."""
    convo, found = INJECTIONS["unanswered_before_close"]()
    return [item for item in convo if item[0] != "fin"], found


def kncap_conn(client_port: int, processor: int, index: int) -> str:
    return f"127.0.0.1:9092-127.0.0.1:{client_port}-{processor}-{index}"


def pcap_conn(client_port: int) -> str:
    return f"127.0.0.1:{client_port}-127.0.0.1:9092"


def peek(direction: int, payload: bytes) -> tuple[int, int, int, str | None]:
    rec = kncap_record(direction, payload, "", 0)
    return rec.api_key, rec.api_version, rec.correlation_id, rec.client_id


def write_interleaved(writer: CaptureWriter, convos: dict[str, list]) -> None:
    """Write several connections' frames round-robin, as one Processor would."""
    streams = [[(conn, d, p) for _, d, p in convo] for conn, convo in convos.items()]
    for item in itertools.chain.from_iterable(itertools.zip_longest(*streams)):
        if item is None:
            continue
        conn, direction, payload = item
        key, version, corr, client_id = peek(direction, payload)
        peer = conn.split("-")[1]
        if direction == REQUEST:
            writer.request(conn, peer, payload, key, version, corr, client_id)
        else:
            writer.response(conn, peer, payload, key, version, corr)


def pcap_of(convo, client_port: int, start_ns: int, segment: int | None = None):
    conv = TcpConversation(("127.0.0.1", client_port), BROKER, start_ns)
    for _, direction, payload in convo:
        conv.send(direction, struct.pack(">i", len(payload)) + payload, segment)
    conv.close()
    return conv.packets


def connections_per_file(directory) -> dict[str, set[str]]:
    out = defaultdict(set)
    for name in os.listdir(directory):
        if name.endswith(".kncap"):
            with open(os.path.join(directory, name), "rb") as fh:
                for rec in decode_segment(fh.read()).records:
                    out[rec.connection_id].add(name)
    return out


def violation_keys(rows) -> list[tuple]:
    return sorted((r["connection"], r["check"], r["position"], r["correlation_id"])
                  for r in rows)


def main_in_process(argv) -> int:
    """conformance.main in this process, on the session's SparkSession.  The
    session fixture shipped the code to the executors once; main() would ship it
    again, and a second addPyFile of a changed zip fails (see the report)."""
    with mock.patch.object(conformance, "ship_code", lambda spark: None):
        return conformance.main([str(a) for a in argv])


def no_traceback(text: str) -> None:
    assert "Traceback (most recent call last)" not in text, text[-3000:]


# =============================================================================================
# (b) synthetic captures with each violation at a known place
# =============================================================================================

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory, spark):
    """Two processors' rotated segments holding one connection per injected
    violation plus two clean ones; and pcap files with a violation, a lost packet
    and a clean connection split over two files.  The job runs through main()."""
    base = tmp_path_factory.mktemp("synthetic")
    caps = base / "captures"
    writers = [CaptureWriter(str(caps), pid, segment_bytes=1500, max_frame_bytes=1 << 20,
                             run_id=RUN) for pid in (0, 1)]
    convos: list[dict[str, list]] = [{}, {}]
    expected = []
    for i, check in enumerate(sorted(set(INJECTIONS) - PCAP_ONLY)):
        pid = i % 2
        conn = kncap_conn(41000 + i, pid, i)
        convo, found = INJECTIONS[check]()
        convos[pid][conn] = convo
        expected += [(f"{RUN}/{conn}", c, pos, corr) for c, pos, corr in found]
    clean = [kncap_conn(41100, 0, 100), kncap_conn(41101, 1, 101)]
    convos[0][clean[0]] = conversation()
    convos[1][clean[1]] = conversation()
    for writer, by_conn in zip(writers, convos):
        write_interleaved(writer, by_conn)
        writer.close()

    # pcap: a swapped pair of responses (a violation), a lost packet (unverifiable),
    # and a clean connection whose packets are split over two files.
    convo, found = INJECTIONS["correlation_mismatch"]()
    expected += [(pcap_conn(42000), c, pos, corr) for c, pos, corr in found]
    lossy = pcap_of(conversation(), 42001, 2 * 10**18, segment=40)
    del lossy[len(lossy) // 2]
    write_pcap(caps / "violation.pcap", pcap_of(convo, 42000, 10**18))
    write_pcap(caps / "lossy.pcap", lossy)
    split = pcap_of(conversation(), 42002, 3 * 10**18, segment=25)
    write_pcap(caps / "split-1.pcap", split[:len(split) // 2])
    write_pcap(caps / "split-2.pcap", split[len(split) // 2:])
    # A kafka-net capture does not see the client's FIN; a pcap does.
    convo, found = closed_unanswered()
    expected += [(pcap_conn(42003), c, pos, corr) for c, pos, corr in found]
    write_pcap(caps / "closed.pcap", pcap_of(convo, 42003, 4 * 10**18))

    out = base / "out"
    code = main_in_process([caps, "--out", out])
    return {"caps": caps, "out": out, "code": code, "expected": sorted(expected),
            "clean": [f"{RUN}/{c}" for c in clean], "report": load_report(out),
            "convos": convos}


def test_synthetic_captures_span_rotated_segments(synthetic):
    """The setup is what it claims: every kncap connection spans several files."""
    per_file = connections_per_file(synthetic["caps"])
    assert len(per_file) == len(INJECTIONS) - len(PCAP_ONLY) + 2
    assert all(len(files) >= 2 for files in per_file.values()), per_file


def test_each_injected_violation_is_reported_once_at_its_connection_and_position(synthetic):
    report = synthetic["report"]
    got = sorted((e["connection"], check, e["position"], e["correlation_id"])
                 for check, entry in report["checks"].items() for e in entry["examples"])
    assert got == synthetic["expected"]
    counts = Counter(c for _, c, _, _ in synthetic["expected"])
    assert {c: report["checks"][c]["violations"] for c in CHECKS} == {
        c: counts.get(c, 0) for c in CHECKS}
    assert report["totals"]["violations"] == len(synthetic["expected"])


def test_violations_parquet_has_exactly_the_injected_rows(synthetic, spark):
    rows = parquet_rows(spark, synthetic["out"], "violations")
    assert violation_keys(rows) == synthetic["expected"]
    assert all(r["detail"] and r["timestamp_ns"] > 0 for r in rows)
    # where to find each: pcap frame number or kncap record offset, time, API, bytes
    for r in rows:
        if r["file"].endswith(".pcap"):
            assert r["frame_number"] > 0 and r["file_offset"] == -1, r
        else:
            assert r["file"].endswith(".kncap") and r["file_offset"] > 0, r
            assert r["frame_number"] == 0
        assert r["timestamp"].endswith("Z") and r["hex_head"].startswith("0000: ")
        assert r["correlation_id"] in r["correlation_ids"] or r["correlation_id"] < 0
    assert len(synthetic["report"]["violations"]) == len(rows)


def test_a_second_analysis_reads_the_frames_dataset_not_the_captures(synthetic, tmp_path):
    """--frames-from: the first run's frames.parquet and problems.json, checked
    again, give the same findings, totals and problems, with no capture read."""
    moved = tmp_path / "captures-gone"
    os.rename(synthetic["caps"], moved)
    try:
        out = tmp_path / "again"
        code = main_in_process(["--frames-from", synthetic["out"], "--out", out])
    finally:
        os.rename(moved, synthetic["caps"])
    first, again = synthetic["report"], load_report(out)
    assert code == synthetic["code"]
    assert again["totals"] == first["totals"]
    assert again["checks"] == first["checks"]
    assert again["unreadable"] == first["unreadable"]
    assert not (out / "frames.parquet").exists()   # the frames stay where they are


def test_small_inputs_read_in_process_report_what_the_executors_report(synthetic, spark,
                                                                       tmp_path):
    """The synthetic input is small, so the driver read and checked it
    (SMALL_INPUT_BYTES); through Spark's executors (ranges of 512 bytes, so the
    pcaps are cut too) the report and the tables are the same."""
    inputs = conformance._expand([str(synthetic["caps"])])
    assert sum(os.path.getsize(p) for p in inputs) <= conformance.SMALL_INPUT_BYTES
    out = tmp_path / "spark"
    summary = conformance.run(spark, inputs, str(out), split_bytes=512, small_input_bytes=0)
    first = synthetic["report"]
    # the CLI adds the verdict's fields (attribution) to what run() returns
    assert summary["totals"] == {k: first["totals"][k] for k in summary["totals"]}
    assert summary["unreadable"] == first["unreadable"]
    assert {c: e["violations"] for c, e in summary["checks"].items()} == \
        {c: e["violations"] for c, e in first["checks"].items()}
    for table in ("frames", "markers", "pairs", "violations"):
        assert sorted(map(repr, parquet_rows(spark, out, table))) == \
            sorted(map(repr, parquet_rows(spark, synthetic["out"], table))), table
    # frames.parquet holds frames only; the gap and FIN markers are apart
    assert all(r["marker"] is None for r in parquet_rows(spark, out, "frames"))
    assert {r["marker"] for r in parquet_rows(spark, out, "markers")} == {"gap", "close"}
    with open(out / conformance.PROBLEMS_FILE, encoding="utf-8") as fh:
        assert len(json.load(fh)["ranges"]) > 2


def test_uri_inputs_are_read_by_spark_file_systems(synthetic, spark, tmp_path):
    """file:// (as hdfs://, s3a://): folders of URIs read whole by Spark's Hadoop
    file systems, beside local files cut into ranges; one report."""
    caps = synthetic["caps"]
    pcaps = sorted(str(p) for p in caps.iterdir() if p.suffix == ".pcap")
    kncap_dir = tmp_path / "kncap"
    kncap_dir.mkdir()
    for p in caps.iterdir():
        if p.suffix == ".kncap":
            os.link(p, kncap_dir / p.name)
    out = tmp_path / "out"
    summary = conformance.run(spark, ["file://" + str(kncap_dir)] + pcaps, str(out),
                              split_bytes=512)
    first = synthetic["report"]
    # the CLI adds the verdict's fields (attribution) to what run() returns
    assert summary["totals"] == {k: first["totals"][k] for k in summary["totals"]}
    assert {c: e["violations"] for c, e in summary["checks"].items()} == \
        {c: e["violations"] for c, e in first["checks"].items()}


def test_frames_from_needs_a_frames_dataset(tmp_path, capsys):
    assert main_in_process(["--frames-from", tmp_path, "--out", tmp_path / "o"]) == 2
    assert "holds no frames.parquet" in capsys.readouterr().err


def test_synthetic_exit_code_is_1_for_violations(synthetic):
    assert synthetic["code"] == conformance.EXIT_VIOLATIONS == 1


def test_clean_and_unverifiable_connections_have_no_violations(synthetic):
    conns = {c["connection"]: c for c in synthetic["report"]["connections"]}
    for name in synthetic["clean"] + [pcap_conn(42002)]:
        c = conns[name]
        assert c["violations"] == 0 and c["in_flight_at_end"] == 0, c
        assert c["pairs"] == 9 and c["requests"] == 10 and c["acks0_requests"] == 1, c
    lossy = conns[pcap_conn(42001)]
    assert lossy["violations"] == 0 and lossy["unverifiable_from"] is not None
    assert conns[pcap_conn(42002)]["source"] == "pcap"
    assert synthetic["report"]["totals"]["unverifiable_connections"] == 1
    assert synthetic["report"]["totals"]["connections"] == len(INJECTIONS) + 2 + 3
    assert synthetic["report"]["unreadable"] == []


def request_counts(convo) -> Counter:
    return Counter(peek(d, p)[:2] for _, d, p in convo if d == REQUEST)


def test_synthetic_per_api_counts(synthetic):
    """Requests per API key and version are counted from what was captured."""
    expected = Counter()
    for by_conn in synthetic["convos"]:
        for convo in by_conn.values():
            expected += request_counts(convo)
    expected += request_counts(INJECTIONS["correlation_mismatch"]()[0])   # violation.pcap
    expected += request_counts(conversation())                            # split-*.pcap
    expected += request_counts(closed_unanswered()[0])                    # closed.pcap
    got = Counter()
    for row in synthetic["report"]["per_api"]:
        got[(row["api_key"], row["api_version"])] += row["requests"]
    # What is left is the lossy pcap connection's requests framed before its gap.
    lossy = next(c for c in synthetic["report"]["connections"]
                 if c["connection"] == pcap_conn(42001))
    rest = got - expected
    assert not (expected - got), expected - got
    assert sum(rest.values()) == lossy["requests"] > 0
    assert not (rest - request_counts(conversation()))


def test_synthetic_report_files(synthetic, spark):
    out = synthetic["out"]
    for name in ("report.json", "report.html", "junit.xml", "frames.parquet",
                 "pairs.parquet", "violations.parquet"):
        assert os.path.exists(out / name), name
    frames = parquet_rows(spark, out, "frames")
    assert all(r["marker"] is None for r in frames)     # frames only, no gap/FIN markers
    assert len(frames) == synthetic["report"]["totals"]["frames"]
    assert {f["source"] for f in frames} == {"kafka-net", "pcap"}
    pairs = parquet_rows(spark, out, "pairs")
    assert len(pairs) == synthetic["report"]["totals"]["pairs"]
    # JUnit: one case per check (+ inputs, + coverage); every check was violated
    # somewhere, failing the checks with a finding of the broker (the subject), and
    # the lossy pcap left frames unverifiable.
    report = synthetic["report"]
    assert {v["check"] for v in report["violations"]} == set(CHECKS)
    broker = {v["check"] for v in report["violations"] if v["party"] == "broker"}
    assert {"undecodable_request", "duplicate_correlation_id_in_flight",
            "unadvertised_version"}.isdisjoint(broker)
    suite = ET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c.find("failure") is not None for c in suite.iter("testcase")}
    assert cases == {**{c: c in broker for c in CHECKS}, "all captures readable": False,
                     "coverage at least the minimum": True}
    assert report["verdict"] == "FAIL" and report["coverage"]["unverifiable"] > 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 3 and "violations per connection" in html


# =============================================================================================
# (c) bad captures
# =============================================================================================

def http_pcap(path, client_port: int = 43000):
    conv = TcpConversation(("127.0.0.1", client_port), ("127.0.0.1", 8080), 10**18)
    conv.send(REQUEST, b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n")
    conv.send(RESPONSE, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    conv.close()
    return write_pcap(path, conv.packets)


@pytest.fixture(scope="module")
def bad(tmp_path_factory, spark):
    base = tmp_path_factory.mktemp("bad")
    caps = base / "captures"
    caps.mkdir()
    # A torn kafka-net capture: two good exchanges, then a record cut by a crash.
    recs = []
    for corr in (1, 2, 3):
        q = request_payload(ApiKey.METADATA, 12, corr, {"topics": None})
        r = response_payload(ApiKey.METADATA, 12, corr)
        recs += [kncap_record(REQUEST, q, "c1", corr * 10), kncap_record(RESPONSE, r, "c1",
                                                                          corr * 10 + 1)]
    torn = kncap_file(caps / f"kafka-net-{RUN}-p0-000000.kncap", recs)
    with open(torn, "r+b") as fh:
        fh.truncate(os.path.getsize(torn) - 7)
    garbage = caps / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 16)
    empty = caps / "empty.pcap"
    empty.write_bytes(b"")
    http = http_pcap(caps / "http.pcap")
    # A Kafka pcap cut in the middle of a packet record.
    cut = write_pcap(caps / "cut.pcap", pcap_of(conversation(), 43001, 10**18))
    with open(cut, "r+b") as fh:
        fh.truncate(os.path.getsize(cut) - 30)
    out = base / "out"
    code = main_in_process([caps, "--out", out])
    return {"code": code, "report": load_report(out), "torn": torn, "garbage": str(garbage),
            "empty": str(empty), "http": http, "cut": cut, "out": out}


def problems_of(report, path) -> list[str]:
    return [u["problem"] for u in report["unreadable"] if u["file"].endswith(str(path))]


def test_bad_captures_still_give_a_report_of_what_was_readable(bad):
    totals = bad["report"]["totals"]
    # The torn file's two whole exchanges (its third response is the torn record)
    # and the cut pcap's frames before the cut.
    assert totals["frames"] > 5
    assert totals["violations"] == 0
    assert bad["code"] == conformance.EXIT_CLEAN   # documented: 0 = no violations


def test_torn_capture_is_reported(bad):
    (problem,) = problems_of(bad["report"], bad["torn"])
    assert "torn tail" in problem


def test_garbage_and_empty_files_are_reported(bad):
    assert problems_of(bad["report"], bad["garbage"]) == [
        "neither a kafka-net capture nor a pcap/pcapng file"]
    assert problems_of(bad["report"], bad["empty"]) == ["an empty file"]


def test_cut_pcap_is_reported(bad):
    (problem,) = problems_of(bad["report"], bad["cut"])
    assert "truncated packet record" in problem


def test_non_kafka_pcap_is_reported(bad):
    """An HTTP conversation is not Kafka: the report must say so, naming the file
    (or at least its connection), rather than silently dropping it."""
    problems = problems_of(bad["report"], bad["http"])
    mentions = [u for u in bad["report"]["unreadable"]
                if "43000" in u["file"] + u["problem"]]
    assert problems or mentions, bad["report"]["unreadable"]
    assert any("not Kafka" in p for p in problems + [u["problem"] for u in mentions])


def test_unreadable_files_are_named_as_given(bad):
    """report.json lists inputs as the user gave them; "unreadable" must name
    the same files the same way (not as Spark's file: URIs), so that the two
    lists can be matched."""
    inputs = set(bad["report"]["inputs"])
    assert {bad["torn"], bad["garbage"], bad["empty"], bad["cut"]} <= inputs
    named = {u["file"] for u in bad["report"]["unreadable"]}
    assert named <= inputs, named - inputs


def test_junit_fails_the_inputs_case_for_bad_captures(bad):
    suite = ET.parse(bad["out"] / "junit.xml").getroot()
    inputs = next(c for c in suite.iter("testcase") if c.get("name") == "all captures readable")
    assert inputs.find("failure") is not None
    assert "garbage.bin" in inputs.find("failure").text


def test_nothing_readable_exits_2_with_a_report(tmp_path, spark, capsys):
    caps = tmp_path / "caps"
    caps.mkdir()
    (caps / "junk").write_bytes(b"\x00\x01garbage" * 100)
    (caps / "zero.kncap").write_bytes(b"")
    out = tmp_path / "out"
    code = main_in_process([caps, "--out", out])
    assert code == conformance.EXIT_USAGE == 2
    report = load_report(out)
    assert report["totals"]["frames"] == 0
    assert sorted(os.path.basename(u["file"]) for u in report["unreadable"]) == [
        "junk", "zero.kncap"]
    no_traceback(capsys.readouterr().err)


def test_empty_directory_exits_2_with_a_report(tmp_path, capsys):
    (tmp_path / "caps").mkdir()
    out = tmp_path / "out"
    code = main_in_process([tmp_path / "caps", "--out", out])
    assert code == 2
    err = capsys.readouterr().err
    assert "no capture files found" in err
    report = load_report(out)
    assert report["unreadable"] == [{"file": str(tmp_path / "caps"),
                                     "problem": "no capture files found"}]
    assert all(report["checks"][c]["violations"] == 0 for c in CHECKS)


# =============================================================================================
# The CLI, as a subprocess: exit codes and readable stderr
# =============================================================================================

def cli(*args, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "kafka_net", "conformance", *map(str, args)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def test_cli_on_a_clean_capture_exits_0_with_readable_stage_lines(tmp_path, spark):
    caps = tmp_path / "caps"
    writers = [CaptureWriter(str(caps), pid, 1200, 1 << 20, run_id=RUN) for pid in (0, 1)]
    write_interleaved(writers[0], {kncap_conn(44000, 0, 0): conversation(),
                                   kncap_conn(44001, 0, 1): conversation()})
    write_interleaved(writers[1], {kncap_conn(44002, 1, 2): conversation()})
    for w in writers:
        w.close()
    write_pcap(caps / "clean.pcap", pcap_of(conversation(), 44003, 10**18, segment=30))
    out = tmp_path / "out"
    done = cli(caps, "--out", out)
    assert done.returncode == 0, done.stderr[-3000:]
    no_traceback(done.stderr)
    stages = [line for line in done.stderr.splitlines() if line.startswith("conformance:")]
    assert any("reading" in s for s in stages), done.stderr
    assert any("checking connections" in s for s in stages), done.stderr
    assert any("report written to" in s and "(0 findings)" in s for s in stages)
    # The verdict on stdout, alone: not among the stage lines and Spark's warnings.
    assert done.stdout.splitlines() == [
        next(s for s in done.stdout.splitlines() if s.startswith(
            "conformance: PASS: 0 broker finding(s); of "))]
    assert "PASS" not in done.stderr
    # Spark's INFO chatter and console progress bars are kept out of the way.
    assert not [line for line in done.stderr.splitlines() if " INFO " in line]
    assert "[Stage" not in done.stderr
    report = load_report(out)
    assert report["totals"]["violations"] == 0
    assert report["totals"]["connections"] == 4
    assert report["totals"]["pairs"] == 4 * 9
    assert report["unreadable"] == []
    assert all(report["checks"][c]["violations"] == 0 for c in CHECKS)
    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.get("failures") == "0"
    assert len(list(suite.iter("testcase"))) == len(CHECKS) + 2   # + inputs, coverage


def test_cli_help_names_compare_subject_and_waive():
    done = cli("--help", timeout=120)
    assert done.returncode == 0, done.stderr
    for flag in ("--compare A B", "--subject", "--waive CHECK[=CLIENT-SOFTWARE][:REASON]"):
        assert flag in done.stdout, flag
    bad = cli("x", "--out", "y", "--waive", "acks0_answered", timeout=120)
    assert bad.returncode == 2 and "no known deviation explains it; say why" in bad.stderr


def test_cli_on_an_empty_directory_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "caps").mkdir()
    done = cli(tmp_path / "caps", "--out", tmp_path / "out", timeout=120)
    assert done.returncode == 2
    no_traceback(done.stderr)
    assert "no capture files found" in done.stderr
    assert os.path.exists(tmp_path / "out" / "report.json")


def test_compare_runs_the_job_on_captures_it_is_given(tmp_path, spark, capsys):
    """--compare A B with A a capture directory: the job runs on it first (into OUT/a),
    B an existing report; the acks=0 answer of A's broker is the difference."""
    from kafka_net.spark_jobs import compare
    from tests.capture.test_decode import pcap_bytes, wire_of
    from tests.spark.test_compare import HEARTBEAT_ERROR, NAMES_A, write_pair
    _, report_b = write_pair(tmp_path)
    caps = tmp_path / "caps-a"
    caps.mkdir()
    (caps / "a.pcap").write_bytes(pcap_bytes(wire_of(NAMES_A, extra=HEARTBEAT_ERROR)))
    with mock.patch.object(conformance, "ship_code", lambda spark: None):
        code = compare.main(["--compare", str(caps), report_b, "--out", str(tmp_path / "cmp")])
    assert code == compare.EXIT_DIFFERENT == 1
    assert load_report(tmp_path / "cmp" / "a")["verdict"] == "FAIL"
    out = capsys.readouterr().out
    assert "answered: Produce (acks=0): A 1 | B 0" in out
    assert "error_codes: Heartbeat v4: A [REBALANCE_IN_PROGRESS (27)] | B []" in out
