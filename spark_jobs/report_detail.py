"""The report's detail an engineer acts on: every violation (where to find it in
the capture, paged in HTML, the first ones on the console) and the API x version
x client matrix.  Pure Python, used by :mod:`kafka_net.spark_jobs.report`.

Rows come from :mod:`kafka_net.capture.findings` through the job (violation
rows, and each connection's ``cells``)."""

from __future__ import annotations

import html

PAGE_SIZE = 100                # violations per HTML page
CONSOLE_VIOLATIONS = 20        # shown by the job on stderr (--show)
_STATES = ("checked", "header_only", "unverifiable")


def where(v: dict) -> str:
    """``file frame 17`` (pcap, as Wireshark numbers it) or ``file @ 1234`` (kncap)."""
    if v.get("frame_number"):
        return f"{v['file']} frame {v['frame_number']}"
    if v.get("file_offset", -1) >= 0:
        return f"{v['file']} @ byte {v['file_offset']}"
    return f"{v.get('file') or '?'}"


def api_text(v: dict) -> str:
    if v.get("api_key", -1) < 0:
        return "(no request)"
    return f"{v['api_name']} v{v['api_version']}"


def _whose(v: dict) -> str:
    """``[client deviation, waived] `` (nothing for rows without attribution)."""
    if not v.get("party"):
        return ""
    waived = ", waived" if v.get("waived") else ""
    known = f", known: {v['known_deviation']}" if v.get("known_deviation") else ""
    return f"[{v['party']} {v['severity']}{known}{waived}] "


def error_name(code) -> str:
    """``UNKNOWN_TOPIC_OR_PARTITION (3)`` for Kafka's error code 3 (a string key too)."""
    from kafka_net.protocol.error_codes import ErrorCode
    try:
        return f"{ErrorCode(int(code)).name} ({int(code)})"
    except ValueError:
        return f"unknown error code {code}"


def console_lines(violations: list[dict], limit: int = CONSOLE_VIOLATIONS) -> list[str]:
    """The first ``limit`` violations, one line each (and where the rest are)."""
    lines = [f"{i}. {_whose(v)}{v['check']}: {where(v)} {v.get('timestamp', '')} "
             f"{v['connection']} "
             f"{api_text(v)} client {v.get('client_id') or '-'!s} correlation id(s) "
             f"{','.join(map(str, v.get('correlation_ids') or [v['correlation_id']]))}: "
             f"{v['detail']}" for i, v in enumerate(violations[:limit], 1)]
    if len(violations) > limit:
        lines.append(f"... and {len(violations) - limit} more (report.json, "
                     f"violations.parquet, report.html)")
    return lines


# --- the matrix ---------------------------------------------------------------------------


def matrix(connections: list[dict]) -> list[dict]:
    """Sum the connections' cells per (API, version, client id, client software)."""
    from kafka_net.protocol.api_keys import api_name
    merged: dict[tuple, dict] = {}
    for c in connections:
        for cell in c.get("cells") or ():
            key = (cell["api_key"], cell["api_version"], cell["client_id"],
                   cell.get("client_software", ""))
            m = merged.setdefault(key, {
                "api_key": key[0], "api_name": api_name(key[0]) if key[0] >= 0 else "(none)",
                "api_version": key[1], "client_id": key[2], "client_software": key[3],
                "requests": 0, "responses": 0, "pairs": 0, "violations": 0,
                **dict.fromkeys(_STATES, 0), "error_codes": {}})
            for k in ("requests", "responses", "pairs", "violations", *_STATES):
                m[k] += cell[k]
            for code, n in cell["error_codes"].items():
                m["error_codes"][code] = m["error_codes"].get(code, 0) + n
    for m in merged.values():
        frames = sum(m[s] for s in _STATES)
        m["coverage"] = round(m["checked"] / frames, 6) if frames else None
        m["error_names"] = {error_name(c): n for c, n in sorted(
            m["error_codes"].items(), key=lambda kv: int(kv[0]))}
    return [merged[k] for k in sorted(merged)]


def versions_served(connections: list[dict]) -> dict[str, list[list[int]]]:
    """{api key: every distinct [min, max] the broker(s) announced in ApiVersions}."""
    out: dict[str, list[list[int]]] = {}
    for c in connections:
        for key, rng in (c.get("versions_served") or {}).items():
            seen = out.setdefault(str(key), [])
            if list(rng) not in seen:
                seen.append(list(rng))
    return {k: sorted(v) for k, v in sorted(out.items(), key=lambda kv: int(kv[0]))}


# --- HTML -----------------------------------------------------------------------------


def _e(value) -> str:
    return html.escape(str(value))


