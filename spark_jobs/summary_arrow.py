"""The report's aggregates, written once: each part of the checked rows
gives its *share* (:func:`partials`: counts per key, the latencies), and the
shares are added up (:func:`merged`) into the summary that report.py renders.

Every path uses these two functions.  A task makes one share per connection
it checked (``task_reads._checked_fields``), on Spark or run in this process
for a small input, and a Spark job checking a frames dataset (URI inputs,
``--frames-from``) one per batch of checked rows (``task_reads.shares``); the
driver adds those up (:func:`summarise_partials`).  Each aggregate keeps Spark
SQL's meaning, as the job computed them there before: null keys (a null joins
nothing), ``percentile``'s interpolation, ``log10`` and ``floor`` on doubles,
the sort order with nulls first.  tests/spark/test_summary_arrow.py holds the paths'
reports equal to the byte.

The pairs and requests (about one per frame) are aggregated column by column
(Arrow's hash ``group_by``, numpy), never a Python step per row: a 920k-frame
capture's share cost about a second of CPU as loops.  The loops stay as the
readable reference (:mod:`.summary_rows`), which ``KAFKA_NET_READABLE=1``
makes every path use and a Hypothesis test holds these shares equal to.  The
shares themselves (a row per key) and their sum stay rows.
"""

from __future__ import annotations

import json
import math

import numpy as np

from kafka_net.protocol import readable
from kafka_net.spark_jobs import report as report_mod
from kafka_net.spark_jobs import summary_rows
from kafka_net.spark_jobs.summary_rows import PERCENTILES, percentile  # noqa: F401 (API)

COLUMNWISE = not readable.READABLE   # KAFKA_NET_READABLE, read once (protocol/readable.py)
# Pairs and requests from which a share is made column-wise: Arrow's group_by
# costs about 1 ms a share whatever its size, the loops about 0.35 µs a row (a
# Spark task makes a share per connection, most of them smaller than this).
COLUMNWISE_FROM = 8192
# The share columns of a checked row (task_reads.PARTIAL_FIELDS), as partials() names them.
SHARES = ("request_counts", "error_counts", "latencies", "histogram", "timeline")
_nulls_first = summary_rows.nulls_first


def summarise_partials(checked) -> dict:
    """The checked rows the tasks return (``task_reads.CHECKED_FIELDS``: shares
    in place of the pairs and requests) -> the summary dict, the shares added
    up here."""
    return merged(checked, [{name: exploded(checked, name) for name in SHARES}])


def merged(checked, shares: list[dict]) -> dict:
    """The summary of checked rows (their connection summaries and findings)
    whose aggregates are the sum of ``shares`` (each as :func:`partials` gives it,
    its latencies as lists or Arrow arrays)."""
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


def partials(pairs: dict, requests: dict) -> dict:
    """The share of the report's aggregates of some pairs and requests (the
    fields of :data:`PAIR_FIELDS` and :data:`REQUEST_FIELDS`, each a list,
    numpy array or Arrow array): requests and responses per (API, version,
    client), pairs with an error per (API, version, client), the latencies per
    API (lists, as Spark's rows carry them), and the histogram and timeline
    counts.  :mod:`.summary_rows` says the same one row at a time."""
    if not _columnwise(pairs, requests):
        return summary_rows.partials(_lists(pairs), _lists(requests))
    share = _share(pairs, requests)
    for row in share["latencies"]:
        row["latency_ns"] = row["latency_ns"].to_pylist()
    return share


def _columnwise(pairs: dict, requests: dict) -> bool:
    return COLUMNWISE and len(pairs["api_key"]) + len(requests["api_key"]) >= COLUMNWISE_FROM


def _lists(columns: dict) -> dict[str, list]:
    """Columns as the loops read them: lists (numpy and Arrow arrays converted)."""
    return {name: values if isinstance(values, list) else values.tolist()
            if isinstance(values, np.ndarray) else values.to_pylist()
            for name, values in columns.items()}


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
    """Each key's parts (lists or Arrow arrays), in the order met."""
    groups: dict[tuple, list] = {}
    for key, values in items:
        groups.setdefault(key, []).append(values)
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
# pair's error_codes is not empty), with the Arrow type a list of them is read as.
PAIR_FIELDS = ("api_key", "api_name", "api_version", "client_id", "latency_ns", "errors")
REQUEST_FIELDS = ("api_key", "api_name", "api_version", "client_id", "responses",
                   "timestamp_ns")
_TYPES = {"api_name": "string", "client_id": "string", "errors": "bool"}   # else int64


def flattened(checked, column: str, names: tuple[str, ...]) -> dict:
    """:func:`exploded`, as one Arrow array per field of ``names`` (lists for
    the readable reference)."""
    import pyarrow.compute as pc
    rows = pc.list_flatten(checked[column])
    out = {}
    for name in names:
        if name == "errors":
            codes = pc.list_value_length(pc.struct_field(rows, "error_codes"))
            out[name] = pc.fill_null(pc.greater(codes, 0), False)
        else:
            out[name] = pc.struct_field(rows, name)
    if not COLUMNWISE:
        out = {name: values.to_pylist() for name, values in out.items()}
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
    """Latencies per (API key, name) (each key's parts: lists or Arrow arrays):
    their count, exact percentiles and the maximum (nulls skipped), ordered by
    API key; sorted by numpy, the percentiles then read as the reference does."""
    if not COLUMNWISE:
        return summary_rows.latency_rows(
            {key: [v for part in parts for v in part] for key, parts in groups.items()})
    import pyarrow as pa
    import pyarrow.compute as pc
    rows = []
    for (key, name), parts in groups.items():
        values = pa.chunked_array([_int64(p) for p in parts], pa.int64())
        known = np.sort(pc.drop_null(values).to_numpy())
        rows.append({"api_key": key, "api_name": name, "count": len(values),
                     "pct": [percentile(known, p) for p in PERCENTILES] if len(known)
                     else None,
                     "max_ns": int(known[-1]) if len(known) else None})
    return sorted(rows, key=lambda r: _nulls_first(r["api_key"]))


