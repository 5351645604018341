"""The conformance report (kafka_net.spark_jobs.report): report.json, report.html, junit.xml.

Pure Python, no Spark: a summary is built from hand-made aggregate rows.
report.json is schema-versioned and lists every check (zeros included); the
HTML opens offline (nothing fetched from the network, no scripts) and holds
three plots; the JUnit XML has one test case per check plus one for the
inputs, failing exactly where there are violations.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from xml.etree import ElementTree as ET

import pytest

from kafka_net.capture.pairing import CHECKS
from kafka_net.spark_jobs import report

SVG_NS = "http://www.w3.org/2000/svg"


def connection(name, violations=0, **kw):
    base = {"connection": name, "source": "kafka-net", "frames": 10, "requests": 5,
            "responses": 5, "pairs": 5, "violations": violations, "in_flight_at_end": 0,
            "acks0_requests": 0, "unverifiable_from": None, "unverifiable_requests": 0,
            "frames_checked": 10, "frames_header_only": 0, "frames_unverifiable": 0,
            "frames_not_kafka": 0, "header_only_reasons": {}, "gaps": []}
    base.update(kw)
    return base


def violation(conn, check, position, corr, api=(3, 12, "a")):
    """A violation row as kafka_net.capture.findings makes it (a pcap's)."""
    return {"connection": conn, "check": check, "position": position, "direction": "response",
            "file": "/caps/b.pcap", "frame_number": 100 + position, "file_offset": -1,
            "timestamp_ns": 1_700_000_000_000_000_001,
            "timestamp": "2023-11-14T22:13:20.000000001Z", "api_key": api[0],
            "api_name": "Metadata", "api_version": api[1], "client_id": api[2],
            "correlation_id": corr, "correlation_ids": [corr], "request_position": 0,
            "request_frame_number": 3, "detail": f"{check} at {position}", "frame_size": 8,
            "hex_head": "0000: 00 00 00 08 00 00 00 07", "fault_offset": -1, "hex_fault": ""}


def sample_summary(violations=None, unreadable=None) -> dict:
    violations = [violation("run/c1", "correlation_mismatch", 4, 7),
                  violation("run/c1", "duplicate_response", 9, 8),
                  violation("run/<c2>", "duplicate_response", 3, 2)] \
        if violations is None else violations
    per_conn = {}
    for v in violations:
        per_conn[v["connection"]] = per_conn.get(v["connection"], 0) + 1
    conns = [connection(c, n) for c, n in per_conn.items()] + [
        connection("run/clean"), connection("pcap-conn", source="pcap", unverifiable_from=6)]
    summary = report.build_summary(
        per_api=[{"api_key": 3, "api_name": "Metadata", "api_version": 12, "client_id": "a",
                  "requests": 7, "responses": 7, "errors": 1},
                 {"api_key": 18, "api_name": "ApiVersions", "api_version": 3,
                  "client_id": "a", "requests": 2, "responses": 2, "errors": 0}],
        latency=[{"api_key": 3, "api_name": "Metadata", "count": 7,
                  "pct": [1_500_000.0, 9_000_000.0, 9_900_000.0], "max_ns": 10_000_000},
                 {"api_key": 18, "api_name": "ApiVersions", "count": 2,
                  "pct": [200_000.0, 300_000.0, 300_000.0], "max_ns": 300_000}],
        histogram=[{"api_name": "Metadata", "bucket": 6, "count": 5},
                   {"api_name": "Metadata", "bucket": 7, "count": 2},
                   {"api_name": "ApiVersions", "bucket": 5, "count": 2}],
        timeline=[{"second": 1000, "count": 4}, {"second": 1001, "count": 3},
                  {"second": 1003, "count": 2}],
        violations=violations, connections=conns, frames=40)
    summary["inputs"] = ["/caps/a.kncap", "/caps/b.pcap"]
    summary["unreadable"] = unreadable or []
    return summary


@pytest.fixture
def written(tmp_path):
    summary = sample_summary(unreadable=[{"file": "/caps/junk", "problem": "garbage <here>"}])
    report.write_all(summary, str(tmp_path))
    return tmp_path, summary


# -- report.json ---------------------------------------------------------------------------

def test_json_has_schema_version_and_every_check(written):
    out, _ = written
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["schema_version"] == 4 == report.SCHEMA_VERSION
    assert list(data["checks"]) == list(CHECKS)
    counts = {c: data["checks"][c]["violations"] for c in CHECKS}
    assert counts == {**{c: 0 for c in CHECKS}, "correlation_mismatch": 1,
                      "duplicate_response": 2}
    # earliest first (the same time here: then by connection and position)
    examples = data["checks"]["duplicate_response"]["examples"]
    assert [(e["connection"], e["position"]) for e in examples] == [("run/<c2>", 3),
                                                                    ("run/c1", 9)]
    assert examples[1] == {**violation("run/c1", "duplicate_response", 9, 8),
                           "party": "broker", "severity": "violation", "waived": False,
                           "waiver": ""}
    assert data["unreadable"] == [{"file": "/caps/junk", "problem": "garbage <here>"}]
    for key in ("generated_at", "job", "inputs", "totals", "per_api", "latency",
                "latency_histogram", "timeline", "connections", "coverage", "verdict"):
        assert key in data, key


def test_json_totals(written):
    _, summary = written
    assert summary["totals"] == {
        "frames": 40, "connections": 4, "requests": 20, "pairs": 20, "violations": 3,
        "in_flight_at_end": 0, "unverifiable_connections": 1, "acks0_requests": 0,
        "subject_findings": 3}


def test_json_latency_is_in_milliseconds(written):
    _, summary = written
    metadata = summary["latency"][0]
    assert metadata == {"api_key": 3, "api_name": "Metadata", "count": 7, "p50_ms": 1.5,
                        "p99_ms": 9.0, "p999_ms": 9.9, "max_ms": 10.0}


def test_examples_are_capped_but_the_count_is_not():
    many = [violation("c", "unanswered_request", i, i) for i in range(50)]
    summary = sample_summary(violations=many)
    entry = summary["checks"]["unanswered_request"]
    assert entry["violations"] == 50
    assert len(entry["examples"]) == report.EXAMPLES_PER_CHECK


def test_empty_summary_says_what_could_not_be_read(tmp_path):
    summary = report.empty_summary([str(tmp_path / "empty")], "no capture files found")
    report.write_all(summary, str(tmp_path / "out"))
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert data["unreadable"] == [{"file": str(tmp_path / "empty"),
                                   "problem": "no capture files found"}]
    assert data["totals"]["frames"] == 0
    assert all(data["checks"][c]["violations"] == 0 for c in CHECKS)
    assert "NO DATA" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


# -- report.html ----------------------------------------------------------------------------

class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.svg_titles: list[str] = []
        self._in_svg = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "svg":
            self._in_svg += 1
        elif tag == "title" and self._in_svg:
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self._in_svg -= 1
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.svg_titles.append(data)


def scan(html: str) -> _Scan:
    s = _Scan()
    s.feed(html)
    return s


def test_html_is_self_contained(written):
    out, _ = written
    html = (out / "report.html").read_text(encoding="utf-8")
    # The SVG namespace is a name, never fetched; nothing else may point online.
    assert "http://" not in html.replace(SVG_NS, "")
    assert "https://" not in html
    s = scan(html)
    tags = {t for t, _ in s.tags}
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    for tag, attrs in s.tags:
        for name in ("src", "href", "xlink:href"):
            # in-page anchors only (the violation pages' index)
            assert name not in attrs or attrs[name].startswith("#"), (tag, attrs)
    assert "@import" not in html and "url(" not in html


def test_html_has_the_three_plots(written):
    out, _ = written
    s = scan((out / "report.html").read_text(encoding="utf-8"))
    assert s.svg_titles == ["latency distribution per API", "requests per second",
                            "violations per connection"]
    assert sum(1 for t, _ in s.tags if t == "svg") == 3
    # Bars: one per histogram bucket, one per connection with violations.
    assert sum(1 for t, _ in s.tags if t == "rect") == 3 + 2
    assert sum(1 for t, _ in s.tags if t == "polyline") == 1


def test_html_escapes_what_came_from_captures(written):
    out, _ = written
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<c2>" not in html and "&lt;c2&gt;" in html
    assert "garbage <here>" not in html and "garbage &lt;here&gt;" in html


def test_html_verdicts(tmp_path):
    fail = report.render_html(sample_summary())
    clean = report.render_html(sample_summary(violations=[]))
    assert "FAIL: 3 broker finding(s); of 40 frames" in fail
    assert "PASS: 0 broker finding(s); of 20 frames 100.00% checked" in clean
    # A clean run still has its latency and timeline plots; no violations plot.
    titles = scan(clean).svg_titles
    assert titles == ["latency distribution per API", "requests per second"]
    assert "No connection has a violation" in clean


def test_html_lists_unreadable_inputs(written):
    out, _ = written
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "What could not be read" in html and "/caps/junk" in html


# -- junit.xml ------------------------------------------------------------------------------

def junit_cases(path):
    suite = ET.parse(path).getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    return suite, cases


def test_junit_has_one_case_per_check_and_fails_exactly_the_violated(written):
    out, summary = written
    suite, cases = junit_cases(out / "junit.xml")
    assert suite.tag == "testsuite"
    assert set(cases) == set(CHECKS) | {"all captures readable",
                                        "coverage at least the minimum"}
    assert int(suite.get("tests")) == len(CHECKS) + 2 == len(list(suite.iter("testcase")))
    failed = {name for name, c in cases.items() if c.find("failure") is not None}
    assert failed == {"correlation_mismatch", "duplicate_response", "all captures readable"}
    assert int(suite.get("failures")) == 3
    text = cases["duplicate_response"].find("failure").text
    assert "/caps/b.pcap frame 109 2023-11-14T22:13:20.000000001Z run/c1 Metadata v12 " \
        "client a correlation id(s) 8" in text
    assert "/caps/junk: garbage <here>" in cases["all captures readable"].find("failure").text


def test_junit_all_pass_when_clean(tmp_path):
    report.write_all(sample_summary(violations=[]), str(tmp_path))
    suite, cases = junit_cases(tmp_path / "junit.xml")
    assert all(c.find("failure") is None for c in cases.values())
    assert suite.get("failures") == "0"


def incomplete_summary(min_coverage=None) -> dict:
    """No violation, but 3 of 20 frames unverifiable and 1 header only."""
    summary = sample_summary(violations=[])
    lossy = summary["connections"][-1]
    lossy.update(frames_checked=6, frames_unverifiable=3, frames_header_only=1,
                 header_only_reasons={"unknown API (no schema)": 1}, unverifiable_requests=2,
                 gaps=[[1, 100, 200]])
    summary["coverage"] = report.coverage(summary["connections"])
    report.verdict(summary, min_coverage)
    return summary


def test_coverage_shares_and_the_incomplete_verdict_agree_everywhere(tmp_path):
    summary = incomplete_summary()
    cov = summary["coverage"]
    assert (cov["frames"], cov["checked"], cov["header_only"], cov["unverifiable"]) == (
        20, 16, 1, 3)
    assert cov["shares"]["checked"] == cov["coverage"] == 0.8
    assert cov["header_only_reasons"] == {"unknown API (no schema)": 1}
    assert summary["verdict"] == "INCOMPLETE"
    report.write_all(summary, str(tmp_path))
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "INCOMPLETE" and data["coverage"] == cov
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    line = ("INCOMPLETE: 0 broker finding(s); of 20 frames 80.00% checked, 5.00% header only, "
            "15.00% unverifiable, 0.00% not Kafka (below the required 100.00%)")
    assert line in html and "class='verdict incomplete'" in html
    assert "header only: unknown API (no schema)" in html
    suite, cases = junit_cases(tmp_path / "junit.xml")
    failure = cases["coverage at least the minimum"].find("failure")
    assert failure.get("message") == line and suite.get("failures") == "1"
    # A lower bar passes it.
    assert incomplete_summary(min_coverage=0.8)["verdict"] == "PASS"
    assert incomplete_summary(min_coverage=0.81)["verdict"] == "INCOMPLETE"


def test_json_is_plain_json(written):
    """No NaN/Infinity or other non-standard tokens sneak in."""
    out, _ = written
    text = (out / "report.json").read_text(encoding="utf-8")
    assert not re.search(r"\b(NaN|Infinity)\b", text)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))