def violations_html(violations: list[dict], page_size: int = PAGE_SIZE) -> str:
    """Every violation, ``page_size`` per page: an index of anchors, then one
    collapsible section per page (the first open).  No scripts."""
    if not violations:
        return "<h2 id='violations'>Violations</h2><p>None.</p>"
    pages = [violations[i:i + page_size] for i in range(0, len(violations), page_size)]
    index = " ".join(f"<a href='#violations-page-{n}'>{n}</a>"
                     for n in range(1, len(pages) + 1))
    parts = [f"<h2 id='violations'>Violations ({len(violations)})</h2>",
             f"<p class='pages'>Pages of {page_size}: {index}</p>"]
    for n, page in enumerate(pages, 1):
        first = (n - 1) * page_size + 1
        rows = "".join(_violation_row(first + i, v) for i, v in enumerate(page))
        parts.append(
            f"<details id='violations-page-{n}'{' open' if n == 1 else ''}><summary>"
            f"Violations {first}-{first + len(page) - 1}</summary><div class='scroll'>"
            "<table class='violations'><colgroup><col class='n'><col class='check'>"
            "<col class='where'><col class='time'><col class='conn'><col class='api'>"
            "<col class='client'><col class='ids'><col class='detail'></colgroup>"
            "<tr><th>#</th><th>check (whose)</th><th>where</th><th>time (UTC)</th>"
            "<th>connection</th><th>API</th><th>client</th><th>correlation ids</th>"
            f"<th>detail and bytes</th></tr>{rows}</table></div></details>")
    return "\n".join(parts)


def _violation_row(n: int, v: dict) -> str:
    fault = ""
    if v.get("hex_fault"):
        fault = (f"<div>around the fault (byte {v['fault_offset']}):</div>"
                 f"<pre>{_e(v['hex_fault'])}</pre>")
    request = ""
    if v.get("direction") == "response" and v.get("request_frame_number"):
        request = f"<br>its request: frame {v['request_frame_number']}"
    whose = ""
    if v.get("party"):
        whose = f"<br>{_e(v['party'])} {_e(v['severity'])}"
        if v.get("known_deviation"):
            whose += f"<br>known: {_e(v['known_deviation'])}"
        if v.get("waived"):
            whose += f"<br><b>waived</b>: {_e(v.get('waiver', ''))}"
    return (f"<tr id='v{n}'{' class=waived' if v.get('waived') else ''}>"
            f"<td class='num'>{n}</td><td>{_e(v['check'])}{whose}</td>"
            f"<td>{_e(where(v))}<br>{_e(v.get('direction', ''))} #{v['position']}"
            f"{request}</td>"
            f"<td>{_e(v.get('timestamp', ''))}<br>{v['timestamp_ns']} ns</td>"
            f"<td>{_e(v['connection'])}</td><td>{_e(api_text(v))}</td>"
            f"<td>{_e(v.get('client_id', ''))}<br>{_e(v.get('client_software', ''))}</td>"
            f"<td>{_e(', '.join(map(str, v.get('correlation_ids') or [])))}</td>"
            f"<td>{_e(v['detail'])}<pre>{_e(v.get('hex_head', ''))}</pre>{fault}</td></tr>")


def matrix_html(rows: list[dict]) -> str:
    head = ("<tr><th>API</th><th>version</th><th>client id</th><th>client software</th>"
            "<th>requests</th><th>responses</th><th>pairs</th><th>violations</th>"
            "<th>checked</th><th>header only</th><th>unverifiable</th><th>coverage</th>"
            "<th>error codes</th></tr>")
    body = []
    for r in rows:
        cov = "-" if r["coverage"] is None else f"{100 * r['coverage']:.1f}%"
        codes = ", ".join(f"{error_name(c)}: {n}" for c, n in sorted(
            r["error_codes"].items(), key=lambda kv: int(kv[0])))
        cls = " class='bad'" if r["violations"] else ""
        body.append(
            f"<tr{cls}><td>{_e(r['api_name'])}</td><td class='num'>{r['api_version']}</td>"
            f"<td>{_e(r['client_id'])}</td><td>{_e(r['client_software'])}</td>"
            + "".join(f"<td class='num'>{r[k]}</td>" for k in (
                "requests", "responses", "pairs", "violations", *_STATES))
            + f"<td class='num'>{cov}</td><td>{_e(codes)}</td></tr>")
    return ("<h2 id='matrix'>API x version x client</h2><table>" + head + "".join(body)
            + "</table>")


__all__ = ["console_lines", "error_name", "matrix", "matrix_html", "versions_served",
           "violations_html", "where"]