# -- one share, column by column ----------------------------------------------------------

def _share(pairs: dict, requests: dict) -> dict:
    """:func:`summary_rows.partials`, column-wise; the latencies as Arrow arrays.
    A null key is a key like another in Arrow's ``group_by`` too, as in the
    reference's dicts; :func:`_grouped` keeps their order."""
    pairs, requests = _table(pairs, PAIR_FIELDS), _table(requests, REQUEST_FIELDS)
    return {"request_counts": _request_counts(requests), "error_counts": _error_counts(pairs),
            "latencies": _latencies(pairs), "histogram": _histogram(pairs),
            "timeline": _timeline(requests)}


def _table(columns: dict, names: tuple[str, ...]):
    import pyarrow as pa
    return pa.table({name: _column(columns[name], _TYPES.get(name, "int64"))
                     for name in names})


def _column(values, type_name: str):
    """A field's values as an Arrow array (a list or numpy array converted)."""
    import pyarrow as pa
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(values, type=pa.type_for_alias(type_name))


def _int64(values):
    import pyarrow as pa
    if isinstance(values, pa.Array):
        return values.cast(pa.int64())
    return pa.array(values, type=pa.int64())


def _request_counts(requests) -> list[dict]:
    keys = ["api_key", "api_name", "api_version", "client_id"]
    counted = _grouped(requests, keys, [([], "count_all"), ("responses", "sum")])
    # sum(): nulls skipped, all null: null, as the reference and Spark
    return [{**{k: row[k] for k in keys}, "requests": row["count_all"],
             "responses": row["responses_sum"]} for row in counted.to_pylist()]


def _error_counts(pairs) -> list[dict]:
    keys = ["api_key", "api_version", "client_id"]
    counted = _grouped(pairs.filter(pairs["errors"]), keys, [([], "count_all")])
    return [{**{k: row[k] for k in keys}, "errors": row["count_all"]}
            for row in counted.to_pylist()]


def _latencies(pairs) -> list[dict]:
    """Each (API key, name)'s latencies, nulls kept (they count), as Arrow arrays."""
    listed = _grouped(pairs, ["api_key", "api_name"], [("latency_ns", "list")])
    values = listed["latency_ns_list"].combine_chunks()
    return [{"api_key": k, "api_name": name, "latency_ns": values[i].values}
            for i, (k, name) in enumerate(zip(listed["api_key"].to_pylist(),
                                              listed["api_name"].to_pylist()))]


def _grouped(table, keys: list[str], aggregates: list):
    """``table.group_by(keys).aggregate(aggregates)``, the groups in the order
    their keys are first met (as the reference's dicts keep them; Arrow's own
    order is not that where several keys hold nulls)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    table = table.append_column("first_row", pa.array(np.arange(table.num_rows)))
    out = table.group_by(keys, use_threads=False).aggregate(
        [*aggregates, ("first_row", "min")])
    return out.take(pc.sort_indices(out["first_row_min"]))


def _histogram(pairs) -> list[dict]:
    """Pairs per (API name, decade of the latency): bucket floor(log10(ns)),
    latencies under 1 ns (and null ones: greatest() skips nulls) in bucket 0."""
    import pyarrow as pa
    import pyarrow.compute as pc
    ns = pc.fill_null(pairs["latency_ns"], 1).to_numpy()
    decade = _floor_log10(np.maximum(ns, 1).astype(np.float64))
    counted = pa.table({"api_name": pairs["api_name"], "bucket": decade}).group_by(
        ["api_name", "bucket"], use_threads=False).aggregate([([], "count_all")])
    rows = [{"api_name": r["api_name"], "bucket": r["bucket"], "count": r["count_all"]}
            for r in counted.to_pylist()]
    return sorted(rows, key=lambda r: _nulls_first(r["api_name"], r["bucket"]))


def _floor_log10(x: np.ndarray) -> np.ndarray:
    """floor(log10(x)) of doubles >= 1, as ``math.floor(math.log10(x))`` gives it.

    numpy's log10 may differ from the C library's (which math.log10 calls) by
    an ulp or a few (numpy has its own vectorised ones), and an ulp decides the
    floor only within a few ulps of an integer: log10(999999999999999.0) is
    15.0 in doubles.  Those few values, within 1e-6 of an integer (thousands of
    ulps), are decided by math.log10 itself; x == 1 is log10's exact 0 in both."""
    decades = np.log10(x)
    out = np.floor(decades)
    close = np.flatnonzero((np.abs(decades - np.rint(decades)) < 1e-6) & (x > 1))
    if len(close):
        out[close] = [math.floor(math.log10(v)) for v in x[close].tolist()]
    return out.astype(np.int64)


def _timeline(requests) -> list[dict]:
    """Requests per second of capture time, floor(ns / 1e9) in doubles (an int
    divided by a float in Python converts it to the nearest double first, as
    astype does: the same division)."""
    import pyarrow.compute as pc
    stamps = requests["timestamp_ns"]
    known = pc.drop_null(stamps).to_numpy().astype(np.float64)
    seconds, counts = np.unique(np.floor(known / 1e9).astype(np.int64), return_counts=True)
    rows = [{"second": None, "count": stamps.null_count}] if stamps.null_count else []
    return rows + [{"second": s, "count": n}
                   for s, n in zip(seconds.tolist(), counts.tolist())]
