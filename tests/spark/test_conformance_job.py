"""The PySpark conformance job end to end (spark_jobs/conformance.py).

Issue 4's "Done when", one section each:

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

import importlib

import asyncio
import gc
import itertools
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections import Counter, defaultdict
from unittest import mock
from xml.etree import ElementTree as ET

import pytest

from kafka_net.capture.format import decode_segment
from kafka_net.capture.pairing import CHECKS
from kafka_net.capture.writer import CaptureWriter
from kafka_net.protocol import ApiKey
from spark_jobs import conformance
from tests.capture.test_pairing import INJECTIONS, conversation
from tests.spark.conftest import (
    REQUEST, RESPONSE, TcpConversation, kncap_file, kncap_record, load_report, parquet_rows,
    request_payload, response_payload, run_job, write_pcap)
from tests.support import LOOPBACK, make_config, running_server

pytestmark = pytest.mark.spark

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = 4242
BROKER = ("127.0.0.1", 9092)
TIMEOUT_S = 30


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
    for i, check in enumerate(sorted(INJECTIONS)):
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

    out = base / "out"
    code = main_in_process([caps, "--out", out])
    return {"caps": caps, "out": out, "code": code, "expected": sorted(expected),
            "clean": [f"{RUN}/{c}" for c in clean], "report": load_report(out),
            "convos": convos}


def test_synthetic_captures_span_rotated_segments(synthetic):
    """The setup is what it claims: every kncap connection spans several files."""
    per_file = connections_per_file(synthetic["caps"])
    assert len(per_file) == len(INJECTIONS) + 2
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
    assert len(frames) == synthetic["report"]["totals"]["frames"]
    assert {f["source"] for f in frames} == {"kafka-net", "pcap"}
    pairs = parquet_rows(spark, out, "pairs")
    assert len(pairs) == synthetic["report"]["totals"]["pairs"]
    # JUnit: one case per check (+ inputs); every check was violated somewhere.
    suite = ET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c.find("failure") is not None for c in suite.iter("testcase")}
    assert cases == {**{c: True for c in CHECKS}, "all captures readable": False}
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
    assert any("report written to" in s and "(0 violations)" in s for s in stages)
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
    assert len(list(suite.iter("testcase"))) == len(CHECKS) + 1


def test_cli_on_an_empty_directory_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "caps").mkdir()
    done = cli(tmp_path / "caps", "--out", tmp_path / "out", timeout=120)
    assert done.returncode == 2
    no_traceback(done.stderr)
    assert "no capture files found" in done.stderr
    assert os.path.exists(tmp_path / "out" / "report.json")


# =============================================================================================
# (a) a live run with real clients, and (d) tcpdump of the same conversation
# =============================================================================================

N_KP, N_ACKS0, N_CK = 20, 5, 20
N_ALL = N_KP + N_ACKS0 + N_CK


class Tcpdump:
    """tcpdump -i lo for one port, started and stopped with bounded waits."""

    def __init__(self, path, port: int) -> None:
        self.path, self.port = str(path), port
        self.log = str(path) + ".stderr"
        self.proc = None

    def start(self) -> None:
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                # --immediate-mode: packets reach the file at once (else a SIGINT
                # can lose what still sits in the kernel's ring); -B 64 MiB: no drops.
                ["tcpdump", "-i", "lo", "-w", self.path, "-U", "-n", "--immediate-mode",
                 "-B", "65536", "-s", "0", f"tcp port {self.port}"],
                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump exited: {self.stderr()}")
            if "listening on" in self.stderr():
                return
            time.sleep(0.05)
        raise RuntimeError(f"tcpdump did not start: {self.stderr()}")

    def stderr(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # Let the last packets reach the file: wait (bounded) until it stops growing.
        size, stable_since, deadline = -1, time.monotonic(), time.monotonic() + 5
        while time.monotonic() < deadline and time.monotonic() - stable_since < 0.5:
            now = os.path.getsize(self.path) if os.path.exists(self.path) else 0
            if now != size:
                size, stable_since = now, time.monotonic()
            time.sleep(0.05)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def real_clients(port: int, topic: str) -> dict:
    """Produce with three producers, consume with two consumer groups; every
    client closed before returning.  Returns what was read, per consumer."""
    kafka = importlib.import_module("kafka")
    from kafka.admin import NewTopic
    ck = importlib.import_module("confluent_kafka")
    aiokafka = importlib.import_module("aiokafka")
    bootstrap = f"{LOOPBACK}:{port}"
    timeouts = dict(request_timeout_ms=10_000)

    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, **timeouts)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)],
                            timeout_ms=10_000)
    finally:
        admin.close()

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, **timeouts)  # idempotent
    try:
        futures = [producer.send(topic, key=b"kp-%d" % i, value=b"kafka-python %d" % i)
                   for i in range(N_KP)]
        producer.flush(timeout=TIMEOUT_S)
        assert all(f.get(timeout=TIMEOUT_S) for f in futures)
    finally:
        producer.close(timeout=5)

    acks0 = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=0,
                                enable_idempotence=False, **timeouts)
    try:
        for i in range(N_ACKS0):
            acks0.send(topic, key=b"a0-%d" % i, value=b"acks=0 %d" % i)
        acks0.flush(timeout=TIMEOUT_S)
    finally:
        acks0.close(timeout=5)

    rd = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 3,
                      "message.timeout.ms": 20_000})
    delivered = []
    for i in range(N_CK):
        rd.produce(topic, key=b"ck-%d" % i, value=b"confluent %d" % i,
                   on_delivery=lambda err, msg: delivered.append(err))
    assert rd.flush(TIMEOUT_S) == 0
    assert delivered == [None] * N_CK
    del rd
    gc.collect()   # rd_kafka_destroy: its connections close now

    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="live-kp",
                                   auto_offset_reset="earliest", **timeouts)
    got_kp = []
    try:
        assert consumer.partitions_for_topic(topic)   # see test_broker_kafka_python.subscribed
        deadline = time.monotonic() + TIMEOUT_S
        while len(got_kp) < N_ALL and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got_kp += records
    finally:
        consumer.close()

    async def aio_consume():
        c = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="live-aio",
                                      auto_offset_reset="earliest",
                                      request_timeout_ms=10_000)
        await c.start()
        got = []
        try:
            while len(got) < N_ALL:
                for records in (await c.getmany(timeout_ms=200)).values():
                    got += records
        finally:
            await c.stop()
        return got

    got_aio = asyncio.run(asyncio.wait_for(aio_consume(), TIMEOUT_S))
    return {"kafka-python": len(got_kp), "aiokafka": len(got_aio)}


def metric_counts(snapshot: dict) -> Counter:
    """RequestsPerSec counts by (request name, version)."""
    out = Counter()
    pattern = re.compile(r"name=RequestsPerSec,request=([^,]+),version=(\d+)$")
    for name, value in snapshot.items():
        m = pattern.search(name)
        if m:
            out[(m.group(1), int(m.group(2)))] += int(value)
    return out


def report_counts(report: dict) -> Counter:
    out = Counter()
    for row in report["per_api"]:
        out[(row["api_name"], row["api_version"])] += row["requests"]
    return out


@pytest.fixture(scope="module")
def live(tmp_path_factory, spark):
    """One live conversation, captured by kafka-net and (if tcpdump is there) by
    tcpdump on the loopback; the job then runs on each capture separately."""
    base = tmp_path_factory.mktemp("live")
    cap_dir = base / "kncap"
    pcap_dir = base / "pcap"
    pcap_dir.mkdir()
    config = make_config(capture_dir=str(cap_dir), group_initial_rebalance_delay_ms=0,
                         num_network_threads=2, capture_segment_bytes=256 * 1024)
    tcpdump = None
    read = {}
    with running_server(config) as server:
        port = server.bound_port()
        try:
            if shutil.which("tcpdump"):
                tcpdump = Tcpdump(pcap_dir / "lo.pcap", port)
                tcpdump.start()
            read = real_clients(port, "live")
        finally:
            server.shutdown()   # graceful: every request received is answered first
            if tcpdump is not None:
                tcpdump.stop()
        metrics = metric_counts(server.apis.metrics.snapshot())
    result = {"read": read, "metrics": metrics, "port": port,
              "kncap_out": base / "kncap-report", "pcap_out": base / "pcap-report"}
    result["kncap"] = run_job(spark, sorted(cap_dir.iterdir()), result["kncap_out"])
    if tcpdump is not None:
        result["tcpdump_stderr"] = tcpdump.stderr()
        result["pcap"] = run_job(spark, [pcap_dir / "lo.pcap"], result["pcap_out"])
    return result


def test_live_clients_read_everything(live):
    assert live["read"] == {"kafka-python": N_ALL, "aiokafka": N_ALL}


def test_live_capture_has_zero_violations(live):
    report = live["kncap"]
    assert report["unreadable"] == []
    assert report["totals"]["violations"] == 0, report["checks"]
    assert all(report["checks"][c]["violations"] == 0 for c in CHECKS)
    assert report["totals"]["acks0_requests"] >= 1   # the acks=0 producer's, unanswered
    assert report["totals"]["unverifiable_connections"] == 0


def test_live_capture_counts_match_the_broker_metrics(live):
    got = report_counts(live["kncap"])
    assert got == live["metrics"]
    names = {name for name, _ in got}
    for api in ("ApiVersions", "Metadata", "Produce", "Fetch", "CreateTopics",
                "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"):
        assert api in names, (api, sorted(names))


def test_live_capture_pairs_every_answered_request(live, spark):
    report = live["kncap"]
    totals = report["totals"]
    assert totals["pairs"] + totals["acks0_requests"] + totals["in_flight_at_end"] \
        == totals["requests"]
    pairs = parquet_rows(spark, live["kncap_out"], "pairs")
    assert len(pairs) == totals["pairs"]
    assert all(p["latency_ns"] >= 0 for p in pairs)
    # Latency percentiles per API key are there and ordered.
    for row in report["latency"]:
        assert row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"] <= row["max_ms"], row


def client_port(connection: str) -> int:
    m = re.search(r"-127\.0\.0\.1:(\d+)-\d+-\d+$", connection)      # kafka-net's id
    if m:
        return int(m.group(1))
    return int(re.match(r"127\.0\.0\.1:(\d+)-", connection).group(1))   # pcap flow id


def pcap_required(live):
    if "pcap" not in live:
        pytest.fail("tcpdump is not installed: run `make tcpdump`")


def dropped_by_kernel(tcpdump_stderr: str) -> int:
    m = re.search(r"(\d+) packets? dropped by kernel", tcpdump_stderr)
    return int(m.group(1)) if m else 0


def test_tcpdump_capture_validates(live):
    pcap_required(live)
    assert dropped_by_kernel(live["tcpdump_stderr"]) == 0, (
        "tcpdump lost packets (the machine was too busy); the pcap has gaps: "
        + live["tcpdump_stderr"])
    report = live["pcap"]
    assert report["totals"]["violations"] == 0, report["checks"]
    assert report["totals"]["unverifiable_connections"] == 0, (
        report["connections"], live["tcpdump_stderr"])
    assert report["totals"]["frames"] > 0
    assert {c["source"] for c in report["connections"]} == {"pcap"}


def test_tcpdump_capture_agrees_with_kafka_nets_own(live, spark):
    pcap_required(live)
    own, wire = live["kncap"], live["pcap"]
    assert wire["totals"]["connections"] == own["totals"]["connections"]
    assert report_counts(wire) == report_counts(own)
    assert sorted((r["api_key"], r["api_version"], r["client_id"], r["requests"])
                  for r in wire["per_api"]) == sorted(
        (r["api_key"], r["api_version"], r["client_id"], r["requests"])
        for r in own["per_api"])
    # Connection by connection (matched by the client's port): the same requests,
    # answered in the same order with the same correlation ids.
    own_conns = {client_port(c["connection"]): c for c in own["connections"]}
    wire_conns = {client_port(c["connection"]): c for c in wire["connections"]}
    assert set(own_conns) == set(wire_conns)
    for port, c in own_conns.items():
        w = wire_conns[port]
        assert (w["requests"], w["pairs"], w["acks0_requests"]) == (
            c["requests"], c["pairs"], c["acks0_requests"]), (c, w)

    def pair_lists(out):
        by_port = defaultdict(list)
        for p in parquet_rows(spark, out, "pairs"):
            by_port[client_port(p["connection"])].append(
                (p["request_position"], p["correlation_id"], p["api_key"], p["api_version"],
                 p["client_id"]))
        return {port: [x[1:] for x in sorted(v)] for port, v in by_port.items()}

    assert pair_lists(live["pcap_out"]) == pair_lists(live["kncap_out"])
