"""Render the conformance summary: report.json, report.html, junit.xml.

Pure Python (no Spark), so it is tested directly and the HTML needs nothing
online: the plots are inline SVG drawn here, no scripts, no fonts, no CDN.

``report.json`` layout, ``schema_version`` 4::

    {schema_version, generated_at, job: {seconds},
     inputs: [path], unreadable: [{file, problem}],
     totals: {frames, connections, requests, pairs, violations (every finding),
              in_flight_at_end, unverifiable_connections, acks0_requests,
              subject_findings (those that fail the verdict)},
     subject: "broker" | "client",                  # whose findings decide the verdict
     findings: {client|broker|capture: {violation, deviation, note, waived}},
     waivers: [{check, client_software, reason, findings}],      # --waive, as applied
     attribution: {<check>: {request: [party, severity], response: [...]}},
     known_deviations: [{id, check, client_software, api_key, api_versions, trailing,
                         evidence, findings}],      # the catalogue, with matches
     checks: {<check>: {violations: n, subject_findings: n, parties: {"client deviation":
              n, ...}, examples: [its 20 earliest findings]}},  # every check
     violations: [{connection, check, position, party, severity, client_software,
                   known_deviation, direction, file, frame_number,
                   file_offset, timestamp_ns, timestamp, api_key, api_name, api_version,
                   client_id, correlation_id, correlation_ids, request_position,
                   request_frame_number, detail, frame_size, hex_head, fault_offset,
                   hex_fault, waived, waiver}],     # all of them (violations.parquet too,
                                                    # without waived and waiver)
     matrix: [{api_key, api_name, api_version, client_id, client_software, requests,
               responses, pairs, violations, checked, header_only, unverifiable,
               coverage, error_codes: {code: n}}],  # per API x version x client
     versions_served: {api_key: [[min, max], ...]},  # the brokers' ApiVersions answers
     per_api: [{api_key, api_name, api_version, client_id, requests, responses, errors}],
     latency: [{api_key, api_name, count, p50_ms, p99_ms, p999_ms, max_ms}],
     latency_histogram: [{api_name, bucket (log10 ns), count}],
     timeline: [{second, count}],
     connections: [{connection, source, frames, requests, responses, pairs,
                    violations, in_flight_at_end, acks0_requests, unverifiable_from,
                    unverifiable_requests, frames_checked, frames_header_only,
                    frames_unverifiable, frames_not_kafka, header_only_reasons, gaps,
                    versions_served}],
     coverage: {frames, checked, header_only, unverifiable, not_kafka,   # frame counts
                shares: {checked, header_only, unverifiable, not_kafka},  # of frames
                coverage (= shares.checked), min_coverage, header_only_reasons: {why: n},
                unverifiable_requests, gaps},
     verdict: "PASS" | "FAIL" | "INCOMPLETE" | "NO DATA"}

Every frame is in exactly one coverage state (kafka_net/capture/pairing_checks.py).
The verdict (:func:`verdict`): NO DATA without frames; FAIL with an unwaived
violation or deviation of the subject (kafka_net/capture/attribution.py);
INCOMPLETE when the checked share is below ``min_coverage`` (the
``--min-coverage`` option, 100% by default); else PASS.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
from xml.etree import ElementTree as ET

from kafka_net.capture.attribution import (
    BROKER, PARTIES, SEVERITIES, Waiver, apply_waivers, attribute, attribution_table,
    catalogue, counts_against)
from kafka_net.capture.pairing import CHECKS
from kafka_net.spark_jobs import report_detail as detail

SCHEMA_VERSION = 4
EXAMPLES_PER_CHECK = 20
STATES = ("checked", "header_only", "unverifiable", "not_kafka")

CHECK_TITLES = {
    "correlation_mismatch": "Each response answers the oldest outstanding request",
    "unanswered_request": "No request is skipped while later ones are answered",
    "response_without_request": "No response without a request",
    "duplicate_response": "No request is answered twice",
    "acks0_answered": "Produce with acks=0 gets no response",
    "duplicate_correlation_id_in_flight": "No correlation id is reused while in flight",
    "response_before_request": "No response precedes its request",
    "undecodable_request": "Every request decodes for its API and version",
    "undecodable_response": "Every response decodes for its request's API and version",
    "trailing_bytes": "Every body ends where its frame ends",
    "corrupt_records": "Every record batch passes Kafka's LogValidator checks",
    "unanswered_before_close": "No request is left unanswered when the client closes",
    "unadvertised_version": "Every request uses a version the broker advertised (ApiVersions)",
    "unadvertised_version_served": "No version the broker did not advertise is served",
}


def build_summary(per_api, latency, histogram, timeline, violations, connections,
                  frames) -> dict:
    for v in violations:
        if not v.get("party"):       # a row of an older job: attribute it here
            v["party"], v["severity"] = attribute(v["check"], v.get("direction", "response"))
        v.setdefault("waived", False)
        v.setdefault("waiver", "")
    checks = {c: {"violations": 0, "examples": []} for c in CHECKS}
    # Each check's examples are its earliest findings, the first of them the
    # earliest of all (the list itself stays in connection order).
    for v in sorted(violations, key=_time_order):
        entry = checks.setdefault(v["check"], {"violations": 0, "examples": []})
        entry["violations"] += 1
        if len(entry["examples"]) < EXAMPLES_PER_CHECK:
            entry["examples"].append(v)
    matrix = detail.matrix(connections)
    served = detail.versions_served(connections)
    connections = [{k: v for k, v in c.items() if k != "cells"} for c in connections]
    latency_rows = [{
        "api_key": r["api_key"], "api_name": r["api_name"], "count": r["count"],
        "p50_ms": _ms(r["pct"][0]), "p99_ms": _ms(r["pct"][1]), "p999_ms": _ms(r["pct"][2]),
        "max_ms": _ms(r["max_ns"]),
    } for r in latency]
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "job": {},
        "inputs": [], "unreadable": [],
        "totals": {
            "frames": frames, "connections": len(connections),
            "requests": sum(c["requests"] for c in connections),
            "pairs": sum(c["pairs"] for c in connections),
            "violations": len(violations),
            "in_flight_at_end": sum(c["in_flight_at_end"] for c in connections),
            "unverifiable_connections": sum(
                1 for c in connections if c["unverifiable_from"] is not None),
            "acks0_requests": sum(c["acks0_requests"] for c in connections),
        },
        "subject": BROKER,
        "findings": {},
        "waivers": [],
        "attribution": attribution_table(),
        "known_deviations": catalogue(),
        "checks": checks,
        "violations": list(violations),
        "matrix": matrix,
        "versions_served": served,
        "per_api": [{**r, "requests": int(r["requests"]), "errors": int(r["errors"]),
                     "responses": int(r["responses"])} for r in per_api],
        "latency": latency_rows,
        "latency_histogram": [{"api_name": r["api_name"], "bucket": int(r["bucket"]),
                               "count": r["count"]} for r in histogram],
        "timeline": [{"second": int(r["second"]), "count": r["count"]} for r in timeline],
        "connections": sorted(connections, key=lambda c: c["connection"]),
        "coverage": coverage(connections),
        "verdict": None,
    }


def coverage(connections: list[dict]) -> dict:
    """Frame counts per coverage state over all connections, and their shares."""
    counts = {s: sum(c.get(f"frames_{s}", 0) for c in connections) for s in STATES}
    frames = sum(counts.values())
    reasons: dict[str, int] = {}
    for c in connections:
        for why, n in (c.get("header_only_reasons") or {}).items():
            reasons[why] = reasons.get(why, 0) + n
    shares = {s: round(n / frames, 6) if frames else 0.0 for s, n in counts.items()}
    return {"frames": frames, **counts, "shares": shares, "coverage": shares["checked"],
            "min_coverage": 1.0, "header_only_reasons": reasons,
            "unverifiable_requests": sum(c.get("unverifiable_requests", 0)
                                         for c in connections),
            "gaps": sum(len(c.get("gaps") or ()) for c in connections)}


def _time_order(v: dict) -> tuple:
    return (v.get("timestamp_ns") or 0, v.get("connection") or "", v.get("position") or 0)


def attribute_findings(summary: dict, subject: str = BROKER,
                       waivers: list[Waiver] | None = None) -> None:
    """Make the verdict about ``subject`` and apply ``waivers`` (see
    kafka_net/capture/attribution.py): each violation row gets ``waived`` and
    ``waiver`` (why), and ``findings`` counts them per party and severity."""
    summary["subject"] = subject
    rows = summary.get("violations", [])
    for w in waivers or ():
        w.matched = 0
    apply_waivers(rows, list(waivers or ()))
    summary["waivers"] = [w.to_dict() for w in waivers or ()]
    _tally(summary)


def _tally(summary: dict) -> None:
    rows = summary.get("violations", [])
    findings = {p: {**dict.fromkeys(SEVERITIES, 0), "waived": 0} for p in PARTIES}
    for v in rows:
        counts = findings[v.get("party") or BROKER]
        counts[v.get("severity") or "violation"] += 1
        counts["waived"] += bool(v.get("waived"))
    summary["findings"] = findings
    subject = summary.setdefault("subject", BROKER)
    for name, entry in summary.get("checks", {}).items():
        entry["subject_findings"] = 0
        entry["parties"] = {}
    for v in rows:
        entry = summary.get("checks", {}).get(v["check"])
        if entry is not None:
            entry["subject_findings"] += counts_against(v, subject)
            key = f"{v.get('party')} {v.get('severity')}"
            entry["parties"][key] = entry["parties"].get(key, 0) + 1
    summary["totals"]["subject_findings"] = sum(1 for v in rows if counts_against(v, subject))
    used = {v.get("known_deviation") for v in rows if v.get("known_deviation")}
    for entry in summary.get("known_deviations", []):
        entry["findings"] = sum(1 for v in rows if v.get("known_deviation") == entry["id"])
    summary["known_deviations_seen"] = sorted(used)


def verdict(summary: dict, min_coverage: float | None = None) -> str:
    """Decide (and store) the verdict about the summary's subject (the broker unless
    :func:`attribute_findings` said otherwise); ``min_coverage`` in 0..1, default the
    stored one.  FAIL takes an unwaived violation or deviation of the subject; the
    other parties' findings never decide it."""
    cov = summary.setdefault("coverage", coverage(summary.get("connections", [])))
    if min_coverage is not None:
        cov["min_coverage"] = min_coverage
    _tally(summary)
    t = summary["totals"]
    if not t["frames"]:
        result = "NO DATA"
    elif t["subject_findings"]:
        result = "FAIL"
    elif cov["coverage"] < cov["min_coverage"] - 1e-9:
        result = "INCOMPLETE"
    else:
        result = "PASS"
    summary["verdict"] = result
    return result


