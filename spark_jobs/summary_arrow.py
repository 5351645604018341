"""The report's aggregates, written once: each part of the checked rows
gives its *share* (:func:`partials`: counts per key, the latencies), and the
shares are added up (:func:`merged`) into the summary that report.py renders.

Every path uses these two functions.  A small input (no Spark) makes one
share of all its checked rows (:func:`summarise`); a Spark task makes one per
connection it checked (``task_reads._checked_fields``), and a Spark job checking
a frames dataset (URI inputs, ``--frames-from``) one per batch of checked
rows (``task_reads.shares``); the driver adds those up
(:func:`summarise_partials`).  Each aggregate keeps Spark SQL's meaning, as
the job computed them there before: null keys (a null joins nothing),
``percentile``'s interpolation, ``log10`` and ``floor`` on doubles, the sort
order with nulls first.  tests/spark/test_summary_arrow.py holds the paths'
reports equal to the byte.  The pairs and requests (about one per frame) are
read column by column (:func:`flattened`), the rest as rows.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from itertools import compress

from kafka_net.spark_jobs import report as report_mod

PERCENTILES = (0.5, 0.99, 0.999)     # the report's p50, p99, p99.9
# The share columns of a checked row (task_reads.PARTIAL_FIELDS), as partials() names them.
SHARES = ("request_counts", "error_counts", "latencies", "histogram", "timeline")


def summarise(checked) -> dict:
    """The checked rows (``arrow_stages.CHECKED_SCHEMA``: each connection's
    pairs and requests) -> the summary dict, their aggregates as one share."""
    share = partials(flattened(checked, "pairs", PAIR_FIELDS),
                     flattened(checked, "requests", REQUEST_FIELDS))
    return merged(checked, [share])


def summarise_partials(checked) -> dict:
    """The checked rows of the Spark job (``task_reads.CHECKED_FIELDS``: shares
    in place of the pairs and requests) -> the same summary dict, the shares
    added up here."""
    return merged(checked, [{name: exploded(checked, name) for name in SHARES}])


def merged(checked, shares: list[dict]) -> dict:
    """The summary of checked rows (their connection summaries and findings)
    whose aggregates are the sum of ``shares`` (each as :func:`partials` gives it)."""
    connections = [json.loads(s) for s in checked["summary"].to_pylist()]
    violations = exploded(checked, "violations")

    def every(name: str) -> list[dict]:
        return [row for share in shares for row in share[name]]
    return report_mod.build_summary(
        per_api=merged_per_api(every("request_counts"), every("error_counts")),
        latency=_latency_rows(_groups(((r["api_key"], r["api_name"]), r["latency_ns"])
                                      for r in every("latencies"))),
        histogram=_summed(every("histogram"), ("api_name", "bucket")),
        timeline=_summed(every("timeline"), ("second",)),
        violations=sorted(violations, key=lambda v: _nulls_first(v["connection"],
                                                                 v["position"])),
        connections=connections, frames=sum(c["frames"] for c in connections))


def partials(pairs: dict[str, list], requests: dict[str, list]) -> dict:
    """The share of the report's aggregates of some pairs and requests (the
    field lists of :data:`PAIR_FIELDS` and :data:`REQUEST_FIELDS`): requests
    and responses per (API, version, client), pairs with an error per (API,
    version, client), the latencies per API, and the histogram and timeline
    counts."""
    counts: dict[tuple, list] = {}
    keys = zip(requests["api_key"], requests["api_name"], requests["api_version"],
               requests["client_id"])
    for key, responses in zip(keys, requests["responses"]):
        entry = counts.setdefault(key, [0, None])
        entry[0] += 1
        if responses is not None:
            entry[1] = (entry[1] or 0) + responses
    # Only the pairs with an error are counted (a key without one counts 0 anyway).
    errors = Counter(compress(zip(pairs["api_key"], pairs["api_version"], pairs["client_id"]),
                              pairs["errors"]))
    latencies: dict[tuple, list] = {}
    for key, ns in zip(zip(pairs["api_key"], pairs["api_name"]), pairs["latency_ns"]):
        latencies.setdefault(key, []).append(ns)
    return {
        "request_counts": [{"api_key": k, "api_name": name, "api_version": v, "client_id": c,
                            "requests": n, "responses": responses}
                           for (k, name, v, c), (n, responses) in counts.items()],
        "error_counts": [{"api_key": k, "api_version": v, "client_id": c, "errors": n}
                         for (k, v, c), n in errors.items()],
        "latencies": [{"api_key": k, "api_name": name, "latency_ns": values}
                      for (k, name), values in latencies.items()],
        "histogram": histogram_of(pairs),
        "timeline": timeline_of(requests),
    }


def merged_per_api(request_counts: list[dict], error_counts: list[dict]) -> list[dict]:
    """Requests and responses per (API, version, client id), with the pairs
    whose response carries an error code, ordered by key, version, client:
    added up from shares.  A key with a null in it joins nothing (Spark's
    equi-join), so its requests count no errors (fillna 0)."""
    counts: dict[tuple, list] = {}
    for r in request_counts:
        key = (r["api_key"], r["api_name"], r["api_version"], r["client_id"])
        entry = counts.setdefault(key, [0, None])
        entry[0] += r["requests"]
        if r["responses"] is not None:        # sum() skips nulls; all null: null
            entry[1] = (entry[1] or 0) + r["responses"]
    errors: dict[tuple, int] = {}
    for e in error_counts:
        key = (e["api_key"], e["api_version"], e["client_id"])
        if None not in key:                   # a null key joins nothing
            errors[key] = errors.get(key, 0) + e["errors"]
    return _per_api_rows(counts, errors)


def _groups(items) -> dict[tuple, list]:
    groups: dict[tuple, list] = {}
    for key, values in items:
        groups.setdefault(key, []).extend(values)
    return groups


def _summed(rows: list[dict], key: tuple[str, ...]) -> list[dict]:
    """Counts added up per key, ordered by it (nulls first)."""
    counts: dict[tuple, int] = {}
    for r in rows:
        k = tuple(r[name] for name in key)
        counts[k] = counts.get(k, 0) + r["count"]
    return [{**dict(zip(key, k)), "count": n}
            for k, n in sorted(counts.items(), key=lambda i: _nulls_first(*i[0]))]


def exploded(checked, column: str) -> list[dict]:
    """``explode(column)`` then ``row.*``: every struct of every row's list."""
    return [row for rows in checked[column].to_pylist() if rows for row in rows]


