"""The report's aggregates computed in this process, from the checked rows as
an Arrow table: a small input's summary without starting Spark's JVM.

The reference is the Spark SQL of :func:`kafka_net.spark_jobs.conformance._summarise`;
every function here computes the same rows, with Spark's meaning of each
operation spelled out where Python's would differ (null keys, ``percentile``'s
interpolation, ``log10`` and ``floor`` on doubles, the sort order with nulls
first).  tests/spark/test_summary_arrow.py runs both on the same captures and
compares the reports.  The pairs and requests (about one per frame) are read
column by column (:func:`flattened`), the rest as rows.
"""

from __future__ import annotations

import json
import math

from kafka_net.spark_jobs import report as report_mod

PERCENTILES = (0.5, 0.99, 0.999)     # the report's p50, p99, p99.9


def summarise(checked) -> dict:
    """The checked rows (``arrow_stages.CHECKED_SCHEMA``) -> the summary dict
    that report.py renders, as ``conformance._summarise`` builds it."""
    # The pairs and requests (one per frame or so) column by column: no dict per row.
    pairs = flattened(checked, "pairs", PAIR_FIELDS)
    requests = flattened(checked, "requests", REQUEST_FIELDS)
    violations = exploded(checked, "violations")
    connections = [json.loads(s) for s in checked["summary"].to_pylist()]
    return report_mod.build_summary(
        per_api=_per_api(requests, pairs), latency=_latency(pairs),
        histogram=histogram_of(pairs), timeline=timeline_of(requests),
        violations=sorted(violations, key=lambda v: _nulls_first(v["connection"],
                                                                 v["position"])),
        connections=connections, frames=sum(c["frames"] for c in connections))


def summarise_partials(checked) -> dict:
    """The checked rows of the Spark job's tasks (``task_reads.CHECKED_FIELDS``:
    each connection's share of the aggregates) -> the same summary dict, added
    up here: the shares are a few rows per connection and the latencies."""
    connections = [json.loads(s) for s in checked["summary"].to_pylist()]
    violations = exploded(checked, "violations")
    return report_mod.build_summary(
        per_api=merged_per_api(exploded(checked, "request_counts"),
                               exploded(checked, "error_counts")),
        latency=_latency_rows(_groups(((r["api_key"], r["api_name"]), r["latency_ns"])
                                      for r in exploded(checked, "latencies"))),
        histogram=_summed(exploded(checked, "histogram"), ("api_name", "bucket")),
        timeline=_summed(exploded(checked, "timeline"), ("second",)),
        violations=sorted(violations, key=lambda v: _nulls_first(v["connection"],
                                                                 v["position"])),
        connections=connections, frames=sum(c["frames"] for c in connections))


def merged_per_api(request_counts: list[dict], error_counts: list[dict]) -> list[dict]:
    """:func:`per_api` from per-connection counts (task_reads.partials)."""
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


def per_api(requests: list[dict], pairs: list[dict]) -> list[dict]:
    """Requests and responses per (API, version, client id), with the pairs
    whose response carries an error code, ordered by key, version, client."""
    return _per_api(columns_of(requests, REQUEST_FIELDS), columns_of(pairs, PAIR_FIELDS))


def _per_api(requests: dict[str, list], pairs: dict[str, list]) -> list[dict]:
    counts: dict[tuple, list] = {}
    keys = zip(requests["api_key"], requests["api_name"], requests["api_version"],
               requests["client_id"])
    for key, responses in zip(keys, requests["responses"]):
        entry = counts.setdefault(key, [0, None])
        entry[0] += 1
        if responses is not None:             # sum() skips nulls; all null: null
            entry[1] = (entry[1] or 0) + responses
    return _per_api_rows(counts, _errors(pairs))


def _per_api_rows(counts: dict[tuple, list], errors: dict[tuple, int]) -> list[dict]:
    rows = [{"api_key": k, "api_version": v, "client_id": c, "api_name": name,
             "requests": n, "responses": responses or 0, "errors": errors.get((k, v, c), 0)}
            for (k, name, v, c), (n, responses) in counts.items()]
    return sorted(rows, key=lambda r: _nulls_first(r["api_key"], r["api_version"],
                                                   r["client_id"]))


def _errors(pairs: dict[str, list]) -> dict[tuple, int]:
    """Pairs with an error code per join key.  A key with a null in it joins
    nothing (an equi-join), so its requests count no errors (fillna 0)."""
    errors: dict[tuple, int] = {}
    for key, error in zip(zip(pairs["api_key"], pairs["api_version"], pairs["client_id"]),
                          pairs["errors"]):
        if None not in key:
            errors[key] = errors.get(key, 0) + error
    return errors


def latency(pairs: list[dict]) -> list[dict]:
    """Pairs per (API key, name): their count, exact percentiles of the latency
    and its maximum (nulls skipped), ordered by API key."""
    return _latency(columns_of(pairs, PAIR_FIELDS))


def _latency(pairs: dict[str, list]) -> list[dict]:
    groups: dict[tuple, list] = {}
    for key, ns in zip(zip(pairs["api_key"], pairs["api_name"]), pairs["latency_ns"]):
        groups.setdefault(key, []).append(ns)
    return _latency_rows(groups)


def _latency_rows(groups: dict[tuple, list]) -> list[dict]:
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


def histogram(pairs: list[dict]) -> list[dict]:
    """Pairs per (API name, decade of the latency): bucket floor(log10(ns)),
    latencies under 1 ns (and null ones: greatest() skips nulls) in bucket 0."""
    return histogram_of(columns_of(pairs, PAIR_FIELDS))


def histogram_of(pairs: dict[str, list]) -> list[dict]:
    counts: dict[tuple, int] = {}
    log10, floor = math.log10, math.floor
    for name, ns in zip(pairs["api_name"], pairs["latency_ns"]):
        key = (name, floor(log10(max(ns, 1) if ns is not None else 1)))
        counts[key] = counts.get(key, 0) + 1
    return [{"api_name": name, "bucket": bucket, "count": n}
            for (name, bucket), n in sorted(counts.items(), key=lambda i: _nulls_first(*i[0]))]


def timeline(requests: list[dict]) -> list[dict]:
    """Requests per second of capture time, floor(ns / 1e9) in doubles."""
    return timeline_of(columns_of(requests, REQUEST_FIELDS))


def timeline_of(requests: dict[str, list]) -> list[dict]:
    counts: dict = {}
    for ns in requests["timestamp_ns"]:
        second = None if ns is None else math.floor(ns / 1e9)
        counts[second] = counts.get(second, 0) + 1
    return [{"second": s, "count": n}
            for s, n in sorted(counts.items(), key=lambda i: _nulls_first(i[0]))]


def _nulls_first(*values) -> tuple:
    """A sort key ordering as Spark's ascending orderBy does: nulls first."""
    return tuple((v is not None, v) if v is not None else (False, 0) for v in values)