def headline(summary: dict) -> str:
    """The one line console, HTML and JUnit share."""
    result = summary.get("verdict") or verdict(summary)
    cov = summary["coverage"]
    shares = cov["shares"]
    text = (f"{result}: {_findings_text(summary)}; of "
            f"{cov['frames']} frames {_pct(shares['checked'])} checked, "
            f"{_pct(shares['header_only'])} header only, "
            f"{_pct(shares['unverifiable'])} unverifiable, "
            f"{_pct(shares['not_kafka'])} not Kafka")
    if result == "INCOMPLETE":
        text += f" (below the required {_pct(cov['min_coverage'])})"
    return text


def _findings_text(summary: dict) -> str:
    """``2 broker finding(s) (of the subject); client: 1 deviation (1 waived)``."""
    subject = summary.get("subject", BROKER)
    findings = summary.get("findings") or {}
    own = findings.get(subject, {})
    text = f"{summary['totals'].get('subject_findings', 0)} {subject} finding(s)"
    if own.get("waived"):
        text += f" ({own['waived']} waived)"
    for party in PARTIES:
        counts = findings.get(party, {})
        if party == subject or not any(counts.get(s) for s in SEVERITIES):
            continue
        parts = ", ".join(f"{counts[s]} {s}(s)" for s in SEVERITIES if counts.get(s))
        waived = f", {counts['waived']} waived" if counts.get("waived") else ""
        text += f"; {party}: {parts}{waived}"
    return text


