"""``kafka-net conformance --compare A B``: two conformance reports side by side
(two brokers under the same workload), listing where their answers differ in
kind.  Pure Python over report.json (no Spark needed for this step).

A and B are each an output directory of the job (holding ``report.json``), a
``report.json`` file, or captures: a capture file or a directory without a
report.json, on which the job is run first (into ``OUT/a`` and ``OUT/b``, or a
temporary directory).

Differences in kind, per API and version (from the reports' matrix):

* ``error_codes``: the set of error codes answered differs;
* ``answered``: one side answers all requests, the other some or none (or
  answers acks=0 Produce requests, which must get no response);
* ``header_only``: frames one side could check only by header (unknown
  version, no schema, cut by the snap length) where the other's were checked;
* ``only_in``: the API and version appear in one capture only;
* ``versions_served``: the ApiVersions answers announce different ranges;
* ``checks``: a check has violations on one side only.

Writes ``compare.json`` and ``compare.html`` into ``--out`` when given.
Exit status: 0 no difference in kind, 1 differences listed, 2 bad usage or an
input without a readable report (and the job's own exit 2 on captures).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import tempfile

EXIT_SAME, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="kafka-net conformance --compare",
                                description="Compare two conformance reports.")
    p.add_argument("--compare", nargs=2, required=True, metavar=("A", "B"),
                   help="report dirs (or report.json files), or captures to run the job on")
    p.add_argument("--out", help="write compare.json and compare.html here")
    p.add_argument("--master", default=None, help="Spark master, when captures are given")
    args, rest = p.parse_known_args(argv)
    reports = []
    for name, source in zip("ab", args.compare):
        summary = _load(source, name, args, rest)
        if summary is None:
            return EXIT_USAGE
        reports.append(summary)
    result = compare(*reports, labels=tuple(args.compare))
    for line in console_lines(result):
        print(line)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "compare.json"), "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
        with open(os.path.join(args.out, "compare.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(result))
    return EXIT_DIFFERENT if result["differences"] else EXIT_SAME


def _load(source: str, name: str, args, rest: list[str]) -> dict | None:
    path = os.path.join(source, "report.json") if os.path.isdir(source) else source
    if os.path.isfile(path) and path.endswith(".json"):
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError) as exc:
            print(f"compare: cannot read {path}: {exc}", file=sys.stderr)
            return None
    if not os.path.exists(source):
        print(f"compare: {source} does not exist", file=sys.stderr)
        return None
    out = os.path.join(args.out, name) if args.out else tempfile.mkdtemp(prefix="kn-cmp-")
    from kafka_net.spark_jobs import conformance   # captures: run the job first
    argv = [source, "--out", out, *rest] + (["--master", args.master] if args.master else [])
    code = conformance.main(argv)
    if code == conformance.EXIT_USAGE:
        print(f"compare: the job found nothing to check in {source}", file=sys.stderr)
        return None
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _cells(summary: dict) -> dict[tuple, dict]:
    """The matrix summed over clients: per (API name, version)."""
    out: dict[tuple, dict] = {}
    for m in summary.get("matrix", []):
        key = (m["api_name"], m["api_version"])
        c = out.setdefault(key, {"requests": 0, "responses": 0, "header_only": 0,
                                 "checked": 0, "error_codes": set()})
        for k in ("requests", "responses", "header_only", "checked"):
            c[k] += m[k]
        c["error_codes"] |= {int(code) for code in m["error_codes"]}
    return out


def _answered(c: dict) -> str:
    if c["responses"] == 0:
        return "none"
    if c["responses"] == c["requests"]:
        return "all"
    return "some" if c["responses"] < c["requests"] else "more than asked"


def compare(a: dict, b: dict, labels: tuple[str, str] = ("A", "B")) -> dict:
    ca, cb = _cells(a), _cells(b)
    diffs: list[dict] = []

    def diff(kind: str, key, va, vb, note: str = "") -> None:
        diffs.append({"kind": kind, "api": key[0] if key else "", "version": key[1]
                      if key else None, "a": va, "b": vb, "note": note})

    for key in sorted(set(ca) | set(cb), key=lambda k: (k[0], k[1])):
        x, y = ca.get(key), cb.get(key)
        if x is None or y is None:
            diff("only_in", key, x is not None, y is not None,
                 f"{key[0]} v{key[1]} seen in {'A' if x else 'B'} only")
            continue
        if x["error_codes"] != y["error_codes"]:
            diff("error_codes", key, sorted(x["error_codes"]), sorted(y["error_codes"]))
        if _answered(x) != _answered(y):
            diff("answered", key, _answered(x), _answered(y),
                 f"requests {x['requests']}/{y['requests']}, responses "
                 f"{x['responses']}/{y['responses']}")
        if bool(x["header_only"]) != bool(y["header_only"]):
            diff("header_only", key, x["header_only"], y["header_only"],
                 "frames checked by header only")
    acks_a, acks_b = (s["checks"].get("acks0_answered", {}).get("violations", 0)
                      for s in (a, b))
    if bool(acks_a) != bool(acks_b):
        diff("answered", ("Produce (acks=0)", None), acks_a, acks_b,
             "responses to acks=0 Produce requests (must be none)")
    served_a, served_b = a.get("versions_served", {}), b.get("versions_served", {})
    for key in sorted(set(served_a) | set(served_b), key=int):
        if served_a.get(key) != served_b.get(key):
            diffs.append({"kind": "versions_served", "api": _name(int(key)), "version": None,
                          "a": served_a.get(key), "b": served_b.get(key), "note": ""})
    for check in sorted(set(a.get("checks", {})) | set(b.get("checks", {}))):
        na = a.get("checks", {}).get(check, {}).get("violations", 0)
        nb = b.get("checks", {}).get(check, {}).get("violations", 0)
        if bool(na) != bool(nb):
            diffs.append({"kind": "checks", "api": check, "version": None, "a": na, "b": nb,
                          "note": "violations on one side only"})
    return {
        "a": {"label": labels[0], "verdict": a.get("verdict"), "totals": a.get("totals"),
              "coverage": (a.get("coverage") or {}).get("shares")},
        "b": {"label": labels[1], "verdict": b.get("verdict"), "totals": b.get("totals"),
              "coverage": (b.get("coverage") or {}).get("shares")},
        "differences": diffs,
    }


def _name(key: int) -> str:
    from kafka_net.protocol.api_keys import api_name
    return api_name(key)


def console_lines(result: dict) -> list[str]:
    a, b = result["a"], result["b"]
    lines = [f"A: {a['label']}: {a['verdict']}, {(a['totals'] or {}).get('requests')} "
             f"requests, {(a['totals'] or {}).get('violations')} violations",
             f"B: {b['label']}: {b['verdict']}, {(b['totals'] or {}).get('requests')} "
             f"requests, {(b['totals'] or {}).get('violations')} violations"]
    if not result["differences"]:
        lines.append("no difference in kind")
    for d in result["differences"]:
        what = f"{d['api']} v{d['version']}" if d["version"] is not None else d["api"]
        va, vb = d["a"], d["b"]
        if d["kind"] == "error_codes":     # by Kafka's names (ErrorCode), code after
            from kafka_net.spark_jobs.report_detail import error_name
            va, vb = ("[" + ", ".join(error_name(c) for c in v) + "]" for v in (va, vb))
        lines.append(f"{d['kind']}: {what}: A {va} | B {vb}"
                     + (f" ({d['note']})" if d["note"] else ""))
    return lines


def render_html(result: dict) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(d['kind'])}</td><td>{e(str(d['api']))}</td>"
        f"<td>{e(str(d['version'] if d['version'] is not None else ''))}</td>"
        f"<td>{e(str(d['a']))}</td><td>{e(str(d['b']))}</td><td>{e(d['note'])}</td></tr>"
        for d in result["differences"])
    sides = "".join(
        f"<tr><td>{s}</td><td>{e(result[s.lower()]['label'])}</td>"
        f"<td>{e(str(result[s.lower()]['verdict']))}</td>"
        f"<td>{e(json.dumps(result[s.lower()]['totals']))}</td></tr>" for s in ("A", "B"))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>kafka-net conformance "
            "comparison</title><style>body{font-family:sans-serif;margin:2em}table"
            "{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .6em}"
            "</style></head><body><h1>Conformance comparison</h1><table><tr><th>side</th>"
            f"<th>input</th><th>verdict</th><th>totals</th></tr>{sides}</table>"
            f"<h2>Differences in kind ({len(result['differences'])})</h2><table><tr>"
            "<th>kind</th><th>API / check</th><th>version</th><th>A</th><th>B</th>"
            f"<th>note</th></tr>{rows}</table></body></html>")


__all__ = ["compare", "console_lines", "main", "render_html"]
