"""The report's aggregates of some pairs and requests, one row at a time: the
readable reference of :mod:`kafka_net.spark_jobs.summary_arrow`, which
computes the same shares column by column.

These are the job's aggregates as Spark SQL computed them, written as plain
loops: a dict of counts per key (a null key is a key like any other here;
``summary_arrow.merged_per_api`` drops it where Spark's join would), the
latencies per API kept whole for exact percentiles, ``floor(log10(ns))`` and
``floor(ns / 1e9)`` in doubles, the orders with nulls first.
``KAFKA_NET_READABLE=1`` makes every path use them, and
tests/spark/test_summary_arrow.py holds the column-wise shares equal to them.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import compress

PERCENTILES = (0.5, 0.99, 0.999)     # the report's p50, p99, p99.9


def partials(pairs: dict[str, list], requests: dict[str, list]) -> dict:
    """The share of the report's aggregates of some pairs and requests (one
    list per field of ``summary_arrow.PAIR_FIELDS`` and ``REQUEST_FIELDS``):
    requests and responses per (API, version, client), pairs with an error
    per (API, version, client), the latencies per API, and the histogram and
    timeline counts."""
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


def latency_rows(groups: dict[tuple, list]) -> list[dict]:
    """Latencies per (API key, name): their count, exact percentiles and the
    maximum (nulls skipped), ordered by API key."""
    rows = []
    for (key, name), values in groups.items():
        known = sorted(v for v in values if v is not None)
        rows.append({"api_key": key, "api_name": name, "count": len(values),
                     "pct": [percentile(known, p) for p in PERCENTILES] if known else None,
                     "max_ns": known[-1] if known else None})
    return sorted(rows, key=lambda r: nulls_first(r["api_key"]))


def percentile(ordered, fraction: float) -> float:
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
            for (name, bucket), n in sorted(counts.items(), key=lambda i: nulls_first(*i[0]))]


def timeline_of(requests: dict[str, list]) -> list[dict]:
    """Requests per second of capture time, floor(ns / 1e9) in doubles."""
    counts: dict = {}
    for ns in requests["timestamp_ns"]:
        second = None if ns is None else math.floor(ns / 1e9)
        counts[second] = counts.get(second, 0) + 1
    return [{"second": s, "count": n}
            for s, n in sorted(counts.items(), key=lambda i: nulls_first(i[0]))]


def nulls_first(*values) -> tuple:
    """A sort key ordering as Spark's ascending orderBy does: nulls first."""
    return tuple((v is not None, v) if v is not None else (False, 0) for v in values)