def _pct(share: float) -> str:
    return f"{100 * share:.2f}%"


def empty_summary(inputs, problem: str) -> dict:
    summary = build_summary([], [], [], [], [], [], 0)
    summary["inputs"] = list(inputs)
    summary["unreadable"] = [{"file": p, "problem": problem} for p in inputs]
    return summary


def _ms(ns) -> float | None:
    return None if ns is None else round(float(ns) / 1e6, 3)


def write_all(summary: dict, out: str) -> None:
    if not summary.get("verdict"):
        verdict(summary)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2, sort_keys=False)
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as fh:
        fh.write(render_html(summary))
    ET.ElementTree(render_junit(summary)).write(
        os.path.join(out, "junit.xml"), encoding="utf-8", xml_declaration=True)


# --- JUnit ------------------------------------------------------------------------------


def render_junit(summary: dict) -> ET.Element:
    """One test case per check, plus one saying whether every input was readable."""
    checks = summary["checks"]
    result = summary.get("verdict") or verdict(summary)
    cov = summary["coverage"]
    incomplete = result != "NO DATA" and cov["coverage"] < cov["min_coverage"] - 1e-9
    failures = (sum(1 for c in checks.values() if c.get("subject_findings"))
                + bool(summary["unreadable"]) + incomplete)
    suite = ET.Element("testsuite", name="kafka-net conformance",
                       tests=str(len(checks) + 2), failures=str(failures), errors="0",
                       time=str(summary.get("job", {}).get("seconds", 0)))
    case = ET.SubElement(suite, "testcase", classname="conformance.coverage",
                         name="coverage at least the minimum")
    if incomplete:
        failure = ET.SubElement(case, "failure", message=headline(summary))
        failure.text = _coverage_text(summary["coverage"])
    case = ET.SubElement(suite, "testcase", classname="conformance.inputs",
                         name="all captures readable")
    if summary["unreadable"]:
        failure = ET.SubElement(case, "failure", message=(
            f"{len(summary['unreadable'])} problem(s) reading captures"))
        failure.text = "\n".join(f"{u['file']}: {u['problem']}" for u in summary["unreadable"])
    subject = summary.get("subject", BROKER)
    for name, result in checks.items():
        case = ET.SubElement(suite, "testcase", classname="conformance.checks", name=name)
        if result.get("subject_findings"):
            failure = ET.SubElement(case, "failure", message=(
                f"{result['subject_findings']} {subject} finding(s): "
                f"{CHECK_TITLES.get(name, name)}"))
            failure.text = "\n".join(detail.console_lines(
                [v for v in result["examples"] if counts_against(v, subject)]))
        elif result["violations"]:
            # Another party's findings, or waived ones: listed, not failing.
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(detail.console_lines(result["examples"]))
    return suite


