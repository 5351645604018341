"""``kafka-net conformance --compare A B`` (spark_jobs/compare.py) and where the
report locates violations, on pcaps built here and run through the job's own row
functions (kafka_net.spark_jobs.transforms) and report builder, without Spark: the job
wires exactly these (tests/spark/test_conformance_job.py runs it whole)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from kafka_net.spark_jobs import compare, report, transforms
from kafka_net.spark_jobs.schemas import VIOLATION_SCHEMA
from tests.capture.test_decode import pcap_bytes, tshark_frames, wire_of
from kafka_net.protocol import ApiKey
from tests.capture.test_pairing import payload, resp

# Broker A answers the acks=0 Produce (q4), as a broker must not; B does not.
# A also answers the Heartbeat (q9) with an error B does not give.
NAMES_B = ["q1", "r1", "q2", "r2", "q4", "q5", "r5", "q9", "r9"]
NAMES_A = ["q1", "r1", "q2", "r2", "q4", "r4", "q5", "r5", "q9", "r9"]
HEARTBEAT_ERROR = {"r9": resp(ApiKey.HEARTBEAT, 4, 9, {"error_code": 27})}  # REBALANCE_IN_PROGRESS


def summary_of(path: str, data: bytes) -> dict:
    """The job's stages in plain Python: units -> flows -> connections -> summary."""
    units = transforms.file_units(path, data)
    flows: dict = {}
    for u in units:
        if u[0] == "packet":
            flows.setdefault(u[1], []).append(u[2])
    rows = [u[1] for flow in flows.values() for u in transforms.frames_of_flow(flow)
            if u[0] == "frame"]
    by_conn: dict = {}
    for r in rows:
        by_conn.setdefault(r["connection"], []).append(r)
    checked = [transforms.check_connection(c, rs) for c, rs in by_conn.items()]
    violations = [v for c in checked for v in c["violations"]]
    summary = report.build_summary([], [], [], [], violations, [c["connection"] for c in checked],
                                   sum(1 for r in rows if r["marker"] is None))
    summary["inputs"] = [path]
    report.verdict(summary)
    return summary


def write_pair(tmp_path) -> tuple[str, str]:
    paths = []
    for name, names, extra in (("a", NAMES_A, HEARTBEAT_ERROR), ("b", NAMES_B, None)):
        cap = tmp_path / f"{name}.pcap"
        cap.write_bytes(pcap_bytes(wire_of(names, extra=extra)))
        out = tmp_path / f"out-{name}"
        report.write_all(summary_of(str(cap), cap.read_bytes()), str(out))
        paths.append(str(out))
    return paths[0], paths[1]


def test_violations_are_located_as_wireshark_shows_them(tmp_path):
    cap = tmp_path / "a.pcap"
    cap.write_bytes(pcap_bytes(wire_of(NAMES_A, extra=HEARTBEAT_ERROR)))
    summary = summary_of(str(cap), cap.read_bytes())
    (v,) = summary["violations"]
    assert v["check"] == "acks0_answered" and v["direction"] == "response"
    # The Parquet table's columns, then the waiver the report applied (the job's driver)
    assert list(v) == VIOLATION_SCHEMA.fieldNames() + ["waived", "waiver"]
    assert (v["party"], v["severity"], v["waived"]) == ("broker", "violation", False)
    wireshark = dict((corr, n) for n, corr in reversed(tshark_frames(cap)))  # first per id
    responses = [n for n, corr in tshark_frames(cap) if corr == 4]
    assert v["file"] == str(cap) and v["frame_number"] == responses[-1]
    assert v["request_frame_number"] == wireshark[4]
    assert (v["api_name"], v["api_version"], v["client_id"]) == ("Produce", 9, "tester")
    assert v["correlation_ids"] == [4] and v["timestamp"].startswith("2023-11-14T22:13:20.")
    r4 = payload("r4")
    assert v["hex_head"].startswith("0000: " + (len(r4).to_bytes(4, "big") + r4[:12]).hex(" "))
    # the matrix: Produce v9 from client "tester": 2 requests, 2 responses, 1 pair
    (produce,) = [m for m in summary["matrix"] if m["api_name"] == "Produce"]
    assert (produce["requests"], produce["responses"], produce["pairs"],
            produce["violations"]) == (2, 2, 1, 1)
    assert summary["versions_served"]["3"] == [[0, 12]]     # from the ApiVersions answer


def test_compare_lists_the_differences_in_kind(tmp_path):
    a, b = write_pair(tmp_path)
    result = compare.compare(*(json.load(open(os.path.join(d, "report.json"))) for d in (a, b)))
    kinds = {(d["kind"], d["api"], d["version"]) for d in result["differences"]}
    assert kinds == {("answered", "Produce (acks=0)", None), ("checks", "acks0_answered", None),
                     ("answered", "Produce", 9), ("error_codes", "Heartbeat", 4)}
    (codes,) = [d for d in result["differences"] if d["kind"] == "error_codes"]
    assert (codes["a"], codes["b"]) == ([27], [])


def test_compare_cli_exit_codes_and_outputs(tmp_path):
    a, b = write_pair(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "kafka_net", "conformance", "--compare",
                               *args], capture_output=True, text=True, env=env, timeout=120)
    done = run(a, b, "--out", str(tmp_path / "cmp"))
    assert done.returncode == 1, done.stderr
    assert "answered: Produce (acks=0): A 1 | B 0" in done.stdout
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["differences"]
    assert "Differences in kind (4)" in (tmp_path / "cmp" / "compare.html").read_text()
    same = run(b, os.path.join(b, "report.json"))
    assert same.returncode == 0 and "no difference in kind" in same.stdout
    missing = run(b, str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_compare_versions_served_header_only_and_apis_seen_once():
    def cell(key, version, **kw):
        return {"api_key": key, "api_version": version, "client_id": "c",
                "client_software": "", "requests": 1, "responses": 1, "pairs": 1,
                "violations": 0, "checked": 2, "header_only": 0, "unverifiable": 0,
                "error_codes": {}, **kw}

    def summary(cells, served):
        conn = {"connection": "x", "source": "pcap", "frames": 4, "requests": 2,
                "responses": 2, "pairs": 2, "violations": 0, "in_flight_at_end": 0,
                "acks0_requests": 0, "unverifiable_from": None, "unverifiable_requests": 0,
                "frames_checked": 4, "frames_header_only": 0, "frames_unverifiable": 0,
                "frames_not_kafka": 0, "header_only_reasons": {}, "gaps": [],
                "cells": cells, "versions_served": served}
        return report.build_summary([], [], [], [], [], [conn], 4)

    a = summary([cell(3, 12), cell(1, 17, checked=1, header_only=1)],
                {"3": [0, 12], "1": [4, 17]})
    b = summary([cell(3, 12), cell(1, 17), cell(19, 7)], {"3": [0, 13], "1": [4, 17]})
    result = compare.compare(a, b)
    assert [(d["kind"], d["api"], d["version"], d["a"], d["b"])
            for d in result["differences"]] == [
        ("only_in", "CreateTopics", 7, False, True),
        ("header_only", "Fetch", 17, 1, 0),
        ("versions_served", "Metadata", None, [[0, 12]], [[0, 13]])]
    assert compare.compare(a, a)["differences"] == []