# -- every violation, paged; the matrix -------------------------------------------------

def test_many_violations_all_in_json_and_paged_in_html(tmp_path):
    from kafka_net.spark_jobs import report_detail
    many = [violation(f"run/c{i % 7}", "duplicate_response", i, i) for i in range(1234)]
    summary = sample_summary(violations=many)
    report.write_all(summary, str(tmp_path))
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["violations"] == many        # complete, in order, every field
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    pages = -(-1234 // report_detail.PAGE_SIZE)
    for n in range(1, pages + 1):
        assert f"href='#violations-page-{n}'" in html and f"id='violations-page-{n}'" in html
    assert f"id='violations-page-{pages + 1}'" not in html
    # each violation once, with where to find it
    rows = re.findall(r"<tr id='v(\d+)'>", html)
    assert [int(r) for r in rows] == list(range(1, 1235))
    assert "/caps/b.pcap frame 1333" in html     # the last one (position 1233)
    assert html.count("<details") == pages and html.count(" open>") == 1


def test_console_lines_show_the_first_n_and_say_where_the_rest_are():
    from kafka_net.spark_jobs import report_detail
    many = [violation("run/c1", "acks0_answered", i, i) for i in range(30)]
    lines = report_detail.console_lines(many, 5)
    assert len(lines) == 6 and lines[0].startswith("1. acks0_answered: /caps/b.pcap frame 100 ")
    assert "25 more" in lines[-1]


def test_kncap_violations_give_the_record_offset():
    from kafka_net.spark_jobs import report_detail
    v = {**violation("r/c", "trailing_bytes", 1, 1), "file": "/c/x.kncap", "frame_number": 0,
         "file_offset": 4242}
    assert report_detail.where(v) == "/c/x.kncap @ byte 4242"


def test_matrix_sums_cells_per_api_version_and_client(tmp_path):
    def cell(key, version, client, **kw):
        base = {"api_key": key, "api_version": version, "client_id": client,
                "client_software": "", "requests": 0, "responses": 0, "pairs": 0,
                "violations": 0, "checked": 0, "header_only": 0, "unverifiable": 0,
                "error_codes": {}}
        return {**base, **kw}
    conns = [
        connection("a", cells=[cell(3, 12, "x", requests=2, responses=2, pairs=2, checked=4,
                                    error_codes={"3": 1}),
                               cell(0, 9, "x", requests=1, responses=1, pairs=1, checked=1,
                                    header_only=1, violations=1)]),
        connection("b", cells=[cell(3, 12, "x", requests=1, responses=1, pairs=1, checked=1,
                                    unverifiable=1, error_codes={"3": 2, "5": 1})]),
    ]
    summary = report.build_summary([], [], [], [], [], conns, 20)
    assert [(m["api_name"], m["api_version"], m["client_id"], m["requests"], m["pairs"],
             m["violations"], m["coverage"], m["error_codes"]) for m in summary["matrix"]] == [
        ("Produce", 9, "x", 1, 1, 1, 0.5, {}),
        ("Metadata", 12, "x", 3, 3, 0, round(5 / 6, 6), {"3": 3, "5": 1})]
    assert all("cells" not in c for c in summary["connections"])
    html = report.render_html(summary)
    assert "<h2 id='matrix'>" in html and "83.3%" in html and "50.0%" in html


def test_a_checks_first_violation_is_the_earliest(tmp_path):
    """Violations come in connection order; the Checks table's "first violation" and
    each check's examples go by time."""
    late = dict(violation("run/a", "duplicate_response", 5, 1), timestamp_ns=9 * 10**18)
    early = dict(violation("run/b", "duplicate_response", 7, 2), timestamp_ns=10**18)
    summary = sample_summary(violations=[late, early])
    assert [v["connection"] for v in summary["violations"]] == ["run/a", "run/b"]
    assert [e["connection"] for e in summary["checks"]["duplicate_response"]["examples"]] \
        == ["run/b", "run/a"]
    html = report.render_html(summary)
    row = re.search(r"<td>duplicate_response</td>.*?</tr>", html).group(0)
    assert "frame 107" in row and "frame 105" not in row


def librdkafka_trailing(position=4, corr=3, known=True):
    """The client deviation of confluent-kafka 2.16.1 (librdkafka 2.16.0), as
    kafka_net.capture.findings makes its row."""
    return {**violation("run/ck", "trailing_bytes", position, corr, api=(3, 12, "rdkafka")),
            "direction": "request", "party": "client", "severity": "deviation",
            "client_software": "confluent-kafka-python 2.16.1-rdkafka-2.16.0",
            "known_deviation": "librdkafka-2.16.0-metadata-v12-trailing" if known else ""}


def test_a_client_deviation_never_fails_the_broker(tmp_path):
    from kafka_net.capture.attribution import Waiver
    summary = sample_summary(violations=[librdkafka_trailing()])
    report.attribute_findings(summary)
    assert report.verdict(summary) == "PASS"
    assert summary["findings"]["client"]["deviation"] == 1
    assert report.headline(summary).startswith(
        "PASS: 0 broker finding(s); client: 1 deviation(s); of ")
    # The same findings, the client under test: FAIL, until waived with the
    # catalogue's evidence as the reason.
    report.attribute_findings(summary, "client")
    assert report.verdict(summary) == "FAIL"
    waiver = Waiver.parse("trailing_bytes=confluent-kafka-python", report.CHECKS)
    report.attribute_findings(summary, "client", [waiver])
    assert report.verdict(summary) == "PASS"
    (v,) = summary["violations"]
    assert v["waived"] and v["waiver"].startswith(
        "known deviation librdkafka-2.16.0-metadata-v12-trailing: librdkafka 2.16.0")
    assert summary["waivers"] == [{"check": "trailing_bytes",
                                   "client_software": "confluent-kafka-python",
                                   "reason": "", "findings": 1}]
    report.write_all(summary, str(tmp_path))
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Known client deviations seen" in html and "01 00 00" in html
    assert "PASS: 0 client finding(s) (1 waived); of" in html
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("failures") == "0"


def test_a_waiver_the_catalogue_does_not_explain_needs_a_reason():
    from kafka_net.capture.attribution import Waiver, WaiverError
    with pytest.raises(WaiverError, match="say why"):
        Waiver.parse("acks0_answered", report.CHECKS)
    with pytest.raises(WaiverError, match="no check named"):
        Waiver.parse("trailing_byte", report.CHECKS)
    # A trailing_bytes finding the catalogue does not explain (another client, other
    # bytes) stays unwaived without a reason, and is waived with one.
    summary = sample_summary(violations=[librdkafka_trailing(known=False)])
    report.attribute_findings(summary, "client", [Waiver.parse("trailing_bytes", CHECKS)])
    assert report.verdict(summary) == "FAIL" and not summary["violations"][0]["waived"]
    reason = Waiver.parse("trailing_bytes=confluent:fixed in the next release, KAFKA-0",
                          CHECKS)
    report.attribute_findings(summary, "client", [reason])
    assert report.verdict(summary) == "PASS"
    assert summary["violations"][0]["waiver"] == \
        "waived by the user: fixed in the next release, KAFKA-0"


def test_the_broker_fails_on_its_own_findings_only(tmp_path):
    rows = [librdkafka_trailing(), violation("run/c1", "duplicate_response", 9, 8)]
    summary = sample_summary(violations=rows)
    report.attribute_findings(summary)
    assert report.verdict(summary) == "FAIL"
    assert report.headline(summary).startswith(
        "FAIL: 1 broker finding(s); client: 1 deviation(s); of ")
    suite = report.render_junit(summary)
    failed = {c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None}
    assert failed == {"duplicate_response"}
    (trailing,) = [c for c in suite.iter("testcase") if c.get("name") == "trailing_bytes"]
    assert "[client deviation, known: " in trailing.find("system-out").text


def test_error_codes_show_as_names():
    from kafka_net.spark_jobs import report_detail
    cells = [{"api_key": 3, "api_version": 12, "client_id": "a", "client_software": "",
              "requests": 2, "responses": 2, "pairs": 2, "violations": 0, "checked": 4,
              "header_only": 0, "unverifiable": 0, "error_codes": {"3": 1, "35": 1}}]
    (row,) = report_detail.matrix([{"cells": cells}])
    assert row["error_names"] == {"UNKNOWN_TOPIC_OR_PARTITION (3)": 1,
                                  "UNSUPPORTED_VERSION (35)": 1}
    html = report_detail.matrix_html([row])
    assert "UNKNOWN_TOPIC_OR_PARTITION (3): 1" in html and "UNSUPPORTED_VERSION (35): 1" in html


def test_the_violations_table_fits_a_1400_px_screen():
    """Fixed layout at the page's width (80em + margins: 1344 px at 16 px), cells
    wrapping their text, the table scrolling inside its own box if need be."""
    html = report.render_html(sample_summary())
    css = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    max_width = float(re.search(r"body\{[^}]*max-width:([\d.]+)em", css).group(1))
    margin = float(re.search(r"body\{[^}]*margin:([\d.]+)em", css).group(1))
    assert (max_width + 2 * margin) * 16 <= 1400
    assert "table.violations{table-layout:fixed;width:100%" in css
    assert "overflow-wrap:anywhere" in css and "white-space:pre-wrap" in css
    fixed = sum(float(w) for w in re.findall(r"col\.\w+\{width:([\d.]+)em\}", css))
    assert fixed < max_width - 20      # the detail column keeps 20em (hex at .75em)
    assert "<div class='scroll'><table class='violations'>" in html
    assert "table:not(.violations){display:block;overflow-x:auto;max-width:100%}" in css