# --- HTML -------------------------------------------------------------------------------


def render_html(summary: dict) -> str:
    t = summary["totals"]
    verdict_text = headline(summary) if t["frames"] else "NO DATA"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>kafka-net conformance report</title><style>", _CSS, "</style></head><body>",
        f"<h1>Kafka conformance report</h1><p class='verdict {_cls(summary)}'>"
        f"{_e(verdict_text)}</p>",
        f"<p>Generated {_e(summary['generated_at'])} from {len(summary['inputs'])} "
        f"input file(s); schema version {summary['schema_version']}.</p>",
        _totals_table(t), _findings_table(summary), _coverage_table(summary["coverage"]),
        _checks_table(summary["checks"]), _unreadable(summary["unreadable"]),
        detail.violations_html(summary.get("violations", [])),
        detail.matrix_html(summary.get("matrix", [])),
        "<h2>Latency per API</h2>", _latency_table(summary["latency"]),
        _histogram_svg(summary["latency_histogram"]),
        "<h2>Requests over time</h2>", _timeline_svg(summary["timeline"]),
        "<h2>Violations per connection</h2>", _violations_svg(summary["connections"]),
        "<h2>Requests and errors per API, version and client</h2>",
        _per_api_table(summary["per_api"]), "</body></html>",
    ]
    return "\n".join(parts)


