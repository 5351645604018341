"""The benchmark tools behave: tiny bounded loads, checked for answers, never for time."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from bench import (
    durable_group, harness, kload_group, protections_group, startup, zero_copy_group)
from bench.capture_group import read_capture
from bench.harness import ServerProcess
from bench.loadgen import LoadSpec, run_load
from bench.measure import Run, run_kload
from bench.results import begin_marker, end_marker, update_results
from bench.spark_bench import generate, generate_pcap
from kafka_net.capture.format import REQUEST, decode_segment
from kafka_net.capture.pairing import Frame, pair_connection
from kafka_net.protocol.records import build_batch
from tests.support import RawClient, running_server

PRODUCE = 0
TOPIC = "smoke"


def fill(port: int, topic: str, partitions: int) -> None:
    """CreateTopics, then one batch of two records into each partition."""
    harness.create_topic(port, topic, partitions)
    with RawClient(port) as client:
        for p in range(partitions):
            answer = client.call(PRODUCE, 9, {
                "transactional_id": None, "acks": 1, "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [
                    {"index": p, "records": build_batch([(None, b"a"), (None, b"b")])}]}]})
            assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


def in_process(port: int) -> ServerProcess:
    """A ServerProcess for a server running in this process (CPU taken from it)."""
    return ServerProcess("in-process", [], port=port, ps=psutil.Process(os.getpid()),
                         proc=SimpleNamespace(pid=os.getpid()))


@pytest.mark.parametrize("workers", [0, 1])
def test_loadgen_fetch_against_kafka_net_gets_every_answer(workers):
    with running_server() as server:
        fill(server.bound_port(), TOPIC, 2)
        result = run_load(LoadSpec(port=server.bound_port(), connections=2, depth=3,
                                   requests=20, workers=workers, timeout=60, topic=TOPIC,
                                   partitions=2))
    assert result.mismatches == 0 and result.errors == 0
    assert result.unanswered == 0 and result.disconnects == 0
    assert result.sent == result.received == result.requests == 40
    assert result.sampled >= 2          # each connection's first answer decoded in full
    assert result.ok


@pytest.mark.parametrize("api", ["apiversions", "metadata", "produce"])
def test_kload_against_kafka_net_gets_every_answer(api):
    kload = harness.build_kload()
    with running_server() as server:
        harness.create_topic(server.bound_port(), "bench", 1)
        run = run_kload(kload, in_process(server.bound_port()), 1,
                        ["--api", api, "--topic", "bench", "--conns", "3", "--pipeline", "2",
                         "--requests", "30"], timeout=60)
        if api == "produce":
            log = server.replica_manager.partition("bench", 0).log
            assert log.log_end_offset == 30 * 10          # kload's batches: 10 records
    assert run.ok, run.problems
    assert run.result["responses"] == run.answered == 30
    assert run.result["mismatches"] == run.result["unanswered"] == 0


def test_every_kind_of_server_starts_answers_kload_and_stops_cleanly():
    kload = harness.build_kload()
    servers = [harness.ceiling(), harness.handoff_floor(1, 1), harness.tansu(),
               harness.kafka_net("kafka-net 1+1", ("num.network.threads=1",
                                                   "num.io.threads=1"))]
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        with harness.serving(servers, Path(tmp), problems):
            runs = [run_kload(kload, s, 1, ["--api", "apiversions", "--conns", "2",
                                            "--requests", "10"], timeout=60)
                    for s in servers]
    assert [r.problems for r in runs] == [[]] * len(servers)
    assert [r.answered for r in runs] == [10] * len(servers)
    assert problems == []
    assert all(s.exit_code in s.clean_exits for s in servers)


def test_ab_kload_runs_kafka_net_from_the_checkout_it_is_given(capsys):
    from bench.ab_kload import main
    root = Path(__file__).resolve().parent.parent
    assert main(["--checkout", f"here={root}", "--rounds", "1", "--duration", "0.3",
                 "--warmup", "0.1"]) == 0
    out = capsys.readouterr().out
    summary = [line for line in out.splitlines() if line.startswith("here ")]
    assert len(summary) == 2 and "problems: none" in out    # both scenarios answered


def test_round_order_puts_each_server_first_once():
    servers = ["a", "b", "c"]
    orders = [harness.round_order(servers, r) for r in (1, 2, 3)]
    assert [o[0] for o in orders] == ["a", "b", "c"]
    assert all(sorted(o) == servers for o in orders)


def test_update_results_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "RESULTS.md"
    update_results(path, "a", "## A\nfirst\n")
    update_results(path, "b", "## B\nkept\n")
    path.write_text(path.read_text() + "\nwritten by hand\n")
    update_results(path, "a", "## A\nsecond\n")
    text = path.read_text()
    assert "second" in text and "first" not in text and "kept" in text
    assert "written by hand" in text
    assert text.count(begin_marker("a")) == 1 and text.count(end_marker("a")) == 1
    assert text.index(begin_marker("a")) < text.index(begin_marker("b"))


def _run(server: str, rnd: int, req_per_s: float) -> Run:
    return Run(server, rnd, {"measured": 100, "responses": 100, "req_per_s": req_per_s,
                             "p50_us": 1000.0, "p99_us": 2000.0}, 0.01, 50, 1.0)


def test_kload_targets_are_medians_of_per_round_ratios():
    res = kload_group.Results({"av16x1": [
        _run(kload_group.KN_11, 1, 80), _run(kload_group.FLOOR_11, 1, 100),
        _run(kload_group.KN_11, 2, 90), _run(kload_group.FLOOR_11, 2, 100),
        _run(kload_group.KN_11, 3, 50), _run(kload_group.FLOOR_11, 3, 25)]})
    ratios = res.round_ratios("av16x1", kload_group.KN_11, kload_group.FLOOR_11)
    assert ratios == [0.8, 0.9, 2.0]
    context = {"date": "d", "command": "c", "load_start": 0.0, "load_end": 0.0,
               "rounds": 3, "duration": 3, "warmup": 1, "servers": {},
               "machine": {"cpus": "x", "os": "y", "python": "z"}}
    text = kload_group.render(res, context)
    row = next(line for line in text.splitlines()
               if line.startswith(f"| {kload_group.KN_11} / {kload_group.FLOOR_11} | "
                                  "ApiVersions v0, 16"))
    assert "**0.90**" in row and "0.80, 0.90, 2.00" in row and "not met" not in row
    assert "CPU µs per request" in text and "100 / 2.0" in text


def _spark_run(kind: str, master: str, job_s: float, cpu_s: float) -> dict:
    return {"input": kind, "master": master, "label": kind, "ok": True, "load": 1.0,
            "job_s": job_s, "frames_per_s": 1000 / job_s, "job_cpu_s": cpu_s,
            "cpu_us_per_frame": cpu_s * 1000, "report_totals": {"frames": 1000},
            "job_cpu_by_kind_s": {"jvm": 0.0, "python_workers": 0.0, "driver": cpu_s}}


def test_spark_targets_are_medians_of_ratios_taken_within_each_round():
    from bench import spark_group
    rounds = [[_spark_run("pcap", "tshark", 1.0, 1.0),
               _spark_run("kncap", "in-process", job, cpu)]
              for job, cpu in ((2.0, 0.5), (1.0, 2.0), (4.0, 0.75))]
    ratios = [spark_group._round_ratios(runs)[("kncap", "tshark")] for runs in rounds]
    assert ratios == [0.5, 2.0, 0.75]
    text = "\n".join(spark_group._ratios(rounds))
    assert "in one process 0.75x (rounds 0.50-2.00x) tshark's CPU per frame" in text
    row_runs = [runs[1] for runs in rounds]
    assert spark_group.median_run(row_runs) is rounds[0][1]        # job 2.0 of 1, 2, 4


def test_two_in_process_jobs_at_once_make_one_row_and_local_2_reads_beside_it():
    from bench import spark_group
    copies = [_spark_run("kncap", "in-process", 2.0, 2.0),
              _spark_run("kncap", "in-process", 2.5, 2.4)]
    pair = spark_group._at_once(copies)
    assert (pair["copies"], pair["job_s"], pair["job_cpu_s"]) == (2, 2.5, 4.4)
    assert pair["frames_per_s"] == 2000 / 2.5 and pair["cpu_us_per_frame"] == 4.4 / 2000 * 1e6
    pair.update(master=spark_group.TWO_AT_ONCE)
    runs = [_spark_run("kncap", "in-process", 2.0, 2.0), pair,
            _spark_run("kncap", "local[2]", 1.5625, 3.0)]
    found = spark_group._round_ratios(runs)
    assert found[("kncap", "ceiling")] == pytest.approx(1.6)    # 800 frames/s / 500
    assert found[("kncap", "share")] == pytest.approx(0.8)      # 640 / 800
    assert found[("kncap", "rate2")] == pytest.approx(1.28)
    copies[1]["report_totals"] = {"frames": 999}
    assert not spark_group._at_once(copies)["ok"]


def test_compare_checkouts_runs_each_checkout_from_its_own_directory_and_sums_up():
    from bench.compare_checkouts import kafka_net_from, summary
    server = kafka_net_from("base 1+1", Path("/some/checkout"), ("num.io.threads=1",))
    assert server.argv[:2] == ["sh", "-c"]
    assert server.argv[2].startswith("cd /some/checkout && exec ")
    assert server.argv[2].endswith("-m kafka_net serve --override listeners=PLAINTEXT://"
                                   "127.0.0.1:0 --override num.io.threads=1")
    runs = {("produce8x4", "Tansu"): [_run("Tansu", 1, 100), _run("Tansu", 2, 200)],
            ("produce8x4", "this 1+1"): [_run("this 1+1", 1, 150), _run("this 1+1", 2, 100)]}
    lines = summary(runs, "produce8x4", ["Tansu", "this 1+1"])
    assert lines[0] == "== produce8x4"
    assert "x Tansu 1.00" in lines[1] and "x Tansu 1.00" in lines[2]   # median of 1.5, 0.5
    assert "req/s       125" in lines[2]


def test_protections_quotas_are_set_on_every_entity_and_recorded():
    with running_server() as server:
        assert not server.quotas.enabled
        protections_group.set_default_quotas(server.bound_port())
        assert server.quotas.enabled
        described = harness.kafka_call(server.bound_port(), 48, 1, {
            "components": [], "strict": False})
        assert described["error_code"] == 0
        got = {e["entity"][0]["entity_type"]: {v["key"]: v["value"] for v in e["values"]}
               for e in described["entries"]}
        assert got == {kind: ops for kind, ops in protections_group.QUOTAS}


def test_protections_group_runs_both_servers_and_renders_ratios(tmp_path):
    args = SimpleNamespace(rounds=1, duration=0.3, warmup=0.0)
    context = {"date": "d", "command": "c", "load_start": 0.0, "rounds": 1,
               "duration": 0.3, "warmup": 0.0,
               "machine": {"cpus": "x", "os": "y", "python": "z"}}
    problems: list[str] = []
    section = protections_group.run(args, context, tmp_path, problems)
    assert problems == []
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and protections_group.ON in line]
    assert len(rows) == len(protections_group.SCENARIOS)
    assert all("**" in row for row in rows)          # both ratios present in every row
    assert "max.connections=10000" in section and "request_percentage=100000" in section


def test_zero_copy_group_serves_every_fetch_from_both_logs(tmp_path):
    args = SimpleNamespace(rounds=1, duration=0.3, warmup=0.0)
    context = {"date": "d", "command": "c", "load_start": 0.0, "rounds": 1,
               "duration": 0.3, "warmup": 0.0,
               "machine": {"cpus": "x", "os": "y", "python": "z"}}
    problems: list[str] = []
    section = zero_copy_group.run(args, context, tmp_path, problems)
    assert problems == []   # every kload answer right, no warning logged, clean stops
    rows = [line for line in section.splitlines() if line.startswith("| Fetch")]
    assert len(rows) == 2 * len(zero_copy_group.SCENARIOS)
    assert list((tmp_path / "log-dirs").iterdir())   # the disk side wrote its log


def test_durable_group_runs_both_stores_at_both_thread_counts_and_renders_ratios(tmp_path):
    args = SimpleNamespace(rounds=1, duration=0.3, warmup=0.0)
    context = {"date": "d", "command": "c", "load_start": 0.0, "rounds": 1,
               "duration": 0.3, "warmup": 0.0,
               "machine": {"cpus": "x", "os": "y", "python": "z"}}
    problems: list[str] = []
    section = durable_group.run(args, context, tmp_path, problems)
    assert problems == []
    disk_rows = [line for line in section.splitlines()
                 if line.startswith("| ") and "| disk |" in line]
    assert len(disk_rows) == len(durable_group.THREADS) * len(durable_group.SCENARIOS)
    assert all("**" in row for row in disk_rows)     # both ratios present in every row
    # The disk servers really wrote segment files under their log.dirs.
    for threads in durable_group.THREADS:
        logs = list((tmp_path / durable_group.GROUP / f"log-dirs-{threads}").glob(
            f"{durable_group.TOPIC}-0/*.log"))
        assert logs and all(p.stat().st_size > 0 for p in logs)


def test_startup_group_times_every_server_and_a_base_revision(tmp_path):
    args = SimpleNamespace(starts=1, startup_base="HEAD")
    context = {"date": "d", "command": "c", "load_start": 0.0,
               "machine": {"cpus": "x", "os": "y", "python": "z"}}
    problems: list[str] = []
    section = startup.run(args, context, tmp_path, problems)
    assert problems == []
    rows = [line for line in section.splitlines() if line.startswith("| ") and "**" in line]
    assert [row.split(" | ")[0] for row in rows] == [
        "| kafka-net --dev", "| kafka-net durable", "| kafka-net --dev, console script",
        "| HEAD: kafka-net --dev", "| HEAD: kafka-net durable", "| Tansu"]
    assert "kafka-net durable: this checkout / HEAD: time to listen" in section
    # Each durable start (untimed first, then timed) formatted a new, empty log dir.
    assert len(list((tmp_path / startup.GROUP).glob("log-dirs-*/meta.properties"))) == 4


@pytest.mark.parametrize("store", ["memory", "disk"])
def test_durable_profile_counts_both_threads_per_request(store, capsys):
    from bench.durable_profile import main
    assert main(["--store", store, "--requests", "200", "--top", "60"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"log.store={store}, 200 Produce requests, kafka-net 1+1")
    assert "Processor poll turns per request" in out and "handler socket sends" in out
    # the store asked for is the one that appended
    assert ("unified_log.py" in out) == (store == "disk")
    assert ("memory.py" in out) == (store == "memory")


@pytest.mark.parametrize("store", ["memory", "disk"])
@pytest.mark.parametrize("api", ["apiversions", "metadata", "produce", "fetch"])
def test_request_costs_times_every_step(api, store):
    from bench.request_costs import costs
    result = costs(api, calls=20, store=store)
    assert list(result) == ["parse_request", "Request()", "handler", "encode_response",
                            "metrics.record", "KafkaApis.handle"]
    assert all(us > 0 for us in result.values())


def test_request_timing_cost_times_every_piece(capsys):
    from bench.request_timing_cost import main
    assert main(["--requests", "50", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" median")[0].strip() for line in lines] == [
        "RequestTimings.update, sub-ms request", "RequestTimings.update, 7.5 ms request",
        "RequestChannel.send_response", "the same without the timing lines"]


def test_hot_path_serves_every_request_once_per_iteration(capsys):
    from bench.hot_path import HotPath, calls_per_request, main
    path = HotPath(3)
    try:
        counts = calls_per_request(path, iterations=4)
    finally:
        path.close()
    assert path.response_size > 4                      # each client read a whole answer
    for step in ("Processor._request_from", "KafkaApis.handle", "Selector.send"):
        assert counts[step] == 1.0, step               # once per request, no more
    assert main(["--connections", "2", "--iterations", "1"]) == 0
    assert "Python and" in capsys.readouterr().out


def test_confluent_kafka_produces_to_and_consumes_from_kafka_net():
    pytest.importorskip("confluent_kafka")
    from bench.clients import consume, produce
    with running_server() as server:
        harness.create_topic(server.bound_port(), TOPIC, 2)
        bootstrap = f"127.0.0.1:{server.bound_port()}"
        produced = produce(bootstrap, TOPIC, 500, 100, timeout=60)
        assert produced["ok"] and produced["delivered"] == 500, produced
        consumed = consume(bootstrap, TOPIC, 500, 100, timeout=60)
        assert consumed["ok"] and consumed["received"] == 500, consumed


def test_capture_generator_writes_readable_pairs(tmp_path):
    written = generate(str(tmp_path), frames=400, connections=7, processors=2,
                       segment_bytes=16 * 1024)
    assert written["frames"] == 400 and written["pairs"] == 200 and written["files"] > 2
    assert sum(written["per_api"].values()) == 200
    assert read_capture(tmp_path) == {**read_capture(tmp_path), "requests": 200,
                                      "responses": 200, "problems": []}
    by_connection: dict[str, list] = defaultdict(list)
    for path in sorted(tmp_path.iterdir()):       # names sort in write order per processor
        result = decode_segment(path.read_bytes())
        assert result.problems == [] and result.segment is not None
        for rec in result.records:
            by_connection[rec.connection_id].append(rec)
    assert len(by_connection) == 7
    for records in by_connection.values():
        frames = [Frame(i, r.direction, r.timestamp_ns, r.frame, r.frame_size)
                  for i, r in enumerate(records)]
        report = pair_connection(frames)
        assert report.violations == [] and report.in_flight_at_end == 0
        assert len(report.pairs) == sum(1 for r in records if r.direction == REQUEST)
        assert all(p.error_codes == () for p in report.pairs)
    assert all(os.path.getsize(p) <= 16 * 1024 for p in written["paths"])


def test_pcap_generator_writes_the_same_conversation_as_tcp(tmp_path):
    """spark_bench --input pcap: rotated pcap files whose flows span files; read
    back as the job does (file_units, frames_of_flow, check_connection)."""
    from kafka_net.spark_jobs import transforms
    written = generate_pcap(str(tmp_path), frames=400, connections=7, file_bytes=16 * 1024)
    assert written["frames"] == 400 and written["pairs"] == 200 and written["files"] > 2
    flows: dict = defaultdict(list)
    for path in written["paths"]:
        for unit in transforms.file_units(path, open(path, "rb").read()):
            assert unit[0] == "packet", unit
            flows[unit[1]].append(unit[2])
    assert len(flows) == 7
    pairs = frames = 0
    for packets in flows.values():
        units = transforms.frames_of_flow(packets)
        rows = [u[1] for u in units if u[0] == "frame"]
        assert [u for u in units if u[0] != "frame"] == []
        result = transforms.check_connection(rows[0]["connection"], rows)
        assert result["violations"] == [] and result["connection"]["in_flight_at_end"] == 0
        assert result["connection"]["frames_checked"] == result["connection"]["frames"]
        pairs += len(result["pairs"])
        frames += result["connection"]["frames"]
    assert (pairs, frames) == (200, 400)


def test_record_batch_checks_times_both_paths_on_a_capture(tmp_path, capsys):
    """The batches of a generated .kncap conversation, readable and compiled first."""
    from bench.record_batch_checks import main
    generate(str(tmp_path), frames=600, connections=5, processors=1)
    assert main([str(tmp_path), "600"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("600 frames: ") and "Produce records fields" in first
    assert "'magic 2'" in first
    assert second.startswith("CPU µs per batch: readable ") and "compiled first" in second


def test_daemon_start_times_the_worker_daemon_to_its_port(capsys):
    """bench/daemon_start.py starts the job's worker daemon as an executor does
    and times it until it is ready (it raises if the daemon exits first)."""
    from bench import daemon_start
    assert daemon_start.main(["--runs", "2"]) == 0
    assert "worker daemon ready: median" in capsys.readouterr().out