# The fields of the pairs and requests each aggregate reads ("errors": whether a
# pair's error_codes is not empty).
PAIR_FIELDS = ("api_key", "api_name", "api_version", "client_id", "latency_ns", "errors")
REQUEST_FIELDS = ("api_key", "api_name", "api_version", "client_id", "responses",
                   "timestamp_ns")


def flattened(checked, column: str, names: tuple[str, ...]) -> dict[str, list]:
    """:func:`exploded`, as one list per field of ``names``."""
    import pyarrow.compute as pc
    rows = pc.list_flatten(checked[column])
    out = {}
    for name in names:
        if name == "errors":
            codes = pc.list_value_length(pc.struct_field(rows, "error_codes"))
            out[name] = pc.fill_null(pc.greater(codes, 0), False).to_pylist()
        else:
            out[name] = pc.struct_field(rows, name).to_pylist()
    return out


def columns_of(rows: list[dict], names: tuple[str, ...]) -> dict[str, list]:
    """Rows as :func:`flattened` gives them."""
    out = {n: [r[n] for r in rows] for n in names if n != "errors"}
    if "errors" in names:
        out["errors"] = [bool(r["error_codes"]) for r in rows]
    return out


def _per_api_rows(counts: dict[tuple, list], errors: dict[tuple, int]) -> list[dict]:
    rows = [{"api_key": k, "api_version": v, "client_id": c, "api_name": name,
             "requests": n, "responses": responses or 0, "errors": errors.get((k, v, c), 0)}
            for (k, name, v, c), (n, responses) in counts.items()]
    return sorted(rows, key=lambda r: _nulls_first(r["api_key"], r["api_version"],
                                                   r["client_id"]))


def _latency_rows(groups: dict[tuple, list]) -> list[dict]:
    """Latencies per (API key, name): their count, exact percentiles and the
    maximum (nulls skipped), ordered by API key."""
    rows = []
    for (key, name), values in groups.items():
        known = sorted(v for v in values if v is not None)
        rows.append({"api_key": key, "api_name": name, "count": len(values),
                     "pct": [percentile(known, p) for p in PERCENTILES] if known else None,
                     "max_ns": known[-1] if known else None})
    return sorted(rows, key=lambda r: _nulls_first(r["api_key"]))


def percentile(ordered: list[int], fraction: float) -> float:
    """Spark's exact ``percentile``: the value at position (n - 1) * fraction
    of the ordered values, interpolated linearly between the closest ranks
    (in doubles, in Spark's order of operations, so that the result is the
    same to the last bit)."""
    position = (len(ordered) - 1) * fraction
    lower, higher = math.floor(position), math.ceil(position)
    low, high = ordered[lower], ordered[higher]
    if lower == higher or low == high:
        return float(low)
    return (higher - position) * float(low) + (position - lower) * float(high)


def histogram_of(pairs: dict[str, list]) -> list[dict]:
    """Pairs per (API name, decade of the latency): bucket floor(log10(ns)),
    latencies under 1 ns (and null ones: greatest() skips nulls) in bucket 0."""
    counts: dict[tuple, int] = {}
    log10, floor = math.log10, math.floor
    for name, ns in zip(pairs["api_name"], pairs["latency_ns"]):
        key = (name, floor(log10(max(ns, 1) if ns is not None else 1)))
        counts[key] = counts.get(key, 0) + 1
    return [{"api_name": name, "bucket": bucket, "count": n}
            for (name, bucket), n in sorted(counts.items(), key=lambda i: _nulls_first(*i[0]))]


def timeline_of(requests: dict[str, list]) -> list[dict]:
    """Requests per second of capture time, floor(ns / 1e9) in doubles."""
    counts: dict = {}
    for ns in requests["timestamp_ns"]:
        second = None if ns is None else math.floor(ns / 1e9)
        counts[second] = counts.get(second, 0) + 1
    return [{"second": s, "count": n}
            for s, n in sorted(counts.items(), key=lambda i: _nulls_first(i[0]))]


def _nulls_first(*values) -> tuple:
    """A sort key ordering as Spark's ascending orderBy does: nulls first."""
    return tuple((v is not None, v) if v is not None else (False, 0) for v in values)