# The page is at most 80em + 2 x 2em margins wide (1344 px at 16 px): it fits a
# 1400 px screen.  The violations table is laid out to that width (fixed
# columns, long ids and hex wrapped inside their cells), and scrolls inside its
# own box rather than the page where a narrower window cannot hold it; so does
# any other table too wide for the page (the matrix).
_CSS = """body{font-family:sans-serif;margin:2em;max-width:80em;color:#222}
.scroll{overflow-x:auto;max-width:100%}
table:not(.violations){display:block;overflow-x:auto;max-width:100%}
table.violations{table-layout:fixed;width:100%;min-width:60em}
table.violations td{overflow-wrap:anywhere;word-break:break-word}
table.violations pre{white-space:pre-wrap;font-size:.75em}
col.n{width:2.5em}col.check{width:9em}col.where{width:9em}col.time{width:8em}
col.conn{width:9em}col.api{width:6em}col.client{width:7em}col.ids{width:5em}
tr.waived{color:#666}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left}th{background:#f2f2f2}.verdict{font-size:1.4em;font-weight:bold}
.pass{color:#17692b}.fail{color:#a31515}.nodata,.incomplete{color:#8a6d00}svg{margin:.5em 0}
td.num{text-align:right}.bad{background:#fde8e8}pre{margin:.2em 0;font-size:.8em}
table.violations td{vertical-align:top;font-size:.9em}summary{cursor:pointer;font-weight:bold}"""


def _e(value) -> str:
    return html.escape(str(value))


def _cls(summary: dict) -> str:
    return {"NO DATA": "nodata", "FAIL": "fail", "INCOMPLETE": "incomplete"}.get(
        summary.get("verdict") or verdict(summary), "pass")


def _coverage_text(cov: dict) -> str:
    lines = [f"{s.replace('_', ' ')}: {cov[s]} frames ({_pct(cov['shares'][s])})"
             for s in STATES]
    lines += [f"header only because {why}: {n}"
              for why, n in sorted(cov["header_only_reasons"].items())]
    lines.append(f"requests whose answers were lost in a capture gap: "
                 f"{cov['unverifiable_requests']}; gaps: {cov['gaps']}")
    return "\n".join(lines)


def _findings_table(summary: dict) -> str:
    """Findings per party and severity, the waivers and why, the known deviations seen."""
    subject = summary.get("subject", BROKER)
    findings = summary.get("findings") or {}
    rows = [(f"{p}{' (subject)' if p == subject else ''}",
             *(findings.get(p, {}).get(s, 0) for s in SEVERITIES),
             findings.get(p, {}).get("waived", 0)) for p in PARTIES]
    parts = [f"<h2>Findings by party</h2><p>The verdict is about the {_e(subject)}: an "
             "unwaived violation or deviation of it fails; the others' are listed.</p>",
             _table(["party", *SEVERITIES, "waived"], rows)]
    if summary.get("waivers"):
        parts.append("<h3>Waivers</h3>" + _table(
            ["check", "client software", "reason given", "findings waived"],
            [(w["check"], w["client_software"] or "(any)", w["reason"] or
              "(the known-deviation catalogue's evidence)", w["findings"])
             for w in summary["waivers"]]))
    seen = [k for k in summary.get("known_deviations", []) if k.get("findings")]
    if seen:
        parts.append("<h3>Known client deviations seen</h3>" + _table(
            ["id", "check", "findings", "evidence"],
            [(k["id"], k["check"], k["findings"], k["evidence"]) for k in seen], num_from=9))
    return "".join(parts)


def _coverage_table(cov: dict) -> str:
    rows = [(s.replace("_", " "), cov[s], _pct(cov["shares"][s])) for s in STATES]
    rows += [(f"header only: {why}", n, "") for why, n in
             sorted(cov["header_only_reasons"].items())]
    rows += [("requests unverifiable (answer lost in a gap)", cov["unverifiable_requests"], ""),
             ("capture gaps", cov["gaps"], ""),
             ("required coverage (--min-coverage)", _pct(cov["min_coverage"]), "")]
    return "<h2>Coverage</h2>" + _table(["frames", "count", "share"], rows)


def _table(headers, rows, num_from: int = 1) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td class='num'>{_e(c)}</td>" if i >= num_from else f"<td>{_e(c)}</td>"
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _totals_table(t: dict) -> str:
    return _table(["measure", "value"], [(k.replace("_", " "), v) for k, v in t.items()])


def _checks_table(checks: dict) -> str:
    rows = []
    for name, result in checks.items():
        status = "ok" if not result["violations"] else f"{result['violations']} violation(s)"
        first = result["examples"][0] if result["examples"] else None
        where = f"{detail.where(first)}: {first['detail']}" if first else ""
        if result.get("parties"):
            status += " (" + ", ".join(f"{k}: {n}" for k, n in
                                       sorted(result["parties"].items())) + ")"
        bad = "bad" if result.get("subject_findings") else ""
        rows.append(f"<tr class='{bad}'><td>{_e(name)}</td>"
                    f"<td>{_e(CHECK_TITLES.get(name, ''))}</td><td>{_e(status)}</td>"
                    f"<td>{_e(where)}</td></tr>")
    return ("<h2>Checks</h2><table><tr><th>check</th><th>rule</th><th>result</th>"
            "<th>first violation</th></tr>" + "".join(rows) + "</table>")


def _unreadable(items: list) -> str:
    if not items:
        return "<p>Every input file was read; what could be checked is under Coverage.</p>"
    return "<h2>What could not be read</h2>" + _table(
        ["file", "problem"], [(u["file"], u["problem"]) for u in items], num_from=9)


def _latency_table(rows: list) -> str:
    return _table(["API", "count", "p50 ms", "p99 ms", "p99.9 ms", "max ms"],
                  [(r["api_name"], r["count"], r["p50_ms"], r["p99_ms"], r["p999_ms"],
                    r["max_ms"]) for r in rows])


def _per_api_table(rows: list) -> str:
    return _table(["API", "key", "version", "client id", "requests", "responses", "errors"],
                  [(r["api_name"], r["api_key"], r["api_version"], r["client_id"],
                    r["requests"], r["responses"], r["errors"]) for r in rows], num_from=1)


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"role='img' aria-label='{_e(title)}'><title>{_e(title)}</title>"
            + "".join(body) + "</svg>")


def _bars(items: list[tuple[str, float]], title: str, unit: str) -> str:
    """Horizontal bars: one labelled row per item."""
    if not items:
        return "<p>(nothing to plot)</p>"
    peak = max(v for _, v in items) or 1
    row, width, label_w = 18, 720, 260
    body = []
    for i, (label, value) in enumerate(items):
        y = i * row + 4
        w = max(1, int((width - label_w - 90) * value / peak))
        body.append(f"<text x='0' y='{y + 12}' font-size='12'>{_e(label[:40])}</text>"
                    f"<rect x='{label_w}' y='{y}' width='{w}' height='{row - 5}' fill='#4a78b5'/>"
                    f"<text x='{label_w + w + 4}' y='{y + 12}' font-size='11'>"
                    f"{_e(value)} {unit}</text>")
    return _svg(width, len(items) * row + 8, body, title)


_DECADES = {3: "1 µs", 4: "10 µs", 5: "100 µs", 6: "1 ms", 7: "10 ms", 8: "100 ms",
            9: "1 s", 10: "10 s"}


def _decade(bucket: int) -> str:
    """Label of a log10(ns) bucket: latencies from this value to 10x it."""
    return _DECADES.get(bucket, f"1e{bucket} ns")


def _histogram_svg(histogram: list) -> str:
    """Latency distribution per API: requests per decade of latency."""
    items = sorted(histogram, key=lambda r: (r["api_name"], r["bucket"]))
    return _bars([(f"{r['api_name']} {_decade(r['bucket'])}+", r["count"]) for r in items],
                 "latency distribution per API", "requests")


def _timeline_svg(timeline: list) -> str:
    if not timeline:
        return "<p>(nothing to plot)</p>"
    width, height, pad = 720, 200, 30
    start, end = timeline[0]["second"], timeline[-1]["second"]
    span = max(1, end - start)
    peak = max(r["count"] for r in timeline) or 1
    points = " ".join(
        f"{pad + (r['second'] - start) * (width - 2 * pad) / span:.1f},"
        f"{height - pad - r['count'] * (height - 2 * pad) / peak:.1f}" for r in timeline)
    body = [f"<polyline fill='none' stroke='#4a78b5' stroke-width='2' points='{points}'/>",
            f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' "
            "stroke='#999'/>",
            f"<text x='{pad}' y='{height - 8}' font-size='11'>0 s</text>",
            f"<text x='{width - pad - 40}' y='{height - 8}' font-size='11'>{span} s</text>",
            f"<text x='2' y='{pad - 8}' font-size='11'>{peak} requests/s</text>"]
    return _svg(width, height, body, "requests per second")


def _violations_svg(connections: list) -> str:
    bad = sorted((c for c in connections if c["violations"]), key=lambda c: -c["violations"])
    if not bad:
        return "<p>No connection has a violation.</p>"
    return _bars([(c["connection"], c["violations"]) for c in bad[:30]],
                 "violations per connection", "")
